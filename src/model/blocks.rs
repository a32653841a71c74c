//! Building blocks of the Wan VAEs, as the reference `wan/modules/vae.py` (2.1) and
//! `vae2_2.py` (2.2) compute them: causal conv3d with its frame cache, RMS norm, residual
//! block, attention block, resample (Wan 2.2's parameter-free folds are in `fold.rs`).
//! Struct fields and `vb.pp(..)` names mirror the checkpoint keys.
//!
//! Owns one block's weights and arithmetic (and the frame cache those blocks share); must
//! not know where a block sits in the model (`coder.rs`) nor the conv kernels (`conv.rs`).
use candle_core::{DType, Result, Tensor};
use candle_nn::VarBuilder;

use super::conv::{tail, Conv3d, ConvImpl, Pad};
use super::cpu_kernels;

/// Frames a time-kernel-3 causal conv keeps from the previous call (`CACHE_T`).
const CACHE_T: usize = 2;

/// One slot of the reference's `feat_cache` list.
#[derive(Clone, Default)]
pub enum Slot {
    /// Nothing seen yet (`None`).
    #[default]
    Empty,
    /// `upsample3d` after its first call, before its time conv ever ran (`'Rep'`).
    Rep,
    /// Frames kept from the previous call.
    Frames(Tensor),
}

/// The reference's `feat_cache` + `feat_idx`: one slot per cached conv, visited in order.
#[derive(Default)]
pub struct FeatCache {
    slots: Vec<Slot>,
    idx: usize,
    /// Model calls started on this cache.
    calls: usize,
}

impl FeatCache {
    /// Start a new model call (the reference resets `feat_idx` to 0 per call).
    pub fn rewind(&mut self) {
        self.idx = 0;
        self.calls += 1;
    }
    /// Whether the call in progress is the first on this cache (the reference's
    /// `first_chunk`, which Wan 2.2's `DupUp3D` reads).
    pub fn first_call(&self) -> bool {
        self.calls <= 1
    }
    /// The next slot, in visiting order.
    fn next(&mut self) -> &mut Slot {
        if self.idx == self.slots.len() {
            self.slots.push(Slot::Empty);
        }
        self.idx += 1;
        &mut self.slots[self.idx - 1]
    }
}

/// `CausalConv3d`: zero padding `2*pt` frames in front (shrunk by the cached frames put
/// there instead), `ph`/`pw` on both sides in space.
pub struct CausalConv3d {
    /// Checkpoint key path, the name of its profile span ([`super::span`]).
    path: String,
    conv: Conv3d,
    stride: [usize; 3],
    padding: [usize; 3],
}

impl CausalConv3d {
    pub fn new(
        vb: VarBuilder,
        inp: usize,
        out: usize,
        kernel: [usize; 3],
        stride: [usize; 3],
        padding: [usize; 3],
        imp: ConvImpl,
    ) -> Result<Self> {
        Ok(CausalConv3d {
            path: vb.prefix(),
            conv: Conv3d::new(vb, inp, out, kernel, imp)?,
            stride,
            padding,
        })
    }

    /// Kernel `k` cube, stride 1, padding `p` everywhere (the common case).
    pub fn cube(vb: VarBuilder, inp: usize, out: usize, k: usize, p: usize, imp: ConvImpl) -> Result<Self> {
        Self::new(vb, inp, out, [k; 3], [1; 3], [p; 3], imp)
    }

    pub fn forward(&self, x: &Tensor, cache: Option<&Tensor>) -> Result<Tensor> {
        let _span = super::span::layer(&self.path, x);
        self.forward_unspanned(x, cache)
    }

    /// [`Self::forward`] without its span, for a caller that enters the span itself (a
    /// `Resample`'s 2D conv, whose reference input is 4D).
    fn forward_unspanned(&self, x: &Tensor, cache: Option<&Tensor>) -> Result<Tensor> {
        let [pt, ph, pw] = self.padding;
        let mut front = 2 * pt;
        let mut parts = vec![x];
        if let (Some(c), true) = (cache, front > 0) {
            parts.insert(0, c); // the conv reads cached frames, then x (no joined copy on the CPU)
            front -= c.dim(2)?;
        }
        let pad = Pad {
            t_front: front,
            top: ph,
            bottom: ph,
            left: pw,
            right: pw,
        };
        self.conv.forward_parts(&parts, self.stride, pad)
    }

