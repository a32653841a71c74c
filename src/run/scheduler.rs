//! The scheduler: walks the run's visits ([`super::rounds`]: the cases of each workload in
//! interleaved rounds, the default, or each case in one block), runs each through the
//! executor with the parent's telemetry sampler and load meter beside it, adds it to its
//! case ([`super::visits`]), and rewrites the report after every visit: a case still in
//! rounds is recorded with the runs it has so far (nothing measured is lost to a crash or a
//! signal); a case is recorded for good, with its quality and its profile, once its last
//! round ran or a visit did not end `ok` (it then takes no further visit). [`Pacing`]
//! (`--cooldown`, `--wait-temp`) runs before each visit. A case its engine cannot run
//! ([`crate::engine::EngineSpec::unsupported`]) is recorded without starting a worker.
//! The inputs of decode-only cases are [`latents`]'; one visit is [`visit`]'s.
//!
//! Must not: parse options, spawn processes itself (the executor does) or render tables.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::executor::Executor;
use super::outputs::QualityBook;
use super::progress::Progress;
use super::rounds::{Schedule, Visit};
use super::telemetry::load::LoadMeter;
use super::visits::CaseVisits;
use crate::engine::protocol::{RunSpec, WorkerInput, WorkerResult, WorkerSpec};
use crate::engine::EngineDirs;
use crate::plan::matrix::Case;
use crate::report::settings::CaseSettings;
use crate::report::{CaseRecord, CaseStatus, Report};

mod latents;
mod visit;

/// Names extra variables for the workers to record in each case's `env`
/// (comma-separated); the variables `--env-var` sweeps are recorded anyway.
pub const RECORD_ENV_VAR: &str = "WAN_VAE_BENCH_RECORD_ENV";

/// What every case of the run shares.
#[derive(Debug, Clone)]
pub struct RunWide {
    /// The run-wide part of every worker spec (weights, model, device, warmup, runs, the
    /// shared weights file, the torch precision mode).
    pub spec: RunSpec,
    /// The user's input as the parent saved it for the workers (`--input`), if any.
    pub input: Option<WorkerInput>,
    /// The folder holding the input clips the parent wrote (one per frames x size), when
    /// an engine that reads files only runs; `None`: each worker builds its own clip.
    pub inputs_dir: Option<std::path::PathBuf>,
    /// The folders given for the engines that need one.
    pub engine_dirs: EngineDirs,
    /// `run --profile`: a profiled lease after each `ok` case ([`super::profile_pass`]).
    pub profile: Option<crate::report::profile::options::Profiling>,
}

impl RunWide {
    /// The input clip file of a case, when the parent wrote the clips.
    fn input_path(&self, s: &CaseSettings) -> Option<std::path::PathBuf> {
        let dir = self.inputs_dir.as_ref()?;
        Some(crate::engine::protocol::input_path(dir, s.frames, s.width, s.height))
    }
}

/// How the cases are timed (`run --schedule`, `--round-runs`, the seed of each round's order).
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    pub schedule: Schedule,
    /// Timed runs per visit in rounds.
    pub round_runs: usize,
    /// Seeds each round's order (none: the cases' order, every round).
    pub seed: Option<u64>,
}

/// Runs the cases of a report, visit by visit ([`super::rounds`]).
pub struct Scheduler {
    cases: Vec<Case>,
    run_wide: RunWide,
    timing: Timing,
    visits: Vec<Visit>,
    /// Each case's GFLOP per encode and decode pass (the progress's forecast).
    gflop: Vec<(f64, f64)>,
    meter: LoadMeter,
    /// The worker processes and the run's scratch directory.
    pub executor: Executor,
    progress: Progress,
    book: QualityBook,
    /// Latents prepared for decode-only cases, by (frames, width, height): the path, or
    /// why the untimed encode failed.
    prepared: BTreeMap<(usize, usize, usize), Result<WorkerInput, String>>,
    /// The engine that prepared them (`run.prepared_latents` in the report), once one did.
    latents_by: Option<String>,
    /// Whether a file was at the output before the run: a signal before any case finished
    /// then leaves it as it was (else the interrupted report with no case is written).
    pub old_report: bool,
    /// Telemetry, cool-down and temperature wait between cases.
    pub pacing: Pacing,
}

