//! The profile record of a case (`run --profile`, issue 39): per pass kind, one extra
//! profiled pass after the timed ones, broken down per layer in the official Wan naming
//! (the checkpoint keys' prefixes), with the time outside any layer as a row of its own, the
//! device kernels behind each layer where the engine's profiler sees them, and roll-ups by
//! op kind and by stage. The same record is the wire format: a worker fills the measured
//! fields (`total_ms`, and per layer `layer`, `input_shape`, `dtype`, `calls`, `ms`,
//! `kernels`), and the parent (`crate::report::profile::complete::finish`) the derived ones.
//!
//! Must not: measure, aggregate or render (that is `crate::report::profile::complete` and `crate::analysis::export`).
use serde::{Deserialize, Serialize};

pub mod complete;
pub mod kernels;
pub mod miopen;
pub mod options;
pub mod trace;

/// The name of the row holding the time spent outside every layer.
pub const OUTSIDE: &str = "(outside layers)";

/// `profile` of a case record: the profiled passes, or why profiling failed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CaseProfile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encode: Option<PassProfile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode: Option<PassProfile>,
    /// Why the profiled pass gave no profile (the case's timings stay valid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The Chrome/Perfetto trace files of the profiled passes (`run --export-trace DIR`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace_files: Vec<String>,
    /// What timed the layers: `spans` (candle: the device synchronized around each layer)
    /// or `torch.profiler` (forward hooks, the device synchronized around each layer).
    #[serde(default)]
    pub method: String,
}

impl CaseProfile {
    /// The profiled passes that exist, with their names.
    pub fn passes(&self) -> impl Iterator<Item = (&'static str, &PassProfile)> {
        [("encode", &self.encode), ("decode", &self.decode)]
            .into_iter()
            .filter_map(|(n, p)| p.as_ref().map(|p| (n, p)))
    }
}

/// One profiled pass.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PassProfile {
    /// Wall time of the profiled pass, ms (profiling included); the rows sum to it.
    pub total_ms: f64,
    /// The timed median of the same pass kind, ms.
    #[serde(default)]
    pub timed_median_ms: f64,
    /// `total_ms / timed_median_ms`: what profiling cost (1.0: nothing).
    #[serde(default)]
    pub overhead: f64,
    /// The pass's analytic GFLOP (the case's); the layers' `gflop` sum to it.
    #[serde(default)]
    pub gflop: f64,
    /// One row per leaf layer, costliest first, then the [`OUTSIDE`] row.
    pub layers: Vec<LayerRow>,
    /// Time per op kind (`conv3d`, `conv2d`, `attention`, `norm`, `other`), costliest first.
    #[serde(default)]
    pub by_op: Vec<Rollup>,
    /// Time per stage (`decoder.conv1`, `decoder.middle`, `decoder.upsamples.0`, ...).
    #[serde(default)]
    pub by_stage: Vec<Rollup>,
}

/// One layer of a profiled pass.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct LayerRow {
    /// Module path in the official Wan naming, e.g. `decoder.upsamples.4.residual.2`.
    pub layer: String,
    /// Its kind: `conv3d` (causal), `conv2d`, `attention`, `norm` or `other`.
    #[serde(default)]
    pub op: String,
    /// Shape of its input at its first call.
    #[serde(default)]
    pub input_shape: Vec<usize>,
    /// Dtype of that input (`f32`, `bf16`, ...).
    #[serde(default)]
    pub dtype: String,
    /// How often it ran in the pass (the decoder runs per chunk).
    pub calls: u64,
    /// Its time, ms, over all calls.
    pub ms: f64,
    /// `ms / total_ms` of the pass.
    #[serde(default)]
    pub share: f64,
    /// Its analytic GFLOP over the pass (0 for norms and the outside row).
    #[serde(default)]
    pub gflop: f64,
    /// `gflop / (ms / 1000)`; 0 without GFLOP.
    #[serde(default)]
    pub gflop_per_s: f64,
    /// The kernels that ran inside it (Python engines, from torch's profiler), costliest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelRow>,
    /// The library algorithm this convolution ran: MIOpen's solver, when the case logged
    /// MIOpen; cuDNN's algorithm and math type for candle with `--features cudnn`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solver: Option<SolverJoin>,
    /// A command reproducing this one convolution alone (the costliest convolutions only):
    /// the logged `MIOpenDriver` command, else a short torch snippet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
}

/// One kernel (or, on the CPU, one leaf operator) inside a layer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct KernelRow {
    pub name: String,
    /// Its family (`crate::report::profile::kernels`): `naive/direct`, `implicit-gemm/cudnn`,
    /// `implicit-gemm/ck`, `implicit-gemm/miopen`,
    /// `winograd`, `gemm+im2col`, `fft`, `copy/pad`, `elementwise`, `norm`, `other`.
    #[serde(default)]
    pub family: String,
    pub calls: u64,
    /// Its device (or CPU) time, ms.
    pub ms: f64,
    /// `ms` over the layer's kernels' total.
    #[serde(default)]
    pub share: f64,
}

/// The library algorithm a convolution layer ran (MIOpen's solver, cuDNN's algorithm).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SolverJoin {
    /// The solver's name as MIOpen logged it (e.g. `ConvBinWinogradRxSf2x3g1`), when the
    /// case's log names one solver for this problem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solver: Option<String>,
    /// Its family, as for kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The `MIOpenDriver` command MIOpen logged for this problem, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_command: Option<String>,
}

/// Time of a group of rows (an op kind, a stage).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Rollup {
    pub name: String,
    pub ms: f64,
    pub share: f64,
    pub gflop: f64,
}
