//! Fused, parallel CPU kernels for the elementwise work around the convolutions (RMS norm
//! with SiLU, nearest 2x upsampling, residual add), where candle's CPU ops would make one
//! serial pass (and one allocation) per op. Must not know about layers: blocks.rs calls
//! these on contiguous slices.
use std::mem::MaybeUninit;

use rayon::prelude::*;

/// Positions per parallel block: a block of every channel plane stays in L2.
const BLOCK: usize = 2048;

/// Raw pointer to a buffer's uninitialized capacity that rayon tasks may share.
struct SyncPtr<T>(*mut MaybeUninit<T>);
// SAFETY: every task writes a disjoint set of indices, and the buffer outlives the tasks
// (the parallel loop returns before it is used again).
unsafe impl<T: Send> Send for SyncPtr<T> {}
unsafe impl<T: Send> Sync for SyncPtr<T> {}
impl<T> Clone for SyncPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// A method call (unlike `.0`) makes closures capture the whole `Send` wrapper.
    fn get(self) -> *mut MaybeUninit<T> {
        self.0
    }
}

/// A float type the kernels read and write, computing in f32.
pub trait Elem: Copy + Send + Sync {
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
}
impl Elem for f32 {
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(v: f32) -> Self {
        v
    }
}
impl Elem for half::bf16 {
    fn to_f32(self) -> f32 {
        half::bf16::to_f32(self)
    }
    fn from_f32(v: f32) -> Self {
        half::bf16::from_f32(v)
    }
}
impl Elem for half::f16 {
    fn to_f32(self) -> f32 {
        half::f16::to_f32(self)
    }
    fn from_f32(v: f32) -> Self {
        half::f16::from_f32(v)
    }
}

/// `RMS_norm` over channels of a contiguous `[B, C, S]` buffer, optionally followed by
/// SiLU: `y = x / max(||x[:, p]||_2, 1e-12) * g[c]` (`g` already holds `gamma * sqrt(C)`),
/// computed in f32 and rounded once to `T` (16-bit types need no conversion passes).
pub fn rms_norm<T: Elem>(x: &[T], b: usize, c: usize, s: usize, g: &[f32], silu: bool) -> Vec<T> {
    assert_eq!(x.len(), b * c * s);
    assert_eq!(g.len(), c);
    let mut out: Vec<T> = Vec::with_capacity(x.len());
    let dst = SyncPtr(out.spare_capacity_mut().as_mut_ptr());
    let blocks_per_batch = s.div_ceil(BLOCK);
    (0..b * blocks_per_batch).into_par_iter().for_each(|task| {
        let (bi, blk) = (task / blocks_per_batch, task % blocks_per_batch);
        let p0 = blk * BLOCK;
        let len = BLOCK.min(s - p0);
        let base = bi * c * s;
        let mut sumsq = [0f32; BLOCK];
        let sumsq = &mut sumsq[..len];
        for ci in 0..c {
            let plane = &x[base + ci * s + p0..base + ci * s + p0 + len];
            for (acc, &v) in sumsq.iter_mut().zip(plane) {
                let v = v.to_f32();
                *acc += v * v;
            }
        }
        for acc in sumsq.iter_mut() {
            *acc = 1.0 / acc.sqrt().max(1e-12);
        }
        for (ci, &gc) in g.iter().enumerate() {
            let off = base + ci * s + p0;
            let plane = &x[off..off + len];
            // SAFETY: off+len <= b*c*s, the capacity; task (bi, blk) alone writes indices
            // off..off+len for every ci, as MaybeUninit (no reference to uninit f32 exists).
            let out = unsafe { std::slice::from_raw_parts_mut(dst.get().add(off), len) };
            if silu {
                for ((o, &v), &inv) in out.iter_mut().zip(plane).zip(sumsq.iter()) {
                    let y = v.to_f32() * inv * gc;
                    o.write(T::from_f32(y / (1.0 + (-y).exp())));
                }
            } else {
                for ((o, &v), &inv) in out.iter_mut().zip(plane).zip(sumsq.iter()) {
                    o.write(T::from_f32(v.to_f32() * inv * gc));
                }
            }
        }
    });
    // SAFETY: the tasks above wrote every one of the b*c*s elements.
    unsafe { out.set_len(x.len()) };
    out
}

