//! `WanVae`: the whole model (patchify in Wan 2.2, encoder, decoder, the two 1x1 convs,
//! latent normalization) and the reference's time handling: first frame alone, then chunks.
//!
//! Owns building the whole model from a `Config` and a caller-made `VarBuilder`, input
//! checks and the encode/decode entry points; must not load files (that is `weights`) nor
//! spell out stage tables (that is `config.rs`).
use anyhow::{bail, Context};
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;

use super::blocks::{CausalConv3d, FeatCache};
use super::coder::{Decoder, Encoder};
use super::conv::ConvImpl;
use super::fold::{patchify, unpatchify};
use super::{tiling, Config, Precision, RunOptions};

/// The loaded VAE.
pub struct WanVae {
    cfg: Config,
    precision: Precision,
    device: Device,
    conv_impl: ConvImpl,
    encoder: Encoder,
    decoder: Decoder,
    conv1: CausalConv3d,
    conv2: CausalConv3d,
    /// `[1, z, 1, 1, 1]` f32 (`z_dim` may differ from 16 in test models: padded/truncated).
    mean: Tensor,
    inv_std: Tensor,
}

impl WanVae {
    /// Build the model candle-style from `vb`, which the caller makes (from a checkpoint,
    /// e.g. `Weights::var_builder`, or any other backend): its dtype is the precision the
    /// model runs in, its device where.
    pub fn new(cfg: &Config, vb: VarBuilder, conv_impl: ConvImpl) -> anyhow::Result<Self> {
        let precision = Precision::from_dtype(vb.dtype())
            .with_context(|| format!("the model runs in f32, bf16 or f16, not {:?}", vb.dtype()))?;
        let device = vb.device().clone();
        let cfg = cfg.clone();
        let build = || -> candle_core::Result<_> {
            Ok((
                Encoder::new(&cfg, vb.pp("encoder"), conv_impl)?,
                Decoder::new(&cfg, vb.pp("decoder"), conv_impl)?,
                CausalConv3d::cube(vb.pp("conv1"), 2 * cfg.z_dim, 2 * cfg.z_dim, 1, 0, conv_impl)?,
                CausalConv3d::cube(vb.pp("conv2"), cfg.z_dim, cfg.z_dim, 1, 0, conv_impl)?,
            ))
        };
        let (encoder, decoder, conv1, conv2) =
            build().with_context(|| format!("building the model in {precision} on {device:?}"))?;
        let z = cfg.z_dim;
        let stat = |v: &[f32], fill: f32| -> candle_core::Result<Tensor> {
            let vals: Vec<f32> = (0..z).map(|i| v.get(i).copied().unwrap_or(fill)).collect();
            Tensor::from_vec(vals, (1, z, 1, 1, 1), &device)
        };
        let mean = stat(&cfg.latent_mean, 0.0)?;
        let inv_std = stat(&cfg.latent_std, 1.0)?.recip()?;
        Ok(WanVae {
            cfg,
            precision,
            device,
            conv_impl,
            encoder,
            decoder,
            conv1,
            conv2,
            mean,
            inv_std,
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The convolution implementation in use.
    pub fn conv_impl(&self) -> ConvImpl {
        self.conv_impl
    }

    /// What really computes: the storage dtype, and where ops run in another dtype.
    pub fn compute_dtype(&self) -> String {
        let dt = match self.precision {
            // TF32 acts on NVIDIA GPUs only (`conv::device::set_tf32`, the case's `tf32 = "on"`).
            Precision::Fp32 | Precision::Auto if self.device.is_cuda() && super::conv::device::tf32() => {
                return "f32 (TF32 allowed in convolutions and matmuls)".to_string()
            }
            Precision::Fp32 | Precision::Auto => return "f32".to_string(),
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "f16",
        };
        if self.device.is_cpu() {
            // The CPU convs compute 16-bit types in f32, except bf16 on AVX512-BF16; candle's
            // CPU matmul has no bf16, so bf16 attention runs in f32 too.
            let bf16_conv =
                self.conv_impl == ConvImpl::Auto && super::kernels::Isa::detect() == super::kernels::Isa::Avx512Bf16;
            let what = if self.precision == Precision::Bf16 && bf16_conv {
                "conv: bf16 products, f32 accumulation (AVX512-BF16); attention and norms in f32"
            } else if self.precision == Precision::Bf16 {
                "conv, attention and norms in f32"
            } else {
                "conv and norms in f32"
            };
            format!("{dt} ({what})")
        } else {
            format!("{dt} (norms in f32)")
        }
    }

    /// `video` `[1,3,T,H,W]` in [-1,1] (any float dtype) -> normalized latent
    /// `[1, z, 1+(T-1)/4, H/sc, W/sc]` in the model dtype (`sc` = 8 in Wan 2.1, 16 in 2.2).
    /// Frames past `1+4k` are ignored, with a warning, as the reference does.
    pub fn encode(&self, video: &Tensor, opts: &RunOptions) -> anyhow::Result<Tensor> {
        let (_, c, t, h, w) = video
            .dims5()
            .context("video must be [batch, 3, frames, height, width]")?;
        if c != 3 {
            bail!("video has {c} channels, expected 3 (RGB)");
        }
        self.cfg.check_size(w, h)?;
        let used = self.cfg.frames_used(t)?;
        if used != t {
            let tc = self.cfg.temporal_compression();
            crate::errln!("warning: {t} frames is not 1+{tc}k: encoding the first {used} frames, ignoring the last {} (as the reference does)", t - used);
        }
        check_chunk(opts.chunk)?;
        if let Some(tl) = &opts.tiling {
            self.cfg.check_tiling(tl)?;
        }
        let x = video
            .narrow(2, 0, used)?
            .to_device(&self.device)?
            .to_dtype(self.precision.dtype())?;
        let moments = match opts.tiling {
            Some(tl) if h > tl.tile_px || w > tl.tile_px => {
                let sc = self.cfg.spatial_compression();
                tiling::tiled_encode(&x, tl, sc, |tile| self.encode_moments(tile, opts.chunk))?
            }
            _ => self.encode_moments(&x, opts.chunk)?,
        };
        let mu = moments.narrow(1, 0, self.cfg.z_dim)?.to_dtype(DType::F32)?;
        let z = mu.broadcast_sub(&self.mean)?.broadcast_mul(&self.inv_std)?;
        Ok(z.to_dtype(self.precision.dtype())?)
    }

    /// Normalized latent `[1, z, t, h, w]` -> video `[1, 3, 1+4(t-1), sc*h, sc*w]` (not clamped).
    pub fn decode(&self, latent: &Tensor, opts: &RunOptions) -> anyhow::Result<Tensor> {
        let (_, c, t, h, w) = latent
            .dims5()
            .context("latent must be [batch, z_dim, frames, height, width]")?;
        if c != self.cfg.z_dim {
            bail!("latent has {c} channels, the model's z_dim is {}", self.cfg.z_dim);
        }
        if t == 0 || h == 0 || w == 0 {
            bail!("latent has an empty dimension: {:?}", latent.dims());
        }
        check_chunk(opts.chunk)?;
        if let Some(tl) = &opts.tiling {
            self.cfg.check_tiling(tl)?;
        }
        let z = latent.to_device(&self.device)?.to_dtype(DType::F32)?;
        let z = z
            .broadcast_div(&self.inv_std)?
            .broadcast_add(&self.mean)?
            .to_dtype(self.precision.dtype())?;
        let x = self.conv2.forward(&z, None)?;
        let sc = self.cfg.spatial_compression();
        let out = match opts.tiling {
            Some(tl) if sc * h > tl.tile_px || sc * w > tl.tile_px => {
                tiling::tiled_decode(&x, tl, sc, |tile| self.decode_frames(tile, opts.chunk))?
            }
            _ => self.decode_frames(&x, opts.chunk)?,
        };
        Ok(out)
    }

    /// Patchify (Wan 2.2), then the encoder over frame chunks (`[0]`, then `4*chunk` frames
    /// per call), then `conv1`: video pixels -> `[1, 2z, t, H/sc, W/sc]`.
    fn encode_moments(&self, x: &Tensor, chunk: usize) -> candle_core::Result<Tensor> {
        let x = patchify(x, self.cfg.patch_size)?;
        let step = self.cfg.temporal_compression() * chunk;
        let out = first_then_chunks(&x, step, |frames, cache| self.encoder.forward(frames, cache))?;
        self.conv1.forward(&out, None)
    }

    /// Decoder over latent chunks (`[0]`, then `chunk` frames per call), after `conv2`, then
    /// unpatchify (Wan 2.2): video pixels.
    fn decode_frames(&self, x: &Tensor, chunk: usize) -> candle_core::Result<Tensor> {
        let y = first_then_chunks(x, chunk, |frames, cache| self.decoder.forward(frames, cache))?;
        unpatchify(&y, self.cfg.patch_size)
    }
}

/// The reference's time loop: `call` on frame 0 alone, then on `step` frames at a time
/// (the last call may get fewer), sharing one cache; outputs concatenated in time.
fn first_then_chunks(
    x: &Tensor,
    step: usize,
    call: impl Fn(&Tensor, &mut FeatCache) -> candle_core::Result<Tensor>,
) -> candle_core::Result<Tensor> {
    let t = x.dim(2)?;
    let mut cache = FeatCache::default();
    let mut outs = vec![call(&x.narrow(2, 0, 1)?, &mut cache)?];
    let mut t0 = 1;
    while t0 < t {
        let n = step.min(t - t0);
        outs.push(call(&x.narrow(2, t0, n)?, &mut cache)?);
        t0 += n;
    }
    Tensor::cat(&outs, 2)
}

fn check_chunk(chunk: usize) -> Result<(), crate::util::error::UserError> {
    if chunk == 0 {
        return Err(crate::util::error::UserError::invalid(
            "chunk",
            "0",
            "a positive number of latent frames per call (1 = reference)",
        ));
    }
    Ok(())
}
