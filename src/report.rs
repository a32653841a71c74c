//! The JSON report: one serde struct per record, units in field names.
//!
//! Every field is documented in `docs/report-schema.md`; keep the two in step. Readers
//! (`compare`, `merge`, `plot`) refuse a different [`SCHEMA_VERSION`] unless forced.
//!
//! Must not: measure, render or know how cases run; it is the schema and its load/save.
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::machine::system::SystemInfo;
pub use crate::machine::tool::ToolInfo;
use crate::report::settings::CaseSettings;
pub use summary::{Answer, AnswerCase, Apply, ComfyuiApply, ComfyuiNode, Drift, Summary, Verdict};

mod device_memory;
pub mod env;
pub mod load;
mod miopen_log;
pub mod profile;
pub mod quality;
pub mod rounds;
pub mod settings;
pub mod shard;
mod summary;
pub mod telemetry;
#[cfg(test)]
pub mod testing;
pub mod values;
mod worker_use;

pub use miopen_log::{BenchResult, ConvProblem, Gemm, HipblasltLog, KernelCount, MiopenLog, UnreadCommand};

pub use device_memory::DeviceProcessPeak;
pub use worker_use::WorkerUse;

/// Version of this report layout; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole benchmark report (one run, or several merged).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// Layout version of this file ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The program that wrote the report.
    pub tool: ToolInfo,
    /// When the run started, RFC 3339 UTC.
    pub created_at: String,
    /// The machine the run measured (for merged reports: the first input's).
    pub system: SystemInfo,
    /// The weights every case used.
    pub model: ModelInfo,
    /// Run-wide settings.
    pub run: RunSettings,
    /// One record per case, in the order they finished.
    pub cases: Vec<CaseRecord>,
    /// Per engine that reports a context (the Python engines: `torch`, `diffusers`,
    /// `comfyui`): what its first case reported. Absent when only candle ran.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub engines: BTreeMap<String, EngineContext>,
    /// The answer `run` states after the table: per workload and engine, the default, the
    /// fastest setting that stays right, how much faster and how to apply it (computed by
    /// `crate::analysis::answer` from the cases). Absent in reports written before it existed, while
    /// the run is in progress, and in merged reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

/// What an engine ran on, as its worker reported it with its first case, key by key (the
/// keys each engine reports are listed in its `engine::EngineSpec::context` and
/// documented in `docs/report-schema.md`): for the Python engines the interpreter, library
/// versions, threads and device (`python`, `torch`, `device_name`, ...).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(transparent)]
pub struct EngineContext(pub BTreeMap<String, serde_json::Value>);

impl EngineContext {
    /// The value of `key` when reported and not null.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// The text of `key` when reported as a string.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(|v| v.as_str())
    }
}

/// The model weights a report measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ModelInfo {
    /// The `--weights` reference as the user gave it (`synthetic`, a path, `hf://…`, a preset).
    pub source: String,
    /// Hub repository (`OWNER/NAME`) when the weights came from the Hub.
    pub repo: Option<String>,
    /// File inside the hub repository.
    pub file: Option<String>,
    /// Resolved hub revision (commit sha) of the snapshot used.
    pub revision: Option<String>,
    /// Local file the workers loaded (null for synthetic weights).
    pub local_path: Option<String>,
    /// Size of that file in bytes.
    pub file_size_bytes: Option<u64>,
    /// SHA-256 of that file, lowercase hex.
    pub sha256: Option<String>,
    /// On-disk dtype(s) of the tensors (`f32`, `bf16`, `f16`; several joined by `+`).
    pub on_disk_dtype: String,
    /// Number of parameters in the checkpoint.
    pub params: u64,
    /// Inferred base width (`dim`, 96 for the real model).
    pub dim: usize,
    /// Inferred latent channels (`z_dim`, 16 for the real model).
    pub z_dim: usize,
}

impl ModelInfo {
    /// Whether the weights were synthetic (random values in the real layout): no local file,
    /// and the reference `synthetic` (or `synthetic:SEED`). Quality measured on them describes
    /// random weights, not a real VAE.
    pub fn is_synthetic(&self) -> bool {
        self.local_path.is_none() && self.source.trim().to_ascii_lowercase().starts_with("synthetic")
    }
}

