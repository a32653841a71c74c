//! `wan-vae-bench run`: the flags and matrix file become a checked plan ([`crate::plan`]),
//! the run measures it ([`crate::run`]: the scheduler writes the report after each case),
//! then the budgets, the table, the answer ([`crate::analysis::answer`]), the exports and
//! the ROCm bundle, and the exit code (0 every case ok or allowed, 1 not, 2 unusable input
//! before anything ran, 128 + N after signal N).
use std::path::{Path, PathBuf};

use crate::analysis::export::{Exporter, TextTable};
use crate::engine::EngineDirs;
use crate::plan::options::BenchOptions;
use crate::plan::ready::{self, Checked, Plan, Request};
use crate::plan::{budgets, check, config, env_sweep, flags, run_files, weights_choice};
use crate::report::{CaseStatus, Report};
use crate::run::scheduler::{self, Scheduler};
use crate::run::{measured, new_report, scratch, start_workers, telemetry, tool_env, WorkerFlags};
use crate::util::error::UserError;
use crate::util::interrupt;

/// Arguments of `wan-vae-bench run`. Every flag overrides the matrix file's value; list
/// flags take comma-separated values.
#[derive(Debug, Default, clap::Args)]
pub struct RunArgs {
    /// Matrix file (TOML); without it the built-in smoke matrix runs.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub flags: flags::MatrixFlags,
    #[command(flatten)]
    pub exports: crate::analysis::export::RunExports,
    /// Write the JSON report to FILE: the same as -o/--output (`-`: on stdout, as --json).
    #[arg(long = "export-json", value_name = "FILE", conflicts_with = "output")]
    pub export_json: Option<PathBuf>,
    /// The answer's quality floor: the PSNR against the fp32 untiled reference a case needs
    /// to be recommended, dB [default: 40].
    #[arg(long = "min-psnr", value_name = "DB", value_parser = crate::analysis::answer::min_psnr_flag)]
    pub min_psnr: Option<f64>,
    /// Case statuses that do not make the run exit 1 (comma-separated, repeatable): any of
    /// unsupported, oom, timeout, failed. A broken budget still exits 1.
    #[arg(long = "allow-status", value_name = "STATUS,...", value_delimiter = ',', value_parser = flags::allow_status_flag)]
    pub allow_status: Vec<CaseStatus>,
    /// Print the JSON report on stdout at the end, as the other commands' --json do; the
    /// table, the answer and every message go to stderr. The report file is written as usual.
    #[arg(long)]
    pub json: bool,
    /// Keep the run's scratch directory with every case's outputs (`<case id>-<hash>.outputs.safetensors`,
    /// f32 tensors `latent` and `decoded`) and print its path; by default it is removed.
    #[arg(long = "keep-outputs")]
    pub keep_outputs: bool,
    /// Write the ROCm logs of the cases (MIOpen's problems and solvers, hipBLASLt's GEMMs)
    /// into DIR, a new or empty folder, as `logs --bundle` does: what ROCm/TheRock #2591 asks
    /// for (docs/rocm.md; configs/therock-2591-logs.toml sets the variables).
    #[arg(long = "export-rocm-bundle", value_name = "DIR")]
    pub export_rocm_bundle: Option<PathBuf>,
    /// Print the planned cases (id, passes, GFLOP per pass, total) and exit without running.
    #[arg(long)]
    pub list: bool,
    /// `worker` (default): the cases of one engine and env variant share a worker process,
    /// which imports and loads the model once (a shuffled order is grouped by worker,
    /// shuffled within and between groups); `case`: one fresh process per case, each paying
    /// the start-up again.
    #[arg(long, value_enum, default_value_t = crate::report::values::Isolate::Worker)]
    pub isolate: crate::report::values::Isolate,
    /// Largest matrix accepted (default 10000): a bigger one is refused before it is built.
    #[arg(long = "max-cases", value_name = "N")]
    pub max_cases: Option<u64>,
    /// The folders of engines that run the user's own install (one flag per such engine).
    #[command(flatten)]
    pub engine_dirs: EngineDirs,
    #[command(flatten)]
    pub profile: crate::report::profile::options::ProfileArgs,
    /// Testing only: let the workers act on `WAN_VAE_BENCH_FAULT` (recorded in the report's
    /// `run.fault_hooks`); without it they ignore the variable.
    #[arg(long = "fault-hooks", hide = true)]
    pub fault_hooks: bool,
}