    /// The reference's cached call: run with the slot's frames in front, then keep the last
    /// `CACHE_T` frames of the input (topped up with the previous cache's last frame when
    /// the input had only one).
    pub fn forward_cached(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        let slot = cache.next();
        let prev = match std::mem::take(slot) {
            Slot::Frames(t) => Some(t),
            _ => None,
        };
        let mut keep = tail(x, 2, CACHE_T)?;
        if keep.dim(2)? < CACHE_T {
            if let Some(p) = &prev {
                keep = Tensor::cat(&[&tail(p, 2, 1)?, &keep], 2)?;
            }
        }
        let y = self.forward(x, prev.as_ref())?;
        *slot = Slot::Frames(keep);
        Ok(y)
    }
}

/// `RMS_norm`: `x / max(||x||_2 over channels, 1e-12) * sqrt(C) * gamma`.
pub struct RmsNorm {
    /// `gamma * sqrt(C)`, shaped to broadcast over `[B, C, ...]`.
    scaled_gamma: Tensor,
    /// The same values as f32, for the fused CPU kernel.
    scaled_gamma_f32: Vec<f32>,
    /// The same values as an f32 `[C]` tensor on the model's device, for the fused CUDA
    /// kernel.
    scaled_gamma_device: Tensor,
    /// Checkpoint key path ([`super::span`]).
    path: String,
}

impl RmsNorm {
    /// `gamma` is `[C,1,1,1]` (residual blocks, heads) or `[C,1,1]` (attention).
    pub fn new(vb: VarBuilder, c: usize, images: bool) -> Result<Self> {
        let gamma = if images {
            vb.get((c, 1, 1), "gamma")?
        } else {
            vb.get((c, 1, 1, 1), "gamma")?
        };
        let scaled_gamma = (gamma.unsqueeze(0)? * (c as f64).sqrt())?;
        let scaled_gamma_device = scaled_gamma.to_dtype(DType::F32)?.flatten_all()?;
        let scaled_gamma_f32 = scaled_gamma_device.to_vec1::<f32>()?;
        Ok(RmsNorm {
            scaled_gamma,
            scaled_gamma_f32,
            scaled_gamma_device,
            path: vb.prefix(),
        })
    }

    /// Normalize over dim 1 (16-bit inputs reduce in f32).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_act(x, false)
    }

    /// Normalize, then SiLU when `silu` (one fused pass on the CPU and on CUDA).
    pub fn forward_act(&self, x: &Tensor, silu: bool) -> Result<Tensor> {
        let _span = super::span::layer(&self.path, x);
        if let Some(y) = cpu_kernels::tensor::rms_norm(x, &self.scaled_gamma_f32, silu)? {
            return Ok(y);
        }
        if let Some(y) = super::cuda::channel_norm(x, &self.scaled_gamma_device, silu)? {
            return Ok(y);
        }
        let dtype = x.dtype();
        let xf = x.to_dtype(DType::F32)?;
        let norm = xf.sqr()?.sum_keepdim(1)?.sqrt()?.maximum(1e-12)?;
        let g = self.scaled_gamma.to_dtype(DType::F32)?;
        let y = xf.broadcast_div(&norm)?.broadcast_mul(&g)?;
        let y = if silu { y.silu()? } else { y };
        y.to_dtype(dtype)
    }
}

/// `ResidualBlock(in, out)`: norm, SiLU, conv3x3x3, norm, SiLU, (dropout), conv3x3x3,
/// plus a 1x1x1 shortcut when `in != out`.
pub struct ResidualBlock {
    residual_0: RmsNorm,
    residual_2: CausalConv3d,
    residual_3: RmsNorm,
    residual_6: CausalConv3d,
    shortcut: Option<CausalConv3d>,
}

impl ResidualBlock {
    pub fn new(vb: VarBuilder, inp: usize, out: usize, imp: ConvImpl) -> Result<Self> {
        let r = vb.pp("residual");
        let shortcut = if inp != out {
            Some(CausalConv3d::cube(vb.pp("shortcut"), inp, out, 1, 0, imp)?)
        } else {
            None
        };
        Ok(ResidualBlock {
            residual_0: RmsNorm::new(r.pp("0"), inp, false)?,
            residual_2: CausalConv3d::cube(r.pp("2"), inp, out, 3, 1, imp)?,
            residual_3: RmsNorm::new(r.pp("3"), out, false)?,
            residual_6: CausalConv3d::cube(r.pp("6"), out, out, 3, 1, imp)?,
            shortcut,
        })
    }

    pub fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        let h = match &self.shortcut {
            Some(s) => s.forward(x, None)?,
            None => x.clone(),
        };
        let y = self.residual_0.forward_act(x, true)?;
        let y = self.residual_2.forward_cached(&y, cache)?;
        let y = self.residual_3.forward_act(&y, true)?;
        let y = self.residual_6.forward_cached(&y, cache)?;
        match cpu_kernels::tensor::add(&y, &h)? {
            Some(sum) => Ok(sum),
            None => y + h,
        }
    }
}

