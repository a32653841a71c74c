//! The scheduler: the plan's order (`crate::plan::ready::order`: shuffled with a recorded
//! seed, the default, so slow drift of the machine does not line up with one axis of the
//! matrix, or as written) grouped by worker, [`group_by_worker`], which puts engine, env
//! variant and precision in blocks and keeps the rest shuffled, and [`Scheduler::run`], which paces the
//! cases ([`Pacing`]: `--cooldown`, `--wait-temp`), runs each through the executor with the
//! parent's telemetry sampler beside it (a case its engine cannot run,
//! [`crate::engine::EngineSpec::unsupported`], is recorded without starting a worker), records
//! it in the report, fills quality as references finish, and rewrites the report after every
//! case.
//!
//! Must not: parse options, spawn processes itself (the executor does) or render tables.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::executor::{Executor, Purpose, WorkerEvent};
use super::outputs::QualityBook;
use super::progress::Progress;
use crate::engine::protocol::{InputKind, RunSpec, WorkerInput, WorkerResult, WorkerSpec};
use crate::engine::{EngineDirs, WorkerKind};
use crate::plan::matrix::Case;
use crate::report::settings::CaseSettings;
use crate::report::values::{MiopenDb, Passes, Switch};
use crate::report::{CaseRecord, CaseStatus, Report};
use crate::run::telemetry::process_memory::ProcessMemory;

/// Put the cases that may share a worker process next to each other, so that each group's
/// worker starts once: groups in the order of their first case, cases within a group in
/// their order, except that those of one precision follow each other, so the worker builds
/// the model once per precision (a shuffled order stays shuffled within and between groups).
/// The grouping is the pool's (`pool::worker_key`): engine and environment.
pub fn group_by_worker(cases: &mut [Case]) {
    let key = |c: &Case| super::pool::worker_key(c.settings.engine, &c.env_vars, &c.env_unset);
    let model = |c: &Case| format!("{}{:?}", key(c), c.settings.precision);
    let (mut first, mut first_model) = (BTreeMap::new(), BTreeMap::new());
    for (i, c) in cases.iter().enumerate() {
        first.entry(key(c)).or_insert(i);
        first_model.entry(model(c)).or_insert(i);
    }
    cases.sort_by_key(|c| (first[&key(c)], first_model[&model(c)]));
}

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

/// Runs the cases of a report, in the order given, one worker process each.
pub struct Scheduler {
    cases: Vec<Case>,
    run_wide: RunWide,
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
    /// A scheduler over `cases` (already ordered, references included).
    pub fn new(cases: Vec<Case>, run_wide: RunWide, executor: Executor, progress: Progress) -> Scheduler {
        let book = QualityBook::new(&cases, &run_wide.spec.device);
        Scheduler {
            cases,
            run_wide,
            executor,
            progress,
            book,
            prepared: BTreeMap::new(),
            latents_by: None,
            old_report: false,
            pacing: Pacing::default(),
        }
    }