/// The matrix file (or the smoke matrix) with the flags applied.
pub fn options_from_args(args: &RunArgs) -> anyhow::Result<BenchOptions> {
    // Before any variant is built: a product of sweeps can be astronomically large.
    let max_cases = args.max_cases.unwrap_or(check::DEFAULT_MAX_CASES);
    env_sweep::check_count(&args.flags.env_var, max_cases).map_err(UserError::Other)?;
    let mut opts = match &args.config {
        Some(path) => config::load(path)?,
        // The smoke matrix's `synthetic` is a default, not the user's choice.
        None => BenchOptions {
            weights_given: false,
            ..config::smoke()
        },
    };
    opts.apply(&args.flags)?;
    opts.output = args.export_json.clone().or(opts.output);
    // An engine folder: its flag, else the matrix file's `[model]` key, else the environment.
    opts.engine_dirs = args
        .engine_dirs
        .clone()
        .or(&opts.engine_dirs)
        .or(&EngineDirs::from_env());
    Ok(opts)
}

/// `run`'s help with the defaults written out: without `-c` the built-in smoke matrix's
/// values, with a matrix file the file's (and, where it is silent, the axis default).
pub fn with_defaults(cmd: clap::Command) -> clap::Command {
    let smoke = config::smoke();
    let file = config::parse("").expect("an empty matrix file is valid");
    let note = |smoke: String, file: String| {
        if smoke == file {
            format!(" [default: {smoke}]")
        } else {
            format!(" [default: {smoke} (smoke matrix); with -c, the file's, else {file}]")
        }
    };
    cmd.mut_subcommand("run", |mut run| {
        for axis in crate::plan::axes::AXES {
            let text = note(smoke.axes.get(axis).join(","), file.axes.get(axis).join(","));
            run = run.mut_arg(axis.key, |a| {
                let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                a.help(help + &text)
            });
        }
        let scalars = [
            ("warmup", smoke.warmup.to_string(), file.warmup.to_string()),
            ("runs", smoke.runs.to_string(), file.runs.to_string()),
            ("timeout_s", smoke.timeout_s.to_string(), file.timeout_s.to_string()),
        ];
        for (id, s, f) in scalars {
            let text = note(s, f);
            run = run.mut_arg(id, |a| {
                let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
                a.help(help + &text)
            });
        }
        run
    })
}

/// The `-o`/`--export-json` value that means stdout: the run then behaves as with `--json`.
pub const STDOUT: &str = "-";

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

