//! One visit of a case (part of the scheduler): its spec (the visit's warmups and runs; the
//! outputs saved on its last visit only), its worker leased from the case's group, and what
//! the parent reads beside it: the device's telemetry, the worker's device memory (NVML),
//! and the machine's load over the visit's timed window (from the first timed pass's marker
//! to the worker's done marker). An out-of-memory is explained in words. After a case's last
//! visit, its profiled lease (`run --profile`) runs here too.
//!
//! Must not: add visits up (`run::visits` does) or record anything in the report.
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::super::executor::{Placement, Purpose, WorkerEvent};
use super::super::progress::timed_pass;
use super::super::rounds::{self, Visit};
use super::super::telemetry::load::{LoadWindows, Snapshot};
use super::super::telemetry::process_memory::ProcessMemory;
use super::super::telemetry::{Sampler, VisitSamples, WorkerEnv};
use super::Scheduler;
use crate::engine::protocol::{WorkerResult, WorkerSpec};
use crate::plan::matrix::Case;
use crate::report::values::MiopenDb;
use crate::report::CaseStatus;

/// What one visit gave.
pub(super) struct VisitOut {
    pub result: WorkerResult,
    /// Where the worker saved the case's outputs (its last visit).
    pub outputs: Option<PathBuf>,
    pub telemetry: Option<Result<VisitSamples, String>>,
    pub load: LoadWindows,
    pub wall: Duration,
    /// The visit's spec (the profiled lease repeats it).
    pub spec: WorkerSpec,
}

impl Scheduler {
    /// Whether `case`'s later visits find its worker warm: it shares a worker (not `run
    /// --isolate case`, not an empty MIOpen database per case). A case whose every visit
    /// starts a fresh process runs its warmups on every visit.
    fn keeps_worker(&self, case: &Case) -> bool {
        !self.executor.isolate_cases && case.settings.knobs.miopen_db != MiopenDb::Fresh
    }

    /// Run visit `v` of `case` within `limit`.
    pub(super) fn visit(&mut self, case: &Case, v: &Visit, limit: Duration, recorded: &[String]) -> VisitOut {
        let started = Instant::now();
        let input = self.input_for(&case.settings);
        let mut spec = self.spec_for(case, input.clone().unwrap_or_default(), recorded);
        spec.run.runs = v.runs;
        spec.run.warmup = if self.keeps_worker(case) {
            v.warmup
        } else {
            self.run_wide.spec.warmup
        };
        if !v.last {
            spec.outputs = None;
        }
        let interval = self.pacing.telemetry_ms;
        let env = WorkerEnv::of(&case.env_vars, &case.env_unset);
        let device = self.run_wide.spec.device.clone();
        let sampler = (interval > 0 && input.is_ok()).then(|| Sampler::start(&device, &env, interval));
        // The worker's own device memory (NVML), on NVIDIA GPUs: started once its pid is known.
        let sample_memory = interval > 0 && device.starts_with("cuda") && !crate::machine::system::amd_gpus_only();
        let mut memory: Option<Result<ProcessMemory, String>> = None;
        let lane = rounds::lane(case, self.timing.schedule);
        let place = Placement {
            vars: &case.env_vars,
            unset: &case.env_unset,
            lane: &lane,
            timeout: Some(limit),
        };
        let (executor, progress, meter) = (&mut self.executor, &mut self.progress, &self.meter);
        let mut last_phase = None;
        let mut pid = None;
        let mut window: Option<Snapshot> = None;
        let mut load = LoadWindows::default();
        let close = |window: &mut Option<Snapshot>, pid: Option<u32>, load: &mut LoadWindows| {
            if let (Some(start), Some(end)) = (window.take(), meter.snapshot(pid)) {
                load.add(&start, &end);
            }
        };
        let mut result = match input {
            Ok(_) => executor.run(&spec, &place, Purpose::Measured, &mut |e| match e {
                WorkerEvent::Started(p) => {
                    pid = Some(p);
                    if sample_memory {
                        memory = Some(ProcessMemory::start(p));
                    }
                }
                WorkerEvent::Phase(p) => {
                    if let Some(Ok(s)) = &sampler {
                        s.phase(p);
                    }
                    if let Some(Ok(m)) = &memory {
                        m.phase(p);
                    }
                    if timed_pass(p).is_some() && window.is_none() {
                        window = meter.snapshot(pid);
                    }
                    last_phase = Some(p.to_string());
                    progress.phase(p);
                }
                WorkerEvent::Done => close(&mut window, pid, &mut load),
                WorkerEvent::Output(line) => progress.output(line),
            }),
            Err(why) => WorkerResult::empty(
                crate::engine::preparer::status_without_latent(&why),
                Some(why),
                Default::default(),
            ),
        };
        // A window the worker never closed (it ended first): its CPU time is then unread.
        close(&mut window, None, &mut load);
        let ran = result.outcome.status == CaseStatus::Ok;
        progress.end_visit(ran);
        result.outcome.device_process_peak = match memory {
            Some(Ok(m)) => Some(m.finish()).filter(|p| ran || p.samples > 0),
            // A case that never ran a pass needs no word on its memory.
            Some(Err(why)) => ran.then(|| ProcessMemory::unavailable(why)),
            None => None,
        };
        let telemetry = sampler.map(|s| s.and_then(Sampler::stop));
        let o = &mut result.outcome;
        if o.status == CaseStatus::Oom {
            // What did not fit, the memory then and what to try, before the engine's own text.
            if o.memory_at_failure.is_none() {
                o.memory_at_failure = super::super::oom::read_now(&device);
            }
            let original = o.error.take().unwrap_or_default();
            let mem = o.memory_at_failure.as_ref();
            o.error = Some(super::super::oom::explain(
                &case.settings,
                &device,
                last_phase.as_deref(),
                mem,
                &original,
            ));
        }
        VisitOut {
            outputs: spec.outputs.clone(),
            result,
            telemetry,
            load,
            wall: started.elapsed(),
            spec,
        }
    }

    /// The profiled lease of an `ok` case (`run --profile`), after its last visit: at most
    /// one warmup (the run's, not the visit's), one pass of each kind.
    pub(super) fn profile(
        &mut self,
        case: &Case,
        spec: &WorkerSpec,
        result: &WorkerResult,
    ) -> Option<crate::report::profile::CaseProfile> {
        let p = self.run_wide.profile.as_ref()?;
        // An A/A control is its default's setting again: its profile would be the default's.
        if result.outcome.status != CaseStatus::Ok || case.added_as_control {
            return None;
        }
        let mut spec = spec.clone();
        spec.run.warmup = self.run_wide.spec.warmup;
        let lane = rounds::lane(case, self.timing.schedule);
        let place = Placement {
            vars: &case.env_vars,
            unset: &case.env_unset,
            lane: &lane,
            timeout: None,
        };
        let (ex, progress) = (&mut self.executor, &self.progress);
        Some(super::super::profile_pass::run(
            ex,
            &spec,
            &result.outcome,
            &place,
            p,
            progress,
        ))
    }
}