/// How the scheduler watches the device and paces the cases (`run --telemetry-ms`,
/// `--cooldown`, `--wait-temp`).
#[derive(Debug, Clone, Default)]
pub struct Pacing {
    /// Telemetry sampling interval, ms; 0: no telemetry.
    pub telemetry_ms: u64,
    /// Seconds to wait between cases.
    pub cooldown_s: f64,
    /// Before each case, wait until the device is below this temperature (°C).
    pub wait_temp_c: Option<f64>,
}

/// The longest `--wait-temp` waits before a case.
const MAX_TEMP_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

impl Scheduler {
    /// A scheduler over `cases` (already ordered, references and controls included), timed
    /// as `timing` says; `quiet` hides the progress display.
    pub fn new(cases: Vec<Case>, run_wide: RunWide, mut executor: Executor, timing: Timing, quiet: bool) -> Scheduler {
        let book = QualityBook::new(&cases, &run_wide.spec.device);
        let spec = &run_wide.spec;
        let visits = super::rounds::visits(
            &cases,
            timing.schedule,
            spec.warmup,
            spec.runs,
            timing.round_runs,
            timing.seed,
        );
        let cfg = spec.model.unwrap_or(crate::model::ModelKind::Wan21).config();
        let gflop: Vec<(f64, f64)> = cases
            .iter()
            .map(|c| {
                let s = &c.settings;
                crate::model::flops::passes_gflop(
                    &cfg,
                    s.passes.encodes(),
                    s.passes.decodes(),
                    s.frames,
                    s.width,
                    s.height,
                )
            })
            .collect();
        let (mut passes, mut total) = (0u64, 0.0);
        for v in &visits {
            let (e, d) = gflop[v.case];
            let s = &cases[v.case].settings;
            let per: u64 = u64::from(s.passes.encodes()) + u64::from(s.passes.decodes());
            passes += per * v.runs as u64;
            total += (e + d) * v.runs as f64;
        }
        executor.keep_workers(workers_needed(&cases, timing.schedule));
        let meter = LoadMeter::new(crate::engine::device_kind(&spec.device) == "cpu");
        Scheduler {
            progress: Progress::new(passes, total, quiet),
            cases,
            run_wide,
            timing,
            visits,
            gflop,
            meter,
            executor,
            book,
            prepared: BTreeMap::new(),
            latents_by: None,
            old_report: false,
            pacing: Pacing::default(),
        }
    }

