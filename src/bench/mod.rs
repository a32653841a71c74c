//! The benchmark run: `run` (matrix -> shuffled cases -> one worker process per case ->
//! report rewritten after every case -> summary table) and the hidden `worker` command.
//! `docs/architecture.md` draws the data flow.
//!
//! Sub-modules: [`options`] typed options and flags, [`config`] the TOML matrix file,
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

pub mod clip;
pub mod config;
pub mod executor;
pub mod fault;
pub mod inputs;
pub mod matrix;
pub mod memory;
pub mod miopen;
pub mod options;
pub mod outputs;
pub mod progress;
pub mod protocol;
pub mod python;
pub mod scheduler;
pub mod worker;

use crate::export::{ExportManager, Exporter, MarkdownTable, SvgChart, TextTable};
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
    /// Keep the run's scratch directory with every case's outputs (`<case id>.outputs.safetensors`,
    /// f32 tensors `latent` and `decoded`) and print its path; by default it is removed.
    #[arg(long = "keep-outputs")]
    pub keep_outputs: bool,
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

/// `wan-vae-bench run`: set up (options, weights resolved once, cases expanded and ordered,
/// the report's header written), let the [`Scheduler`] run every case, then print the table
/// and write the exports.
pub fn run_command(args: RunArgs) -> anyhow::Result<i32> {
    let opts = options_from_args(&args)?;
    // Resolved once, in the parent (a hub download happens here, not in every worker).
    let resolved = crate::weights::source::resolve(&opts.weights)?;
    let mut cases = matrix::expand(&opts);
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
        tool: crate::tool::this_tool(),
        created_at,
        system,
        model: resolved.info,
        run: RunSettings {
            device: opts.device.clone(),
            warmup: opts.warmup,
            runs: opts.runs,
            timeout_s: opts.timeout_s,
            order: opts.order.name().to_string(),
            shuffle_seed: seed,
            config_path: opts.config_path.as_ref().map(|p| p.display().to_string()),
            python: cases
                .iter()
                .any(|c| c.settings.engine.is_python())
                .then(|| opts.python()),
            torch_precision: opts.torch_precision.map(|p| p.name().to_string()),
        },
        cases: Vec::new(),
        engines: Default::default(),
    };
    report
        .save_atomic(&output)
        .with_context(|| format!("cannot write the report {}", output.display()))?;

    let mut executor = executor::Executor::new(Duration::from_secs_f64(opts.timeout_s))?;
    executor.keep = args.keep_outputs;
    let shared = if cases.iter().any(|c| c.settings.engine.is_python()) {
        executor.prepare_python(opts.python())?;
        // Every engine reads the same weights and clips, written once here.
        inputs::write_shared(&executor.scratch, &resolved.source, &cases)?
    } else {
        inputs::Shared::default()
    };
    let progress = progress::Progress::new(cases.len(), opts.quiet);
    let run_wide = RunWide {
        weights: resolved.source,
        device: opts.device.clone(),
        warmup: opts.warmup,
        runs: opts.runs,
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
    scheduler.run(&mut report, &output)?;
    print!("{}", TextTable.render(&report)?);
    println!("report: {}", output.display());
    let mut exports = ExportManager::default();
    exports.add(MarkdownTable, args.export_markdown.as_deref());
    exports.add(SvgChart, args.export_svg.as_deref());
    exports.write_all(&report)?;
    if args.keep_outputs {
        println!("outputs: {}", scheduler.executor.scratch.display());
    }
    let all_ok = report.cases.iter().all(|c| c.status == CaseStatus::Ok);
    Ok(if all_ok { 0 } else { 1 })
}

/// `wan-vae-bench worker` (hidden): run one case, write its result JSON.
pub fn worker_command(args: WorkerArgs) -> anyhow::Result<i32> {
    let spec: protocol::WorkerSpec = serde_json::from_str(&args.case_json)
        .map_err(|e| UserError::invalid("--case-json", &args.case_json, e.to_string()))?;
    let result = worker::run(&spec);
    crate::files::write_atomic(&args.result, serde_json::to_string_pretty(&result)?)?;
    Ok(result.exit_code())
}
