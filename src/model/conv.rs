//! 3-D convolution (and 2-D as its `kt = 1` case) for candle, which has no conv3d.
//!
//! Owns the conv layer (weights, output size, padding) and picks how it computes:
//! - CPU with AVX-512 ([`Isa::Avx512`], chosen at run time): the `kernels` module packs the
//!   input straight from the channels-first activations and runs AVX-512 micro-kernels;
//!   bf16 models multiply bf16 operands with f32 accumulation (`vdpbf16ps`) where the CPU
//!   has AVX512-BF16 ([`Isa::Avx512Bf16`]), in f32 otherwise.
//! - Other CPUs ([`Isa::Portable`], the `im2col` submodule): one im2col matrix per slab of
//!   output rows, multiplied by the `[out, in*kt*kh*kw]` weight matrix in one `gemm` crate
//!   call (AVX2/FMA on x86-64) that writes straight into the channels-first output; 16-bit
//!   types compute in f32.
//! - An accelerator whose vendor library this build has (CUDA with `--features cudnn`: cuDNN),
//!   [`ConvImpl::Auto`]: the library's N-d convolution on the 5-D tensor, through the seam
//!   of the `device` submodule (the causal cache's join and one-sided padding are the only
//!   copies).
//! - [`ConvImpl::Candle`] (any device), and other devices: the `kt` time taps are stacked
//!   along channels and one `Tensor::conv2d` runs over all output frames; 16-bit types on
//!   the CPU compute in f32 because candle's CPU conv2d has no bf16 kernel.
//!
//! Padding is implicit on the CPU paths (no padded copy of the input). Must not know about
//! the model's layers: blocks.rs decides strides, padding and caching.
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use half::slice::HalfFloatSliceExt;

pub use super::kernels::Isa;
use super::kernels::{self, ConvShape, Dst, Operands, PackedWeights, Src};
use im2col::{conv_f32, Geometry};

pub mod device;
mod im2col;
pub mod library;

/// Free the buffers the CPU convolutions keep between calls (the AVX-512 kernels' padded
/// input and blocks, the im2col matrices, on this thread and every thread of rayon's pool): a worker starting a case calls it, so
/// that what an earlier, larger case left does not count in this case's peak memory.
pub fn release_caches() {
    kernels::release_caches();
    im2col::release();
    device::reset_backends();
    // Every thread of the pool that runs the convolutions keeps its own.
    rayon::broadcast(|_| {
        kernels::release_caches();
        im2col::release();
    });
}

/// Which convolution implementation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConvImpl {
    /// The CPU kernels ([`Isa::detect`]) on the CPU, candle's conv2d elsewhere.
    #[default]
    Auto,
    /// Always candle's conv2d (time taps stacked along channels).
    Candle,
}

/// Zero padding of a conv input: time only in front (causal), space on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pad {
    pub t_front: usize,
    pub top: usize,
    pub bottom: usize,
    pub left: usize,
    pub right: usize,
}

/// The weights, laid out for the path that computes: one copy only (Wan 2.2's are 2.8 GB
/// in f32; the checkpoint's tensor is dropped once a CPU path has its own layout).
enum Weights {
    /// `[out, in, kt, kh, kw]` (contiguous off the CPU), for [`ConvImpl::Candle`] and the
    /// device's library.
    Candle(Tensor),
    /// `[out, kt*kh*kw*in]` row-major f32 weights and f32 bias, for the gemm crate.
    Portable(Vec<f32>, Vec<f32>),
    /// Packed for the AVX-512 kernels.
    Packed(PackedWeights),
}

/// Convolution weights `[out, in, kt, kh, kw]` plus bias, laid out for the path that runs.
pub struct Conv3d {
    weights: Weights,
    bias: Tensor,
    out_ch: usize,
    in_ch: usize,
    kernel: [usize; 3],
    imp: ConvImpl,
}

