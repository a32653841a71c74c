//! The parent's telemetry sampler (issue 32): while a case runs, a thread of the parent reads
//! the run's device ([`sources`]) every interval (100 ms by default) and at every phase change
//! the worker reports, and tags each sample with the phase it fell in; the worker itself does
//! nothing for it. When the case ends, [`Sampler::finish`] summarizes the samples of the
//! timed encode and decode passes (warmups are left out) into the case's `telemetry`, with the
//! throttle verdict of `report::telemetry`. [`Thermometer`] serves `--wait-temp`.
//!
//! Must not: run cases or change what a worker measures.
pub mod sources;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::report::telemetry::{CaseTelemetry, PassTelemetry, MAX_SERIES, THROTTLE_CLOCK_FRACTION};
use crate::report::Outcome;
use sources::Reading;

/// The default sampling interval, milliseconds (`run --telemetry-ms`).
pub const DEFAULT_INTERVAL_MS: u64 = 100;

/// One sample: when (seconds since the case started), in which phase, what was read.
#[derive(Debug, Clone)]
struct Sample {
    t_s: f64,
    phase: String,
    reading: Reading,
}

/// What the sampler thread hands back: the samples, the clock's maximum, the source's
/// description and what it cannot read.
type Sampled = (
    Vec<Sample>,
    Option<f64>,
    String,
    std::collections::BTreeMap<String, String>,
);

enum Msg {
    Phase(String),
    Stop,
}

/// A running sampler for one case.
pub struct Sampler {
    tx: mpsc::Sender<Msg>,
    handle: std::thread::JoinHandle<Sampled>,
    interval_ms: u64,
}

impl Sampler {
    /// Start sampling the run's `device` every `interval_ms`; `Err` says why it cannot be
    /// sampled (then the case's telemetry says so, with nothing made up).
    pub fn start(device: &str, interval_ms: u64) -> Result<Sampler, String> {
        let mut source = sources::for_device(device, interval_ms)?;
        let (tx, rx) = mpsc::channel();
        let interval = Duration::from_millis(interval_ms.max(1));
        let handle = std::thread::spawn(move || {
            let start = Instant::now();
            let mut phase = String::new();
            let mut samples = Vec::new();
            let mut next = start;
            loop {
                let wait = next.saturating_duration_since(Instant::now());
                match rx.recv_timeout(wait) {
                    Ok(Msg::Phase(p)) => phase = p,
                    Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(mpsc::RecvTimeoutError::Timeout) => next = (next + interval).max(Instant::now()),
                }
                samples.push(Sample {
                    t_s: start.elapsed().as_secs_f64(),
                    phase: phase.clone(),
                    reading: source.read(),
                });
            }
            (samples, source.clock_max_mhz(), source.describe(), source.unavailable())
        });
        Ok(Sampler {
            tx,
            handle,
            interval_ms,
        })
    }

    /// The worker entered `phase` (a sample is taken at once).
    pub fn phase(&self, phase: &str) {
        let _ = self.tx.send(Msg::Phase(phase.to_string()));
    }

    /// Stop sampling and summarize the samples of the case whose measured outcome is
    /// `outcome`.
    pub fn finish(self, outcome: &Outcome) -> CaseTelemetry {
        let _ = self.tx.send(Msg::Stop);
        let Ok((samples, max, source, unavailable)) = self.handle.join() else {
            return CaseTelemetry::unavailable(self.interval_ms, "the sampler thread failed".to_string());
        };
        summarize(&samples, max, source, unavailable, self.interval_ms, outcome)
    }
}

/// The temperature of the run's device, for `--wait-temp`: its source opened once (for
/// NVIDIA one `nvidia-smi -lms` for the whole wait), read as often as asked.
pub struct Thermometer(Box<dyn sources::Source>);

impl Thermometer {
    /// Open the source of `device`, or say why there is none.
    pub fn open(device: &str) -> Result<Thermometer, String> {
        sources::for_device(device, DEFAULT_INTERVAL_MS).map(Thermometer)
    }

    /// The temperature now, °C, or why it cannot be read.
    pub fn read(&mut self) -> Result<f64, String> {
        // nvidia-smi -lms prints its first line at once; give it that moment.
        let until = Instant::now() + Duration::from_secs(3);
        loop {
            if let Some(t) = self.0.read().temp_c {
                return Ok(t);
            }
            if Instant::now() > until {
                return Err(format!("{} gives no temperature", self.0.describe()));
            }
            std::thread::sleep(Duration::from_millis(50));
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

fn summarize(
    samples: &[Sample],
    max: Option<f64>,
    source: String,
    unavailable: std::collections::BTreeMap<String, String>,
    interval_ms: u64,
    outcome: &Outcome,
) -> CaseTelemetry {
    let mut t = CaseTelemetry {
        source: Some(source),
        interval_ms,
        samples: samples.len(),
        clock_max_mhz: max,
        unavailable,
        ..Default::default()
    };
    if max.is_none() {
        t.unavailable
            .entry("clock_max".to_string())
            .or_insert_with(|| "the clock's maximum is unknown: clock fractions cannot be given".to_string());
    }
    let step = samples.len().div_ceil(MAX_SERIES).max(1);
    t.series = samples
        .iter()
        .step_by(step)
        .map(|s| [Some(s.t_s), s.reading.clock_mhz, s.reading.temp_c])
        .collect();
    for (name, stats) in [("encode", &outcome.encode), ("decode", &outcome.decode)] {
        let in_pass: Vec<&Reading> = samples
            .iter()
            .filter(|s| timed_pass(&s.phase) == Some(name))
            .map(|s| &s.reading)
            .collect();
        if in_pass.is_empty() {
            continue;
        }
        let median_s = stats.as_ref().map(|p| p.median_s);
        let mut pass = pass_telemetry(&in_pass, max, median_s);
        // Only a measured case is judged: after a crash the last phase's tag stays on samples
        // of an idle device.
        pass.throttled &= outcome.status == crate::report::CaseStatus::Ok;
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
        _ => format!("{name}: the driver reported {}", limits.join(", ")),
    }
}

fn pass_telemetry(readings: &[&Reading], max: Option<f64>, median_pass_s: Option<f64>) -> PassTelemetry {
    let values = |f: &dyn Fn(&Reading) -> Option<f64>| -> Vec<f64> { readings.iter().filter_map(|r| f(r)).collect() };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let clocks = values(&|r| r.clock_mhz);
    let median_clock = (!clocks.is_empty()).then(|| crate::stats::median(&clocks));
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
    // A limit the driver reported in at least half of the pass's samples (a datacenter card
    // touches its power cap now and then at full clock).
    let limited = readings
        .iter()
        .filter(|r| r.reasons.iter().any(|n| sources::is_thermal_or_power(n)))
        .count();
    p.throttled = p.clock_median_fraction.is_some_and(|f| f < THROTTLE_CLOCK_FRACTION) || 2 * limited >= readings.len();
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
        let capped = reading(2900.0, &["sw_power_cap"]);
        assert!(pass_telemetry(&[&capped], Some(2900.0), None).throttled);
        // A limit in one sample of three is not enough; in two of three it is.
        assert!(!pass_telemetry(&[&capped, &full, &full], Some(2900.0), None).throttled);
        assert!(pass_telemetry(&[&capped, &capped, &full], Some(2900.0), None).throttled);
        let idle = reading(2900.0, &["gpu_idle"]);
        assert!(!pass_telemetry(&[&idle], Some(2900.0), None).throttled);
        // No maximum: no fraction, and no verdict from the clock.
        assert!(!pass_telemetry(&[&half], None, None).throttled);
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
