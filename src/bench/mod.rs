//! The benchmark run: `run` (matrix -> shuffled cases -> one worker process per case ->
//! report rewritten after every case -> summary table) and the hidden `worker` command.
//!
//! Sub-modules: [`options`] typed options, [`config`] the TOML matrix file, [`matrix`] case
//! expansion and ids, [`scheduler`] order, [`executor`] worker processes, [`worker`] the
//! in-process measurement, [`outputs`] the quality comparison of the cases' outputs with
//! their references, [`progress`] the progress bar, [`table`] the summary table.
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::error::UserError;
use crate::report::{CaseRecord, CaseStatus, ModelInfo, Report, RunSettings};
use crate::weights::WeightsSource;

pub mod config;
pub mod executor;
pub mod matrix;
pub mod options;
pub mod outputs;
pub mod progress;
pub mod scheduler;
pub mod table;
pub mod worker;

use options::{BenchOptions, Overrides};

/// Arguments of `wan-vae-bench run`. Every flag overrides the matrix file's value; list
/// flags take comma-separated values.
#[derive(Debug, Default, clap::Args)]
pub struct RunArgs {
    /// Matrix file (TOML); without it the built-in smoke matrix runs.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Video frames per clip.
    #[arg(long, value_delimiter = ',')]
    pub frames: Vec<usize>,
    /// Clip size, `WxH` or `W*H` (multiples of 8).
    #[arg(long, value_delimiter = ',')]
    pub size: Vec<String>,
    /// Spatial tiling: `none`, `TILE` or `TILE:OVERLAP` in pixels.
    #[arg(long, value_delimiter = ',', conflicts_with = "tile_px")]
    pub tile: Vec<String>,
    /// Tile size in pixels (0 = untiled); overlap from --overlap_px or a quarter of the tile.
    #[arg(long = "tile_px", alias = "tile-px", value_delimiter = ',')]
    pub tile_px: Vec<usize>,
    /// Tile overlap in pixels for --tile_px.
    #[arg(long = "overlap_px", alias = "overlap-px", requires = "tile_px")]
    pub overlap_px: Option<usize>,
    /// Warmup passes per case (timed and reported separately).
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Timed passes per case.
    #[arg(long)]
    pub runs: Option<usize>,
    /// Precisions: fp32, bf16, fp16.
    #[arg(long, value_delimiter = ',')]
    pub precision: Vec<String>,
    /// Latent frames per decoder call.
    #[arg(long, value_delimiter = ',')]
    pub chunk: Vec<usize>,
    /// Env variants (names of `[env.NAME]` tables; `baseline` always exists).
    #[arg(long, value_delimiter = ',')]
    pub env: Vec<String>,
    /// Weights: `synthetic`, a local file, or a hub reference.
    #[arg(long)]
    pub weights: Option<String>,
    /// Model of `synthetic` weights: wan2.1 (default) or wan2.2; with a file it must agree.
    #[arg(long)]
    pub model: Option<crate::model::ModelKind>,
    /// Device: cpu, cuda:N, metal.
    #[arg(long)]
    pub device: Option<String>,
    /// Per-case time limit in seconds.
    #[arg(long = "timeout", alias = "timeout_s")]
    pub timeout_s: Option<f64>,
    /// Case order: `shuffled` (default, seed recorded) or `as-written`.
    #[arg(long)]
    pub order: Option<String>,
    /// Seed of the case shuffle.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Report file (default `results/<UTC time>-<host>.json`).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// No progress bar and no per-case lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also write the results table in Markdown to FILE (at the end of the run).
    #[arg(long = "export-markdown", value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write a bar chart of the results as SVG to FILE (at the end of the run).
    #[arg(long = "export-svg", value_name = "FILE")]
    pub export_svg: Option<PathBuf>,
    /// Keep the run's scratch directory with every case's outputs (`<case id>.outputs.safetensors`,
    /// f32 tensors `latent` and `decoded`) and print its path; by default it is removed.
    #[arg(long = "keep-outputs")]
    pub keep_outputs: bool,
}

/// Arguments of the hidden `worker` command.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The case to run, as [`worker::WorkerSpec`] JSON.
    #[arg(long = "case-json")]
    pub case_json: String,
    /// Where to write the [`worker::WorkerResult`] JSON.
    #[arg(long)]
    pub result: PathBuf,
}

impl RunArgs {
    fn overrides(&self) -> anyhow::Result<Overrides> {
        let mut tiles = self.tile.clone();
        for &t in &self.tile_px {
            tiles.push(match (t, self.overlap_px) {
                (0, _) => "none".to_string(),
                (t, Some(o)) => format!("{t}:{o}"),
                (t, None) => t.to_string(),
            });
        }
        Ok(Overrides {
            frames: self.frames.clone(),
            sizes: self.size.clone(),
            tiles,
            precisions: self.precision.clone(),
            chunks: self.chunk.clone(),
            envs: self.env.clone(),
            warmup: self.warmup,
            runs: self.runs,
            timeout_s: self.timeout_s,
            weights: self.weights.clone(),
            model: self.model,
            device: self.device.clone(),
            order: self.order.clone(),
            seed: self.seed,
            output: self.output.clone(),
            quiet: self.quiet,
        })
    }
}