impl Conv3d {
    /// Load `weight` `[out, in, kt, kh, kw]` and `bias` `[out]` from `vb`.
    pub fn new(
        vb: VarBuilder,
        in_ch: usize,
        out_ch: usize,
        kernel: [usize; 3],
        imp: ConvImpl,
    ) -> candle_core::Result<Self> {
        let weight = vb.get((out_ch, in_ch, kernel[0], kernel[1], kernel[2]), "weight")?;
        let bias = vb.get(out_ch, "bias")?;
        Self::from_tensors(weight, bias, imp)
    }

    /// Load a conv2d (`weight` `[out, in, kh, kw]`) as a conv3d with `kt = 1`.
    pub fn new_2d(vb: VarBuilder, in_ch: usize, out_ch: usize, k: usize, imp: ConvImpl) -> candle_core::Result<Self> {
        let weight = vb.get((out_ch, in_ch, k, k), "weight")?.unsqueeze(2)?;
        let bias = vb.get(out_ch, "bias")?;
        Self::from_tensors(weight, bias, imp)
    }

    fn from_tensors(weight: Tensor, bias: Tensor, imp: ConvImpl) -> candle_core::Result<Self> {
        Self::with_isa(weight, bias, imp, Isa::detect())
    }

    /// A conv from `weight` `[out, in, kt, kh, kw]` and `bias` `[out]` on instruction set
    /// `isa` (at most [`Isa::hardware`]): tests and benchmarks compare the CPU paths with it.
    pub fn with_isa(weight: Tensor, bias: Tensor, imp: ConvImpl, isa: Isa) -> candle_core::Result<Self> {
        let (out_ch, in_ch, kt, kh, kw) = weight.dims5()?;
        let weights = if imp == ConvImpl::Auto && weight.device().is_cpu() {
            // Values as rounded to the model dtype, held in f32 (or bf16) for the kernels.
            let b = bias.to_dtype(DType::F32)?.to_vec1::<f32>()?;
            if isa >= Isa::Avx512 {
                let operands = if isa >= Isa::Avx512Bf16 && weight.dtype() == DType::BF16 {
                    Operands::Bf16
                } else {
                    Operands::F32
                };
                let w = weight.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
                Weights::Packed(PackedWeights::new(&w, &b, out_ch, in_ch, [kt, kh, kw], operands))
            } else {
                // [out, in, kt, kh, kw] -> [out, kt, kh, kw, in], the patch order of the im2col.
                let w = weight.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
                Weights::Portable(im2col::weights_in_patch_order(&w, in_ch, kt * kh * kw), b)
            }
        } else if weight.device().is_cpu() {
            Weights::Candle(weight)
        } else {
            Weights::Candle(weight.contiguous()?)
        };
        Ok(Conv3d {
            weights,
            bias,
            out_ch,
            in_ch,
            kernel: [kt, kh, kw],
            imp,
        })
    }

    /// Convolve `x` `[B, C, T, H, W]` with `stride` and implicit zero `pad`.
    pub fn forward(&self, x: &Tensor, stride: [usize; 3], pad: Pad) -> candle_core::Result<Tensor> {
        self.forward_parts(&[x], stride, pad)
    }

    /// Convolve the concatenation in time of `parts` (e.g. cached frames, then new ones);
    /// the AVX-512 path reads the parts in place instead of copying them into one tensor.
    pub fn forward_parts(&self, parts: &[&Tensor], stride: [usize; 3], pad: Pad) -> candle_core::Result<Tensor> {
        for x in parts {
            let (_, c, _, _, _) = x.dims5()?;
            if c != self.in_ch {
                candle_core::bail!("conv expects {} input channels, got {c}", self.in_ch);
            }
        }
        // The other paths read one tensor: the parts joined (a copy) when there are several.
        let joined = || match parts {
            [x] => Ok((*x).clone()),
            _ => Tensor::cat(parts, 2),
        };
        match &self.weights {
            Weights::Packed(pw) => self.forward_packed(parts, pw, stride, pad),
            Weights::Portable(w, b) => self.forward_im2col(&joined()?, w, b, stride, pad),
            Weights::Candle(weight) => {
                let library = device::backend_for(parts[0].device())
                    .filter(|b| self.imp == ConvImpl::Auto && b.supports(parts[0].dtype()));
                match library {
                    Some(b) => device::forward(b, parts, weight, &self.bias, stride, pad, |x, rest| {
                        self.forward_candle(x, weight, stride, rest)
                    }),
                    None => self.forward_candle(&joined()?, weight, stride, pad),
                }
            }
        }
    }

