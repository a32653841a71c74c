//! `Encoder3d` and `Decoder3d`: the stage lists, middle and head of the reference, walked
//! from [`Config`]'s stage tables, with `vb.pp` paths equal to the checkpoint keys.
//!
//! Owns the order of layers and how one call runs through them; must not spell out widths
//! or stage tables itself (they come from the config) nor touch files.
use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use super::blocks::{AttentionBlock, CausalConv3d, FeatCache, Resample, ResidualBlock, RmsNorm};
use super::config::{Config, Stage, StageShortcut};
use super::conv::ConvImpl;

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

/// The flat `downsamples` / `upsamples` list of `stages`, keyed by [`Config::block_path`].
fn stage_layers(cfg: &Config, vb: &VarBuilder, list: &str, stages: &[Stage], imp: ConvImpl) -> Result<Vec<Layer>> {
    let mut layers = Vec::new();
    for (i, st) in stages.iter().enumerate() {
        let mut inp = st.inp;
        for j in 0..st.blocks() {
            let vb = vb.pp(cfg.block_path(list, i, j, layers.len()));
            let layer = match st.resample {
                Some(mode) if j == st.res_blocks => {
                    Layer::Resample(Resample::new(vb, st.out, st.resampled, mode, imp)?)
                }
                _ => Layer::Residual(ResidualBlock::new(vb, inp, st.out, imp)?),
            };
            layers.push(layer);
            inp = st.out;
        }
    }
    Ok(layers)
}

/// Only Wan 2.1's stages are walked so far; refuse the rest rather than build them wrong.
fn check_supported(cfg: &Config) -> Result<()> {
    if cfg.stage_shortcut != StageShortcut::None || cfg.patch_size != 1 || !cfg.upsample_halves_width {
        candle_core::bail!(
            "this model ({}) is not implemented: only the Wan 2.1 architecture is",
            cfg.summary()
        );
    }
    Ok(())
}

/// `Encoder3d`: video `[B,3,T,H,W]` -> `[B, 2*z_dim, t, H/8, W/8]` (before `conv1`).
pub struct Encoder {
    conv1: CausalConv3d,
    downsamples: Vec<Layer>,
    middle: Middle,
    head: Head,
}

impl Encoder {
    pub fn new(cfg: &Config, vb: VarBuilder, imp: ConvImpl) -> Result<Self> {
        check_supported(cfg)?;
        let c = cfg.encoder_width();
        Ok(Encoder {
            conv1: CausalConv3d::cube(vb.pp("conv1"), cfg.image_channels(), cfg.dim, 3, 1, imp)?,
            downsamples: stage_layers(cfg, &vb, "downsamples", &cfg.encoder_stages(), imp)?,
            middle: Middle::new(vb.pp("middle"), c, imp)?,
            head: Head::new(vb.pp("head"), c, 2 * cfg.z_dim, imp)?,
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
    pub fn new(cfg: &Config, vb: VarBuilder, imp: ConvImpl) -> Result<Self> {
        check_supported(cfg)?;
        let c = cfg.decoder_width();
        let stages = cfg.decoder_stages();
        let last = stages.last().map_or(c, |s| s.resampled);
        Ok(Decoder {
            conv1: CausalConv3d::cube(vb.pp("conv1"), cfg.z_dim, c, 3, 1, imp)?,
            middle: Middle::new(vb.pp("middle"), c, imp)?,
            upsamples: stage_layers(cfg, &vb, "upsamples", &stages, imp)?,
            head: Head::new(vb.pp("head"), last, cfg.image_channels(), imp)?,
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