/// The matrix file (or the smoke matrix) with the flags applied.
pub fn options_from_args(args: &RunArgs) -> anyhow::Result<BenchOptions> {
    let mut opts = match &args.config {
        Some(path) => config::load(path)?,
        None => config::smoke(),
    };
    opts.apply(args.overrides()?)?;
    Ok(opts)
}

/// Weights resolved once by the parent: what workers load, and what the report records.
#[derive(Debug, Clone)]
pub struct ResolvedRef {
    /// `synthetic` or a local file path, passed to workers.
    pub worker_ref: String,
    /// The report's `model`, partially filled (workers add dtype, params, dims).
    pub info: ModelInfo,
}

/// Resolve a weights reference once, in the parent, through the hub resolver
/// ([`crate::weights::source::resolve`]: `synthetic`, a local file, a hub reference or a
/// preset); workers then get the local path (or `synthetic`).
pub fn resolve_weights(reference: &str) -> anyhow::Result<ResolvedRef> {
    let resolved = crate::weights::source::resolve(reference)?;
    let worker_ref = match &resolved.source {
        WeightsSource::Synthetic { .. } => "synthetic".to_string(),
        // Already absolute; kept as is (a hub cache symlink keeps its file extension).
        WeightsSource::File(path) => path.display().to_string(),
    };
    Ok(ResolvedRef {
        worker_ref,
        info: resolved.info,
    })
}

/// `results/<UTC time>-<host>.json`.
pub fn default_output(host: Option<&str>) -> PathBuf {
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let stamp = time::OffsetDateTime::now_utc()
        .format(&fmt)
        .unwrap_or_else(|_| "unknown-time".into());
    let host: String = host
        .unwrap_or("unknown-host")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from("results").join(format!("{stamp}-{host}.json"))
}

/// `wan-vae-bench run`.
pub fn run_command(args: RunArgs) -> anyhow::Result<i32> {
    let opts = options_from_args(&args)?;
    let resolved = resolve_weights(&opts.weights)?;
    // The model (from the file's shapes, or --model for synthetic weights) decides the size
    // and tile rules: check every case before starting any.
    let source = match resolved.worker_ref.as_str() {
        "synthetic" => WeightsSource::Synthetic { seed: 0 },
        path => WeightsSource::File(path.into()),
    };
    let model_cfg = crate::weights::resolve_config(&source, opts.model)?;
    let mut cases = matrix::expand(&opts);
    for case in &cases {
        model_cfg.check_size(case.width, case.height)?;
        if let Some(t) = &case.tiling {
            model_cfg.check_tiling(t)?;
        }
    }
    matrix::add_references(&mut cases);
    let added = cases.iter().filter(|c| c.added_as_reference).count();
    let seed = scheduler::schedule(&mut cases, opts.order, opts.seed);
    let system = crate::system::collect();
    let output = opts
        .output
        .clone()
        .unwrap_or_else(|| default_output(system.hostname.as_deref()));
    let created_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut report = Report {
        schema_version: crate::report::SCHEMA_VERSION,
        tool: crate::report::this_tool(),
        created_at,
        system,
        model: resolved.info.clone(),
        run: RunSettings {
            device: opts.device.clone(),
            warmup: opts.warmup,
            runs: opts.runs,
            timeout_s: opts.timeout_s,
            order: opts.order.name().to_string(),
            shuffle_seed: seed,
            config_path: opts.config_path.as_ref().map(|p| p.display().to_string()),
        },
        cases: Vec::new(),
    };
    report
        .save_atomic(&output)
        .with_context(|| format!("cannot write the report {}", output.display()))?;

    let mut executor = executor::Executor::new(Duration::from_secs_f64(opts.timeout_s))?;
    executor.keep = args.keep_outputs;
    let mut book = outputs::QualityBook::new(&cases);
    let mut progress = progress::Progress::new(cases.len(), opts.quiet);
    let added_note = match added {
        0 => String::new(),
        n => format!(" ({n} added as quality reference{})", if n == 1 { "" } else { "s" }),
    };
    match seed {
        Some(s) => progress.println(&format!("{} cases{added_note}, shuffled with seed {s}", cases.len())),
        None if added > 0 => progress.println(&format!("{} cases{added_note}", cases.len())),
        None => {}
    }
    let mut model_known = false;
    for case in &cases {
        progress.start_case(&case.id);
        let spec = worker::WorkerSpec {
            id: case.id.clone(),
            weights: resolved.worker_ref.clone(),
            model: Some(model_cfg.kind()),
            device: opts.device.clone(),
            precision: case.precision,
            chunk: case.chunk,
            tile_px: case.tiling.map(|t| t.tile_px),
            overlap_px: case.tiling.map(|t| t.overlap_px),
            frames: case.frames,
            width: case.width,
            height: case.height,
            warmup: opts.warmup,
            runs: opts.runs,
            variant_vars: case.env_vars.keys().cloned().chain(extra_recorded_vars()).collect(),
            outputs: Some(executor.outputs_path(&case.id)),
        };
        let result = executor.run(&spec, &case.env_vars, &mut |p| progress.phase(p));
        if let (false, Some(m)) = (model_known, &result.model) {
            report.model.on_disk_dtype = m.on_disk_dtype.clone();
            report.model.params = m.params;
            report.model.dim = m.dim;
            report.model.z_dim = m.z_dim;
            model_known = true;
        }
        let roundtrip = result.roundtrip_psnr_db;
        if let Some(e) = &result.outputs_error {
            progress.println(&format!(
                "  warning: {} could not save its outputs (no quality): {e}",
                case.id
            ));
        }
        let record = to_record(case, result);
        progress.finish_case(&case_line(&record));
        for (name, pass) in [("encode", &record.encode), ("decode", &record.decode)] {
            if let Some(p) = pass.as_ref().filter(|p| p.outliers > 0) {
                progress.println(&format!(
                    "  warning: {} statistical outlier(s) in {name} of {} (hyperfine's MAD rule); \
                     consider more --warmup or --runs, or a quieter machine",
                    p.outliers, record.id
                ));
            }
        }
        report.cases.push(record);
        for w in book.finished(&mut report, &case.id, roundtrip, spec.outputs.clone()) {
            progress.println(&format!("  warning: {w}"));
        }
        report.save_atomic(&output)?;
    }
    progress.finish();
    print!("{}", table::render_table(&report));
    println!("report: {}", output.display());
    export(&report, args.export_markdown.as_deref(), args.export_svg.as_deref())?;
    if args.keep_outputs {
        println!("outputs: {}", executor.scratch.display());
    }
    let all_ok = report.cases.iter().all(|c| c.status == CaseStatus::Ok);
    Ok(if all_ok { 0 } else { 1 })
}

