//! The benchmark run: `run` (matrix -> shuffled cases -> one worker process per case ->
//! report rewritten after every case -> summary table) and the hidden `worker` command.
//! `docs/architecture.md` draws the data flow.
//!
//! Sub-modules: [`options`] typed options and flags, [`config`] the TOML matrix file,
//! [`input`] the user's `--input` file, [`budgets`] the `[budgets]` limits and their verdicts,
//! [`matrix`] case expansion, [`scheduler`] order and the run loop, [`executor`] worker
//! processes ([`python`] the shipped Python worker of the torch and diffusers engines,
//! [`miopen`] MIOpen's log lines), [`protocol`] the parent <-> worker wire format,
//! [`inputs`] the weights and clips the parent writes once, [`worker`] the in-process
//! measurement (with [`clip`] its input, [`fault`] the testing hook, [`memory`] process
//! memory), [`outputs`] the outputs file and quality against references, [`progress`] the
//! progress bar. The end-of-run table and the exports are [`crate::export`]'s.
//!
//! Must not: hold model code or render exports (those are `model` and `export`).
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use crate::error::UserError;
use crate::report::{CaseStatus, Report, RunSettings};
use crate::weights::WeightsSource;

pub mod budgets;
pub mod clip;
pub mod config;
pub mod executor;
pub mod fault;
pub mod input;
pub mod inputs;
pub mod interrupt;
pub mod matrix;
pub mod memory;
pub mod miopen;
pub mod options;
pub mod outputs;
pub mod plan;
pub mod progress;
pub mod protocol;
pub mod python;
pub mod scheduler;
pub mod worker;

use crate::export::{CsvTable, ExportManager, Exporter, MarkdownTable, SvgChart, TextTable};
use options::{BenchOptions, MatrixFlags};
pub use scheduler::RECORD_ENV_VAR;
use scheduler::{RunWide, Scheduler};

/// Arguments of `wan-vae-bench run`. Every flag overrides the matrix file's value; list
/// flags take comma-separated values.
#[derive(Debug, Default, clap::Args)]
pub struct RunArgs {
    /// Matrix file (TOML); without it the built-in smoke matrix runs.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub flags: MatrixFlags,
    /// Also write the results table in Markdown to FILE (at the end of the run).
    #[arg(long = "export-markdown", value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write a bar chart of the results as SVG to FILE (at the end of the run).
    #[arg(long = "export-svg", value_name = "FILE")]
    pub export_svg: Option<PathBuf>,
    /// Also write one CSV row per case to FILE (at the end of the run).
    #[arg(long = "export-csv", value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write the JSON report to FILE: the same as -o/--output.
    #[arg(long = "export-json", value_name = "FILE", conflicts_with = "output")]
    pub export_json: Option<PathBuf>,
    /// The answer's quality floor: the PSNR against the fp32 untiled reference a case needs
    /// to be recommended, dB [default: 40].
    #[arg(long = "min-psnr", value_name = "DB", value_parser = crate::answer::min_psnr_flag)]
    pub min_psnr: Option<f64>,
    /// Keep the run's scratch directory with every case's outputs (`<case id>.outputs.safetensors`,
    /// f32 tensors `latent` and `decoded`) and print its path; by default it is removed.
    #[arg(long = "keep-outputs")]
    pub keep_outputs: bool,
    /// Print the planned cases (id, passes, GFLOP per pass, total) and exit without running.
    #[arg(long)]
    pub list: bool,
    /// Largest matrix accepted (default 10000): a bigger one is refused before it is built.
    #[arg(long = "max-cases", value_name = "N")]
    pub max_cases: Option<u64>,
}

/// Arguments of the hidden `worker` command.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The case to run, as [`protocol::WorkerSpec`] JSON.
    #[arg(long = "case-json")]
    pub case_json: String,
    /// Where to write the [`protocol::WorkerResult`] JSON.
    #[arg(long)]
    pub result: PathBuf,
}

