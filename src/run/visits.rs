//! A case measured over several visits (a run of interleaved rounds, `super::rounds`): what
//! each visit's worker result and the parent's readings add to the case, and the case's one
//! result once it is complete, failed or interrupted ([`CaseVisits::result`]): every timed run
//! with the round it was taken in, the warmups of the first visit, the peaks (the largest of
//! any visit), the ROCm logs added up, the telemetry laid end to end, the load of every
//! timed window. A run of blocks is the one-visit case of the same code.
//!
//! Must not: run visits (the scheduler does) or touch the report.
use std::time::Duration;

use super::telemetry::load::{LoadMeter, LoadWindows};
use super::telemetry::VisitSamples;
use crate::engine::protocol::WorkerResult;
use crate::report::rounds::CaseRounds;
use crate::report::telemetry::CaseTelemetry;
use crate::report::{CaseStatus, DeviceProcessPeak, PassStats};

/// What the visits of one case gathered so far.
#[derive(Default)]
pub struct CaseVisits {
    /// The first visit's result (its model facts, environment, start-up, knobs, ...),
    /// with the later visits' figures merged in as they come.
    base: Option<WorkerResult>,
    enc: Vec<f64>,
    dec: Vec<f64>,
    enc_gflop: Option<f64>,
    dec_gflop: Option<f64>,
    of_run: Vec<usize>,
    planned: usize,
    done: usize,
    /// Wall time of the visits so far (the case's time limit covers them all).
    pub spent: Duration,
    telemetry: Vec<VisitSamples>,
    /// Why a visit's telemetry could not be read (the first such reason).
    telemetry_error: Option<String>,
    load: LoadWindows,
    memory: Option<DeviceProcessPeak>,
    /// Whether a visit did not end `ok` (the case then takes no further visit).
    failed: bool,
    /// What `--wait-temp` found before a visit, when it could not reach or read the
    /// temperature (the first such note).
    wait: Option<String>,
}

/// Add `b`'s peak to `a` (the larger reading; samples add up).
fn max_peak(a: Option<DeviceProcessPeak>, b: Option<DeviceProcessPeak>) -> Option<DeviceProcessPeak> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            a.samples += b.samples;
            a.peak_bytes = match (a.peak_bytes, b.peak_bytes) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
            if a.peak_bytes.is_some() {
                a.error = None;
            } else {
                a.error = a.error.or(b.error);
            }
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

impl CaseVisits {
    /// A case planned for `planned` rounds.
    pub fn new(planned: usize) -> CaseVisits {
        CaseVisits {
            planned,
            ..CaseVisits::default()
        }
    }

    /// Whether a visit ended other than `ok` (the case takes no further visit).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// What `--wait-temp` found before a visit (kept in the case's telemetry).
    pub fn note_wait(&mut self, note: String) {
        self.wait.get_or_insert(note);
    }

    /// Whether any visit ran.
    pub fn started(&self) -> bool {
        self.base.is_some()
    }

    /// Add a visit of round `round` that took `wall`: its worker result, the telemetry
    /// sampler's readings (or why there are none) and its timed windows' load.
    pub fn absorb(
        &mut self,
        round: usize,
        wall: Duration,
        mut r: WorkerResult,
        telemetry: Option<Result<VisitSamples, String>>,
        load: &LoadWindows,
    ) {
        self.spent += wall;
        match telemetry {
            Some(Ok(t)) => self.telemetry.push(t),
            Some(Err(why)) => {
                self.telemetry_error.get_or_insert(why);
            }
            None => {}
        }
        self.load.absorb(load);
        let o = &mut r.outcome;
        let ok = o.status == CaseStatus::Ok;
        self.memory = max_peak(self.memory.take(), o.device_process_peak.take());
        if ok {
            let enc = o.encode.take();
            let dec = o.decode.take();
            let n = enc.as_ref().or(dec.as_ref()).map_or(0, |p| p.samples_s.len());
            if let Some(p) = &enc {
                self.enc.extend(&p.samples_s);
                self.enc_gflop = Some(p.gflop);
            }
            if let Some(p) = &dec {
                self.dec.extend(&p.samples_s);
                self.dec_gflop = Some(p.gflop);
            }
            self.of_run.extend(std::iter::repeat_n(round, n));
            self.done += 1;
            // The first visit's warmups stay the case's.
            if self.base.is_none() {
                o.encode = enc.map(|p| PassStats {
                    samples_s: Vec::new(),
                    ..p
                });
                o.decode = dec.map(|p| PassStats {
                    samples_s: Vec::new(),
                    ..p
                });
            }
        } else {
            self.failed = true;
        }
        match self.base.as_mut() {
            None => self.base = Some(r),
            Some(base) => merge_later(base, r),
        }
    }