/// `wan-vae-bench run`: set up (options; the matrix size, the outputs, the weights and the
/// memory the parent's clips need checked before anything runs; the output locked; cases
/// expanded and ordered), let the [`Scheduler`] run every case (the report is written after
/// each), check the budgets, then print the table and write the exports. A SIGINT or
/// SIGTERM stops the run cleanly ([`interrupt`]); the exit code is then 128 + the signal
/// number, and an existing report is left as it was when no case had finished.
pub fn command(mut args: RunArgs) -> anyhow::Result<i32> {
    let mut opts = run_options(&mut args)?;
    let request = Request {
        flags: &args.flags,
        max_cases: args.max_cases.unwrap_or(check::DEFAULT_MAX_CASES),
        list: args.list,
        shard: args.flags.shard,
        export_trace: args.profile.export_trace.as_deref(),
        fault_hooks: args.fault_hooks,
    };
    // With `--input` the frames and size come from the file, so the matrix is checked once
    // the input is read (`Plan::build`); otherwise here, before anything else.
    if opts.input.is_none() {
        if let Checked::Listed(text) = ready::check_matrix(&opts, &request)? {
            crate::out!("{text}");
            return Ok(0);
        }
    }
    scratch::check_temp_folder(&std::env::temp_dir())?;
    let mut isolate = args.isolate;
    if let Some(note) = opts.budgets.isolate_for_peak_rss(&mut isolate) {
        crate::errln!("{note}");
    }
    // Before the system facts are read: one of them may say where they come from.
    let overrides = tool_env::collect()?;
    let system = crate::machine::system::collect();
    let output = opts
        .output
        .clone()
        .unwrap_or_else(|| default_output(system.hostname.as_deref()));
    // The ComfyUI folder's own VAE is found first: it is an input the outputs may not be.
    weights_choice::own_weights(&mut opts)?;
    check_outputs(&opts, &args, &output)?;
    let _lock = crate::util::lock::OutputLock::acquire(&output)?;
    // Each export too: it may name the report another run is writing.
    let exports: Vec<&Path> = args.exports.files().into_iter().filter_map(|(_, p)| p).collect();
    let _export_locks = exports
        .iter()
        .map(|p| crate::util::lock::OutputLock::acquire(p))
        .collect::<Result<Vec<_>, _>>()?;
    let locks: Vec<_> = std::iter::once(output.as_path())
        .chain(exports)
        .map(crate::util::lock::OutputLock::path_for)
        .collect();
    let _setup = interrupt::guard_setup(&locks)?;
    // An existing report stays as it was until a case has finished.
    let old_report = std::fs::symlink_metadata(&output).is_ok();
    let model = weights_choice::ResolvedModel::resolve(&opts)?;
    let mut plan = match Plan::build(opts, model, &request)? {
        Ok(plan) => plan,
        Err(listing) => {
            crate::out!("{listing}");
            return Ok(0);
        }
    };
    args.isolate = isolate;
    // A case forecast past its timeout (from this machine's earlier reports) is said now,
    // not found after the timeout.
    let rates = crate::plan::forecast::Rates::read(&crate::plan::forecast::folders(Some(&output)), &system);
    let planned: Vec<_> = plan.cases.iter().map(|c| (c.id.clone(), c.settings.clone())).collect();
    let o = &plan.opts;
    if let Some(w) = crate::plan::forecast::past_timeout(
        &rates,
        &plan.model.cfg,
        &planned,
        &o.device,
        o.warmup + o.runs,
        o.timeout_s,
    ) {
        crate::errln!("{w}");
    }
    // In blocks, a shuffled order is grouped by worker (an order as written stays as written:
    // a worker then ends wherever the next case needs another); in rounds, each round has an
    // order of its own (`run::rounds`).
    if plan.opts.schedule == crate::report::values::Schedule::Blocks
        && args.isolate == crate::report::values::Isolate::Worker
        && plan.opts.order == crate::report::values::Order::Shuffled
    {
        crate::run::rounds::order_blocks(&mut plan.cases);
    }
    let kind = plan.model.cfg.kind();
    let mut report = new_report(&plan, system, args.fault_hooks);
    (report.run.overrides, report.run.shard) = (overrides, plan.shard.take());
    report.run.isolate = args.isolate.name().to_string();
    interrupt::install()?;
    crate::util::process::become_subreaper();
    let flags = WorkerFlags {
        keep_outputs: args.keep_outputs,
        show_output: args.flags.show_output,
        isolate: args.isolate,
        fault_hooks: args.fault_hooks,
        profile: args.profile.clone(),
    };
    let (executor, run_wide, opts, cases) = start_workers(plan, &flags)?;
    // The report is first written once a case has finished: a failed set-up, or a signal
    // before the first case ends, leaves an existing report as it was (the scheduler checks
    // for a signal that came during set-up before it starts a case).
    let total = cases.len();
    let added = cases.iter().filter(|c| c.added_as_reference).count();
    let timing = scheduler::Timing {
        schedule: opts.schedule,
        round_runs: opts.round_runs,
        seed: report.run.shuffle_seed,
    };
    let mut scheduler = Scheduler::new(cases, run_wide, executor, timing, opts.quiet);
    scheduler.old_report = old_report;
    scheduler.pacing = scheduler::Pacing {
        telemetry_ms: args.flags.telemetry_ms.unwrap_or(telemetry::DEFAULT_INTERVAL_MS),
        cooldown_s: args.flags.cooldown.unwrap_or(0.0),
        wait_temp_c: args.flags.wait_temp,
    };
    if let Some(line) = cases_line(total, added, report.run.shuffle_seed) {
        scheduler.println(&line);
    }
    let signal = scheduler.run(&mut report, &output)?;
    let scratch = args.keep_outputs.then(|| scheduler.executor.scratch.clone());
    let ended = Ended {
        signal,
        total,
        kept_scratch: scratch,
        model: kind,
        old_report,
    };
    finish(&opts, &args, &mut report, &output, ended)
}

