//! What a device's convolution library is to the model: the [`Backend`] a library
//! implements (cuDNN in `--features cudnn` builds, `crate::model::cuda::cudnn`), the records
//! of what it ran ([`ConvLibrary`], per distinct shape a [`ConvPlanRecord`]) and the math a
//! case allows ([`set_tf32`]). The seam that uses them is [`super::device`].
//!
//! Must not: know the model's layers, a library's API, or which library a device has.
use std::sync::atomic::{AtomicBool, Ordering};

use candle_core::{DType, Tensor};
use serde::{Deserialize, Serialize};

/// What a case's convolution library did (`conv_library` in the case record).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ConvLibrary {
    /// The library, e.g. `cuDNN`.
    pub library: String,
    /// Its version as loaded at run time, e.g. `9.19.0`.
    pub version: String,
    /// The math it was allowed, e.g. `fp32: FMA math (no TF32)`.
    pub math: String,
    /// The smallest workspace cap any of the case's plans was built under, bytes (each plan's
    /// own is in its record: sized from the GPU's free memory when it was built).
    pub workspace_cap_bytes: u64,
    /// What the one shared workspace grew to in the case, bytes.
    pub workspace_bytes: u64,
    /// Each distinct convolution the case ran, in first-use order.
    pub plans: Vec<ConvPlanRecord>,
}

/// One distinct convolution (shape, dtype, math) and how the library ran it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ConvPlanRecord {
    /// `[B, C, T, H, W]` as the library got it (after the explicit padding copy).
    pub input: Vec<usize>,
    /// `[O, C, kT, kH, kW]`.
    pub weight: Vec<usize>,
    /// `[T, H, W]`.
    pub stride: Vec<usize>,
    /// The library's symmetric zero padding, `[T, H, W]`.
    pub padding: Vec<usize>,
    /// `f32`, `bf16`.
    pub dtype: String,
    /// The algorithm that ran (cuDNN: `IMPLICIT_PRECOMP_GEMM`, ...), or why none did
    /// (`candle conv2d (fallback: ...)`).
    pub algorithm: String,
    /// Its family, named by vendor as `crate::report::profile::kernels` names kernels
    /// (`implicit-gemm/cudnn`, `winograd`, `fft`, ...).
    pub family: String,
    /// The math type it ran under (cuDNN: `FMA`, `TENSOR_OP`, `DEFAULT`).
    pub math: String,
    /// Its workspace, bytes.
    pub workspace_bytes: u64,
    /// Its place in the library's ranking (0: the first choice): its heuristics', or its
    /// measured search's (`chosen_by`).
    pub heuristic_rank: usize,
    /// `heuristics` (cuDNN's `cudnnGetConvolutionForwardAlgorithm_v7`, as torch by default),
    /// or `search` (`cudnnFindConvolutionForwardAlgorithmEx`, timed on the first call, as
    /// torch's `cudnn.benchmark`; `WAN_VAE_BENCH_CUDNN_SEARCH=1`).
    #[serde(default)]
    pub chosen_by: String,
    /// How often it ran in the case.
    pub calls: u64,
    /// The most workspace it could have, bytes: sized from the GPU's free memory when the
    /// plan was built (and again after a measured search).
    #[serde(default)]
    pub workspace_cap_bytes: u64,
    /// When the first algorithm the math allows was passed over because its workspace was
    /// over the cap: which, what it wanted and the cap (empty when the first choice runs).
    /// torch has no such cap, so a shape with this set is not compared like for like.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passed_over: String,
}

/// A vendor library that convolves the model's 5-D tensors on a device.
pub trait Backend: Sync {
    /// Whether it computes in `dtype` (others take candle's path).
    fn supports(&self, dtype: DType) -> bool;
    /// `conv(x, weight) + bias` of `x` `[B, C, T, H, W]` with `weight` `[O, C, kT, kH, kW]`,
    /// `stride` and symmetric zero padding `pad` (`[T, H, W]`); `None` when the library cannot
    /// run it (its record says why) and candle's path must.
    fn conv(
        &self,
        x: &Tensor,
        weight: &Tensor,
        bias: &Tensor,
        stride: [usize; 3],
        pad: [usize; 3],
    ) -> candle_core::Result<Option<Tensor>>;
    /// `x` with `before` and `after` zeros on each side of T, H and W: one copy.
    fn pad(&self, x: &Tensor, before: [usize; 3], after: [usize; 3]) -> candle_core::Result<Tensor>;
    /// What it did since the last [`Backend::reset`]; `None` before its first convolution.
    fn library(&self) -> Option<ConvLibrary>;
    /// Start a case: free the workspace, zero the counts (descriptors and choices are kept).
    fn reset(&self);
    /// The algorithms (with their math) that ran since the last call, distinct, in order,
    /// each with its kernel family: the profile names them per layer.
    fn take_used(&self) -> Vec<(String, &'static str)>;
}

/// Whether TF32 is allowed for fp32 convolutions and matmuls (the case's `tf32` knob: `on`).
static TF32: AtomicBool = AtomicBool::new(false);

/// Allow TF32 (or not) in fp32 convolutions and matrix products on NVIDIA GPUs from now on:
/// cuDNN's math type and cuBLAS's compute type. Off (true fp32) until a case says `on`.
pub fn set_tf32(allowed: bool) {
    TF32.store(allowed, Ordering::Relaxed);
    #[cfg(feature = "cuda")]
    candle_core::cuda::set_gemm_reduced_precision_f32(allowed);
}

/// Whether TF32 is allowed ([`set_tf32`]).
pub fn tf32() -> bool {
    TF32.load(Ordering::Relaxed)
}
