//! The report's `summary`: the answer `run` states after the table (what to set, per
//! workload and engine), as `crate::analysis::answer` computes it; schema only, documented in
//! `docs/report-schema.md` and `docs/answer.md`.
//!
//! Must not: compute the answer (that is `crate::analysis::answer`).
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::CaseStatus;

/// What to set: the answer of a finished run (`summary`), see `docs/answer.md`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Summary {
    /// Whether the run's quality numbers rest on synthetic weights (random values): they
    /// describe those, not the user's VAE, and tiling and chunking seams do not decide the
    /// answer then (`docs/answer.md`). Absent in older reports: false.
    #[serde(default)]
    pub quality_on_synthetic_weights: bool,
    /// The quality floor: a case qualifies when its PSNR against its fp32 untiled reference
    /// is at least this (`run --min-psnr`), dB.
    pub min_psnr_db: f64,
    /// Coverage of the speed-up interval, e.g. 0.95.
    pub confidence: f64,
    /// Bootstrap resamples per interval.
    pub bootstrap_resamples: usize,
    /// Seed of the bootstrap's generator (the same seed gives the same interval).
    pub bootstrap_seed: u64,
    /// One answer per workload (model, frames, size, passes) and engine, in that order.
    pub answers: Vec<Answer>,
}

/// The answer for one workload on one engine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Answer {
    /// `wan2.1` or `wan2.2` (from `model.z_dim`), else `z_dim N`.
    pub model: String,
    /// The engine every case of this answer ran on.
    pub engine: String,
    /// Video frames of the workload.
    pub frames: usize,
    /// Width, pixels.
    pub width_px: usize,
    /// Height, pixels.
    pub height_px: usize,
    /// Timed passes: `encode`, `decode` or `both`.
    pub passes: String,
    /// The conclusion, see [`Verdict`].
    pub verdict: Verdict,
    /// The conclusion in one plain sentence.
    pub sentence: String,
    /// Cases of this workload and engine in the run (any status).
    pub cases: usize,
    /// Of those, the `ok` ones at or above the floor and within the memory budgets.
    pub cases_qualified: usize,
    /// The default: what changing nothing gives. Null when the run had no such case.
    pub baseline: Option<AnswerCase>,
    /// Whether the default itself qualifies (floor and memory budgets).
    pub baseline_qualified: bool,
    /// The fastest qualified case (null when none qualified).
    pub fastest: Option<AnswerCase>,
    /// Median time of the default over that of the fastest (above 1: faster); null
    /// without both.
    pub speedup_ratio: Option<f64>,
    /// Lower end of the bootstrap interval of `speedup_ratio`; null with fewer than 2 runs
    /// on either side.
    pub speedup_ratio_low: Option<f64>,
    /// Upper end of that interval.
    pub speedup_ratio_high: Option<f64>,
    /// How to apply the fastest case; null when the default is the answer or there is none.
    pub apply: Option<Apply>,
    /// When the fastest case's quality is not known on synthetic weights: the run's command
    /// with `--weights FILE`, which measures it on the user's VAE. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_with_weights: Option<String>,
    /// How the speed-up interval was drawn: `rounds` (runs paired by the round they were
    /// taken in: a run of interleaved rounds) or `independent` (each side's runs resampled
    /// apart: a run of blocks, or an older report). Absent without an interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_method: Option<String>,
    /// What the A/A control measured: the default timed twice, in two worker processes
    /// ([`Drift`]). Absent when the run had no control for this workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// Variables of this workload's cases that are never advised, with why: a library the
    /// engine never loads on the device reads them, or the tool does not know them and no
    /// case changed them alone (`docs/answer.md`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_advised: BTreeMap<String, String>,
    /// The cases of this workload and engine whose timed passes ran on a busy machine
    /// (`outcome.load.busy`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy_cases: Vec<String>,
}

/// The A/A control's reading: two measurements of one setting differ only by the machine.
/// No case is called faster or slower unless its interval clears `floor_ratio`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Drift {
    /// The control's case id.
    pub control_id: String,
    /// Median time of the default over that of its control.
    pub ratio: f64,
    /// The 95% interval of that ratio (null with fewer than 2 runs a side).
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    /// How far apart two measurements of one setting came in this run, as a ratio at least
    /// 1: the interval's farther end from 1 (its inverse when below 1), or the ratio itself
    /// without an interval.
    pub floor_ratio: f64,
}

