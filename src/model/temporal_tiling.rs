//! Temporal tiling as ComfyUI's `VAEDecodeTiled` does it for the Wan VAEs: the latent is
//! split in time into overlapping tiles, each tile is decoded on its own (fresh time
//! caches, first latent frame of the tile -> one video frame), and the decoded tiles are
//! blended with ComfyUI's linear feather and normalized by the summed weights.
//! `docs/temporal-tiling.md` spells out the rule and where each step comes from.
//!
//! Owns the node's unit conversion (video frames -> latent frames), the tile positions
//! and the blending; must not call the model itself: the decode comes in as a closure
//! (which may tile spatially on its own, so both tilings combine).
use candle_core::{DType, Result, Tensor};

use crate::util::error::UserError;

/// Temporal tiling in video frames, ComfyUI's `temporal_size:temporal_overlap` (its
/// defaults: 64:8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemporalTiling {
    /// `temporal_size`: video frames per tile.
    pub tile_frames: usize,
    /// `temporal_overlap`: video frames of overlap.
    pub overlap_frames: usize,
}

impl TemporalTiling {
    /// ComfyUI's `VAEDecodeTiled` defaults.
    pub const COMFYUI_DEFAULT: TemporalTiling = TemporalTiling {
        tile_frames: 64,
        overlap_frames: 8,
    };

    /// ComfyUI's widget limits: `temporal_size` >= 8 and `temporal_overlap` >= 4, both
    /// multiples of 4 (the widgets' step).
    pub fn new(tile_frames: usize, overlap_frames: usize) -> std::result::Result<Self, UserError> {
        if tile_frames < 8 || overlap_frames < 4 || !tile_frames.is_multiple_of(4) || !overlap_frames.is_multiple_of(4)
        {
            return Err(UserError::invalid(
                "temporal_tile",
                format!("{tile_frames}:{overlap_frames}"),
                "`none` or TILE:OVERLAP in video frames as ComfyUI's VAEDecodeTiled takes them \
                 (multiples of 4, tile >= 8, overlap >= 4), e.g. 64:8",
            ));
        }
        Ok(TemporalTiling {
            tile_frames,
            overlap_frames,
        })
    }

    /// Tile length and overlap in latent frames, as ComfyUI computes them for a VAE with
    /// `compression` (4 for Wan): `VAEDecodeTiled.decode` halves the overlap when the tile
    /// is shorter than twice the overlap, then takes `max(2, tile // c)` and
    /// `max(1, min(tile_t // 2, overlap // c))`; `VAE.decode_tiled` again clamps to
    /// `max(2, .)` and `max(1, .)`.
    pub fn latent_frames(&self, compression: usize) -> (usize, usize) {
        let mut overlap = self.overlap_frames;
        if self.tile_frames < overlap * 2 {
            overlap /= 2;
        }
        let tile_t = (self.tile_frames / compression).max(2);
        let overlap_t = (tile_t / 2).min(overlap / compression).max(1);
        (tile_t.max(2), overlap_t.max(1))
    }
}

impl std::str::FromStr for TemporalTiling {
    type Err = UserError;
    /// `TILE:OVERLAP` in video frames.
    fn from_str(s: &str) -> std::result::Result<Self, UserError> {
        let bad = || {
            UserError::invalid(
                "temporal_tile",
                s,
                "`none` or TILE:OVERLAP in video frames (ComfyUI's temporal_size:temporal_overlap), e.g. 64:8",
            )
        };
        let (t, o) = s.trim().split_once(':').ok_or_else(bad)?;
        let t = t.trim().parse::<usize>().map_err(|_| bad())?;
        let o = o.trim().parse::<usize>().map_err(|_| bad())?;
        TemporalTiling::new(t, o)
    }
}

/// Video frames a decoder call makes of `t` latent frames (ComfyUI's Wan `upscale_ratio`
/// in time: `max(0, 4t - 3)` for compression 4).
fn decoded_frames(t: usize, compression: usize) -> usize {
    (compression * t).saturating_sub(compression - 1)
}

