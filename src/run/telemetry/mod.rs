//! The parent's telemetry sampler (issue 32): while a case runs, a thread of the parent
//! collects the observations of the device the worker uses ([`devices`] maps it, [`sources`]
//! reads it) every interval (100 ms by default) and at every phase change the worker
//! reports, and notes when each phase began; the worker itself does nothing for it. When the
//! case ends, [`Sampler::finish`] summarizes the readings taken inside the timed encode and
//! decode passes' own time windows (warmups are left out; a reading from before a pass
//! never speaks for it, issue 37) into the case's `telemetry`, with the throttle verdict of
//! `report::telemetry`, or why there is none (too few readings, a source that ended or went
//! stale). [`Thermometer`] serves `--wait-temp`, through the same mapping.
//!
//! Must not: run cases or change what a worker measures.
pub mod devices;
pub mod load;
pub mod process_memory;
pub mod sources;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::report::telemetry::{
    CaseTelemetry, PassTelemetry, MAX_SERIES, MIN_PASS_SAMPLES, SOFT_CAP_CLOCK_FRACTION, THROTTLE_CLOCK_FRACTION,
};
use crate::report::Outcome;
pub use devices::WorkerEnv;
use sources::{Observation, Reading};

/// The default sampling interval, milliseconds (`run --telemetry-ms`).
pub const DEFAULT_INTERVAL_MS: u64 = 100;

/// What the sampler thread collected over a case.
#[derive(Debug, Default)]
struct Sampled {
    /// When each phase began, seconds since the sampler started.
    phases: Vec<(f64, String)>,
    /// When the case ended, seconds since the sampler started.
    end_s: f64,
    /// Each reading with the time it was taken, seconds since the sampler started (a
    /// reading from just before the start is at 0).
    readings: Vec<(f64, Reading)>,
    /// When the source ended, and why.
    ended: Option<(f64, String)>,
    clock_max_mhz: Option<f64>,
    source: String,
    unavailable: BTreeMap<String, String>,
}

enum Msg {
    Phase(Instant, String),
    Stop(Instant),
}

/// A running sampler for one case.
pub struct Sampler {
    tx: mpsc::Sender<Msg>,
    handle: std::thread::JoinHandle<Sampled>,
    interval_ms: u64,
}