/// The conclusion of an [`Answer`]. [`Verdict::name`] is its JSON spelling.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The fastest case is faster than the default beyond noise (interval above 1).
    Faster,
    /// The fastest case is slower than the default beyond noise (only when the default does
    /// not qualify, e.g. it breaks a memory budget).
    Slower,
    /// The interval contains 1: no measured difference.
    WithinNoise,
    /// Fewer than 2 runs on a side: a ratio without an interval.
    TooFewRuns,
    /// The default is itself the fastest qualified case.
    BaselineFastest,
    /// The default was not measured `ok` (absent, failed, out of memory...): the fastest
    /// qualified case is named without a ratio.
    NoBaseline,
    /// Only one case of this workload ran: nothing to compare.
    OneCase,
    /// No `ok` case reached the floor within the memory budgets.
    NoneQualified,
    /// A case of this workload ran throttled (`telemetry.throttled`): its timings measure
    /// the cooling, so no winner is called.
    Throttled,
    /// Its cases were timed on different machines (a merged report of parts run on several
    /// runners): no winner is called across machines.
    Machines,
    /// Its cases ran with different values of a variable no env variant of their run set
    /// (parts run from differently set shells, merged with `--force`,
    /// [`super::env::differences`]): no winner is called across them.
    Environments,
    /// The fastest case's interval excludes 1 but not the A/A control's drift (two
    /// measurements of the default differed as much): no winner is called.
    WithinDrift,
}

impl Verdict {
    /// The JSON spelling, e.g. `within_noise`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within_noise",
            Verdict::TooFewRuns => "too_few_runs",
            Verdict::BaselineFastest => "baseline_fastest",
            Verdict::NoBaseline => "no_baseline",
            Verdict::OneCase => "one_case",
            Verdict::NoneQualified => "none_qualified",
            Verdict::Throttled => "throttled",
            Verdict::Machines => "machines",
            Verdict::Environments => "environments",
            Verdict::WithinDrift => "within_drift",
        }
    }
}

/// A case as an [`Answer`] cites it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AnswerCase {
    /// The case's `id` in `cases`.
    pub id: String,
    /// Its status.
    pub status: CaseStatus,
    /// Median over its runs of the run's time (the sum of its timed passes), seconds; null
    /// unless `ok`.
    pub median_s: Option<f64>,
    /// Number of timed runs behind `median_s`.
    pub runs: usize,
    /// `reference` (it is its own fp32 untiled reference), `identical`, `psnr`, `unknown`, or
    /// `not_known_on_synthetic_weights` (tiled or chunked on synthetic weights: `psnr_db` is
    /// that of random weights and does not gate).
    pub quality: String,
    /// PSNR against its reference (decoded video; the latent for encode-only), dB; set when
    /// `quality` is `psnr`.
    pub psnr_db: Option<f64>,
    /// Peak resident memory of its worker, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Peak device memory reserved by torch, bytes (Python engines on a GPU).
    pub device_peak_reserved_bytes: Option<u64>,
    /// The first line of its error unless `ok` (an `oom` case's names what did not fit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How to get the fastest case's speed outside this tool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Apply {
    /// Engine it was measured on.
    pub engine: String,
    /// Variables to export: those of its env variant that differ from the `baseline`
    /// variant's (as the workers recorded them).
    pub env_set: BTreeMap<String, String>,
    /// Variables the `baseline` variant had and its variant did not: unset them.
    pub env_unset: Vec<String>,
    /// Variables its env variant set or removed that are not advised, with why (a library
    /// the engine never loads on the device reads them): measured, never to apply.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_not_advised: BTreeMap<String, String>,
    /// For the `comfyui` engine: the node, its parameters and the launch switch.
    pub comfyui: Option<ComfyuiApply>,
    /// Every setting as a concrete step (precision, tiling, chunk, knobs), in words.
    pub steps: Vec<String>,
}

/// The ComfyUI workflow and launch that reproduce a `comfyui` case: what its engine recorded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ComfyuiApply {
    /// The node of each pass the case timed, with the widget values it ran with.
    #[serde(default)]
    pub nodes: Vec<ComfyuiNode>,
    /// The flags of the ComfyUI launch the case stands for: `--cpu` on the CPU, and
    /// `--fp32-vae`, `--bf16-vae` or `--fp16-vae` (none for `auto`, ComfyUI's own choice).
    #[serde(default)]
    pub launch_flags: Vec<String>,
}

/// One ComfyUI node as a pass of a `comfyui` case ran it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ComfyuiNode {
    /// `encode` or `decode`.
    pub pass: String,
    /// `VAEEncode`, `VAEEncodeTiled`, `VAEDecode` or `VAEDecodeTiled`.
    pub node: String,
    /// The tiled node's `tile_size`, pixels (null for the untiled nodes).
    pub tile_size_px: Option<usize>,
    /// The tiled node's `overlap`, pixels.
    pub overlap_px: Option<usize>,
    /// The tiled node's `temporal_size`, video frames.
    pub temporal_size_frames: Option<usize>,
    /// The tiled node's `temporal_overlap`, video frames.
    pub temporal_overlap_frames: Option<usize>,
}