/// What the tables say under a quality column measured on synthetic weights.
pub const SYNTHETIC_QUALITY_NOTE: &str = "PSNR on synthetic weights (random values in the real layout): it \
    describes them, not your VAE; their tiling and chunking seams are far larger than a real VAE's, so those do not \
    decide the answer; measure your VAE with --weights FILE";

/// Settings that apply to every case of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RunSettings {
    /// Device string the cases ran on (`cpu`, `cuda:0`, `metal`).
    pub device: String,
    /// Untimed-for-statistics warmup passes per case (each still timed into `warmup_s`).
    pub warmup: usize,
    /// Timed passes per case.
    pub runs: usize,
    /// Per-case time limit in seconds.
    pub timeout_s: f64,
    /// `shuffled` or `as-written`.
    pub order: String,
    /// Seed of the case shuffle (null when not shuffled).
    pub shuffle_seed: Option<u64>,
    /// Matrix file used, if any.
    pub config_path: Option<String>,
    /// `worker`: cases of one engine and env variant shared a worker process (each case's
    /// `worker` says fresh or reused); `case`: one process per case (`run --isolate case`).
    /// Absent in older reports (one process per case).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub isolate: String,
    /// Interpreter of the Python engines as given (absent when only candle ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// `cast` or `autocast`: how the Python engines ran 16-bit cases, when set (each case's
    /// `compute_dtype` says what ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_precision: Option<String>,
    /// Set when a signal stopped the run early, e.g. `SIGINT after 3 of 8 cases`; the
    /// report then holds the cases that finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// The user's input file (`--input`); null when the cases used the built-in clip.
    #[serde(default)]
    pub input: Option<InputRecord>,
    /// The run's command line, word by word (absent in older reports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The engine that encoded the latents its decode-only cases decoded, when it had no
    /// `--input` latent (`candle (an untimed fp32 encode per frames and size)`): candle where
    /// the build has the device, else the run's engine on it. Absent when none was prepared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepared_latents: Option<String>,
    /// True when the run let workers act on the `WAN_VAE_BENCH_FAULT` testing hook
    /// (`run --fault-hooks`): its timings may be made up. Absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fault_hooks: bool,
    /// The tool's own variables that alter what was measured or recorded, as set in `run`'s
    /// environment (`WAN_VAE_BENCH_CPU_ISA`, `WAN_VAE_BENCH_SYSFS_ROOT`). Absent when none is.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, String>,
    /// `run --shard K/N`: which part of which plan ([`shard::ShardRecord`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<shard::ShardRecord>,
    /// The variables each env variant of the plan sets or removes, by variant name
    /// (`baseline`: none), so that those of the shell `run` ran in are told apart
    /// ([`env::differences`]). Absent in older reports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_variants: BTreeMap<String, Vec<String>>,
    /// How the cases were timed: `rounds` (the cases of a workload interleaved, a few runs
    /// per visit, each round in a fresh random order) or `blocks` (each case's runs one after
    /// another, as before issue 63); absent in older reports (blocks).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub schedule: String,
    /// With `rounds`: the timed runs of a case per visit (`--round-runs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_runs: Option<usize>,
}

/// The input file a run decoded or encoded (`run.input`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct InputRecord {
    /// The file as given.
    pub path: String,
    /// The tensor used (`latent_tensor` in a ComfyUI `.latent`; `array` for `.npy`).
    pub tensor: String,
    /// Its shape as stored in the file.
    pub shape: Vec<usize>,
    /// Its dtype as stored (`f32`, `f16`, `bf16`, `f64`).
    pub dtype: String,
    /// SHA-256 of the file, lowercase hex.
    pub sha256: String,
    /// `latent` or `video`.
    pub kind: String,
    /// How its values were read: `normalized` ((mu - mean) / std, what this tool's encode
    /// gives), `comfyui` (ComfyUI's raw VAE latent, normalized with the model's mean/std
    /// before decoding) or `video` ([-1, 1]).
    pub normalization: String,
}

