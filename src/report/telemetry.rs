//! What the device was doing while a case ran (issue 32): the parent's samples of its clock,
//! temperature, power, load and memory, summarized per pass ([`CaseTelemetry`], a case's
//! `telemetry` in the report), with the throttle verdict: a timed pass whose median clock
//! fell below [`THROTTLE_CLOCK_FRACTION`] of the clock's maximum, or in at least half of whose
//! samples the driver reported a hardware slowdown, or a software power or thermal cap with
//! the clock below [`SOFT_CAP_CLOCK_FRACTION`], is marked (`ok` cases only), and no
//! answer is drawn from it. Only readings taken inside the passes' own time windows count;
//! with fewer than [`MIN_PASS_SAMPLES`] there is no verdict (`unavailable` says "too few
//! samples for a verdict").
//!
//! Must not: read the device (`telemetry` samples it) or decide the answer.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A timed pass whose median clock is below this fraction of the maximum is throttled
/// (nvbench drops samples below 75% of the peak clock, too).
pub const THROTTLE_CLOCK_FRACTION: f64 = 0.75;

/// A software power or thermal cap (NVIDIA's `sw_power_cap`, `sw_thermal_slowdown`) reported
/// in at least half of a pass's samples marks it throttled only with its median clock below
/// this fraction of the maximum: a datacenter card at full load sits at its power cap with
/// its clock within a few percent of the maximum (an H200: 95-99% of 1980 MHz).
pub const SOFT_CAP_CLOCK_FRACTION: f64 = 0.9;

/// Fewest readings taken during a kind's timed passes for a verdict on them.
pub const MIN_PASS_SAMPLES: usize = 3;

/// The device's state during one case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CaseTelemetry {
    /// Where the samples come from: `amdgpu sysfs (/sys/class/drm/card0/device)`,
    /// `nvidia-smi (GPU 0)`, `cpu (/proc/cpuinfo, hwmon k10temp)`; absent when none could be
    /// read (then `unavailable` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The sampling interval, milliseconds (a sample is also taken at every phase change).
    pub interval_ms: u64,
    /// Readings taken during the case (each once, with the time it was taken).
    pub samples: usize,
    /// The clock's maximum, MHz (the highest level `pp_dpm_sclk` / `pp_od_clk_voltage`
    /// lists, `clocks.max.sm`, `cpuinfo_max_freq`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_max_mhz: Option<f64>,
    /// The timed encode passes (absent when the case had none, or no sample fell in them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encode: Option<PassTelemetry>,
    /// The timed decode passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode: Option<PassTelemetry>,
    /// Whether a timed pass was throttled (see the module's rule); such a case is marked in
    /// the table and never called a winner.
    #[serde(default)]
    pub throttled: bool,
    /// Why, in words, when `throttled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle_why: Option<String>,
    /// For each quantity that could not be read, why (`clock: no pp_dpm_sclk in ...`);
    /// also `encode_verdict`/`decode_verdict` (too few samples for a verdict), `ended` (the
    /// source ended: no reading after it), `stale` (the source gave no reading for a while).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: BTreeMap<String, String>,
    /// The samples over time for plots: `[seconds since the case started, clock MHz,
    /// temperature °C]`, null where unknown; at most [`MAX_SERIES`] (evenly thinned).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<[Option<f64>; 3]>,
}

/// Most points kept in [`CaseTelemetry::series`] (about 5 KB a case: a report of 10,000 cases
/// stays far below the 256 MiB `compare` reads).
pub const MAX_SERIES: usize = 120;

/// The device's state over the timed passes of one kind (encode or decode) of a case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PassTelemetry {
    /// Readings taken inside these passes' time windows.
    pub samples: usize,
    /// Median clock as a fraction of the maximum (1.0 = at its peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_median_fraction: Option<f64>,
    /// Lowest clock as a fraction of the maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_min_fraction: Option<f64>,
    /// Median clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_median_mhz: Option<f64>,
    /// Highest temperature, °C (the hottest sensor: junction on AMD, the package on a CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_peak_c: Option<f64>,
    /// Mean power, watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_mean_w: Option<f64>,
    /// Mean load, percent (`gpu_busy_percent`, `utilization.gpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_mean_pct: Option<f64>,
    /// Energy of one pass, joules: the mean power times the median pass time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_per_pass_j: Option<f64>,
    /// Peak VRAM in use (AMD, `mem_info_vram_used`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vram_used_peak_bytes: Option<u64>,
    /// Peak GTT in use (AMD, `mem_info_gtt_used`: the unified memory of an APU), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtt_used_peak_bytes: Option<u64>,
    /// Throttle reasons the driver reported during these passes (NVIDIA:
    /// `clocks_throttle_reasons.active`, e.g. `hw_thermal_slowdown`, `sw_power_cap`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttle_reasons: Vec<String>,
    /// Median clock below [`THROTTLE_CLOCK_FRACTION`] of the maximum, or a hardware slowdown in
    /// at least half of the samples, or a software power or thermal cap there with the median
    /// clock below [`SOFT_CAP_CLOCK_FRACTION`] (judged for `ok` cases with at least
    /// [`MIN_PASS_SAMPLES`] samples only).
    #[serde(default)]
    pub throttled: bool,
}

impl CaseTelemetry {
    /// Telemetry that could not be read at all, saying why.
    pub fn unavailable(interval_ms: u64, why: String) -> CaseTelemetry {
        CaseTelemetry {
            interval_ms,
            unavailable: BTreeMap::from([("all".to_string(), why)]),
            ..Default::default()
        }
    }
}