impl Sampler {
    /// Start sampling the worker's `device` (as the worker's environment `env` makes it)
    /// every `interval_ms`; `Err` says why it cannot be sampled (then the case's telemetry
    /// says so, with nothing made up).
    pub fn start(device: &str, env: &WorkerEnv, interval_ms: u64) -> Result<Sampler, String> {
        let mut source = sources::for_device(device, env, interval_ms)?;
        let (tx, rx) = mpsc::channel();
        let interval = Duration::from_millis(interval_ms.max(1));
        let handle = std::thread::spawn(move || {
            let start = Instant::now();
            let since = |t: Instant| t.saturating_duration_since(start).as_secs_f64();
            let mut got = Sampled::default();
            let mut next = start;
            let take = |got: &mut Sampled, observed: Vec<Observation>| {
                for o in observed {
                    match o {
                        Observation::At(t, r) if got.ended.is_none() => got.readings.push((since(t), r)),
                        Observation::At(..) => {}
                        Observation::Ended(t, why) => got.ended = got.ended.take().or(Some((since(t), why))),
                    }
                }
            };
            loop {
                let wait = next.saturating_duration_since(Instant::now());
                match rx.recv_timeout(wait) {
                    Ok(Msg::Phase(at, p)) => got.phases.push((since(at), p)),
                    Ok(Msg::Stop(at)) => {
                        got.end_s = since(at);
                        break;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        got.end_s = since(Instant::now());
                        break;
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => next = (next + interval).max(Instant::now()),
                }
                take(&mut got, source.observe(Duration::ZERO));
            }
            take(&mut got, source.observe(Duration::ZERO));
            got.clock_max_mhz = source.clock_max_mhz();
            got.source = source.describe();
            got.unavailable = source.unavailable();
            got
        });
        Ok(Sampler {
            tx,
            handle,
            interval_ms,
        })
    }

    /// The worker entered `phase` (now; the device is read at once).
    pub fn phase(&self, phase: &str) {
        let _ = self.tx.send(Msg::Phase(Instant::now(), phase.to_string()));
    }

    /// Stop sampling and summarize the samples of the case whose measured outcome is
    /// `outcome`.
    pub fn finish(self, outcome: &Outcome) -> CaseTelemetry {
        let interval_ms = self.interval_ms;
        match self.stop() {
            Ok(visit) => summarize(visit.0, interval_ms, outcome),
            Err(why) => CaseTelemetry::unavailable(interval_ms, why),
        }
    }

    /// Stop sampling and keep what was read, to be summarized with the case's other visits
    /// ([`summarize_visits`]).
    pub fn stop(self) -> Result<VisitSamples, String> {
        let _ = self.tx.send(Msg::Stop(Instant::now()));
        self.handle
            .join()
            .map(VisitSamples)
            .map_err(|_| "the sampler thread failed".to_string())
    }
}

/// What a sampler read over one visit of a case (a run of interleaved rounds visits each
/// case several times).
#[derive(Debug)]
pub struct VisitSamples(Sampled);

/// The telemetry of a case from its visits' readings: laid end to end (each visit's times
/// shifted by the length of those before it, so the time between visits, when other cases
/// ran, is neither a gap nor a reading), then summarized as one case's.
pub fn summarize_visits(visits: Vec<VisitSamples>, interval_ms: u64, outcome: &Outcome) -> CaseTelemetry {
    let count = visits.len();
    let mut all = Sampled::default();
    let mut offset = 0.0;
    for (i, VisitSamples(v)) in visits.into_iter().enumerate() {
        all.phases.extend(v.phases.into_iter().map(|(t, p)| (t + offset, p)));
        all.readings
            .extend(v.readings.into_iter().map(|(t, r)| (t + offset, r)));
        if let Some((at, why)) = v.ended {
            if i + 1 == count {
                all.ended = Some((at + offset, why));
            } else {
                all.unavailable.entry("ended_visit".to_string()).or_insert_with(|| {
                    format!(
                        "{why}, in visit {} of {count}: no reading after it in that visit",
                        i + 1
                    )
                });
            }
        }
        all.clock_max_mhz = match (all.clock_max_mhz, v.clock_max_mhz) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if all.source.is_empty() {
            all.source = v.source;
        }
        for (k, why) in v.unavailable {
            all.unavailable.entry(k).or_insert(why);
        }
        offset += v.end_s;
        all.end_s = offset;
    }
    summarize(all, interval_ms, outcome)
}

/// The temperature of the worker's device, for `--wait-temp`: its source opened once (for
/// NVIDIA one `nvidia-smi -lms` for the whole wait), read as often as asked.
pub struct Thermometer(Box<dyn sources::Source>);

impl Thermometer {
    /// Open the source of `device` as the worker's environment `env` makes it, or say why
    /// there is none.
    pub fn open(device: &str, env: &WorkerEnv) -> Result<Thermometer, String> {
        sources::for_device(device, env, DEFAULT_INTERVAL_MS).map(Thermometer)
    }