/// Outcome of one case. [`CaseStatus::name`] is its JSON spelling.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    /// Measured.
    Ok,
    /// The worker reported an error or crashed.
    Failed,
    /// The worker exceeded `timeout_s` and was killed.
    Timeout,
    /// The worker ran out of memory (host or device).
    Oom,
    /// The setting is not supported by this build or device.
    Unsupported,
}

impl CaseStatus {
    /// The name used in the JSON and in tables: `ok`, `failed`, `timeout`, `oom`, `unsupported`.
    pub fn name(self) -> &'static str {
        match self {
            CaseStatus::Ok => "ok",
            CaseStatus::Failed => "failed",
            CaseStatus::Timeout => "timeout",
            CaseStatus::Oom => "oom",
            CaseStatus::Unsupported => "unsupported",
        }
    }
}

impl std::fmt::Display for CaseStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One benchmark case: a point of the matrix.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseRecord {
    /// Stable identifier built from the case's settings; `compare` matches cases by it.
    pub id: String,
    /// True when the case was not in the matrix but added as a quality reference.
    #[serde(default)]
    pub added_as_reference: bool,
    /// True for the A/A control: a second measurement of the default of its workload and
    /// engine, in a worker process of its own (`run --control`), against which the answer
    /// measures the machine's drift. Never recommended. Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub added_as_control: bool,
    /// The case's settings, flattened into the record's JSON as `engine` (`candle`, `torch`,
    /// `diffusers`), `precision` (`fp32`, `bf16` or `fp16`), `chunk` (latent frames per
    /// decoder call), `tile_px`/`overlap_px` (null when untiled), `frames`, `width`, `height`,
    /// `env_variant`, and the knobs `cudnn`, `cudnn_benchmark`, `miopen_db` (`n/a` where they
    /// do not apply).
    #[serde(flatten)]
    pub settings: CaseSettings,
    /// Frames the VAE really processed: the first `1 + 4k` of `frames` (null in reports
    /// written before the field existed).
    #[serde(default)]
    pub frames_used: Option<usize>,
    /// What the worker measured (status, timings, memory, environment), flattened into the
    /// record's JSON as the worker's result file has it.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// `run --profile`: the per-layer breakdown of a profiled pass per pass kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::CaseProfile>,
    /// Distance of this case's outputs from its fp32/untiled/chunk-1 reference case.
    pub quality: Option<Quality>,
    /// The machine this case ran on; set by `merge` when cases come from several reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemInfo>,
    /// The run settings of the report this case came from; set by `merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunSettings>,
    /// Each `[budgets]` limit that applies to this case, with its verdict (ok cases only;
    /// absent when the matrix sets none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budgets: Vec<BudgetCheck>,
}