/// Start and length (latent frames) of every tile of a `len`-frame latent, as
/// `comfy.utils.tiled_scale_multidim` places them: origins `range(0, len - overlap,
/// tile - overlap)`, each clamped to `len - overlap`, length `min(tile, len - origin)`;
/// one tile when the latent fits.
pub fn tile_spans(len: usize, tile: usize, overlap: usize) -> Vec<(usize, usize)> {
    if len <= tile {
        return vec![(0, len)];
    }
    let step = tile - overlap;
    (0..len - overlap)
        .step_by(step)
        .map(|p| {
            let pos = p.min(len - overlap);
            (pos, tile.min(len - pos))
        })
        .collect()
}

/// ComfyUI's feather of one tile along time: 1 everywhere, then for `t` in
/// `0..feather` both the `t`-th frame and the `t`-th from the end are multiplied by
/// `(t+1)/feather` (in f32, as torch's in-place `mul_` does); no feather when the tile
/// is not longer than it.
fn feather_mask(frames: usize, feather: usize) -> Vec<f32> {
    let mut mask = vec![1f32; frames];
    if feather >= frames {
        return mask;
    }
    for t in 0..feather {
        let a = ((t + 1) as f64 / feather as f64) as f32;
        mask[t] *= a;
        mask[frames - 1 - t] *= a;
    }
    mask
}