/// The options of `run` with what the flags imply: `-o -` (the report on stdout, as
/// `--json`: hyperfine's `-` for stdout; the file the run rewrites after every case goes to
/// the default place), the engine folders checked, and an engine folder's own venv (ComfyUI's)
/// as the interpreter before the run-wide rule.
fn run_options(args: &mut RunArgs) -> anyhow::Result<BenchOptions> {
    let mut opts = options_from_args(args)?;
    if opts.output.as_deref() == Some(Path::new(STDOUT)) {
        opts.output = None;
        args.json = true;
    }
    opts.engine_dirs.check(opts.axes.engines())?;
    if opts.python.is_none() {
        if let Some(p) = opts.engine_dirs.venv_python(opts.axes.engines()) {
            opts.python = Some(p.display().to_string());
        }
    }
    Ok(opts)
}

/// The line above the progress: how many cases, how many were added as quality references,
/// and the shuffle seed; none for an unshuffled run with nothing added.
fn cases_line(total: usize, added: usize, seed: Option<u64>) -> Option<String> {
    let added_note = match added {
        0 => String::new(),
        n => format!(" ({n} added as quality reference{})", if n == 1 { "" } else { "s" }),
    };
    let cases = crate::util::format::count(total, "case");
    match seed {
        Some(s) => Some(format!("{cases}{added_note}, shuffled with seed {s}")),
        None if added > 0 => Some(format!("{cases}{added_note}")),
        None => None,
    }
}

/// How the scheduler's run ended.
struct Ended {
    /// The signal that stopped it, if one did.
    signal: Option<i32>,
    /// The cases it was to run.
    total: usize,
    /// The scratch folder, when `--keep-outputs` keeps it.
    kept_scratch: Option<PathBuf>,
    /// The model measured.
    model: crate::model::ModelKind,
    /// Whether a file was at the output before the run (left as it was when no case finished).
    old_report: bool,
}

/// Every output (report and exports) is checked before the first case, not after an hour
/// of measuring.
fn check_outputs(opts: &BenchOptions, args: &RunArgs, report: &Path) -> anyhow::Result<()> {
    // No output may be one of the run's inputs or another output.
    let exports = args.exports.files();
    run_files::check(opts, report, &exports)?;
    // Nor inside a folder the run fills, however spelled (links, `..`).
    let (trace, bundle) = (args.profile.export_trace.as_deref(), args.export_rocm_bundle.as_deref());
    run_files::folders(trace, bundle, report, &exports)?;
    crate::util::files::check_output(report, "report")?;
    if let Some(dir) = bundle {
        crate::rocm::bundle::check_for("--export-rocm-bundle", dir)?;
    }
    for (flag, path) in exports {
        if let Some(p) = path {
            crate::util::files::check_output(p, &format!("{flag} file"))?;
        }
    }
    Ok(())
}