/// What one worker measured for one case (or what its death said): the part of the worker's
/// result file (`engine::protocol::WorkerResult`) that the report's [`CaseRecord`] keeps.
/// Flattened into both, so its keys are the same in the result file and in the report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Outcome {
    /// What really ran (the model's `compute_dtype()`), e.g. `f32`, or on the CPU
    /// `bf16 (conv, attention and norms in f32)`; null if the case never ran.
    pub compute_dtype: Option<String>,
    /// Environment variables as the worker saw them (variant's plus relevant prefixes).
    pub env: BTreeMap<String, String>,
    /// Outcome.
    pub status: CaseStatus,
    /// Error message and stderr tail when not `ok`.
    pub error: Option<String>,
    /// Encode timings (null unless measured).
    pub encode: Option<PassStats>,
    /// Decode timings (null unless measured).
    pub decode: Option<PassStats>,
    /// Seconds the worker took to load the weights.
    pub load_s: Option<f64>,
    /// Peak resident memory of the worker (VmHWM), bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Device memory in use at the end of the case (CUDA, `nvidia-smi` after the case; not
    /// a peak: see `device_process_peak`), bytes.
    pub device_memory_bytes: Option<u64>,
    /// The worker process's device memory at its peak during the encode and decode passes,
    /// as the driver reports it (NVML's per-process used memory, context and workspaces
    /// included, sampled by the parent): one metric for every engine; absent off NVIDIA GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_process_peak: Option<DeviceProcessPeak>,
    /// What the device's convolution library did (candle with `--features cudnn` on CUDA:
    /// cuDNN's version, math, workspace and per convolution shape the algorithm that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conv_library: Option<crate::model::conv::device::ConvLibrary>,
    /// Peak device memory allocated by torch (`max_memory_allocated`), bytes; Python engines on a GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_peak_allocated_bytes: Option<u64>,
    /// Peak device memory reserved by torch (`max_memory_reserved`), bytes; Python engines on a GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_peak_reserved_bytes: Option<u64>,
    /// MIOpen solvers and driver commands from the worker's stderr (filled by the parent, not
    /// the worker); absent when it logged none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miopen: Option<MiopenLog>,
    /// The GEMMs hipBLASLt logged for the case (a variant that sets `HIPBLASLT_LOG_MASK`
    /// gets `HIPBLASLT_LOG_FILE` in the case's scratch, read back here); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hipblaslt: Option<HipblasltLog>,
    /// Whether the engine's own code fell back to tiled decoding/encoding after an
    /// out-of-memory (ComfyUI's "retrying with tiled VAE decoding"); absent for engines
    /// that have no such fallback. Marked in the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_tiled_retry: Option<bool>,
    /// What the engine's own code did in this case, as its worker reports it (comfyui: the
    /// dtype it used and its default pick, its version and commit, its decode memory
    /// estimate, the knobs after its start-up and after ours; docs/report-schema.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_case: Option<BTreeMap<String, serde_json::Value>>,
    /// The PyTorch knobs in force while the case ran, read back from torch once the worker
    /// set the case's: `cudnn`, `cudnn_benchmark` (`on`/`off`), `tf32` (`on`, `off`, or which
    /// of the convolutions and matmuls use it: `conv on, matmul off`), or `not applicable
    /// (cpu)` / `not applicable (rocm)`; candle on CUDA: `tf32` only (`on`: its fp32
    /// convolutions and matmuls; `off`), absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knobs_in_force: Option<BTreeMap<String, String>>,
    /// An `oom` case's device memory when it failed (the Python worker's on a GPU, the
    /// parent's reading of the CPU's); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_at_failure: Option<MemoryAtFailure>,
    /// The worker process: fresh or reused, and its start-up costs ([`WorkerUse`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<WorkerUse>,
    /// The device's clocks, temperature, power and load during the case, sampled by the
    /// parent, with the throttle verdict ([`telemetry::CaseTelemetry`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<telemetry::CaseTelemetry>,
    /// What the machine was doing during the timed passes: other processes' CPU, steal,
    /// load average, the CPU clock, and whether it was busy ([`load::CaseLoad`]); measured
    /// by the parent. Absent in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<load::CaseLoad>,
    /// In a run of interleaved rounds: the round of each timed run and how many rounds the
    /// case had ([`rounds::CaseRounds`]). Absent in a run of blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<rounds::CaseRounds>,
}

/// The memory of a case's device when it ran out of it (`memory_at_failure`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryAtFailure {
    /// The device (`cuda:0`, `cpu`).
    pub device: String,
    /// Its total memory, bytes.
    pub total_bytes: u64,
    /// Its free memory then, bytes (the CPU: `MemAvailable`).
    pub free_bytes: u64,
    /// What torch's caching allocator held then (`memory_reserved`), bytes; GPUs only.
    #[serde(default)]
    pub torch_reserved_bytes: Option<u64>,
    /// Where the numbers come from (`torch.cuda.mem_get_info`, `/proc/meminfo`).
    pub source: String,
}

impl Outcome {
    /// The status as the tables show it: its name, marked `(OOM: tiled retry)` when the
    /// engine's own code decoded tiled after an out-of-memory (never hidden).
    pub fn status_label(&self) -> String {
        let mut label = self.status.name().to_string();
        if self.oom_tiled_retry == Some(true) {
            label.push_str(" (OOM: tiled retry)");
        }
        if self.throttled() {
            label.push_str(" (throttled)");
        }
        label
    }