    /// The case's result from its visits so far (`frames` processed per pass), its load
    /// judged (`meter`); its telemetry is [`CaseVisits::telemetry`]'s.
    pub fn result(&self, frames: usize, meter: &LoadMeter) -> Option<WorkerResult> {
        let mut r = self.base.clone()?;
        let o = &mut r.outcome;
        let pass = |samples: &[f64], first: &Option<PassStats>, gflop: Option<f64>| -> Option<PassStats> {
            // A failed case keeps what it measured; one that measured nothing has none.
            if samples.is_empty() {
                return None;
            }
            let warmup = first.as_ref().map(|p| p.warmup_s.clone()).unwrap_or_default();
            Some(PassStats::from_samples(
                samples.to_vec(),
                warmup,
                frames,
                gflop.unwrap_or(0.0),
            ))
        };
        o.encode = pass(&self.enc, &o.encode, self.enc_gflop);
        o.decode = pass(&self.dec, &o.decode, self.dec_gflop);
        o.device_process_peak = self.memory.clone();
        o.load = self.load.record(meter);
        o.rounds = Some(CaseRounds {
            planned: self.planned,
            done: self.done,
            of_run: self.of_run.clone(),
        });
        Some(r)
    }

    /// The case's telemetry over every visit (taken out: call once, when the case is done).
    pub fn telemetry(&mut self, interval_ms: u64, outcome: &crate::report::Outcome) -> Option<CaseTelemetry> {
        if interval_ms == 0 {
            return None;
        }
        let visits = std::mem::take(&mut self.telemetry);
        let mut t = if visits.is_empty() {
            CaseTelemetry::unavailable(interval_ms, self.telemetry_error.clone()?)
        } else {
            let mut t = super::telemetry::summarize_visits(visits, interval_ms, outcome);
            if let Some(why) = &self.telemetry_error {
                t.unavailable.entry("visits".to_string()).or_insert_with(|| why.clone());
            }
            t
        };
        if let Some(w) = &self.wait {
            t.unavailable.insert("wait_temp".to_string(), w.clone());
        }
        Some(t)
    }
}

/// Merge a later visit's result `r` into the case's `base` (whose timings are kept apart).
fn merge_later(base: &mut WorkerResult, r: WorkerResult) {
    let (b, o) = (&mut base.outcome, r.outcome);
    if o.status != CaseStatus::Ok {
        // The visit that failed decides the case's status, with its own words.
        b.status = o.status;
        b.error = o.error;
        b.memory_at_failure = o.memory_at_failure;
    }
    b.peak_rss_bytes = max_opt(b.peak_rss_bytes, o.peak_rss_bytes);
    b.device_peak_allocated_bytes = max_opt(b.device_peak_allocated_bytes, o.device_peak_allocated_bytes);
    b.device_peak_reserved_bytes = max_opt(b.device_peak_reserved_bytes, o.device_peak_reserved_bytes);
    b.device_memory_bytes = o.device_memory_bytes.or(b.device_memory_bytes);
    b.compute_dtype = b.compute_dtype.take().or(o.compute_dtype);
    b.conv_library = b.conv_library.take().or(o.conv_library);
    b.knobs_in_force = b.knobs_in_force.take().or(o.knobs_in_force);
    b.engine_case = b.engine_case.take().or(o.engine_case);
    if o.oom_tiled_retry == Some(true) {
        b.oom_tiled_retry = Some(true);
    }
    match (b.miopen.as_mut(), o.miopen) {
        (Some(x), Some(y)) => x.absorb(y),
        (None, y) => b.miopen = y,
        _ => {}
    }
    match (b.hipblaslt.as_mut(), o.hipblaslt) {
        (Some(x), Some(y)) => x.absorb(y),
        (None, y) => b.hipblaslt = y,
        _ => {}
    }
    if let (Some(w), Some(replaced)) = (b.worker.as_mut(), o.worker.and_then(|w| w.replaced)) {
        w.replaced = Some(match w.replaced.take() {
            Some(first) => format!("{first}; later: {replaced}"),
            None => format!("in a later visit: {replaced}"),
        });
    }
    // What the last visit (the one that saved the outputs) says of them.
    base.roundtrip_psnr_db = r.roundtrip_psnr_db.or(base.roundtrip_psnr_db);
    base.outputs_error = r.outputs_error.or(base.outputs_error.take());
    base.model = base.model.take().or(r.model);
    base.engine_context = base.engine_context.take().or(r.engine_context);
}