/// After the last case: check the budgets (once every case and its quality is known; an added
/// reference too, since the answer may name it, though only the user's cases set the exit
/// code), print the table,
/// write the exports; the exit code.
fn finish(
    opts: &BenchOptions,
    args: &RunArgs,
    report: &mut Report,
    output: &Path,
    ended: Ended,
) -> anyhow::Result<i32> {
    if let (Some(sig), true) = (ended.signal, report.cases.is_empty()) {
        // Nothing was measured: no table, no exports, and an existing report untouched.
        let what = if ended.old_report {
            format!("{} was left as it was", output.display())
        } else {
            format!("report: {} (no case)", output.display())
        };
        crate::errln!(
            "interrupted by {} before any case finished: {what}",
            interrupt::name(sig)
        );
        if let Some(scratch) = &ended.kept_scratch {
            crate::errln!("outputs: {}", scratch.display());
        }
        return Ok(128 + sig);
    }
    if !opts.budgets.is_empty() {
        for rec in report.cases.iter_mut() {
            rec.budgets = budgets::check(&opts.budgets, rec);
        }
    }
    // The last save (budgets and the answer): if it fails (a full disk), every case is
    // still in the report as saved after it; say so, print what we have, and exit 1.
    let mut final_save_failed = None;
    if let Err(e) = crate::analysis::answer::attach(report, output, args.min_psnr) {
        crate::errln!(
            "error: the final write of {} failed ({e:#}): the file holds every case as saved after it ran, \
             without the budgets and the answer printed below; free space and rerun `merge` or `run` to get them",
            output.display()
        );
        final_save_failed = Some(e);
    }
    // With --json stdout holds the report alone; what people read goes to stderr.
    let mut text = String::new();
    text.push_str(&format!("{}\n", measured::line(report, ended.model)));
    text.push_str(&TextTable.render(report)?);
    text.push_str(&budgets::render(&report.cases));
    if let Some(line) = crate::report::load::busy_line(report, "this run") {
        text.push_str(&format!("warning: {line}\n"));
    }
    let broken = budgets::broken(&report.cases);
    for line in &broken {
        text.push_str(&format!("budget broken: {line}\n"));
    }
    text.push_str(&format!("report: {}\n", output.display()));
    if let Some(scratch) = &ended.kept_scratch {
        text.push_str(&format!("outputs: {}\n", scratch.display()));
    }
    if args.json {
        crate::err!("{text}");
    } else {
        crate::out!("{text}");
    }
    // The run measured: an export or the bundle that cannot be written after it is a
    // failure (exit 1), said after the report is printed, never unusable input (exit 2).
    let mut write_failed = Vec::new();
    if let Err(e) = args.exports.manager().write_all(report) {
        write_failed.push(e);
    }
    if let Some(dir) = &args.export_rocm_bundle {
        let logs = crate::rocm::bundle::from_cases(report.cases.iter().map(|c| (c.id.as_str(), &c.outcome)));
        if logs.files.is_empty() {
            crate::errln!(
                "--export-rocm-bundle {}: no case logged MIOpen or hipBLASLt lines (set MIOPEN_ENABLE_LOGGING_CMD=1 \
                 MIOPEN_LOG_LEVEL=5 and HIPBLASLT_LOG_MASK=32 in an env variant: configs/therock-2591-logs.toml); \
                 nothing written",
                dir.display()
            );
        } else {
            // A run stopped part way says so in its bundle: it holds the cases measured only.
            let partial = ended.signal.map(|sig| crate::rocm::bundle::Partial {
                cases_measured: report.cases.len(),
                cases_planned: ended.total,
                stopped_by: interrupt::name(sig),
            });
            match crate::rocm::bundle::write(dir, &logs, partial.as_ref()) {
                Ok(()) => crate::errln!("rocm bundle: {}", dir.display()),
                Err(e) => write_failed.push(e.context(format!("--export-rocm-bundle {}", dir.display()))),
            }
        }
    }
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(report)?);
    }
    for e in &write_failed {
        crate::errln!("error: {e:#}; the report {} holds every case", output.display());
    }
    if let Some(sig) = ended.signal {
        crate::errln!(
            "interrupted by {}: {} of {} case(s) measured; report finalized",
            interrupt::name(sig),
            report.cases.len(),
            ended.total
        );
        return Ok(128 + sig);
    }
    let all_ok = report
        .cases
        .iter()
        .all(|c| c.outcome.status == CaseStatus::Ok || args.allow_status.contains(&c.outcome.status));
    Ok(
        if all_ok && broken.is_empty() && final_save_failed.is_none() && write_failed.is_empty() {
            0
        } else {
            1
        },
    )
}
