//! The Wan VAEs (2.1 and 2.2) on candle: public API (build, encode, decode), its options.
//! Sub-modules mirror the reference implementations' building blocks;
//! `docs/wan21-vae.md` describes what each computes, `docs/wan22-vae.md` what Wan 2.2 does
//! differently. The input rules that depend on the model (sizes, frames, tiles) are
//! [`Config`] methods.
//!
//! Must not import `weights` or read files: callers build the model from a `Config` and a
//! `VarBuilder` they make.
pub mod blocks;
pub mod coder;
pub mod config;
pub mod conv;
pub mod cpu_kernels;
pub mod cuda;
pub mod flops;
pub mod fold;
pub mod kernels;
pub mod span;
pub mod temporal_tiling;
pub mod tiling;
mod vae;

pub use config::{Config, ModelKind, Stage, StageShortcut};
pub use conv::ConvImpl;
pub use temporal_tiling::TemporalTiling;
pub use vae::WanVae;

/// Frames the VAE processes out of `frames`: the first `1+4k` (both models compress time by
/// 4, so this holds before the model is known); zero is an error. See [`Config::frames_used`].
pub fn frames_used(frames: usize) -> Result<usize, crate::util::error::UserError> {
    Config::wan21().frames_used(frames)
}

use crate::util::error::UserError;

/// Requested numeric precision of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Bf16,
    Fp16,
    /// No precision switch: the engine's own code picks (the comfyui engine's
    /// `model_management.vae_dtype`). Only engines whose `EngineSpec::own_dtype` is set run
    /// it; the others' cases are `unsupported` before a worker starts, so candle never
    /// builds a model in it ([`Precision::dtype`] says f32 only to stay total).
    Auto,
}

impl Precision {
    pub fn dtype(self) -> candle_core::DType {
        match self {
            Precision::Fp32 => candle_core::DType::F32,
            Precision::Bf16 => candle_core::DType::BF16,
            Precision::Fp16 => candle_core::DType::F16,
            Precision::Auto => candle_core::DType::F32,
        }
    }
    /// The precision a model built in `dtype` runs in (`None` for non-float dtypes).
    pub fn from_dtype(dtype: candle_core::DType) -> Option<Self> {
        match dtype {
            candle_core::DType::F32 => Some(Precision::Fp32),
            candle_core::DType::BF16 => Some(Precision::Bf16),
            candle_core::DType::F16 => Some(Precision::Fp16),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Auto => "auto",
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
            "auto" => Ok(Precision::Auto),
            _ => Err(UserError::invalid("precision", s, "one of fp32, bf16, fp16, auto")),
        }
    }
}

/// Spatial tiling in pixels (both multiples of 8, overlap < tile; Wan 2.2 needs multiples of
/// 16, checked by [`Config::check_tiling`] once the model is known).
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

    /// The overlap of a tile given alone (`--tile 256`, `--tile_px 256`): a quarter of the
    /// tile rounded down to a multiple of 8, at least 8 (so 16 and 24 px tiles overlap by 8,
    /// not 0); a tile of 8 px cannot overlap.
    pub fn default_overlap(tile_px: usize) -> usize {
        if tile_px <= 8 {
            return 0;
        }
        (tile_px / 4 / 8 * 8).max(8)
    }

    /// Distance between tile origins, pixels.
    pub fn stride_px(&self) -> usize {
        self.tile_px - self.overlap_px
    }
}

impl std::str::FromStr for Tiling {
    type Err = UserError;
    /// `TILE:OVERLAP` (pixels) or just `TILE` ([`Tiling::default_overlap`]).
    fn from_str(s: &str) -> Result<Self, UserError> {
        let bad = || UserError::invalid("tile", s, "TILE_PX:OVERLAP_PX in pixels, multiples of 8, e.g. 256:64");
        let (t, o) = match s.trim().split_once(':') {
            Some((t, o)) => (
                t.trim().parse::<usize>().map_err(|_| bad())?,
                o.trim().parse::<usize>().map_err(|_| bad())?,
            ),
            None => {
                let t = s.trim().parse::<usize>().map_err(|_| bad())?;
                (t, Tiling::default_overlap(t))
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

#[cfg(test)]
mod tests {
    use super::Tiling;

    #[test]
    fn a_tile_alone_overlaps_by_a_quarter_rounded_down_to_8_and_at_least_8() {
        for (tile, overlap) in [
            (8, 0),
            (16, 8),
            (24, 8),
            (32, 8),
            (40, 8),
            (64, 16),
            (256, 64),
            (272, 64),
        ] {
            assert_eq!(Tiling::default_overlap(tile), overlap, "tile {tile}");
            let t: Tiling = tile.to_string().parse().unwrap();
            assert_eq!((t.tile_px, t.overlap_px), (tile, overlap));
        }
    }
}