    /// The AVX-512 kernels: bf16 in and out when the weights are packed as bf16, else f32.
    fn forward_packed(
        &self,
        parts: &[&Tensor],
        pw: &PackedWeights,
        stride: [usize; 3],
        pad: Pad,
    ) -> candle_core::Result<Tensor> {
        let dtype = parts[0].dtype();
        let (b, c, _, h, wd) = parts[0].dims5()?;
        let mut t = 0;
        for x in parts {
            let (pb, _, pt, ph, pw_) = x.dims5()?;
            if (pb, ph, pw_) != (b, h, wd) {
                candle_core::bail!(
                    "conv input parts differ in batch or size: {:?} vs {:?}",
                    x.dims(),
                    parts[0].dims()
                );
            }
            t += pt;
        }
        let [to, ho, wo] = self.out_dims(t, h, wd, stride, pad)?;
        let shape = ConvShape {
            c,
            t,
            h,
            w: wd,
            to,
            ho,
            wo,
            kernel: self.kernel,
            stride,
            front: pad.t_front,
            top: pad.top,
            left: pad.left,
        };
        let out_len = self.out_ch * to * ho * wo;
        let dims = (b, self.out_ch, to, ho, wo);
        match pw.operands() {
            Operands::Bf16 => {
                let xs = parts
                    .iter()
                    .map(|x| x.to_dtype(DType::BF16)?.contiguous())
                    .collect::<candle_core::Result<Vec<_>>>()?;
                let mut out = vec![half::bf16::ZERO; b * out_len];
                with_cpu_slices(&xs, |srcs: &[&[half::bf16]]| {
                    for (bi, dst) in out.chunks_mut(out_len).enumerate() {
                        let parts: Vec<Src> = srcs
                            .iter()
                            .map(|s| Src::Bf16(s[bi * s.len() / b..(bi + 1) * s.len() / b].reinterpret_cast()))
                            .collect();
                        kernels::conv_parts(pw, &shape, &parts, Dst::Bf16(dst.reinterpret_cast_mut()));
                    }
                })?;
                Tensor::from_vec(out, dims, &Device::Cpu)?.to_dtype(dtype)
            }
            Operands::F32 => {
                let xs = parts
                    .iter()
                    .map(|x| x.to_dtype(DType::F32)?.contiguous())
                    .collect::<candle_core::Result<Vec<_>>>()?;
                let mut out = vec![0f32; b * out_len];
                with_cpu_slices(&xs, |srcs: &[&[f32]]| {
                    for (bi, dst) in out.chunks_mut(out_len).enumerate() {
                        let parts: Vec<Src> = srcs
                            .iter()
                            .map(|s| Src::F32(&s[bi * s.len() / b..(bi + 1) * s.len() / b]))
                            .collect();
                        kernels::conv_parts(pw, &shape, &parts, Dst::F32(dst));
                    }
                })?;
                Tensor::from_vec(out, dims, &Device::Cpu)?.to_dtype(dtype)
            }
        }
    }

    fn out_dims(&self, t: usize, h: usize, w: usize, stride: [usize; 3], pad: Pad) -> candle_core::Result<[usize; 3]> {
        let [kt, kh, kw] = self.kernel;
        let (tp, hp, wp) = (t + pad.t_front, h + pad.top + pad.bottom, w + pad.left + pad.right);
        if tp < kt || hp < kh || wp < kw {
            candle_core::bail!("conv input {t}x{h}x{w} (padded {tp}x{hp}x{wp}) smaller than kernel {kt}x{kh}x{kw}");
        }
        Ok([
            (tp - kt) / stride[0] + 1,
            (hp - kh) / stride[1] + 1,
            (wp - kw) / stride[2] + 1,
        ])
    }

