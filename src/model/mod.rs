//! The Wan 2.1 VAE on candle: public API (load, encode, decode) and its options.
//! Sub-modules mirror the reference implementation's building blocks; `WAN_VAE.md` (in
//! `shared/`) describes what each computes.
pub mod blocks;
pub mod coder;
pub mod conv;
pub mod cpu_kernels;
pub mod flops;
pub mod kernels;
pub mod tiling;
mod vae;

pub use conv::ConvImpl;
pub use vae::WanVae;

use crate::error::UserError;

/// Requested numeric precision of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Bf16,
    Fp16,
}

impl Precision {
    pub fn dtype(self) -> candle_core::DType {
        match self {
            Precision::Fp32 => candle_core::DType::F32,
            Precision::Bf16 => candle_core::DType::BF16,
            Precision::Fp16 => candle_core::DType::F16,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Precision {
    type Err = UserError;
    fn from_str(s: &str) -> Result<Self, UserError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fp32" | "f32" | "float32" => Ok(Precision::Fp32),
            "bf16" | "bfloat16" => Ok(Precision::Bf16),
            "fp16" | "f16" | "float16" | "half" => Ok(Precision::Fp16),
            _ => Err(UserError::invalid("precision", s, "one of fp32, bf16, fp16")),
        }
    }
}

/// Spatial tiling in pixels (both multiples of 8, overlap < tile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiling {
    pub tile_px: usize,
    pub overlap_px: usize,
}

impl Tiling {
    /// diffusers' `AutoencoderKLWan` default: 256 px tiles, stride 192.
    pub const DIFFUSERS_DEFAULT: Tiling = Tiling {
        tile_px: 256,
        overlap_px: 64,
    };

    pub fn new(tile_px: usize, overlap_px: usize) -> Result<Self, UserError> {
        let spec = format!("{tile_px}:{overlap_px}");
        if tile_px == 0 || !tile_px.is_multiple_of(8) || !overlap_px.is_multiple_of(8) {
            return Err(UserError::invalid(
                "tile",
                spec,
                "TILE_PX:OVERLAP_PX with both multiples of 8 and TILE_PX > 0, e.g. 256:64",
            ));
        }
        if overlap_px >= tile_px {
            return Err(UserError::invalid(
                "tile",
                spec,
                "an overlap smaller than the tile size, e.g. 256:64",
            ));
        }
        Ok(Tiling { tile_px, overlap_px })
    }

    /// Distance between tile origins, pixels.
    pub fn stride_px(&self) -> usize {
        self.tile_px - self.overlap_px
    }
}

impl std::str::FromStr for Tiling {
    type Err = UserError;
    /// `TILE:OVERLAP` (pixels) or just `TILE` (overlap = tile/4, rounded down to 8).
    fn from_str(s: &str) -> Result<Self, UserError> {
        let bad = || UserError::invalid("tile", s, "TILE_PX:OVERLAP_PX in pixels, multiples of 8, e.g. 256:64");
        let (t, o) = match s.trim().split_once(':') {
            Some((t, o)) => (
                t.trim().parse::<usize>().map_err(|_| bad())?,
                o.trim().parse::<usize>().map_err(|_| bad())?,
            ),
            None => {
                let t = s.trim().parse::<usize>().map_err(|_| bad())?;
                (t, t / 4 / 8 * 8)
            }
        };
        Tiling::new(t, o)
    }
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

/// Frames the reference encodes out of `frames`: `1 + 4*((frames-1)/4)`; zero is an error.
pub fn frames_used(frames: usize) -> Result<usize, UserError> {
    if frames == 0 {
        return Err(UserError::invalid(
            "frames",
            "0",
            "at least 1 frame (1+4k frames, e.g. 1, 5, 9, 21, 81)",
        ));
    }
    Ok(1 + 4 * ((frames - 1) / 4))
}

/// Height and width must be positive multiples of 8 (the VAE's spatial compression).
pub fn check_size(width: usize, height: usize) -> Result<(), UserError> {
    for (what, v) in [("width", width), ("height", height)] {
        if v == 0 || !v.is_multiple_of(8) {
            let lo = v / 8 * 8;
            let hi = lo + 8;
            let nearest = if lo == 0 {
                format!("{hi}")
            } else {
                format!("{lo} or {hi}")
            };
            return Err(UserError::invalid(
                what,
                v.to_string(),
                format!("a multiple of 8 (nearest valid: {nearest})"),
            ));
        }
    }
    Ok(())
}

/// The 16 latent channel means of Wan 2.1.
pub const LATENT_MEAN: [f32; 16] = [
    -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715, 0.5517, -0.3632, -0.1922,
    -0.9497, 0.2503, -0.2921,
];
/// The 16 latent channel standard deviations of Wan 2.1.
pub const LATENT_STD: [f32; 16] = [
    2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743, 3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253,
    2.8251, 1.9160,
];
