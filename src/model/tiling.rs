//! Spatial tiling as diffusers' `AutoencoderKLWan` does it: overlapping tiles, each run
//! with fresh time caches, blended with linear ramps (top edge, then left edge, each tile
//! updated in place as in diffusers), cropped to the stride and stitched.
//!
//! Tiles are cut on latent positions: `sc` is the model's spatial compression (pixels per
//! latent position: 8 in Wan 2.1, 16 in Wan 2.2), and tile sizes must be multiples of it.
//!
//! Owns the tile grid and the blending; must not call the model itself: encode/decode come
//! in as closures.
use candle_core::{DType, Result, Tensor};

use super::Tiling;

/// Encode `x` `[B,3,T,H,W]` tile by tile with `encode` (pixels -> latent moments).
pub fn tiled_encode(x: &Tensor, tl: Tiling, sc: usize, encode: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let (h, w) = (x.dim(3)?, x.dim(4)?);
    let grid = Grid {
        len_h: h,
        len_w: w,
        tile: tl.tile_px,
        stride: tl.stride_px(),
    };
    let tiles = grid.map(x, encode)?;
    blend_and_stitch(tiles, tl.overlap_px / sc, tl.stride_px() / sc, h / sc, w / sc)
}

/// Decode `z` `[B,z,t,h,w]` (after `conv2`) tile by tile with `decode` (latent -> pixels).
pub fn tiled_decode(z: &Tensor, tl: Tiling, sc: usize, decode: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let (h, w) = (z.dim(3)?, z.dim(4)?);
    let grid = Grid {
        len_h: h,
        len_w: w,
        tile: tl.tile_px / sc,
        stride: tl.stride_px() / sc,
    };
    let tiles = grid.map(z, decode)?;
    blend_and_stitch(tiles, tl.overlap_px, tl.stride_px(), sc * h, sc * w)
}

/// Tile origins `0, stride, 2*stride, ... < len` in both spatial dims, as in diffusers.
struct Grid {
    len_h: usize,
    len_w: usize,
    tile: usize,
    stride: usize,
}

impl Grid {
    fn map(&self, x: &Tensor, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Vec<Vec<Tensor>>> {
        let mut rows = Vec::new();
        for i in (0..self.len_h).step_by(self.stride) {
            let mut row = Vec::new();
            for j in (0..self.len_w).step_by(self.stride) {
                let tile =
                    x.narrow(3, i, self.tile.min(self.len_h - i))?
                        .narrow(4, j, self.tile.min(self.len_w - j))?;
                row.push(f(&tile)?);
            }
            rows.push(row);
        }
        Ok(rows)
    }
}

fn blend_and_stitch(
    mut rows: Vec<Vec<Tensor>>,
    blend: usize,
    stride: usize,
    out_h: usize,
    out_w: usize,
) -> Result<Tensor> {
    let mut stitched_rows = Vec::with_capacity(rows.len());
    for i in 0..rows.len() {
        let mut pieces = Vec::with_capacity(rows[i].len());
        for j in 0..rows[i].len() {
            let mut tile = rows[i][j].clone();
            if i > 0 {
                tile = blend_edge(&rows[i - 1][j], &tile, blend, 3)?;
            }
            if j > 0 {
                tile = blend_edge(&rows[i][j - 1], &tile, blend, 4)?;
            }
            rows[i][j] = tile.clone();
            let th = stride.min(tile.dim(3)?);
            let tw = stride.min(tile.dim(4)?);
            pieces.push(tile.narrow(3, 0, th)?.narrow(4, 0, tw)?);
        }
        stitched_rows.push(Tensor::cat(&pieces, 4)?);
    }
    let out = Tensor::cat(&stitched_rows, 3)?;
    let (h, w) = (out.dim(3)?.min(out_h), out.dim(4)?.min(out_w));
    out.narrow(3, 0, h)?.narrow(4, 0, w)?.contiguous()
}

/// diffusers' `blend_v` (dim 3) / `blend_h` (dim 4): the first `extent` rows of `b` become
/// `a`'s last rows * (1 - y/extent) + `b`'s rows * (y/extent).
fn blend_edge(a: &Tensor, b: &Tensor, extent: usize, dim: usize) -> Result<Tensor> {
    let e = extent.min(a.dim(dim)?).min(b.dim(dim)?);
    if e == 0 {
        return Ok(b.clone());
    }
    let dtype = b.dtype();
    let ramp: Vec<f32> = (0..e).map(|y| y as f32 / e as f32).collect();
    let mut shape = vec![1usize; 5];
    shape[dim] = e;
    let r = Tensor::from_vec(ramp, shape, b.device())?;
    let a_end = a.narrow(dim, a.dim(dim)? - e, e)?.to_dtype(DType::F32)?;
    let b_start = b.narrow(dim, 0, e)?.to_dtype(DType::F32)?;
    let mixed = (a_end.broadcast_mul(&(1.0 - &r)?)? + b_start.broadcast_mul(&r)?)?.to_dtype(dtype)?;
    let rest = b.narrow(dim, e, b.dim(dim)? - e)?;
    Tensor::cat(&[&mixed, &rest], dim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    /// A pointwise "decoder" (8x nearest upsampling) has no receptive field, so tiling it
    /// must give exactly the untiled result: any stitching or blending bug shows here.
    #[test]
    fn tiling_a_pointwise_map_is_exact() -> Result<()> {
        let z = Tensor::arange(0f32, 2.0 * 5.0 * 7.0 * 9.0, &Device::Cpu)?.reshape((1, 2, 5, 7, 9))?;
        let up8 = |t: &Tensor| -> Result<Tensor> {
            let (b, c, f, h, w) = t.dims5()?;
            t.reshape(vec![b, c, f, h, 1, w, 1])?
                .broadcast_as(vec![b, c, f, h, 8, w, 8])?
                .reshape((b, c, f, 8 * h, 8 * w))
        };
        let whole = up8(&z)?;
        for (tile, overlap) in [(16, 8), (24, 8), (32, 16), (40, 8)] {
            let tiled = tiled_decode(
                &z,
                Tiling {
                    tile_px: tile,
                    overlap_px: overlap,
                },
                8,
                up8,
            )?;
            let diff = (&tiled - &whole)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert_eq!(diff, 0.0, "tile {tile}:{overlap}");
        }
        let x = up8(&z)?;
        let down8 = |t: &Tensor| -> Result<Tensor> {
            let (b, c, f, h, w) = t.dims5()?;
            t.reshape(vec![b, c, f, h / 8, 8, w / 8, 8])?
                .narrow(4, 0, 1)?
                .narrow(6, 0, 1)?
                .reshape((b, c, f, h / 8, w / 8))
        };
        for (tile, overlap) in [(16, 8), (32, 8), (48, 16)] {
            let tiled = tiled_encode(
                &x,
                Tiling {
                    tile_px: tile,
                    overlap_px: overlap,
                },
                8,
                down8,
            )?;
            let diff = (&tiled - &z)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            assert_eq!(diff, 0.0, "tile {tile}:{overlap}");
        }
        Ok(())
    }
}