    fn forward_im2col(
        &self,
        x: &Tensor,
        w: &[f32],
        bias: &[f32],
        stride: [usize; 3],
        pad: Pad,
    ) -> candle_core::Result<Tensor> {
        let dtype = x.dtype();
        let (b, c, t, h, wd) = x.dims5()?;
        let [to, ho, wo] = self.out_dims(t, h, wd, stride, pad)?;
        let xf = x.to_dtype(DType::F32)?.contiguous()?;
        let in_len = c * t * h * wd;
        let n = to * ho * wo;
        let geom = Geometry {
            c,
            t,
            h,
            w: wd,
            to,
            ho,
            wo,
            kernel: self.kernel,
            stride,
            pad,
        };
        let out = with_cpu_slice(&xf, |src: &[f32]| {
            let mut out = Vec::with_capacity(b * self.out_ch * n);
            for bi in 0..b {
                conv_f32(
                    &src[bi * in_len..(bi + 1) * in_len],
                    &geom,
                    w,
                    bias,
                    self.out_ch,
                    &mut out,
                );
            }
            out
        })?;
        Tensor::from_vec(out, (b, self.out_ch, to, ho, wo), &Device::Cpu)?.to_dtype(dtype)
    }

    fn forward_candle(&self, x: &Tensor, weight: &Tensor, stride: [usize; 3], pad: Pad) -> candle_core::Result<Tensor> {
        let dtype = x.dtype();
        // candle's CPU conv2d has no bf16 kernel: compute 16-bit types in f32 there.
        let cdt = if x.device().is_cpu() && dtype != DType::F32 {
            DType::F32
        } else {
            dtype
        };
        let [kt, kh, kw] = self.kernel;
        if stride[1] != stride[2] || kh != kw {
            candle_core::bail!("conv2d path needs equal spatial kernel and stride");
        }
        let (b, c, t, h, w) = x.dims5()?;
        let [to, ho, wo] = self.out_dims(t, h, w, stride, pad)?;
        let mut x = x.to_dtype(cdt)?;
        if pad.t_front > 0 {
            let zeros = Tensor::zeros((b, c, pad.t_front, h, w), cdt, x.device())?;
            x = Tensor::cat(&[&zeros, &x], 2)?;
        }
        let x = x
            .pad_with_zeros(3, pad.top, pad.bottom)?
            .pad_with_zeros(4, pad.left, pad.right)?;
        let (hp, wp) = (x.dim(3)?, x.dim(4)?);
        // One [B*To, kt*C, Hp, Wp] input: tap dt holds frames dt, dt+st, ...
        let mut taps = Vec::with_capacity(kt);
        for dt in 0..kt {
            let frames = if stride[0] == 1 {
                x.narrow(2, dt, to)?
            } else {
                let idx: Vec<u32> = (0..to).map(|o| (o * stride[0] + dt) as u32).collect();
                x.index_select(&Tensor::new(idx, x.device())?, 2)?
            };
            taps.push(frames.permute((0, 2, 1, 3, 4))?.reshape((b * to, c, hp, wp))?);
        }
        let stacked = Tensor::cat(&taps, 1)?;
        let weight = weight
            .to_dtype(cdt)?
            .permute((0, 2, 1, 3, 4))?
            .reshape((self.out_ch, kt * c, kh, kw))?;
        let y = stacked.conv2d(&weight, 0, stride[1], 1, 1)?;
        let y = y.broadcast_add(&self.bias.to_dtype(cdt)?.reshape((1, self.out_ch, 1, 1))?)?;
        debug_assert_eq!(y.dims(), &[b * to, self.out_ch, ho, wo]);
        y.reshape((b, to, self.out_ch, ho, wo))?
            .permute((0, 2, 1, 3, 4))?
            .contiguous()?
            .to_dtype(dtype)
    }
}