/// `AttentionBlock(C)`: per frame, RMS norm, 1x1 `to_qkv`, single-head softmax attention
/// over the `h*w` positions (scale `1/sqrt(C)`), 1x1 `proj`, plus the input.
pub struct AttentionBlock {
    norm: RmsNorm,
    /// `[3C, C]` and `[3C]`, f32 (candle's CPU matmul has no bf16).
    to_qkv: (Tensor, Tensor),
    proj: (Tensor, Tensor),
    c: usize,
    /// Checkpoint key path ([`super::span`]): the block is one layer.
    path: String,
}

impl AttentionBlock {
    pub fn new(vb: VarBuilder, c: usize) -> Result<Self> {
        let lin = |name: &str, out: usize| -> Result<(Tensor, Tensor)> {
            let w = vb.pp(name).get((out, c, 1, 1), "weight")?.reshape((out, c))?;
            let b = vb.pp(name).get(out, "bias")?;
            Ok((w, b))
        };
        Ok(AttentionBlock {
            norm: RmsNorm::new(vb.pp("norm"), c, true)?,
            to_qkv: lin("to_qkv", 3 * c)?,
            proj: lin("proj", c)?,
            c,
            path: vb.prefix(),
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let _span = super::span::layer(&self.path, x);
        let (b, c, t, h, w) = x.dims5()?;
        let dtype = x.dtype();
        // 'b c t h w -> (b t) c h w', normalized
        let frames = x.permute((0, 2, 1, 3, 4))?.reshape((b * t, c, h, w))?;
        let normed = self.norm.forward(&frames)?;
        let cdt = if x.device().is_cpu() && dtype == DType::BF16 {
            DType::F32
        } else {
            dtype
        };
        let tokens = normed.reshape((b * t, c, h * w))?.to_dtype(cdt)?; // [N, C, L]
        let qkv = linear(&self.to_qkv, &tokens, cdt)?; // [N, 3C, L]
        let q = qkv.narrow(1, 0, c)?.transpose(1, 2)?.contiguous()?; // [N, L, C]
        let k = qkv.narrow(1, c, c)?.contiguous()?; // [N, C, L]
        let v = qkv.narrow(1, 2 * c, c)?.transpose(1, 2)?.contiguous()?; // [N, L, C]
        let scores = (q.matmul(&k)? / (self.c as f64).sqrt())?;
        let attn = candle_nn::ops::softmax_last_dim(&scores)?; // parallel over rows on the CPU
        let o = attn.matmul(&v)?.transpose(1, 2)?.contiguous()?; // [N, C, L]
        let y = linear(&self.proj, &o, cdt)?.to_dtype(dtype)?;
        let y = y.reshape((b, t, c, h, w))?.permute((0, 2, 1, 3, 4))?;
        y + x
    }
}

/// `W @ x + b` for `x` `[N, C, L]` and `W` `[O, C]`.
fn linear((w, bias): &(Tensor, Tensor), x: &Tensor, cdt: DType) -> Result<Tensor> {
    let n = x.dim(0)?;
    let (o, c) = w.dims2()?;
    let w = w.to_dtype(cdt)?.broadcast_as((n, o, c))?;
    w.matmul(x)?.broadcast_add(&bias.to_dtype(cdt)?.reshape((1, o, 1))?)
}

/// The four `Resample` modes of the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResampleMode {
    Upsample2d,
    Upsample3d,
    Downsample2d,
    Downsample3d,
}

/// `Resample(C, mode)`: `resample.1` is the per-frame conv2d, `time_conv` the time conv.
/// Upsampling convs go from `C` to `out` (`C/2` in Wan 2.1); downsampling keeps `C`.
pub struct Resample {
    mode: ResampleMode,
    resample_1: CausalConv3d,
    time_conv: Option<CausalConv3d>,
}

impl Resample {
    pub fn new(vb: VarBuilder, c: usize, out: usize, mode: ResampleMode, imp: ConvImpl) -> Result<Self> {
        use ResampleMode::*;
        let conv2d = |out: usize, stride: usize, pad: usize| -> Result<CausalConv3d> {
            let conv = Conv3d::new_2d(vb.pp("resample").pp("1"), c, out, 3, imp)?;
            Ok(CausalConv3d {
                path: vb.pp("resample").pp("1").prefix(),
                conv,
                stride: [1, stride, stride],
                padding: [0, pad, pad],
            })
        };
        let (resample_1, time_conv) = match mode {
            Upsample2d => (conv2d(out, 1, 1)?, None),
            Upsample3d => (
                conv2d(out, 1, 1)?,
                Some(CausalConv3d::new(
                    vb.pp("time_conv"),
                    c,
                    2 * c,
                    [3, 1, 1],
                    [1, 1, 1],
                    [1, 0, 0],
                    imp,
                )?),
            ),
            // Downsampling pads right/bottom by one (ZeroPad2d((0,1,0,1))) outside the conv.
            Downsample2d => (conv2d(c, 2, 0)?, None),
            Downsample3d => (
                conv2d(c, 2, 0)?,
                Some(CausalConv3d::new(
                    vb.pp("time_conv"),
                    c,
                    c,
                    [3, 1, 1],
                    [2, 1, 1],
                    [0, 0, 0],
                    imp,
                )?),
            ),
        };
        Ok(Resample {
            mode,
            resample_1,
            time_conv,
        })
    }