/// Write the Markdown table and the SVG chart of the finished run where asked.
fn export(report: &Report, markdown: Option<&std::path::Path>, svg: Option<&std::path::Path>) -> anyhow::Result<()> {
    let write = |path: &std::path::Path, text: String| -> anyhow::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    if let Some(path) = markdown {
        write(path, crate::export::markdown_table(report))?;
    }
    if let Some(path) = svg {
        write(path, crate::export::svg_chart(report)?)?;
    }
    Ok(())
}

/// Extra variable names every worker records (`WAN_VAE_BENCH_RECORD_ENV`, comma-separated),
/// e.g. the variable `scripts/sweep_env.sh` sweeps.
fn extra_recorded_vars() -> Vec<String> {
    std::env::var(RECORD_ENV_VAR)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Names extra variables for the workers to record in each case's `env`.
pub const RECORD_ENV_VAR: &str = "WAN_VAE_BENCH_RECORD_ENV";

fn to_record(case: &matrix::Case, r: worker::WorkerResult) -> CaseRecord {
    CaseRecord {
        id: case.id.clone(),
        added_as_reference: case.added_as_reference,
        precision: options::precision_name(case.precision).to_string(),
        compute_dtype: r.compute_dtype,
        chunk: case.chunk,
        tile_px: case.tiling.map(|t| t.tile_px),
        overlap_px: case.tiling.map(|t| t.overlap_px),
        frames: case.frames,
        width: case.width,
        height: case.height,
        env_variant: case.env_variant.clone(),
        env: r.env,
        status: r.status,
        error: r.error,
        encode: r.encode,
        decode: r.decode,
        load_s: r.load_s,
        peak_rss_bytes: r.peak_rss_bytes,
        device_memory_bytes: r.device_memory_bytes,
        quality: None,
        system: None,
    }
}

fn case_line(c: &CaseRecord) -> String {
    match (c.status, &c.encode, &c.decode) {
        (CaseStatus::Ok, Some(e), Some(d)) => format!(
            "ok       {}  encode {} ± {}  decode {} ± {}",
            c.id,
            table::fmt_s(e.median_s),
            table::fmt_s(e.stddev_s),
            table::fmt_s(d.median_s),
            table::fmt_s(d.stddev_s)
        ),
        _ => {
            let status = serde_json::to_value(c.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let first = c.error.as_deref().and_then(|e| e.lines().next()).unwrap_or("");
            format!("{status:<8} {}  {first}", c.id)
        }
    }
}

/// `wan-vae-bench worker` (hidden): run one case, write its result JSON.
pub fn worker_command(args: WorkerArgs) -> anyhow::Result<i32> {
    let spec: worker::WorkerSpec = serde_json::from_str(&args.case_json)
        .map_err(|e| UserError::invalid("--case-json", &args.case_json, e.to_string()))?;
    let result = worker::run(&spec);
    let tmp = args.result.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&result)?)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &args.result).with_context(|| format!("cannot write {}", args.result.display()))?;
    Ok(if result.status == CaseStatus::Ok { 0 } else { 1 })
}