/// Run `f` on the data (of type `T`, which must be the tensor's dtype) of a contiguous CPU
/// tensor.
pub fn with_cpu_slice<T: candle_core::WithDType, R>(x: &Tensor, f: impl FnOnce(&[T]) -> R) -> candle_core::Result<R> {
    if !x.is_contiguous() {
        candle_core::bail!("with_cpu_slice needs a contiguous tensor");
    }
    let (storage, layout) = x.storage_and_layout();
    let data = match &*storage {
        candle_core::Storage::Cpu(cpu) => cpu.as_slice::<T>()?,
        _ => candle_core::bail!("with_cpu_slice needs a CPU tensor"),
    };
    let start = layout.start_offset();
    Ok(f(&data[start..start + x.elem_count()]))
}

/// Run `f` on the data of several contiguous CPU tensors of dtype `T`.
fn with_cpu_slices<T: candle_core::WithDType, R>(
    xs: &[Tensor],
    f: impl FnOnce(&[&[T]]) -> R,
) -> candle_core::Result<R> {
    let guards: Vec<_> = xs.iter().map(|x| (x.storage_and_layout(), x.elem_count())).collect();
    let mut slices = Vec::with_capacity(xs.len());
    for (x, ((storage, layout), n)) in xs.iter().zip(&guards) {
        if !x.is_contiguous() {
            candle_core::bail!("with_cpu_slices needs contiguous tensors");
        }
        let data = match &**storage {
            candle_core::Storage::Cpu(cpu) => cpu.as_slice::<T>()?,
            _ => candle_core::bail!("with_cpu_slices needs CPU tensors"),
        };
        slices.push(&data[layout.start_offset()..layout.start_offset() + n]);
    }
    Ok(f(&slices))
}

/// Last `n` entries of dimension `dim` (fewer if the tensor is shorter), as a compact copy
/// so that caching a few frames does not keep a whole chunk's buffer alive.
pub fn tail(x: &Tensor, dim: usize, n: usize) -> candle_core::Result<Tensor> {
    let len = x.dim(dim)?;
    let n = n.min(len);
    x.narrow(dim, len - n, n)?.contiguous()
}

#[cfg(test)]
mod tests {
    //! Every CPU path against the portable (gemm crate) path: f32 within the fixtures'
    //! 1e-4 x max(1, |expected|); bf16 within 1e-2 x max(1, |expected|) per value, tighter
    //! than the fixtures' bf16 bound (1e-1 x max(1, max|expected|)).
    use super::*;

