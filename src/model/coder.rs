//! `Encoder3d` and `Decoder3d`: the stage lists, middle and head of the reference, walked
//! from [`Config`]'s stage tables, with `vb.pp` paths equal to the checkpoint keys. Wan 2.2
//! wraps each stage in a parameter-free shortcut (`Down_ResidualBlock` /
//! `Up_ResidualBlock`); Wan 2.1 has none.
//!
//! Owns the order of layers and how one call runs through them; must not spell out widths
//! or stage tables itself (they come from the config) nor touch files.
use candle_core::{Result, Tensor};
use candle_nn::VarBuilder;

use super::blocks::{AttentionBlock, CausalConv3d, FeatCache, Resample, ResampleMode, ResidualBlock, RmsNorm};
use super::config::{Config, Stage, StageShortcut};
use super::conv::ConvImpl;
use super::fold::{AvgDown3d, DupUp3d};

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

/// The parameter-free shortcut around a Wan 2.2 stage.
enum Shortcut {
    Avg(AvgDown3d),
    Dup(DupUp3d),
}

/// One stage: its blocks in checkpoint order, and the shortcut around them (Wan 2.2).
struct StageBlocks {
    layers: Vec<Layer>,
    shortcut: Option<Shortcut>,
}

impl StageBlocks {
    fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        let mut y = x.clone();
        for layer in &self.layers {
            y = layer.forward(&y, cache)?;
        }
        match &self.shortcut {
            None => Ok(y),
            Some(Shortcut::Avg(s)) => y + s.forward(x)?,
            Some(Shortcut::Dup(s)) => y + s.forward(x, cache.first_call())?,
        }
    }
}

/// The shortcut of `st` under `cfg`: `AvgDown3D` around every encoder stage (an identity in
/// the last, which neither resamples nor widens), `DupUp3D` around the decoder stages that
/// upsample. Time factor 2 where the stage resamples time, space 2 where it resamples.
fn shortcut(cfg: &Config, st: &Stage, encoder: bool) -> Option<Shortcut> {
    use ResampleMode::*;
    if cfg.stage_shortcut == StageShortcut::None {
        return None;
    }
    let out = st.resampled;
    let factor_s = if st.resample.is_some() { 2 } else { 1 };
    let factor_t = if matches!(st.resample, Some(Upsample3d | Downsample3d)) {
        2
    } else {
        1
    };
    match (encoder, st.resample) {
        (true, _) => Some(Shortcut::Avg(AvgDown3d {
            out,
            factor_t,
            factor_s,
        })),
        (false, Some(_)) => Some(Shortcut::Dup(DupUp3d {
            out,
            factor_t,
            factor_s,
        })),
        (false, None) => None,
    }
}

/// The `downsamples` / `upsamples` list of `stages`, keyed by [`Config::block_path`].
/// The encoder's list is `downsamples`, the decoder's `upsamples`.
fn stage_blocks(
    cfg: &Config,
    vb: &VarBuilder,
    encoder: bool,
    stages: &[Stage],
    imp: ConvImpl,
) -> Result<Vec<StageBlocks>> {
    let list = if encoder { "downsamples" } else { "upsamples" };
    let mut flat = 0;
    let mut out = Vec::with_capacity(stages.len());
    for (i, st) in stages.iter().enumerate() {
        let mut inp = st.inp;
        let mut layers = Vec::with_capacity(st.blocks());
        for j in 0..st.blocks() {
            let vb = vb.pp(cfg.block_path(list, i, j, flat));
            let layer = match st.resample {
                Some(mode) if j == st.res_blocks => {
                    Layer::Resample(Resample::new(vb, st.out, st.resampled, mode, imp)?)
                }
                _ => Layer::Residual(ResidualBlock::new(vb, inp, st.out, imp)?),
            };
            layers.push(layer);
            inp = st.out;
            flat += 1;
        }
        out.push(StageBlocks {
            layers,
            shortcut: shortcut(cfg, st, encoder),
        });
    }
    Ok(out)
}

/// `Encoder3d`: video `[B, 3*p*p, T, H/p, W/p]` (patchified; `p` = 1 in Wan 2.1) ->
/// `[B, 2*z_dim, t, H/sc, W/sc]` (before `conv1`).
pub struct Encoder {
    conv1: CausalConv3d,
    downsamples: Vec<StageBlocks>,
    middle: Middle,
    head: Head,
}

impl Encoder {
    pub fn new(cfg: &Config, vb: VarBuilder, imp: ConvImpl) -> Result<Self> {
        let c = cfg.encoder_width();
        Ok(Encoder {
            conv1: CausalConv3d::cube(vb.pp("conv1"), cfg.image_channels(), cfg.dim, 3, 1, imp)?,
            downsamples: stage_blocks(cfg, &vb, true, &cfg.encoder_stages(), imp)?,
            middle: Middle::new(vb.pp("middle"), c, imp)?,
            head: Head::new(vb.pp("head"), c, 2 * cfg.z_dim, imp)?,
        })
    }

    /// One reference encoder call on a chunk of frames.
    pub fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        cache.rewind();
        let mut x = self.conv1.forward_cached(x, cache)?;
        for stage in &self.downsamples {
            x = stage.forward(&x, cache)?;
        }
        let x = self.middle.forward(&x, cache)?;
        self.head.forward(&x, cache)
    }
}

/// `Decoder3d`: `[B, z_dim, t, h, w]` (after `conv2`) -> `[B, 3*p*p, T', h*sc/p, w*sc/p]`
/// (still patchified in Wan 2.2).
pub struct Decoder {
    conv1: CausalConv3d,
    middle: Middle,
    upsamples: Vec<StageBlocks>,
    head: Head,
}

impl Decoder {
    pub fn new(cfg: &Config, vb: VarBuilder, imp: ConvImpl) -> Result<Self> {
        let c = cfg.decoder_width();
        let stages = cfg.decoder_stages();
        let last = stages.last().map_or(c, |s| s.resampled);
        Ok(Decoder {
            conv1: CausalConv3d::cube(vb.pp("conv1"), cfg.z_dim, c, 3, 1, imp)?,
            middle: Middle::new(vb.pp("middle"), c, imp)?,
            upsamples: stage_blocks(cfg, &vb, false, &stages, imp)?,
            head: Head::new(vb.pp("head"), last, cfg.image_channels(), imp)?,
        })
    }

    /// One reference decoder call on a chunk of latent frames.
    pub fn forward(&self, x: &Tensor, cache: &mut FeatCache) -> Result<Tensor> {
        cache.rewind();
        let x = self.conv1.forward_cached(x, cache)?;
        let mut x = self.middle.forward(&x, cache)?;
        for stage in &self.upsamples {
            x = stage.forward(&x, cache)?;
        }
        self.head.forward(&x, cache)
    }
}