    /// Whether the device throttled during a timed pass (`telemetry.throttled`).
    pub fn throttled(&self) -> bool {
        self.telemetry.as_ref().is_some_and(|t| t.throttled)
    }

    /// The first line of its error (what tables, the CSV and the answer show), if any.
    pub fn error_line(&self) -> Option<&str> {
        self.error.as_deref().and_then(|e| e.lines().next())
    }

    /// An outcome with nothing measured.
    pub fn new(status: CaseStatus, error: Option<String>, env: BTreeMap<String, String>) -> Outcome {
        Outcome {
            compute_dtype: None,
            env,
            status,
            error,
            encode: None,
            decode: None,
            load_s: None,
            peak_rss_bytes: None,
            device_memory_bytes: None,
            device_process_peak: None,
            conv_library: None,
            device_peak_allocated_bytes: None,
            device_peak_reserved_bytes: None,
            miopen: None,
            hipblaslt: None,
            oom_tiled_retry: None,
            engine_case: None,
            knobs_in_force: None,
            memory_at_failure: None,
            worker: None,
            telemetry: None,
            load: None,
            rounds: None,
        }
    }
}

/// One budget checked against one case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BudgetCheck {
    /// `encode_median_s`, `decode_median_s`, `peak_rss_gb`, `device_memory_gb` or `min_psnr_db`.
    pub budget: String,
    /// Where the limit comes from: `all cases` or the `[[budgets.case]]` filter, e.g.
    /// `frames = 17, size = 320x320`.
    pub scope: String,
    /// The limit (at most; for `min_psnr_db` at least).
    pub limit: f64,
    /// What the case measured, in the budget's unit; null when not measured (or, for
    /// `min_psnr_db`, identical outputs).
    pub value: Option<f64>,
    /// `ok`, `broken` or `unmeasured`.
    pub verdict: BudgetVerdict,
}

/// A budget's verdict. [`BudgetVerdict::name`] is its JSON spelling.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BudgetVerdict {
    /// Within the limit.
    Ok,
    /// Past the limit: `run` exits 1.
    Broken,
    /// The case did not measure this (e.g. no encode pass, no device memory, no reference).
    Unmeasured,
}

impl BudgetVerdict {
    /// `ok`, `broken` or `unmeasured`.
    pub fn name(self) -> &'static str {
        match self {
            BudgetVerdict::Ok => "ok",
            BudgetVerdict::Broken => "broken",
            BudgetVerdict::Unmeasured => "unmeasured",
        }
    }
}

/// Statistics of one pass kind (encode or decode) of a case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PassStats {
    /// Every timed run, seconds, in order.
    pub samples_s: Vec<f64>,
    /// Fastest run, seconds.
    pub min_s: f64,
    /// Median run, seconds.
    pub median_s: f64,
    /// Mean run, seconds.
    pub mean_s: f64,
    /// Sample standard deviation, seconds (0 for one run).
    pub stddev_s: f64,
    /// Slowest run, seconds.
    pub max_s: f64,
    /// Each warmup run, seconds, in order (the first is the process's cold run).
    pub warmup_s: Vec<f64>,
    /// Video frames processed per second at the median: `frames_used` (the first `1+4k`
    /// frames, which encode reads and decode returns) over `median_s`.
    pub frames_per_s: f64,
    /// Analytic cost of one pass, GFLOP (2 x multiply-adds).
    pub gflop: f64,
    /// `gflop / median_s`.
    pub gflop_per_s: f64,
    /// Number of samples flagged as outliers by hyperfine's MAD rule (|x - median| / MAD > 1.4826 * 10).
    pub outliers: usize,
}