/// The matrix file (or the smoke matrix) with the flags applied.
pub fn options_from_args(args: &RunArgs) -> anyhow::Result<BenchOptions> {
    let mut opts = match &args.config {
        Some(path) => config::load(path)?,
        None => config::smoke(),
    };
    opts.apply(&args.flags)?;
    opts.output = args.export_json.clone().or(opts.output);
    Ok(opts)
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

/// `wan-vae-bench run`: set up (options; the matrix size, the outputs and the weights
/// checked before anything runs; the output locked; cases expanded and ordered; the
/// report's header written), let the [`Scheduler`] run every case, check the budgets, then
/// print the table and write the exports. A SIGINT or SIGTERM stops the run cleanly
/// ([`interrupt`]); the exit code is then 128 + the signal number.
pub fn run_command(args: RunArgs) -> anyhow::Result<i32> {
    let mut opts = options_from_args(&args)?;
    // With `--input` the frames and size come from the file, so the plan is checked once
    // the input is read (below); otherwise here, before anything else.
    if opts.input.is_none() {
        if let Some(code) = check_plan(&opts, &args)? {
            return Ok(code);
        }
    }
    let system = crate::system::collect();
    let output = opts
        .output
        .clone()
        .unwrap_or_else(|| default_output(system.hostname.as_deref()));
    // Every output is checked before the first case, not after an hour of measuring.
    crate::files::check_output(&output, "report")?;
    for (flag, path) in [
        ("--export-markdown", &args.export_markdown),
        ("--export-svg", &args.export_svg),
        ("--export-csv", &args.export_csv),
    ] {
        if let Some(p) = path {
            crate::files::check_output(p, &format!("{flag} file"))?;
        }
    }
    let _lock = crate::lock::OutputLock::acquire(&output)?;
    // Resolved once, in the parent (a hub download happens here, not in every worker).
    let resolved = crate::weights::source::resolve(&opts.weights)?;
    let mut model = resolved.info;
    if let WeightsSource::File(path) = &resolved.source {
        // Header, key layout and shapes, once, without loading the data.
        let header = crate::weights::header::check_file(path)?;
        model.params = header.checked.params;
        model.dim = header.checked.config.dim;
        model.z_dim = header.checked.config.z_dim;
        model.on_disk_dtype = dtype_names(&header.checked.on_disk_dtypes);
    }
    // The model (from the file's shapes, or --model for synthetic weights) decides the size
    // and tile rules: check every case before starting any.
    let model_cfg = crate::weights::resolve_config(&resolved.source, opts.model)?;
    // Read and checked once, in the parent, against the model's config; the workers get
    // the checked tensor as a file.
    let input = match &opts.input {
        None => None,
        Some(path) => {
            let file = input::load(path, opts.input_tensor.as_deref(), &model_cfg)?;
            apply_input(&mut opts, &args.flags, &file)?;
            if let Some(code) = check_plan(&opts, &args)? {
                return Ok(code);
            }
            Some(file)
        }
    };
    let mut cases = matrix::expand(&opts);
    for case in &cases {
        model_cfg.check_size(case.settings.width, case.settings.height)?;
        if let Some(t) = &case.settings.tiling {
            model_cfg.check_tiling(t)?;
        }
    }
    matrix::add_references(&mut cases);
    let added = cases.iter().filter(|c| c.added_as_reference).count();
    let seed = scheduler::schedule(&mut cases, opts.order, opts.seed);
    let created_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut report = Report {
        schema_version: crate::report::SCHEMA_VERSION,
        tool: crate::tool::this_tool(),
        created_at,
        system,
        model,
        run: RunSettings {
            device: opts.device.clone(),
            warmup: opts.warmup,
            runs: opts.runs,
            timeout_s: opts.timeout_s,
            order: opts.order.name().to_string(),
            shuffle_seed: seed,
            config_path: opts.config_path.as_ref().map(|p| p.display().to_string()),
            interrupted: None,
            input: input.as_ref().map(|i| i.record.clone()),
            python: cases
                .iter()
                .any(|c| c.settings.engine.is_python())
                .then(|| opts.python()),
            torch_precision: opts.torch_precision.map(|p| p.name().to_string()),
        },
        cases: Vec::new(),
        engines: Default::default(),
        summary: None,
    };
    report
        .save_atomic(&output)
        .with_context(|| format!("cannot write the report {}", output.display()))?;

    interrupt::install()?;
    let mut executor = executor::Executor::new(Duration::from_secs_f64(opts.timeout_s))?;
    executor.keep = args.keep_outputs;
    let worker_input = match &input {
        Some(file) => Some(file.save(&executor.scratch.join("input.safetensors"))?),
        None => None,
    };
    drop(input);
    let shared = if cases.iter().any(|c| c.settings.engine.is_python()) {
        executor.prepare_python(opts.python())?;
        // Every engine reads the same weights and clips, written once here.
        inputs::write_shared(&executor.scratch, &resolved.source, Some(model_cfg.kind()), &cases)?
    } else {
        inputs::Shared::default()
    };
    let progress = progress::Progress::new(cases.len(), opts.quiet);
    let run_wide = RunWide {
        weights: resolved.source,
        model: Some(model_cfg.kind()),
        device: opts.device.clone(),
        warmup: opts.warmup,
        runs: opts.runs,
        input: worker_input,
        weights_path: shared.weights_path,
        inputs_dir: shared.inputs_dir,
        torch_precision: opts.torch_precision,
    };
    let total = cases.len();
    let mut scheduler = Scheduler::new(cases, run_wide, executor, progress);
    let added_note = match added {
        0 => String::new(),
        n => format!(" ({n} added as quality reference{})", if n == 1 { "" } else { "s" }),
    };
    match seed {
        Some(s) => scheduler.println(&format!("{total} cases{added_note}, shuffled with seed {s}")),
        None if added > 0 => scheduler.println(&format!("{total} cases{added_note}")),
        None => {}
    }
    let signal = scheduler.run(&mut report, &output)?;
    // Budgets are checked once every case (and its quality) is known; cases added only
    // as quality references are not the user's and get none.
    if !opts.budgets.is_empty() {
        for rec in report.cases.iter_mut().filter(|c| !c.added_as_reference) {
            rec.budgets = budgets::check(&opts.budgets, rec);
        }
        report.save_atomic(&output)?;
    }
    crate::answer::attach(&mut report, &output, args.min_psnr)?;
    print!("{}", TextTable.render(&report)?);
    print!("{}", budgets::render(&report.cases));
    let broken = budgets::broken(&report.cases);
    for line in &broken {
        println!("budget broken: {line}");
    }
    println!("report: {}", output.display());
    let mut exports = ExportManager::default();
    exports.add(MarkdownTable, args.export_markdown.as_deref());
    exports.add(SvgChart, args.export_svg.as_deref());
    exports.add(CsvTable, args.export_csv.as_deref());
    exports.write_all(&report)?;
    if args.keep_outputs {
        println!("outputs: {}", scheduler.executor.scratch.display());
    }
    if let Some(sig) = signal {
        eprintln!(
            "interrupted by {}: {} of {total} case(s) measured; report finalized",
            interrupt::name(sig),
            report.cases.len()
        );
        return Ok(128 + sig);
    }
    let all_ok = report.cases.iter().all(|c| c.status == CaseStatus::Ok);
    Ok(if all_ok && broken.is_empty() { 0 } else { 1 })
}

/// Frames and size come from the input file: a `--frames`/`--size` that disagrees is an
/// error naming both; a latent can only be decoded.
fn apply_input(opts: &mut BenchOptions, flags: &MatrixFlags, file: &input::InputFile) -> anyhow::Result<()> {
    let path = file.record.path.as_str();
    let what = format!(
        "--input {path} (tensor `{}` {:?}: {} frames at {}x{})",
        file.record.tensor, file.record.shape, file.frames, file.width, file.height
    );
    if !flags.frames.is_empty() && flags.frames != [file.frames] {
        let given: Vec<String> = flags.frames.iter().map(|f| f.to_string()).collect();
        return Err(UserError::Other(format!(
            "--frames {} conflicts with {what}: frames come from the input; drop --frames",
            given.join(",")
        ))
        .into());
    }
    if !flags.size.is_empty() && flags.size != [(file.width, file.height)] {
        let given: Vec<String> = flags.size.iter().map(|(w, h)| format!("{w}x{h}")).collect();
        return Err(UserError::Other(format!(
            "--size {} conflicts with {what}: the size comes from the input; drop --size",
            given.join(",")
        ))
        .into());
    }
    if file.is_latent {
        if let Some(p) = opts.axes.passes.iter().find(|p| p.encodes()) {
            return Err(UserError::Other(format!(
                "{what} is a latent, which can only be decoded, but passes includes `{}`: use --passes decode",
                p.name()
            ))
            .into());
        }
    }
    opts.axes.frames = vec![file.frames];
    opts.axes.sizes = vec![(file.width, file.height)];
    Ok(())
}

/// The matrix size limit, the frame-count warning, and `--list` (which ends the command:
/// `Some(0)`), on the matrix as it will run.
fn check_plan(opts: &BenchOptions, args: &RunArgs) -> anyhow::Result<Option<i32>> {
    plan::check_size(opts, args.max_cases.unwrap_or(plan::DEFAULT_MAX_CASES))?;
    if let Some(w) = plan::frames_warning(opts) {
        eprintln!("{w}");
    }
    if args.list {
        let (cfg, note) = list_config(&opts.weights, opts.model)?;
        print!("{}", plan::list(opts, &cfg, &note));
        return Ok(Some(0));
    }
    Ok(None)
}

/// `f32`, or several on-disk dtypes joined by `+` (as the workers report it).
fn dtype_names(dtypes: &[candle_core::DType]) -> String {
    dtypes.iter().map(|d| d.as_str()).collect::<Vec<_>>().join("+")
}

/// The model config `run --list` costs the cases with: the checkpoint's when it is local
/// (or already in the Hub cache), else the Wan 2.1 VAE's, said in the returned note. Never
/// downloads.
fn list_config(
    reference: &str,
    model: Option<crate::model::ModelKind>,
) -> anyhow::Result<(crate::model::Config, String)> {
    use crate::weights::source::{self, WeightsRef};
    let path = match source::parse(reference)? {
        WeightsRef::Synthetic => None,
        WeightsRef::Local(p) => Some(p),
        WeightsRef::Hub(h) => source::hub::lookup_cache(&source::HubSettings::from_env().cache_dir, &h)
            .ok()
            .map(|hit| hit.path),
    };
    let asked = model.unwrap_or(crate::model::ModelKind::Wan21);
    Ok(match path {
        None if reference.trim().eq_ignore_ascii_case("synthetic") => (asked.config(), String::new()),
        None => (
            asked.config(),
            format!(" (weights not in the cache: costed as the {})", asked.title()),
        ),
        Some(p) => (crate::weights::header::check_file(&p)?.checked.config, String::new()),
    })
}

/// `wan-vae-bench worker` (hidden): run one case, write its result JSON.
pub fn worker_command(args: WorkerArgs) -> anyhow::Result<i32> {
    let spec: protocol::WorkerSpec = serde_json::from_str(&args.case_json)
        .map_err(|e| UserError::invalid("--case-json", &args.case_json, e.to_string()))?;
    let result = worker::run(&spec);
    crate::files::write_atomic(&args.result, serde_json::to_string_pretty(&result)?)?;
    Ok(result.exit_code())
}