/// Decode the latent `z` `[B,C,t,h,w]` tile by tile in time with `decode` (latent ->
/// video, `compression` video frames per latent frame after the first), blended as
/// ComfyUI does; the result is in `decode`'s dtype. A latent that fits in one tile is
/// decoded whole.
pub fn tiled_decode(
    z: &Tensor,
    tt: TemporalTiling,
    compression: usize,
    decode: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let len = z.dim(2)?;
    let (tile, overlap) = tt.latent_frames(compression);
    let spans = tile_spans(len, tile, overlap);
    if spans.len() == 1 {
        return decode(z);
    }
    let out_len = decoded_frames(len, compression);
    // ComfyUI: feather = round(upscale_ratio(overlap)) in output frames.
    let feather = decoded_frames(overlap, compression);
    let mut out: Option<Tensor> = None;
    let mut weight = vec![0f32; out_len];
    let mut dtype = DType::F32;
    for (pos, n) in spans {
        let ps = decode(&z.narrow(2, pos, n)?)?;
        dtype = ps.dtype();
        let ps = ps.to_dtype(DType::F32)?;
        let (b, c, m, h, w) = ps.dims5()?;
        let start = compression * pos;
        if start + m > out_len {
            candle_core::bail!("a tile decoded to {m} frames at {start}, past the {out_len} frames of the whole");
        }
        let mask = feather_mask(m, feather);
        for (i, &a) in mask.iter().enumerate() {
            weight[start + i] += a;
        }
        let mask_t = Tensor::from_vec(mask, (1, 1, m, 1, 1), ps.device())?;
        let acc = match out {
            Some(o) => o,
            None => Tensor::zeros((b, c, out_len, h, w), DType::F32, ps.device())?,
        };
        let updated = (acc.narrow(2, start, m)? + ps.broadcast_mul(&mask_t)?)?;
        out = Some(acc.slice_assign(&[0..b, 0..c, start..start + m, 0..h, 0..w], &updated)?);
    }
    let out = out.expect("at least two tiles");
    let weight = Tensor::from_vec(weight, (1, 1, out_len, 1, 1), out.device())?;
    out.broadcast_div(&weight)?.to_dtype(dtype)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// A pointwise "decoder" in time, shaped like the Wan decoder's output: the first latent
    /// frame makes one video frame, every later one four (nearest repetition).
    fn up_time(t: &Tensor) -> Result<Tensor> {
        let (b, c, f, h, w) = t.dims5()?;
        let first = t.narrow(2, 0, 1)?;
        if f == 1 {
            return Ok(first);
        }
        let rest = t
            .narrow(2, 1, f - 1)?
            .reshape(vec![b, c, f - 1, 1, h, w])?
            .broadcast_as(vec![b, c, f - 1, 4, h, w])?
            .reshape((b, c, 4 * (f - 1), h, w))?;
        Tensor::cat(&[&first, &rest], 2)
    }

    #[test]
    fn comfyui_unit_conversion() {
        // The node's defaults: 64 frames with 8 overlap -> 16 latent frames, 2 overlap.
        assert_eq!(TemporalTiling::COMFYUI_DEFAULT.latent_frames(4), (16, 2));
        assert_eq!(TemporalTiling::new(8, 4).unwrap().latent_frames(4), (2, 1));
        // Tile shorter than twice the overlap: the overlap is halved first, then capped at tile_t/2.
        assert_eq!(TemporalTiling::new(16, 12).unwrap().latent_frames(4), (4, 1));
        assert_eq!(TemporalTiling::new(32, 8).unwrap().latent_frames(4), (8, 2));
        assert!(TemporalTiling::new(6, 4).is_err());
        assert!(TemporalTiling::new(64, 2).is_err());
        assert!("64:9".parse::<TemporalTiling>().is_err());
        assert_eq!(
            "64:8".parse::<TemporalTiling>().unwrap(),
            TemporalTiling::COMFYUI_DEFAULT
        );
    }

    #[test]
    fn spans_follow_tiled_scale_multidim() {
        assert_eq!(tile_spans(16, 16, 2), vec![(0, 16)]);
        assert_eq!(tile_spans(21, 16, 2), vec![(0, 16), (14, 7)]);
        assert_eq!(tile_spans(30, 16, 2), vec![(0, 16), (14, 16)]);
        assert_eq!(tile_spans(5, 2, 1), vec![(0, 2), (1, 2), (2, 2), (3, 2)]);
        assert_eq!(feather_mask(7, 5), vec![0.2, 0.4, 0.6, 0.8 * 0.8, 0.6, 0.4, 0.2]);
        assert_eq!(feather_mask(3, 5), vec![1.0; 3]);
    }

    /// Stitching a pointwise map is exact: with power-of-two values every weighted sum and
    /// the division by the summed weights are exact in f32, so any placement or blending
    /// bug shows as a nonzero difference; with arbitrary values only rounding remains.
    #[test]
    fn stitching_a_pointwise_map_is_exact() -> Result<()> {
        let dev = Device::Cpu;
        let n = 2 * 11 * 3 * 4;
        let pow2: Vec<f32> = (0..n)
            .map(|i| ((i % 7) as f32 - 3.0).signum() * 2f32.powi((i % 9) - 4))
            .collect();
        let z = Tensor::from_vec(pow2, (1, 2, 11, 3, 4), &dev)?;
        let whole = up_time(&z)?;
        assert_eq!(whole.dim(2)?, 41);
        for (tile, overlap) in [(8, 4), (12, 4), (16, 4), (16, 8), (20, 8), (24, 12), (32, 8), (64, 8)] {
            let tt = TemporalTiling::new(tile, overlap).unwrap();
            let tiled = tiled_decode(&z, tt, 4, up_time)?;
            assert_eq!(tiled.dims(), whole.dims(), "{tile}:{overlap}");
            let diff = (&tiled - &whole)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert_eq!(diff, 0.0, "temporal tile {tile}:{overlap}");
        }
        let z = Tensor::arange(0f32, n as f32, &dev)?
            .reshape((1, 2, 11, 3, 4))?
            .affine(0.37, -5.1)?;
        let whole = up_time(&z)?;
        let tiled = tiled_decode(&z, TemporalTiling::new(8, 4).unwrap(), 4, up_time)?;
        let diff = (&tiled - &whole)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        assert!(diff <= 4e-6 * 90.0, "{diff}");
        Ok(())
    }

    /// Combined with spatial tiling: the closure tiles in space, this tiles in time.
    #[test]
    fn combines_with_spatial_tiling() -> Result<()> {
        let dev = Device::Cpu;
        let z = Tensor::arange(0f32, 2.0 * 9.0 * 5.0 * 7.0, &dev)?.reshape((1, 2, 9, 5, 7))?;
        let up8 = |t: &Tensor| -> Result<Tensor> {
            let t = up_time(t)?;
            let (b, c, f, h, w) = t.dims5()?;
            t.reshape(vec![b, c, f, h, 1, w, 1])?
                .broadcast_as(vec![b, c, f, h, 8, w, 8])?
                .reshape((b, c, f, 8 * h, 8 * w))
        };
        let whole = up8(&z)?;
        let spatial =
            |t: &Tensor| super::super::tiling::tiled_decode(t, crate::model::Tiling::new(24, 8).unwrap(), 8, up8);
        let tiled = tiled_decode(&z, TemporalTiling::new(8, 4).unwrap(), 4, spatial)?;
        let diff = (&tiled - &whole)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        assert!(diff <= 1e-4, "{diff}");
        Ok(())
    }
}