    fn tensor(shape: &[usize], seed: usize, scale: f32, dtype: DType) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n)
            .map(|i| ((((i * 7919 + seed * 104_729) % 2003) as f32) / 1001.5 - 1.0) * scale)
            .collect();
        Tensor::from_vec(v, shape, &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    }

    /// (in, out, kernel, input [t, h, w], stride, pad) of one of the model's conv kinds.
    type Case = (usize, usize, [usize; 3], [usize; 3], [usize; 3], Pad);

    fn cases() -> Vec<Case> {
        let p = |t_front, s| Pad {
            t_front,
            top: s,
            bottom: s,
            left: s,
            right: s,
        };
        vec![
            (20, 13, [3, 3, 3], [3, 9, 11], [1, 1, 1], p(2, 1)),
            (3, 24, [3, 3, 3], [1, 8, 8], [1, 1, 1], p(2, 1)),
            (16, 7, [1, 1, 1], [2, 6, 10], [1, 1, 1], p(0, 0)),
            (
                12,
                12,
                [1, 3, 3],
                [2, 9, 9],
                [1, 2, 2],
                Pad {
                    bottom: 1,
                    right: 1,
                    ..Pad::default()
                },
            ),
            (10, 10, [3, 1, 1], [5, 4, 4], [2, 1, 1], p(0, 0)),
            (8, 16, [3, 1, 1], [2, 4, 6], [1, 1, 1], p(1, 0)),
        ]
    }

    fn max_err(a: &Tensor, b: &Tensor) -> (f32, f32) {
        let a = a
            .to_dtype(DType::F32)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let b = b
            .to_dtype(DType::F32)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        assert_eq!(a.len(), b.len());
        let err = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs() / y.abs().max(1.0))
            .fold(0f32, f32::max);
        let max = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        (err, max)
    }

    #[test]
    fn every_cpu_path_matches_the_portable_path() {
        let hw = Isa::hardware();
        if hw == Isa::Portable {
            crate::errln!("skipped: this CPU has no AVX-512 (only the portable path runs here)");
        }
        for (ci, (cin, cout, k, [t, h, w], stride, pad)) in cases().into_iter().enumerate() {
            let wt = tensor(&[cout, cin, k[0], k[1], k[2]], ci, 0.2, DType::F32);
            let bias = tensor(&[cout], ci + 1, 0.5, DType::F32);
            let x = tensor(&[1, cin, t, h, w], ci + 2, 1.0, DType::F32);
            let portable = Conv3d::with_isa(wt.clone(), bias.clone(), ConvImpl::Auto, Isa::Portable).unwrap();
            let want = portable.forward(&x, stride, pad).unwrap();
            let candle = Conv3d::with_isa(wt.clone(), bias.clone(), ConvImpl::Candle, hw).unwrap();
            if stride[1] == stride[2] && k[1] == k[2] {
                let (err, _) = max_err(&candle.forward(&x, stride, pad).unwrap(), &want);
                assert!(err <= 1e-4, "case {ci}: candle path differs by {err}");
            }
            if hw >= Isa::Avx512 {
                let conv = Conv3d::with_isa(wt.clone(), bias.clone(), ConvImpl::Auto, Isa::Avx512).unwrap();
                let (err, _) = max_err(&conv.forward(&x, stride, pad).unwrap(), &want);
                assert!(
                    err <= 1e-4,
                    "case {ci}: AVX-512 f32 differs by {err} x max(1, |expected|)"
                );
            }
            if t >= 2 {
                // Input in two parts (cached frames, then new ones): the same result as joined.
                let conv = Conv3d::with_isa(wt.clone(), bias.clone(), ConvImpl::Auto, hw).unwrap();
                let (a, b) = (x.narrow(2, 0, 1).unwrap(), x.narrow(2, 1, t - 1).unwrap());
                let split = conv.forward_parts(&[&a, &b], stride, pad).unwrap();
                let (err, _) = max_err(&split, &conv.forward(&x, stride, pad).unwrap());
                assert_eq!(err, 0.0, "case {ci}: parts differ from the joined input");
            }
            if hw >= Isa::Avx512Bf16 {
                // bf16 model: weights and input rounded to bf16 on both sides.
                let (wb, bb, xb) = (
                    wt.to_dtype(DType::BF16).unwrap(),
                    bias.to_dtype(DType::BF16).unwrap(),
                    x.to_dtype(DType::BF16).unwrap(),
                );
                let reference = Conv3d::with_isa(wb.clone(), bb.clone(), ConvImpl::Auto, Isa::Portable).unwrap();
                let want = reference.forward(&xb, stride, pad).unwrap();
                let conv = Conv3d::with_isa(wb, bb, ConvImpl::Auto, Isa::Avx512Bf16).unwrap();
                let got = conv.forward(&xb, stride, pad).unwrap();
                assert_eq!(got.dtype(), DType::BF16);
                let (err, max) = max_err(&got, &want);
                // Both round the same f32-exact products once to bf16 at the end: they differ
                // by at most a bf16 rounding step of the output.
                assert!(
                    err <= 1e-2,
                    "case {ci}: AVX512-BF16 differs by {err} (max |expected| {max})"
                );
            }
        }
    }
}