    pub fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        use ResampleMode::*;
        let mut x = x.clone();
        if self.mode == Upsample3d {
            x = self.upsample_time(&x, cache)?;
        }
        x = match self.mode {
            Upsample2d | Upsample3d => {
                let up = upsample_nearest2x(&x)?;
                let _span = super::span::layer_2d(&self.resample_1.path, &up, 0);
                self.resample_1.forward_unspanned(&up, None)?
            }
            Downsample2d | Downsample3d => {
                let pad = Pad {
                    bottom: 1,
                    right: 1,
                    ..Pad::default()
                };
                let _span = super::span::layer_2d(&self.resample_1.path, &x, 1);
                self.resample_1.conv.forward(&x, self.resample_1.stride, pad)?
            }
        };
        if self.mode == Downsample3d {
            x = self.downsample_time(&x, cache)?;
        }
        Ok(x)
    }

    /// `upsample3d`: skipped on the first call (`'Rep'`), zero-padded on the second, cached
    /// after; channel groups `[0,C)` and `[C,2C)` become frames `2t` and `2t+1`.
    fn upsample_time(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        let conv = self.time_conv.as_ref().expect("upsample3d has a time conv");
        let slot = cache.next();
        let prev = std::mem::take(slot);
        if let Slot::Empty = prev {
            *slot = Slot::Rep;
            return Ok(x.clone());
        }
        let (b, c, t, h, w) = x.dims5()?;
        let mut keep = tail(x, 2, CACHE_T)?;
        if keep.dim(2)? < CACHE_T {
            let front = match &prev {
                Slot::Frames(p) => tail(p, 2, 1)?,
                _ => keep.zeros_like()?,
            };
            keep = Tensor::cat(&[&front, &keep], 2)?;
        }
        let y = match &prev {
            Slot::Frames(p) => conv.forward(x, Some(p))?,
            _ => conv.forward(x, None)?,
        };
        *slot = Slot::Frames(keep);
        // [b, 2, c, t, h, w] -> stack on a new dim after t -> [b, c, 2t, h, w]
        let y = y.reshape((b, 2, c, t, h, w))?;
        let y = Tensor::stack(&[y.narrow(1, 0, 1)?.squeeze(1)?, y.narrow(1, 1, 1)?.squeeze(1)?], 3)?;
        y.reshape((b, c, 2 * t, h, w))
    }

    /// `downsample3d`: on the first call the frames are cached and the time conv skipped;
    /// later calls prepend the cached last frame and convolve with stride 2 in time.
    fn downsample_time(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        let conv = self.time_conv.as_ref().expect("downsample3d has a time conv");
        let slot = cache.next();
        match std::mem::take(slot) {
            Slot::Frames(prev) => {
                let keep = tail(x, 2, 1)?;
                let y = conv.forward(&Tensor::cat(&[&tail(&prev, 2, 1)?, x], 2)?, None)?;
                *slot = Slot::Frames(keep);
                Ok(y)
            }
            _ => {
                // The reference caches the whole chunk; only its last frame is ever read.
                *slot = Slot::Frames(tail(x, 2, 1)?);
                Ok(x.clone())
            }
        }
    }
}

/// Nearest-neighbour 2x spatial upsampling of `[B, C, T, H, W]` (`nearest-exact` at scale 2).
pub fn upsample_nearest2x(x: &Tensor) -> Result<Tensor> {
    if let Some(y) = cpu_kernels::tensor::upsample_nearest2x(x)? {
        return Ok(y);
    }
    let (b, c, t, h, w) = x.dims5()?;
    let y = x
        .reshape(vec![b, c, t, h, 1, w, 1])?
        .broadcast_as(vec![b, c, t, h, 2, w, 2])?;
    y.reshape((b, c, t, 2 * h, 2 * w))
}