    /// The input of a case's worker: a decode-only case decodes the user's latent or, when
    /// there is none, the latent of an untimed fp32 encode of the video (the user's or the
    /// built-in clip), computed once per frames and size in a worker of its own and never
    /// reported; a case that encodes gets the user's video (or none: the clip).
    fn input_for(&mut self, s: &CaseSettings) -> Result<Option<WorkerInput>, String> {
        let user = self.run_wide.input.clone();
        if s.passes.encodes() {
            return Ok(user.filter(|i| i.kind == InputKind::Video));
        }
        if let Some(i) = user.as_ref().filter(|i| i.kind == InputKind::Latent) {
            return Ok(Some(i.clone()));
        }
        let key = (s.frames, s.width, s.height);
        if let Some(p) = self.prepared.get(&key) {
            return p.clone().map(Some);
        }
        // One latent per frames x size, so every engine decodes the same bits: encoded by
        // candle where this build has the device, else by the run's engine on the device.
        let device = self.run_wide.spec.device.clone();
        let has = crate::engine::preparer::this_build_has(&device, self.run_wide.spec.fault_hooks);
        let in_run = crate::engine::preparer::engines_of(self.cases.iter().map(|c| &c.settings.engine));
        let preparer = match crate::engine::preparer::latent_preparer(&device, &in_run, has) {
            Ok(p) => p,
            Err(why) => {
                self.prepared.insert(key, Err(why.clone()));
                return Err(why);
            }
        };
        let mut prepared = self.prepare_with(preparer, s, user.clone());
        // A failed encode of this binary's worker (its device path) must not cost the other
        // engines their decode-only cases: the run's Python engine on the device tries once.
        if let (Err(first), WorkerKind::ThisBinary) = (&prepared, preparer.worker) {
            if let Ok(other) = crate::engine::preparer::latent_preparer(&device, &in_run, false) {
                let first = first.clone();
                prepared = self
                    .prepare_with(other, s, user)
                    .map_err(|second| format!("{first}; then {second}"));
                if prepared.is_ok() {
                    self.progress.println(&format!(
                        "note: {first}; the latent to decode was encoded by {} instead",
                        other.name()
                    ));
                }
            }
        }
        self.prepared.insert(key, prepared.clone());
        prepared.map(Some)
    }

    /// The untimed true-fp32 encode of `s`'s clip (or the user's video `user`) by
    /// `preparer`, in a worker of its own: the latent's file, or why there is none.
    fn prepare_with(
        &mut self,
        preparer: &'static crate::engine::EngineSpec,
        s: &CaseSettings,
        user: Option<WorkerInput>,
    ) -> Result<WorkerInput, String> {
        let device = self.run_wide.spec.device.clone();
        // True fp32 with the knobs as the engine leaves them (`n/a` where they do not act).
        let knobs = crate::report::settings::Knobs {
            cudnn: Switch::Auto,
            cudnn_benchmark: Switch::Auto,
            miopen_db: MiopenDb::User,
            tf32: Switch::Off,
        };
        let settings = preparer.run_as(
            &CaseSettings {
                passes: Passes::Encode,
                env_variant: crate::report::settings::BASELINE.to_string(),
                knobs,
                ..s.reference()
            },
            &device,
        );
        self.latents_by = Some(crate::engine::preparer::describe(preparer.engine));
        let id = format!("prepare-latent-{}x{}x{}", s.frames, s.width, s.height);
        let path = self.executor.outputs_path(&id);
        let spec = WorkerSpec {
            id,
            input_path: self.run_wide.input_path(&settings),
            settings,
            run: RunSpec {
                warmup: 0,
                runs: 1,
                torch_precision: None,
                ..self.run_wide.spec.clone()
            },
            variant_vars: Vec::new(),
            outputs: Some(path.clone()),
            input: user,
            engine_dir: self.run_wide.engine_dirs.get(preparer.engine).cloned(),
            python_module: preparer.python_module().map(String::from),
            profile: None,
        };
        let progress = &self.progress;
        // A worker of its own, ended afterwards: no measured case inherits what it did.
        let prepare = super::executor::Purpose::Prepare;
        let r = self
            .executor
            .run(&spec, &BTreeMap::new(), &[], prepare, &mut |e| match e {
                WorkerEvent::Started(_) => {}
                WorkerEvent::Phase(p) => progress.phase(&format!("prepare latent: {p}")),
                WorkerEvent::Output(line) => progress.output(line),
            });
        match (r.outcome.status, r.outcome.error) {
            (CaseStatus::Ok, _) if path.is_file() => Ok(WorkerInput {
                path,
                kind: InputKind::Latent,
            }),
            (status, error) => Err(format!(
                "the untimed fp32 encode by {} that prepares the latent to decode ended {status}: {}",
                preparer.name(),
                error.or(r.outputs_error).unwrap_or_default()
            )),
        }
    }

