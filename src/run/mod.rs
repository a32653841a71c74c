//! How a run runs: the `run` command ([`crate::cli::run`]) takes its flags and matrix file
//! to a checked plan ([`crate::plan`]), then this room measures it and writes the report.
//! The data flow, in order: the plan's cases -> [`rounds`] (the visits: interleaved rounds
//! or blocks) -> [`scheduler`] (the run loop over the visits, pacing, [`visits`] adding a
//! case's visits up)
//! -> [`executor`] (a case in a worker process: [`pool`] of [`live_worker`]s, leased per
//! engine and env variant; [`blame`] says whose a death is; [`scratch`] the run's folder;
//! MIOpen's lines read by `crate::rocm`; [`gemm_log`] hipBLASLt's log file) -> [`outputs`]
//! (the outputs files, quality against references) -> the report, rewritten after every
//! case. Beside it: [`telemetry`] (the device's clock, temperature and power while a case
//! runs), [`profile_pass`] (the extra profiled pass of `--profile`), [`oom`] (what did not
//! fit, in words), [`progress`] (the bar), [`measured`] (the line above the results table),
//! [`tool_env`] (the tool's own variables that alter a run); and [`validate`], the golden
//! cases' checks and the Python worker's validate mode. SIGINT/SIGTERM are
//! [`crate::util::interrupt`]'s.
//!
//! Must not: decide what a run will do (that is [`crate::plan`], checked before anything here
//! starts), hold model code, know what an engine is beyond its `engine::EngineSpec`, or render
//! exports (`model`, `engine` and `analysis::export`).
use std::time::Duration;

use crate::engine::protocol::RunSpec;
use crate::engine::shared_files;
use crate::plan::matrix::Case;
use crate::plan::options::BenchOptions;
use crate::plan::ready::Plan;
use crate::report::profile::options::ProfileArgs;
use crate::report::values::Isolate;
use crate::report::{Report, RunSettings};

pub mod blame;
pub mod executor;
pub mod gemm_log;
pub mod live_worker;
pub mod measured;
pub mod oom;
pub mod outputs;
pub mod pool;
pub mod profile_pass;
pub mod progress;
pub mod rounds;
pub mod scheduler;
pub mod scratch;
pub mod telemetry;
pub mod tool_env;
pub mod validate;
pub mod visits;

use scheduler::RunWide;
pub use scheduler::RECORD_ENV_VAR;

/// How the workers are started, beyond the plan: `run`'s flags for them.
#[derive(Debug, Clone, Default)]
pub struct WorkerFlags {
    /// `--keep-outputs`: the scratch folder with every case's outputs is kept.
    pub keep_outputs: bool,
    /// `--show-output`: the workers' output is passed through.
    pub show_output: bool,
    /// `--isolate`: a worker per engine and env variant, or a process per case.
    pub isolate: Isolate,
    /// `--fault-hooks` (testing only).
    pub fault_hooks: bool,
    /// `--profile`, `--export-trace`.
    pub profile: ProfileArgs,
}

/// This process's arguments (the program as `wan-vae-bench`; lossy where not UTF-8).
pub fn command_words() -> Vec<String> {
    std::env::args_os()
        .enumerate()
        .map(|(i, a)| match i {
            0 => "wan-vae-bench".to_string(),
            _ => a.to_string_lossy().into_owned(),
        })
        .collect()
}

/// The report before any case ran.
pub fn new_report(plan: &Plan, system: crate::machine::system::SystemInfo, fault_hooks: bool) -> Report {
    let opts = &plan.opts;
    let created_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    Report {
        schema_version: crate::report::SCHEMA_VERSION,
        tool: crate::machine::tool::this_tool(),
        created_at,
        system,
        model: plan.model.info.clone(),
        run: RunSettings {
            device: opts.device.clone(),
            warmup: opts.warmup,
            runs: opts.runs,
            timeout_s: opts.timeout_s,
            order: opts.order.name().to_string(),
            shuffle_seed: plan.seed,
            config_path: opts.config_path.as_ref().map(|p| p.display().to_string()),
            input: plan.input.as_ref().map(|i| i.record.clone()),
            python: plan.runs_python().then(|| opts.python()),
            torch_precision: opts.torch_precision.map(|p| p.name().to_string()),
            fault_hooks,
            command: command_words(),
            env_variants: plan.env_variants(),
            schedule: opts.schedule.name().to_string(),
            round_runs: (opts.schedule == crate::report::values::Schedule::Rounds).then_some(opts.round_runs),
            ..Default::default()
        },
        cases: Vec::new(),
        engines: Default::default(),
        summary: None,
    }
}

/// The executor (the run's scratch folder) and what every worker spec shares: the user's
/// input saved for the workers and, when the Python worker takes part, the worker's files
/// and the weights and clips every engine reads, written once.
pub fn start_workers(
    plan: Plan,
    args: &WorkerFlags,
) -> anyhow::Result<(executor::Executor, RunWide, BenchOptions, Vec<Case>)> {
    let (clips, python) = (plan.clip_sizes(), plan.runs_python());
    let Plan {
        opts,
        model,
        input,
        cases,
        ..
    } = plan;
    let mut executor = executor::Executor::new(Duration::from_secs_f64(opts.timeout_s))?;
    executor.keep = args.keep_outputs;
    executor.show_output = args.show_output;
    executor.isolate_cases = args.isolate == Isolate::Case;
    if args.fault_hooks {
        executor.use_fault_hooks();
    }
    let worker_input = match &input {
        Some(file) => Some(file.save(&executor.scratch.join("input.safetensors"))?),
        None => None,
    };
    drop(input);
    let kind = Some(model.cfg.kind());
    let shared = if python {
        executor.prepare_python(opts.python())?;
        shared_files::write_shared(&executor.scratch, &model.source, kind, clips)?
    } else {
        shared_files::Shared::default()
    };
    let run_wide = RunWide {
        spec: RunSpec {
            weights: model.source,
            model: kind,
            device: opts.device.clone(),
            warmup: opts.warmup,
            runs: opts.runs,
            weights_path: shared.weights_path,
            torch_precision: opts.torch_precision,
            fault_hooks: args.fault_hooks,
        },
        input: worker_input,
        inputs_dir: shared.inputs_dir,
        profile: args.profile.request()?,
        engine_dirs: opts.engine_dirs.clone(),
    };
    Ok((executor, run_wide, opts, cases))
}