/// Nearest-neighbour 2x spatial upsampling of `planes` contiguous `h x w` planes
/// (`[B, C, T, H, W]` with `planes = B*C*T`): every value becomes a 2x2 block.
pub fn upsample_nearest2x<T: Copy + Send + Sync>(x: &[T], planes: usize, h: usize, w: usize) -> Vec<T> {
    assert_eq!(x.len(), planes * h * w);
    let mut out: Vec<T> = Vec::with_capacity(4 * x.len());
    if w > 0 {
        // One task per input row: output rows 2r and 2r+1 both repeat it, each value twice.
        out.spare_capacity_mut()[..4 * x.len()]
            .par_chunks_mut(4 * w)
            .zip(x.par_chunks(w))
            .for_each(|(dst, row)| {
                let (top, bottom) = dst.split_at_mut(2 * w);
                for ((t, b), &v) in top.chunks_exact_mut(2).zip(bottom.chunks_exact_mut(2)).zip(row) {
                    t[0].write(v);
                    t[1].write(v);
                    b[0].write(v);
                    b[1].write(v);
                }
            });
    }
    // SAFETY: each of the planes*h input rows wrote its 4*w output values, 4*len in all.
    unsafe { out.set_len(4 * x.len()) };
    out
}

/// `a + b`, elementwise, in parallel blocks (the residual add).
pub fn add<T: Copy + Send + Sync + std::ops::Add<Output = T>>(a: &[T], b: &[T]) -> Vec<T> {
    assert_eq!(a.len(), b.len());
    let mut out: Vec<T> = Vec::with_capacity(a.len());
    out.spare_capacity_mut()[..a.len()]
        .par_chunks_mut(BLOCK * 8)
        .zip(a.par_chunks(BLOCK * 8).zip(b.par_chunks(BLOCK * 8)))
        .for_each(|(o, (a, b))| {
            for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
                o.write(a + b);
            }
        });
    // SAFETY: the chunks cover all a.len() elements.
    unsafe { out.set_len(a.len()) };
    out
}

/// Tensor wrappers of the kernels above for contiguous-able CPU tensors of f32, bf16 or
/// f16; `None` for other dtypes or devices (the caller falls back to candle ops).
pub mod tensor {
    use candle_core::{DType, Result, Tensor};

    use crate::model::conv::with_cpu_slice;

    /// [`super::upsample_nearest2x`] of `[B, C, T, H, W]`.
    pub fn upsample_nearest2x(x: &Tensor) -> Result<Option<Tensor>> {
        let (b, c, t, h, w) = x.dims5()?;
        if !x.device().is_cpu() {
            return Ok(None);
        }
        let x = x.contiguous()?;
        let shape = (b, c, t, 2 * h, 2 * w);
        let planes = b * c * t;
        let dev = x.device();
        Ok(Some(match x.dtype() {
            DType::F32 => Tensor::from_vec(
                with_cpu_slice(&x, |s: &[f32]| super::upsample_nearest2x(s, planes, h, w))?,
                shape,
                dev,
            )?,
            DType::BF16 => Tensor::from_vec(
                with_cpu_slice(&x, |s: &[half::bf16]| super::upsample_nearest2x(s, planes, h, w))?,
                shape,
                dev,
            )?,
            DType::F16 => Tensor::from_vec(
                with_cpu_slice(&x, |s: &[half::f16]| super::upsample_nearest2x(s, planes, h, w))?,
                shape,
                dev,
            )?,
            _ => return Ok(None),
        }))
    }

    /// [`super::rms_norm`] over dim 1 of `x` `[B, C, ...]`.
    pub fn rms_norm(x: &Tensor, g: &[f32], silu: bool) -> Result<Option<Tensor>> {
        if !x.device().is_cpu() || x.rank() < 2 {
            return Ok(None);
        }
        let x = x.contiguous()?;
        let dims = x.dims().to_vec();
        let (b, c) = (dims[0], dims[1]);
        let s: usize = dims[2..].iter().product();
        let dev = x.device();
        Ok(Some(match x.dtype() {
            DType::F32 => Tensor::from_vec(
                with_cpu_slice(&x, |v: &[f32]| super::rms_norm(v, b, c, s, g, silu))?,
                dims,
                dev,
            )?,
            DType::BF16 => Tensor::from_vec(
                with_cpu_slice(&x, |v: &[half::bf16]| super::rms_norm(v, b, c, s, g, silu))?,
                dims,
                dev,
            )?,
            DType::F16 => Tensor::from_vec(
                with_cpu_slice(&x, |v: &[half::f16]| super::rms_norm(v, b, c, s, g, silu))?,
                dims,
                dev,
            )?,
            _ => return Ok(None),
        }))
    }

