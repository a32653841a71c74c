//! The model on NVIDIA GPUs beyond what candle does by itself: cuDNN's N-d convolution with
//! one cached plan per shape ([`cudnn`], `--features cudnn`; the backend of
//! [`super::conv::device`]), and this crate's own kernels ([`ops`], `--features cuda`:
//! `kernels.cu`, compiled to PTX by build.rs) for the zero padding around it, its bias, and
//! Wan's channel norm fused with the SiLU after it ([`channel_norm`]). [`choice`] holds
//! cuDNN's choices as plain data and is built (and tested) everywhere.
//!
//! Must not: know the model's layers (blocks.rs calls in) or run on the CPU.
pub mod choice;
#[cfg(feature = "cudnn")]
pub mod cudnn;
#[cfg(feature = "cuda")]
pub mod ops;

use candle_core::Tensor;

/// Wan's `RMS_norm` over dim 1 of `x` `[B, C, ...]` (`x / max(||x||_2, 1e-12) * gamma`,
/// `gamma` f32 `[C]` already times `sqrt(C)`), then SiLU when `silu`: one kernel reading `x`
/// twice and writing once, in f32 whatever `x`'s dtype. `None` where it does not apply (not
/// a CUDA tensor, a build without CUDA, a dtype other than f32 and bf16).
pub fn channel_norm(x: &Tensor, gamma: &Tensor, silu: bool) -> candle_core::Result<Option<Tensor>> {
    #[cfg(feature = "cuda")]
    if x.device().is_cuda() && ops::supports(x.dtype()) {
        return ops::channel_norm(x, gamma, silu).map(Some);
    }
    let _ = (x, gamma, silu);
    Ok(None)
}
