//! The Wan 2.1 VAE on candle: public API (load, encode, decode) and its options.
//! Sub-modules mirror the reference implementation's building blocks.
use candle_core::{Device, Tensor};

/// Requested numeric precision of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Bf16,
    Fp16,
}

/// Spatial tiling in pixels (both multiples of 8, overlap < tile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiling {
    pub tile_px: usize,
    pub overlap_px: usize,
}

/// How a single encode/decode call is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Latent frames per decoder call after the first (encoder: 4x frames). 1 = reference.
    pub chunk: usize,
    /// Spatial tiling; `None` runs the whole frame at once.
    pub tiling: Option<Tiling>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { chunk: 1, tiling: None }
    }
}

/// Model hyper-parameters inferred from a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaeConfig {
    pub dim: usize,
    pub z_dim: usize,
}

/// The loaded VAE.
pub struct WanVae {}

impl WanVae {
    /// Build the model from loaded weights, converting them to `precision` on `device`.
    pub fn new(_weights: &crate::weights::Weights, _precision: Precision, _device: &Device) -> anyhow::Result<Self> {
        anyhow::bail!("model: not implemented yet")
    }
    /// What really computes, e.g. `f32` or `bf16 (conv and matmul in f32)`.
    pub fn compute_dtype(&self) -> String {
        unimplemented!()
    }
    /// `video` `[1,3,T,H,W]` in [-1,1] (any float dtype) -> normalized latent `[1,z,1+(T-1)/4,H/8,W/8]`.
    pub fn encode(&self, _video: &Tensor, _opts: &RunOptions) -> anyhow::Result<Tensor> {
        unimplemented!()
    }
    /// Normalized latent `[1,z,t,h,w]` -> video `[1,3,1+4(t-1),8h,8w]`, not clamped.
    pub fn decode(&self, _latent: &Tensor, _opts: &RunOptions) -> anyhow::Result<Tensor> {
        unimplemented!()
    }
}

/// Analytic cost in GFLOP (2 x multiply-adds of convolutions and matmuls).
pub mod flops {
    use super::VaeConfig;
    /// Cost of encoding `frames` frames of `width` x `height`.
    pub fn encode_gflop(_cfg: &VaeConfig, _frames: usize, _width: usize, _height: usize) -> f64 {
        unimplemented!()
    }
    /// Cost of decoding the latent of a `frames`-frame `width` x `height` video.
    pub fn decode_gflop(_cfg: &VaeConfig, _frames: usize, _width: usize, _height: usize) -> f64 {
        unimplemented!()
    }
}