    /// [`super::add`] of two tensors of one shape and dtype.
    pub fn add(a: &Tensor, b: &Tensor) -> Result<Option<Tensor>> {
        if !a.device().is_cpu() || a.dims() != b.dims() || a.dtype() != b.dtype() {
            return Ok(None);
        }
        let (a, b) = (a.contiguous()?, b.contiguous()?);
        let (shape, dev) = (a.shape().clone(), a.device());
        // bf16/f16 add in f32 and round once, as candle's add does.
        Ok(Some(match a.dtype() {
            DType::F32 => {
                let v = with_cpu_slice(&a, |x: &[f32]| with_cpu_slice(&b, |y: &[f32]| super::add(x, y)))??;
                Tensor::from_vec(v, shape, dev)?
            }
            DType::BF16 => {
                let v = with_cpu_slice(&a, |x: &[half::bf16]| {
                    with_cpu_slice(&b, |y: &[half::bf16]| super::add(x, y))
                })??;
                Tensor::from_vec(v, shape, dev)?
            }
            DType::F16 => {
                let v = with_cpu_slice(&a, |x: &[half::f16]| {
                    with_cpu_slice(&b, |y: &[half::f16]| super::add(x, y))
                })??;
                Tensor::from_vec(v, shape, dev)?
            }
            _ => return Ok(None),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upsampling_repeats_each_value_in_a_2x2_block() {
        let (planes, h, w) = (3, 5, 7);
        let x: Vec<f32> = (0..planes * h * w).map(|i| i as f32).collect();
        let y = upsample_nearest2x(&x, planes, h, w);
        for p in 0..planes {
            for r in 0..2 * h {
                for c in 0..2 * w {
                    assert_eq!(y[(p * 2 * h + r) * 2 * w + c], x[(p * h + r / 2) * w + c / 2]);
                }
            }
        }
    }

    #[test]
    fn bf16_norm_is_the_f32_norm_rounded_once() {
        let (b, c, s) = (1, 4, 3000);
        let x: Vec<half::bf16> = (0..b * c * s)
            .map(|i| half::bf16::from_f32(((i * 13 % 97) as f32 - 48.0) / 20.0))
            .collect();
        let xf: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
        let g = [0.5, 1.5, -1.0, 2.0];
        let y = rms_norm(&x, b, c, s, &g, true);
        let yf = rms_norm(&xf, b, c, s, &g, true);
        assert!(y.iter().zip(&yf).all(|(a, &f)| *a == half::bf16::from_f32(f)));
    }

    #[test]
    fn add_is_elementwise() {
        let a: Vec<f32> = (0..40_000).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..40_000).map(|i| (i % 7) as f32 * 0.5).collect();
        let y = add(&a, &b);
        assert!(y.iter().enumerate().all(|(i, &v)| v == a[i] + b[i]));
    }

    #[test]
    fn matches_the_formula() {
        let (b, c, s) = (2, 3, 5000);
        let x: Vec<f32> = (0..b * c * s).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
        let g = [0.5, -1.0, 2.0];
        for silu in [false, true] {
            let y = rms_norm(&x, b, c, s, &g, silu);
            for bi in 0..b {
                for p in (0..s).step_by(499) {
                    let norm: f32 = (0..c)
                        .map(|ci| x[(bi * c + ci) * s + p].powi(2))
                        .sum::<f32>()
                        .sqrt()
                        .max(1e-12);
                    for ci in 0..c {
                        let mut want = x[(bi * c + ci) * s + p] / norm * g[ci];
                        if silu {
                            want /= 1.0 + (-want).exp();
                        }
                        let got = y[(bi * c + ci) * s + p];
                        assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "{got} vs {want}");
                    }
                }
            }
        }
    }
}