impl PassStats {
    /// Statistics of one pass kind from its timed `samples` and `warmup` runs (seconds):
    /// `frames` processed per pass, `gflop` per pass. Rates are 0 when the median is 0.
    pub fn from_samples(samples: Vec<f64>, warmup: Vec<f64>, frames: usize, gflop: f64) -> PassStats {
        let s = crate::util::stats::summarize(&samples).unwrap_or(crate::util::stats::Summary {
            min: 0.0,
            median: 0.0,
            mean: 0.0,
            stddev: 0.0,
            max: 0.0,
            outliers: 0,
        });
        let per_s = |x: f64| if s.median > 0.0 { x / s.median } else { 0.0 };
        PassStats {
            samples_s: samples,
            min_s: s.min,
            median_s: s.median,
            mean_s: s.mean,
            stddev_s: s.stddev,
            max_s: s.max,
            warmup_s: warmup,
            frames_per_s: per_s(frames as f64),
            gflop,
            gflop_per_s: per_s(gflop),
            outliers: s.outliers,
        }
    }
}

/// Error of one output against the reference output.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ErrorStats {
    /// PSNR in dB over the [-1, 1] range (peak-to-peak 2); null when identical (infinite).
    pub psnr_db: Option<f64>,
    /// Largest absolute difference.
    pub max_abs: f64,
    /// Mean absolute difference.
    pub mean_abs: f64,
    /// True when every value is bit-identical.
    pub identical: bool,
}

/// Quality of a case against its reference case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Quality {
    /// `id` of the reference case (fp32, untiled, chunk 1, same size/frames/env).
    pub reference_id: String,
    /// Latent error (encode output).
    pub latent: Option<ErrorStats>,
    /// Decoded-video error (decode output).
    pub decoded: Option<ErrorStats>,
    /// PSNR (dB) of decode(encode(clip)) against the clip, real weights only.
    pub roundtrip_psnr_db: Option<f64>,
    /// On a Python engine's reference case: its decoded video against candle's case of the
    /// same settings, when candle ran them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_engine: Option<CrossEngine>,
}

/// One engine's decoded video against another engine's, same settings and inputs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CrossEngine {
    /// The engine compared with (`candle`).
    pub reference_engine: String,
    /// Its case id.
    pub reference_id: String,
    /// Largest absolute difference of the decoded videos.
    pub max_abs_error: f64,
    /// Mean absolute difference.
    pub mean_abs_error: f64,
    /// PSNR over [-1, 1]; null when identical.
    pub psnr_db: Option<f64>,
    /// Largest |value| of the reference engine's decoded video (for relative bounds).
    pub max_abs_reference: f64,
}

impl Report {
    /// Read and parse a report, naming the file on any error.
    pub fn load(path: &Path) -> anyhow::Result<Report> {
        let text = crate::util::read::text(path, "report", crate::util::read::MAX_REPORT_BYTES)?;
        serde_json::from_str(&text)
            .map_err(|e| crate::util::error::UserError::file(path, not_a_report(&text, &e)).into())
    }

    /// Write atomically ([`crate::util::files::write_atomic`]), so readers never see a
    /// half-written report.
    pub fn save_atomic(&self, path: &Path) -> anyhow::Result<()> {
        crate::util::files::write_atomic(path, serde_json::to_string_pretty(self)?)
    }
}

/// Why `text` did not load as a report, in the user's terms: not JSON at all, JSON of
/// another shape (serde would say "invalid type: map, expected u32" for an array), or a
/// report with a bad field (serde's message, which names the field).
fn not_a_report(text: &str, e: &serde_json::Error) -> String {
    const EXPECTED: &str = "expected a wan-vae-bench report (a JSON object with schema_version, tool, \
                            system, model, run and cases, as `run` writes)";
    let first = text.trim_start_matches('\u{feff}').trim_start().bytes().next();
    if first.is_none() {
        return format!("the file is empty; {EXPECTED}");
    }
    if e.is_syntax() || e.is_eof() {
        return format!("not valid JSON ({e}); {EXPECTED}");
    }
    let found = match first {
        Some(b'{') => return format!("not a valid wan-vae-bench report: {e}"),
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    };
    format!("{EXPECTED}, found {found}")
}

#[cfg(test)]
mod tests;
