//! `Encoder3d` and `Decoder3d`: the stage lists, middle and head of the reference, with
//! layer indices equal to the checkpoint's `downsamples.N` / `upsamples.N` keys.
use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use super::blocks::{AttentionBlock, CausalConv3d, FeatCache, Resample, ResampleMode, ResidualBlock, RmsNorm};
use super::conv::ConvImpl;
use super::VaeConfig;

/// One entry of a flat `downsamples` / `upsamples` list.
#[allow(clippy::large_enum_variant)] // a few dozen per model, built once
enum Layer {
    Residual(ResidualBlock),
    Resample(Resample),
}

impl Layer {
    fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        match self {
            Layer::Residual(r) => r.forward(x, cache),
            Layer::Resample(r) => r.forward(x, cache),
        }
    }
}

/// `middle`: residual, attention, residual at one width.
struct Middle {
    middle_0: ResidualBlock,
    middle_1: AttentionBlock,
    middle_2: ResidualBlock,
}

impl Middle {
    fn new(vb: VarBuilder, c: usize, imp: ConvImpl) -> Result<Self> {
        Ok(Middle {
            middle_0: ResidualBlock::new(vb.pp("0"), c, c, imp)?,
            middle_1: AttentionBlock::new(vb.pp("1"), c)?,
            middle_2: ResidualBlock::new(vb.pp("2"), c, c, imp)?,
        })
    }
    fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        let x = self.middle_0.forward(x, cache)?;
        let x = self.middle_1.forward(&x)?;
        self.middle_2.forward(&x, cache)
    }
}

/// `head`: RMS norm (`head.0`), SiLU, conv3x3x3 (`head.2`).
struct Head {
    head_0: RmsNorm,
    head_2: CausalConv3d,
}

impl Head {
    fn new(vb: VarBuilder, c: usize, out: usize, imp: ConvImpl) -> Result<Self> {
        Ok(Head {
            head_0: RmsNorm::new(vb.pp("0"), c, false)?,
            head_2: CausalConv3d::cube(vb.pp("2"), c, out, 3, 1, imp)?,
        })
    }
    fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        let x = self.head_0.forward_act(x, true)?;
        self.head_2.forward_cached(&x, cache)
    }
}

/// `Encoder3d`: video `[B,3,T,H,W]` -> `[B, 2*z_dim, t, H/8, W/8]` (before `conv1`).
pub struct Encoder {
    conv1: CausalConv3d,
    downsamples: Vec<Layer>,
    middle: Middle,
    head: Head,
}

impl Encoder {
    pub fn new(vb: VarBuilder, cfg: &VaeConfig, imp: ConvImpl) -> Result<Self> {
        let d = cfg.dim;
        let dims = [d, d, 2 * d, 4 * d, 4 * d];
        let temporal = [false, true, true];
        let mut downsamples = Vec::new();
        let vbd = vb.pp("downsamples");
        for stage in 0..4 {
            let (mut inp, out) = (dims[stage], dims[stage + 1]);
            for _ in 0..2 {
                downsamples.push(Layer::Residual(ResidualBlock::new(
                    vbd.pp(downsamples.len()),
                    inp,
                    out,
                    imp,
                )?));
                inp = out;
            }
            if stage < 3 {
                let mode = if temporal[stage] {
                    ResampleMode::Downsample3d
                } else {
                    ResampleMode::Downsample2d
                };
                downsamples.push(Layer::Resample(Resample::new(
                    vbd.pp(downsamples.len()),
                    out,
                    mode,
                    imp,
                )?));
            }
        }
        Ok(Encoder {
            conv1: CausalConv3d::cube(vb.pp("conv1"), 3, d, 3, 1, imp)?,
            downsamples,
            middle: Middle::new(vb.pp("middle"), 4 * d, imp)?,
            head: Head::new(vb.pp("head"), 4 * d, 2 * cfg.z_dim, imp)?,
        })
    }

    /// One reference encoder call on a chunk of frames.
    pub fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        cache.rewind();
        let mut x = self.conv1.forward_cached(x, cache)?;
        for layer in &self.downsamples {
            x = layer.forward(&x, cache)?;
        }
        let x = self.middle.forward(&x, cache)?;
        self.head.forward(&x, cache)
    }
}

/// `Decoder3d`: `[B, z_dim, t, h, w]` (after `conv2`) -> video `[B, 3, T', 8h, 8w]`.
pub struct Decoder {
    conv1: CausalConv3d,
    middle: Middle,
    upsamples: Vec<Layer>,
    head: Head,
}

impl Decoder {
    pub fn new(vb: VarBuilder, cfg: &VaeConfig, imp: ConvImpl) -> Result<Self> {
        let d = cfg.dim;
        let dims = [4 * d, 4 * d, 4 * d, 2 * d, d];
        let temporal = [true, true, false];
        let mut upsamples = Vec::new();
        let vbu = vb.pp("upsamples");
        for stage in 0..4 {
            let out = dims[stage + 1];
            // Stages after the first start from the previous upsample's halved width.
            let mut inp = if stage == 0 { dims[0] } else { dims[stage] / 2 };
            for _ in 0..3 {
                upsamples.push(Layer::Residual(ResidualBlock::new(
                    vbu.pp(upsamples.len()),
                    inp,
                    out,
                    imp,
                )?));
                inp = out;
            }
            if stage < 3 {
                let mode = if temporal[stage] {
                    ResampleMode::Upsample3d
                } else {
                    ResampleMode::Upsample2d
                };
                upsamples.push(Layer::Resample(Resample::new(vbu.pp(upsamples.len()), out, mode, imp)?));
            }
        }
        Ok(Decoder {
            conv1: CausalConv3d::cube(vb.pp("conv1"), cfg.z_dim, 4 * d, 3, 1, imp)?,
            middle: Middle::new(vb.pp("middle"), 4 * d, imp)?,
            upsamples,
            head: Head::new(vb.pp("head"), d, 3, imp)?,
        })
    }

    /// One reference decoder call on a chunk of latent frames.
    pub fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        cache.rewind();
        let x = self.conv1.forward_cached(x, cache)?;
        let mut x = self.middle.forward(&x, cache)?;
        for layer in &self.upsamples {
            x = layer.forward(&x, cache)?;
        }
        self.head.forward(&x, cache)
    }
}