    /// The temperature now (the latest reading, taken since the last call), °C, or why it
    /// cannot be read (no fresh reading within 3 s, or the source ended).
    pub fn read(&mut self) -> Result<f64, String> {
        let until = Instant::now() + Duration::from_secs(3);
        loop {
            let observed = self.0.observe(Duration::from_millis(50));
            let latest = observed.iter().rev().find_map(|o| match o {
                Observation::At(_, r) => r.temp_c,
                Observation::Ended(..) => None,
            });
            if let Some(t) = latest {
                return Ok(t);
            }
            if let Some(Observation::Ended(_, why)) = observed.iter().find(|o| matches!(o, Observation::Ended(..))) {
                return Err(why.clone());
            }
            if Instant::now() > until {
                return Err(format!("{} gave no temperature within 3 s", self.0.describe()));
            }
            if !observed.is_empty() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Which timed pass a phase marker is (`encode run 2/3`, or the fake hook's `encode 2/3`);
/// `None` for warmups, loading and the rest.
fn timed_pass(phase: &str) -> Option<&'static str> {
    if phase.contains("warmup") {
        return None;
    }
    ["encode", "decode"].into_iter().find(|p| phase.starts_with(p))
}

/// How long a source may give no reading before the case's telemetry says it went stale.
fn stale_after_s(interval_ms: u64) -> f64 {
    (5.0 * interval_ms as f64 / 1000.0).max(1.0)
}

/// The longest stretch of `readings` (times, sorted) in `[from, to]` without one, when it is
/// longer than `limit`: (start, end).
fn longest_gap(times: &[f64], from: f64, to: f64, limit: f64) -> Option<(f64, f64)> {
    let mut points = vec![from];
    points.extend(times.iter().copied().filter(|t| *t > from && *t < to));
    points.push(to);
    points
        .windows(2)
        .map(|w| (w[0], w[1]))
        .filter(|(a, b)| b - a > limit)
        .max_by(|x, y| (x.1 - x.0).total_cmp(&(y.1 - y.0)))
}

fn summarize(got: Sampled, interval_ms: u64, outcome: &Outcome) -> CaseTelemetry {
    let max = got.clock_max_mhz;
    let mut t = CaseTelemetry {
        source: Some(got.source),
        interval_ms,
        samples: got.readings.len(),
        clock_max_mhz: max,
        unavailable: got.unavailable,
        ..Default::default()
    };
    if max.is_none() {
        t.unavailable
            .entry("clock_max".to_string())
            .or_insert_with(|| "the clock's maximum is unknown: clock fractions cannot be given".to_string());
    }
    let mut last = got.end_s;
    if let Some((at, why)) = &got.ended {
        t.unavailable.insert(
            "ended".to_string(),
            format!("{why}, {at:.2} s into the case: no reading after it"),
        );
        last = last.min(*at);
    }
    let times: Vec<f64> = got.readings.iter().map(|(t, _)| *t).collect();
    if let Some((a, b)) = longest_gap(&times, 0.0, last, stale_after_s(interval_ms)) {
        t.unavailable.insert(
            "stale".to_string(),
            format!("no reading from {a:.2} s to {b:.2} s into the case: the source went stale"),
        );
    }
    let step = got.readings.len().div_ceil(MAX_SERIES).max(1);
    t.series = got
        .readings
        .iter()
        .step_by(step)
        .map(|(at, r)| [Some(*at), r.clock_mhz, r.temp_c])
        .collect();
    // Each phase's window: from its marker to the next one (or the case's end).
    let windows: Vec<(f64, f64, Option<&str>)> = got
        .phases
        .iter()
        .enumerate()
        .map(|(i, (from, p))| {
            let to = got.phases.get(i + 1).map_or(got.end_s, |n| n.0);
            (*from, to, timed_pass(p))
        })
        .collect();
    for (name, stats) in [("encode", &outcome.encode), ("decode", &outcome.decode)] {
        let mine: Vec<(f64, f64)> = windows
            .iter()
            .filter(|w| w.2 == Some(name))
            .map(|w| (w.0, w.1))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let in_pass: Vec<&Reading> = got
            .readings
            .iter()
            .filter(|(at, _)| mine.iter().any(|(a, b)| at >= a && at < b))
            .map(|(_, r)| r)
            .collect();
        let too_few = in_pass.len() < MIN_PASS_SAMPLES;
        if too_few {
            let span: f64 = mine.iter().map(|(a, b)| b - a).sum();
            t.unavailable.insert(
                format!("{name}_verdict"),
                format!(
                    "too few samples for a verdict: {} reading(s) taken during the timed {name} passes \
                     ({span:.3} s in all), {MIN_PASS_SAMPLES} needed",
                    in_pass.len()
                ),
            );
        }
        if in_pass.is_empty() {
            continue;
        }
        let median_s = stats.as_ref().map(|p| p.median_s);
        let mut pass = pass_telemetry(&in_pass, max, median_s);
        // Only a measured case with enough readings is judged: after a crash the last
        // phase's window holds an idle device.
        pass.throttled &= outcome.status == crate::report::CaseStatus::Ok && !too_few;
        if pass.throttled && t.throttle_why.is_none() {
            t.throttle_why = Some(why(name, &pass));
        }
        t.throttled |= pass.throttled;
        match name {
            "encode" => t.encode = Some(pass),
            _ => t.decode = Some(pass),
        }
    }
    t
}

/// Why a pass is throttled, in words.
fn why(name: &str, p: &PassTelemetry) -> String {
    let limits: Vec<&str> = p
        .throttle_reasons
        .iter()
        .map(String::as_str)
        .filter(|r| sources::is_thermal_or_power(r))
        .collect();
    match p.clock_median_fraction {
        Some(f) if f < THROTTLE_CLOCK_FRACTION => format!(
            "{name}: median clock {:.0}% of its maximum (below {:.0}%)",
            f * 100.0,
            THROTTLE_CLOCK_FRACTION * 100.0
        ),
        Some(f) => format!(
            "{name}: the driver reported {} at a median clock {:.0}% of its maximum",
            limits.join(", "),
            f * 100.0
        ),
        None => format!("{name}: the driver reported {}", limits.join(", ")),
    }
}

fn pass_telemetry(readings: &[&Reading], max: Option<f64>, median_pass_s: Option<f64>) -> PassTelemetry {
    let values = |f: &dyn Fn(&Reading) -> Option<f64>| -> Vec<f64> { readings.iter().filter_map(|r| f(r)).collect() };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let clocks = values(&|r| r.clock_mhz);
    let median_clock = (!clocks.is_empty()).then(|| crate::util::stats::median(&clocks));
    let min_clock = clocks.iter().copied().reduce(f64::min);
    let fraction = |c: Option<f64>| c.zip(max.filter(|m| *m > 0.0)).map(|(c, m)| c / m);
    let power = mean(&values(&|r| r.power_w));
    let mut reasons: Vec<String> = readings.iter().flat_map(|r| r.reasons.iter().cloned()).collect();
    reasons.sort();
    reasons.dedup();
    let mut p = PassTelemetry {
        samples: readings.len(),
        clock_median_fraction: fraction(median_clock),
        clock_min_fraction: fraction(min_clock),
        clock_median_mhz: median_clock,
        temp_peak_c: values(&|r| r.temp_c).into_iter().reduce(f64::max),
        power_mean_w: power,
        busy_mean_pct: mean(&values(&|r| r.busy_pct)),
        energy_per_pass_j: power.zip(median_pass_s).map(|(w, s)| w * s),
        vram_used_peak_bytes: readings.iter().filter_map(|r| r.vram_used_bytes).max(),
        gtt_used_peak_bytes: readings.iter().filter_map(|r| r.gtt_used_bytes).max(),
        throttle_reasons: reasons,
        throttled: false,
    };
    // A limit the driver reported in at least half of the pass's samples. The hardware's
    // slowdowns count as they are; the driver's software caps only where the clock fell too
    // (below SOFT_CAP_CLOCK_FRACTION, or unknown): an H200 at full load reported
    // sw_power_cap in every sample at 95-99% of its 1980 MHz, timings that are no throttled run.
    let in_half = |limit: &dyn Fn(&str) -> bool| {
        let n = readings.iter().filter(|r| r.reasons.iter().any(|n| limit(n))).count();
        n > 0 && 2 * n >= readings.len()
    };
    let clock_fell = p.clock_median_fraction.is_none_or(|f| f < SOFT_CAP_CLOCK_FRACTION);
    p.throttled = p.clock_median_fraction.is_some_and(|f| f < THROTTLE_CLOCK_FRACTION)
        || in_half(&sources::is_hardware_slowdown)
        || (clock_fell && in_half(&sources::is_thermal_or_power));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(clock: f64, reasons: &[&str]) -> Reading {
        Reading {
            clock_mhz: Some(clock),
            power_w: Some(100.0),
            reasons: reasons.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_pass_below_three_quarters_of_the_peak_clock_or_at_a_power_limit_is_throttled() {
        let (full, half) = (reading(2900.0, &[]), reading(1400.0, &[]));
        let p = pass_telemetry(&[&full, &full, &half], Some(2900.0), Some(2.0));
        assert!(!p.throttled && p.clock_median_fraction == Some(1.0));
        assert!((p.clock_min_fraction.unwrap() - 1400.0 / 2900.0).abs() < 1e-12);
        assert_eq!(p.energy_per_pass_j, Some(200.0));
        assert!(pass_telemetry(&[&half, &half, &full], Some(2900.0), None).throttled);
        // The driver's power cap at (nearly) full clock is a card at its power limit, not a
        // throttled run (an H200: sw_power_cap in every sample at 1965 of 1980 MHz) ...
        let capped = reading(2900.0, &["sw_power_cap"]);
        let near = reading(2750.0, &["sw_power_cap"]);
        assert!(!pass_telemetry(&[&capped], Some(2900.0), None).throttled);
        let p = pass_telemetry(&[&near, &near, &capped], Some(2900.0), None);
        assert!(!p.throttled && p.throttle_reasons == ["sw_power_cap"], "{p:?}");
        // ... but below 90% of the maximum it is, as it is where the clock is unknown.
        let cut = reading(2500.0, &["sw_power_cap"]);
        assert!(pass_telemetry(&[&cut, &cut, &full], Some(2900.0), None).throttled);
        assert!(pass_telemetry(&[&capped], None, None).throttled);
        // A limit in one sample of three is not enough; in two of three it is.
        assert!(!pass_telemetry(&[&cut, &full, &full], Some(2900.0), None).throttled);
        // The hardware's own slowdown counts whatever the sampled clock.
        let hw = reading(2900.0, &["hw_thermal_slowdown"]);
        assert!(pass_telemetry(&[&hw, &hw, &full], Some(2900.0), None).throttled);
        assert!(!pass_telemetry(&[&hw, &full, &full], Some(2900.0), None).throttled);
        let idle = reading(2900.0, &["gpu_idle"]);
        assert!(!pass_telemetry(&[&idle], Some(2900.0), None).throttled);
        // No maximum: no fraction, and no verdict from the clock.
        assert!(!pass_telemetry(&[&half], None, None).throttled);
    }

    fn ok_outcome() -> Outcome {
        Outcome::new(crate::report::CaseStatus::Ok, None, BTreeMap::new())
    }

    /// Readings of `clock` MHz at `times`, phases at their start times, the case's end.
    fn sampled(phases: &[(f64, &str)], readings: &[(f64, f64)], end_s: f64) -> Sampled {
        Sampled {
            phases: phases.iter().map(|(t, p)| (*t, p.to_string())).collect(),
            end_s,
            readings: readings.iter().map(|(t, c)| (*t, reading(*c, &[]))).collect(),
            clock_max_mhz: Some(2000.0),
            source: "test".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_pass_is_judged_on_the_readings_taken_inside_its_own_window() {
        // Idle (300 MHz) before and between the passes, full clock during them.
        let phases = [
            (0.0, "load"),
            (0.50, "encode run 1/3"),
            (0.53, "decode run 1/3"),
            (0.56, "encode run 2/3"),
            (0.59, "decode run 2/3"),
            (0.62, "encode run 3/3"),
            (0.65, "decode run 3/3"),
            (0.68, "outputs"),
        ];
        let mut readings: Vec<(f64, f64)> = vec![(0.1, 300.0), (0.2, 300.0), (0.4, 300.0), (0.7, 300.0), (0.8, 300.0)];
        readings.extend([0.50, 0.56, 0.62].map(|t| (t + 0.001, 2000.0)));
        readings.extend([0.53, 0.59, 0.65].map(|t| (t + 0.001, 2000.0)));
        readings.sort_by(|a, b| a.0.total_cmp(&b.0));
        let t = summarize(sampled(&phases, &readings, 0.9), 100, &ok_outcome());
        assert!(!t.throttled, "{t:?}");
        let e = t.encode.unwrap();
        assert_eq!((e.samples, e.clock_median_fraction), (3, Some(1.0)));
        assert_eq!(t.decode.unwrap().samples, 3);
        assert_eq!(t.samples, 11);
        assert!(!t.unavailable.contains_key("encode_verdict"), "{:?}", t.unavailable);
        // With a reading in only two of the encode passes: no verdict, and why.
        readings.retain(|r| r.0 != 0.621);
        let low: Vec<(f64, f64)> = readings.iter().map(|(t, _)| (*t, 300.0)).collect();
        let t = summarize(sampled(&phases, &low, 0.9), 100, &ok_outcome());
        assert!(t.encode.as_ref().is_some_and(|e| !e.throttled), "{t:?}");
        let why = &t.unavailable["encode_verdict"];
        assert!(why.starts_with("too few samples for a verdict: 2 reading(s)"), "{why}");
        // The decode passes, with three readings at 15% of the clock, are judged.
        assert!(t.decode.unwrap().throttled && t.throttled);
        assert_eq!(
            t.throttle_why.as_deref(),
            Some("decode: median clock 15% of its maximum (below 75%)")
        );
    }

    #[test]
    fn a_source_that_ended_or_went_stale_says_so() {
        let mut got = sampled(&[(0.0, "encode run 1/1")], &[(0.0, 2000.0), (0.1, 2000.0)], 3.0);
        got.ended = Some((0.15, "nvidia-smi: it ended after 2 line(s)".into()));
        let t = summarize(got, 100, &ok_outcome());
        assert_eq!(
            t.unavailable["ended"],
            "nvidia-smi: it ended after 2 line(s), 0.15 s into the case: no reading after it"
        );
        assert!(!t.unavailable.contains_key("stale"), "{:?}", t.unavailable);
        assert!(t.unavailable["encode_verdict"].starts_with("too few samples"));
        let got = sampled(
            &[(0.0, "encode run 1/1")],
            &[(0.0, 2000.0), (0.1, 2000.0), (2.6, 2000.0)],
            3.0,
        );
        let t = summarize(got, 100, &ok_outcome());
        assert_eq!(
            t.unavailable["stale"],
            "no reading from 0.10 s to 2.60 s into the case: the source went stale"
        );
    }

    #[test]
    fn timed_passes_are_told_from_warmups() {
        assert_eq!(timed_pass("encode run 1/3"), Some("encode"));
        assert_eq!(timed_pass("decode 2/3"), Some("decode"));
        assert_eq!(timed_pass("encode warmup 1/1"), None);
        assert_eq!(timed_pass("warmup decode 1/1"), None);
        assert_eq!(timed_pass("load"), None);
    }
}