    /// Prepare the latents of the decode-only cases before any measured case runs, each in a
    /// worker of its own ([`Purpose::Prepare`]): a preparation then never runs beside a kept
    /// worker (nor splits a group's worker in two), and no measured case inherits it.
    fn prepare_latents(&mut self) {
        for case in self.cases.clone() {
            if crate::util::interrupt::received().is_some() {
                return;
            }
            let s = &case.settings;
            let device = &self.run_wide.spec.device;
            let engine = crate::engine::spec(s.engine);
            let hooks = self.run_wide.spec.fault_hooks;
            if !s.passes.encodes() && engine.unsupported_here(s.chunk, device, s.precision, hooks).is_none() {
                let _ = self.input_for(s);
            }
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
                .phase(&format!("cooling down {} s", self.pacing.cooldown_s));
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
                    self.progress.phase(&format!("waiting for {t:.0} °C < {limit} °C"));
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

    /// Run every case: spec it, run it in a worker, record it in `report` (the first case
    /// that loaded the model also fills `report.model`), fill quality as references finish,
    /// and rewrite the report at `output` after each case, so a crash loses at most the
    /// case in flight. A SIGINT/SIGTERM (also one during set-up, seen before the first
    /// case) stops the loop: the case in flight is dropped, the report says
    /// `run.interrupted`, and the signal is returned; with no case finished, an existing
    /// file at `output` ([`Scheduler::old_report`]) is not touched.
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
        let total = self.cases.len();
        self.prepare_latents();
        for (i, case) in self.cases.clone().into_iter().enumerate() {
            if let Some(sig) = crate::util::interrupt::received() {
                return self.interrupted(report, output, sig, total);
            }
            self.progress.start_case(&case.id);
            let waited = self.pace(&case, i > 0);
            if let Some(w) = &waited {
                self.progress.println(&format!("  warning: {w}"));
            }
            if let Some(sig) = crate::util::interrupt::received() {
                return self.interrupted(report, output, sig, total);
            }
            let (mut result, outputs) = self.run_case(&case, &recorded);
            if let (Some(w), Some(t)) = (waited, result.outcome.telemetry.as_mut()) {
                t.unavailable.insert("wait_temp".to_string(), w);
            }
            if let Some(sig) = crate::util::interrupt::received() {
                // A case whose timed passes ended `ok` before the signal is a measurement:
                // kept, with its profile (an extra) marked as the signal left it.
                if result.outcome.status == CaseStatus::Ok {
                    if let Some(p) = result.profile.as_mut().filter(|p| p.error.is_some()) {
                        let why = p.error.take().unwrap_or_default();
                        p.error = Some(format!("interrupted by {}: {why}", crate::util::interrupt::name(sig)));
                    }
                    self.record(report, &case, result, outputs);
                    report.save_atomic(output)?;
                }
                return self.interrupted(report, output, sig, total);
            }
            // Saved before its lines are printed: a reader that went away (`| head`) or a full
            // terminal log never costs the case just measured.
            let lines = self.record(report, &case, result, outputs);
            report.run.prepared_latents.clone_from(&self.latents_by);
            report.save_atomic(output)?;
            for (i, line) in lines.iter().enumerate() {
                match i {
                    0 if line.is_empty() => {}
                    1 => self.progress.finish_case(line),
                    _ => self.progress.println(line),
                }
            }
        }
        self.progress.finish();
        Ok(None)
    }

    /// The case's result and where its worker saved its outputs: `unsupported` without a
    /// worker when its engine cannot run it, `failed` when its input could not be prepared.
    fn run_case(&mut self, case: &Case, recorded: &[String]) -> (WorkerResult, Option<PathBuf>) {
        let engine = crate::engine::spec(case.settings.engine);
        let (device, hooks) = (&self.run_wide.spec.device, self.run_wide.spec.fault_hooks);
        if let Some(why) = engine.unsupported_here(case.settings.chunk, device, case.settings.precision, hooks) {
            let env = case.env_vars.clone();
            return (WorkerResult::empty(CaseStatus::Unsupported, Some(why), env), None);
        }
        let input = self.input_for(&case.settings);
        let spec = self.spec_for(case, input.clone().unwrap_or_default(), recorded);
        let progress = &self.progress;
        let mut last_phase = None;
        let interval = self.pacing.telemetry_ms;
        let env = crate::run::telemetry::WorkerEnv::of(&case.env_vars, &case.env_unset);
        let sampler = (interval > 0 && input.is_ok())
            .then(|| crate::run::telemetry::Sampler::start(&self.run_wide.spec.device, &env, interval));
        // The worker's own device memory (NVML), on NVIDIA GPUs: started once its pid is known.
        let sample_memory =
            interval > 0 && self.run_wide.spec.device.starts_with("cuda") && !crate::machine::system::amd_gpus_only();
        let mut memory: Option<Result<ProcessMemory, String>> = None;
        let mut result = match input {
            Ok(_) => self.executor.run(
                &spec,
                &case.env_vars,
                &case.env_unset,
                Purpose::Measured,
                &mut |e| match e {
                    WorkerEvent::Started(pid) => {
                        if sample_memory {
                            memory = Some(ProcessMemory::start(pid));
                        }
                    }
                    WorkerEvent::Phase(p) => {
                        if let Some(Ok(s)) = &sampler {
                            s.phase(p);
                        }
                        if let Some(Ok(m)) = &memory {
                            m.phase(p);
                        }
                        last_phase = Some(p.to_string());
                        progress.phase(p)
                    }
                    WorkerEvent::Output(line) => progress.output(line),
                },
            ),
            Err(why) => WorkerResult::empty(
                crate::engine::preparer::status_without_latent(&why),
                Some(why),
                BTreeMap::new(),
            ),
        };
        let ran = result.outcome.status == CaseStatus::Ok;
        result.outcome.device_process_peak = match memory {
            Some(Ok(m)) => Some(m.finish()).filter(|p| ran || p.samples > 0),
            // A case that never ran a pass needs no word on its memory.
            Some(Err(why)) => ran.then(|| ProcessMemory::unavailable(why)),
            None => None,
        };
        result.outcome.telemetry = match sampler {
            Some(Ok(s)) => Some(s.finish(&result.outcome)),
            Some(Err(why)) => Some(crate::report::telemetry::CaseTelemetry::unavailable(interval, why)),
            None => None,
        };
        let o = &mut result.outcome;
        if o.status == CaseStatus::Oom {
            // What did not fit, the memory then and what to try, before the engine's own text.
            let device = &self.run_wide.spec.device;
            if o.memory_at_failure.is_none() {
                o.memory_at_failure = super::oom::read_now(device);
            }
            let original = o.error.take().unwrap_or_default();
            let mem = o.memory_at_failure.as_ref();
            o.error = Some(super::oom::explain(
                &case.settings,
                device,
                last_phase.as_deref(),
                mem,
                &original,
            ));
        }
        if let (Some(p), CaseStatus::Ok) = (&self.run_wide.profile, result.outcome.status) {
            let (vars, unset, ex) = (&case.env_vars, &case.env_unset, &mut self.executor);
            let profile = super::profile_pass::run(ex, &spec, &result.outcome, vars, unset, p, progress);
            result.profile = Some(profile);
        }
        (result, spec.outputs)
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
        report.cases.push(record);
        for w in self.book.finished(report, &case.id, roundtrip, outputs) {
            lines.push(format!("  warning: {w}"));
        }
        lines
    }

    fn interrupted(&self, report: &mut Report, output: &Path, sig: i32, total: usize) -> anyhow::Result<Option<i32>> {
        self.progress.finish();
        if report.cases.is_empty() && self.old_report {
            return Ok(Some(sig));
        }
        report.run.interrupted = Some(format!(
            "{} after {} of {total} cases",
            crate::util::interrupt::name(sig),
            report.cases.len()
        ));
        report.save_atomic(output)?;
        Ok(Some(sig))
    }
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