    /// Before a case: the cool-down (not before the first), then the wait for the device to
    /// be below `--wait-temp`; a signal ends either at once. Returns what the wait found, for
    /// the case's telemetry, when it could not reach the temperature or read it.
    fn pace(&self, case: &Case, not_first: bool) -> Option<String> {
        let sleep_until = |until: std::time::Instant| {
            while std::time::Instant::now() < until && crate::util::interrupt::received().is_none() {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        };
        if not_first && self.pacing.cooldown_s > 0.0 {
            self.progress
                .note(&format!("cooling down {} s", self.pacing.cooldown_s));
            sleep_until(std::time::Instant::now() + std::time::Duration::from_secs_f64(self.pacing.cooldown_s));
        }
        let limit = self.pacing.wait_temp_c?;
        let cannot = |why| Some(format!("--wait-temp {limit}: cannot read the temperature: {why}"));
        let env = crate::run::telemetry::WorkerEnv::of(&case.env_vars, &case.env_unset);
        let mut thermometer = match crate::run::telemetry::Thermometer::open(&self.run_wide.spec.device, &env) {
            Ok(t) => t,
            Err(why) => return cannot(why),
        };
        let start = std::time::Instant::now();
        loop {
            match thermometer.read() {
                Err(why) => return cannot(why),
                Ok(t) if t < limit => return None,
                Ok(t) if start.elapsed() >= MAX_TEMP_WAIT => {
                    return Some(format!(
                        "--wait-temp {limit}: still {t:.0} °C after {} s; the case ran anyway",
                        MAX_TEMP_WAIT.as_secs()
                    ))
                }
                Ok(t) => {
                    self.progress.note(&format!("waiting for {t:.0} °C < {limit} °C"));
                    sleep_until(std::time::Instant::now() + std::time::Duration::from_secs(1));
                    if crate::util::interrupt::received().is_some() {
                        return None;
                    }
                }
            }
        }
    }

    /// Print a line above the progress display.
    pub fn println(&self, line: &str) {
        self.progress.println(line);
    }

    /// Run every visit: each case's visits in a worker of its group, added up as they come,
    /// the report rewritten after every visit (a case still in rounds with the runs it has
    /// so far; a finished one with its quality), so a crash loses at most the visit in
    /// flight. A SIGINT/SIGTERM (also one during set-up, seen before the first visit) stops
    /// the loop: the visit in flight is dropped, every case keeps the visits it finished, the
    /// report says `run.interrupted`, and the signal is returned; with nothing measured, an
    /// existing file at `output` ([`Scheduler::old_report`]) is not touched.
    pub fn run(&mut self, report: &mut Report, output: &Path) -> anyhow::Result<Option<i32>> {
        // Every variable any variant sets or removes is recorded in every case, so the
        // baseline shows what the parent's environment held (or that it lacked it).
        let mut recorded = recorded_vars();
        for c in &self.cases {
            for name in c.env_vars.keys().chain(&c.env_unset) {
                if !recorded.contains(name) {
                    recorded.push(name.clone());
                }
            }
        }
        self.prepare_latents();
        let mut states: Vec<CaseVisits> = (0..self.cases.len()).map(|_| CaseVisits::new(1)).collect();
        for v in &self.visits {
            states[v.case] = CaseVisits::new(v.rounds);
        }
        let mut closed = vec![false; self.cases.len()];
        let mut first = true;
        for v in self.visits.clone() {
            if let Some(sig) = crate::util::interrupt::received() {
                return self.interrupted(report, output, sig, &mut states, &closed);
            }
            if closed[v.case] {
                continue;
            }
            let case = self.cases[v.case].clone();
            let engine = crate::engine::spec(case.settings.engine);
            let device = &self.run_wide.spec.device;
            let hooks = self.run_wide.spec.fault_hooks;
            if let Some(why) = engine.unsupported_here(case.settings.chunk, device, case.settings.precision, hooks) {
                closed[v.case] = true;
                self.drop_passes(v.case, v.round);
                let result = WorkerResult::empty(CaseStatus::Unsupported, Some(why), case.env_vars.clone());
                let lines = self.record(report, &case, result, None);
                report.save_atomic(output)?;
                self.print(&lines);
                continue;
            }
            let (e, d) = self.gflop[v.case];
            self.progress.start_case(&case.id, v.round, v.rounds, (e, d));
            let waited = self.pace(&case, !first);
            first = false;
            if let Some(w) = &waited {
                self.progress.println(&format!("  warning: {w}"));
            }
            if let Some(sig) = crate::util::interrupt::received() {
                return self.interrupted(report, output, sig, &mut states, &closed);
            }
            let limit = self.executor.timeout.saturating_sub(states[v.case].spent);
            let out = self.visit(&case, &v, limit, &recorded);
            let ok = out.result.outcome.status == CaseStatus::Ok;
            let signal = crate::util::interrupt::received();
            if signal.is_some() && !ok {
                // The signal stopped this visit: it is not the case's failure.
                return self.interrupted(report, output, signal.unwrap_or(2), &mut states, &closed);
            }
            let state = &mut states[v.case];
            state.absorb(v.round, out.wall, out.result, out.telemetry, &out.load);
            if let Some(w) = waited {
                state.note_wait(w);
            }
            if state.failed() || v.last {
                closed[v.case] = true;
                if state.failed() {
                    self.drop_passes(v.case, v.round + 1);
                }
                let mut result = self.case_result(&case, &mut states[v.case]);
                if signal.is_none() {
                    if let Some(mut p) = self.profile(&case, &out.spec, &result) {
                        // A signal during the profiled pass (an extra): the case is kept, its
                        // profile marked as the signal left it; the next visit ends the run.
                        if let Some(sig) = crate::util::interrupt::received() {
                            let name = crate::util::interrupt::name(sig);
                            p.error = p.error.take().map(|why| format!("interrupted by {name}: {why}"));
                        }
                        result.profile = Some(p);
                    }
                }
                let lines = self.record(report, &case, result, out.outputs);
                report.run.prepared_latents.clone_from(&self.latents_by);
                report.save_atomic(output)?;
                self.print(&lines);
            } else {
                self.provisional(report, &case, &states[v.case]);
                report.save_atomic(output)?;
            }
            if let Some(sig) = signal {
                return self.interrupted(report, output, sig, &mut states, &closed);
            }
        }
        self.progress.finish();
        Ok(None)
    }

    /// The passes case `i` will no longer run from round `from` on leave the forecast.
    fn drop_passes(&mut self, i: usize, from: usize) {
        let s = &self.cases[i].settings;
        let per = u64::from(s.passes.encodes()) + u64::from(s.passes.decodes());
        let (e, d) = self.gflop[i];
        let runs: usize = self
            .visits
            .iter()
            .filter(|v| v.case == i && v.round >= from)
            .map(|v| v.runs)
            .sum();
        self.progress.drop_passes(per * runs as u64, (e + d) * runs as f64);
    }

    /// The lines [`Scheduler::record`] returned, printed once the report is saved.
    fn print(&mut self, lines: &[String]) {
        for (i, line) in lines.iter().enumerate() {
            match i {
                0 if line.is_empty() => {}
                1 => self.progress.finish_case(line),
                _ => self.progress.println(line),
            }
        }
    }

    /// A case's result from its visits: the runs, peaks and logs added up, its telemetry
    /// over every visit, its load judged, and an out-of-memory explained.
    fn case_result(&mut self, case: &Case, state: &mut CaseVisits) -> WorkerResult {
        let frames = crate::model::frames_used(case.settings.frames).unwrap_or(case.settings.frames);
        let Some(mut result) = state.result(frames, &self.meter) else {
            return WorkerResult::empty(CaseStatus::Failed, Some("no visit ran".into()), case.env_vars.clone());
        };
        result.outcome.telemetry = state.telemetry(self.pacing.telemetry_ms, &result.outcome);
        result
    }

    /// A case still in rounds, recorded (or its record replaced) with the runs it has so
    /// far: no quality or profile yet.
    fn provisional(&self, report: &mut Report, case: &Case, state: &CaseVisits) {
        let frames = crate::model::frames_used(case.settings.frames).unwrap_or(case.settings.frames);
        if let Some(result) = state.result(frames, &self.meter) {
            upsert(report, to_record(case, result));
        }
    }

    /// The worker spec of `case`: the run-wide part (with the torch precision mode only
    /// where the engine has it), the variables to report, where to save the outputs.
    fn spec_for(&self, case: &Case, input: Option<WorkerInput>, recorded: &[String]) -> WorkerSpec {
        let engine = crate::engine::spec(case.settings.engine);
        let mut run = self.run_wide.spec.clone();
        run.torch_precision = run.torch_precision.filter(|p| engine.has_precision_mode(p.name()));
        WorkerSpec {
            id: case.id.clone(),
            settings: case.settings.clone(),
            run,
            variant_vars: case.env_vars.keys().cloned().chain(recorded.iter().cloned()).collect(),
            outputs: Some(self.executor.outputs_path(&case.id)),
            input,
            input_path: self.run_wide.input_path(&case.settings),
            engine_dir: self.run_wide.engine_dirs.get(case.settings.engine).cloned(),
            python_module: engine.python_module().map(String::from),
            profile: None,
        }
    }

    /// Record a finished case: the model facts and the engine's context the first time they
    /// are known, the case's record, and the quality it makes computable. Returns the lines
    /// to print once the report is saved: a warning about its outputs (or an empty line
    /// skipped), the case's line (second: it advances the bar), then warnings.
    fn record(
        &mut self,
        report: &mut Report,
        case: &Case,
        result: WorkerResult,
        outputs: Option<PathBuf>,
    ) -> Vec<String> {
        let mut lines = vec![String::new()];
        // The parent may already have read the model facts from the checkpoint's header.
        if let (0, Some(m)) = (report.model.params, &result.model) {
            report.model.on_disk_dtype = m.on_disk_dtype.clone();
            report.model.params = m.params;
            report.model.dim = m.dim;
            report.model.z_dim = m.z_dim;
        }
        if let Some(ctx) = &result.engine_context {
            let engine = case.settings.engine.name().to_string();
            report.engines.entry(engine).or_insert_with(|| ctx.clone());
        }
        if let Some(e) = &result.outputs_error {
            lines[0] = format!("  warning: {} could not save its outputs (no quality): {e}", case.id);
        }
        let roundtrip = result.roundtrip_psnr_db;
        let record = to_record(case, result);
        lines.push(case_line(&record));
        for (name, pass) in [("encode", &record.outcome.encode), ("decode", &record.outcome.decode)] {
            if let Some(p) = pass.as_ref().filter(|p| p.outliers > 0) {
                lines.push(format!(
                    "  warning: {} statistical outlier(s) in {name} of {} (hyperfine's MAD rule); \
                     consider more --warmup or --runs, or a quieter machine",
                    p.outliers, record.id
                ));
            }
        }
        upsert(report, record);
        for w in self.book.finished(report, &case.id, roundtrip, outputs) {
            lines.push(format!("  warning: {w}"));
        }
        lines
    }

    /// The run stopped on signal `sig`: every case that ran a visit and was not recorded for
    /// good is recorded with the runs it has (its `rounds` says how many of how many), the
    /// report says how far the run got.
    fn interrupted(
        &mut self,
        report: &mut Report,
        output: &Path,
        sig: i32,
        states: &mut [CaseVisits],
        closed: &[bool],
    ) -> anyhow::Result<Option<i32>> {
        self.progress.finish();
        let mut partial = 0;
        for (i, state) in states.iter_mut().enumerate() {
            if !closed[i] && state.started() {
                let case = self.cases[i].clone();
                let result = self.case_result(&case, state);
                upsert(report, to_record(&case, result));
                partial += 1;
            }
        }
        if report.cases.is_empty() && self.old_report {
            return Ok(Some(sig));
        }
        let total = self.cases.len();
        let complete = report.cases.len() - partial;
        let name = crate::util::interrupt::name(sig);
        report.run.interrupted = Some(match partial {
            0 => format!("{name} after {complete} of {total} cases"),
            n => format!(
                "{name} after {complete} of {total} cases, {n} more with fewer runs than asked (their `rounds` say \
                 how many)"
            ),
        });
        report.save_atomic(output)?;
        Ok(Some(sig))
    }
}

/// Put `record` in `report`: in place of the record of the same id (a case still in rounds),
/// else at the end.
fn upsert(report: &mut Report, record: CaseRecord) {
    match report.cases.iter_mut().find(|c| c.id == record.id) {
        Some(c) => *c = record,
        None => report.cases.push(record),
    }
}

/// How many workers the run keeps alive at once: in rounds, the most worker groups a
/// workload's cases make (they are visited in turn); in blocks, one.
fn workers_needed(cases: &[Case], schedule: Schedule) -> usize {
    if schedule == Schedule::Blocks {
        return 1;
    }
    let mut groups: BTreeMap<(usize, usize, usize, &str), std::collections::BTreeSet<String>> = BTreeMap::new();
    for c in cases {
        let s = &c.settings;
        let key = super::pool::worker_key(s.engine, &c.env_vars, &c.env_unset, &super::rounds::lane(c, schedule));
        groups
            .entry((s.frames, s.width, s.height, s.passes.name()))
            .or_default()
            .insert(key);
    }
    groups.values().map(|g| g.len()).max().unwrap_or(1)
}

/// Extra variable names every worker records ([`RECORD_ENV_VAR`]).
fn recorded_vars() -> Vec<String> {
    std::env::var(RECORD_ENV_VAR)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The report's record of a case: its settings and what its worker measured.
fn to_record(case: &Case, r: WorkerResult) -> CaseRecord {
    CaseRecord {
        id: case.id.clone(),
        added_as_reference: case.added_as_reference,
        added_as_control: case.added_as_control,
        settings: case.settings.clone(),
        frames_used: crate::model::frames_used(case.settings.frames).ok(),
        outcome: r.outcome,
        profile: r.profile,
        quality: None,
        system: None,
        budgets: Vec::new(),
        run: None,
    }
}

/// The per-case line: timings of the passes it ran when ok, otherwise the status and the
/// error's first line.
fn case_line(c: &CaseRecord) -> String {
    use crate::util::format::median_spread;
    let o = &c.outcome;
    match o.status {
        CaseStatus::Ok => {
            let status = if o.throttled() { "ok (throttled)" } else { "ok" };
            let mut line = format!("{status:<8} {}", crate::util::format::printable(&c.id));
            for (name, p) in [("encode", &o.encode), ("decode", &o.decode)] {
                if let Some(p) = p {
                    line.push_str(&format!(
                        "  {name} {}",
                        median_spread(p.median_s, p.stddev_s, p.samples_s.len())
                    ));
                }
            }
            if let Some(why) = o.telemetry.as_ref().and_then(|t| t.throttle_why.as_deref()) {
                line.push_str(&format!("  throttled: {why}"));
            }
            line
        }
        _ => {
            let first = o.error_line().unwrap_or("");
            format!(
                "{:<8} {}  {}",
                o.status.name(),
                crate::util::format::printable(&c.id),
                crate::util::format::printable(first)
            )
        }
    }
}
