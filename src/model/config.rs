//! The architecture written once: [`Config`] holds the stage tables of a Wan VAE (widths,
//! blocks per stage, which stages resample in time, patch size, stage shortcut) and derives
//! the stage list and checkpoint key paths that the layer walk (`coder.rs`), the key layout
//! (`weights::layout`), the FLOP count (`flops.rs`) and `inspect` all read. [`ModelKind`]
//! names the two released architectures (Wan 2.1 and Wan 2.2) a config belongs to.
//!
//! It owns no tensors and must not know about files: `dim` / `z_dim` of a checkpoint are
//! inferred by `weights::layout` and written into a `Config` there.
use super::blocks::ResampleMode;

/// What wraps each encoder/decoder stage (and so how its blocks are keyed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageShortcut {
    /// Wan 2.1: nothing; every stage's blocks sit in one flat list (`downsamples.N`).
    None,
    /// Wan 2.2: a parameter-free `AvgDown3D` / `DupUp3D` shortcut around each stage, whose
    /// blocks are keyed `downsamples.i.downsamples.j` (`docs/wan22-vae.md`).
    AvgDup,
}

/// Which released Wan VAE a config is (`--model wan2.1|wan2.2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ModelKind {
    /// `Wan2.1_VAE.pth` (also the VAE of the Wan 2.2 14B models).
    #[serde(rename = "wan2.1")]
    Wan21,
    /// `Wan2.2_VAE.pth`, the VAE of Wan 2.2 TI2V-5B.
    #[serde(rename = "wan2.2")]
    Wan22,
}

impl ModelKind {
    pub const ALL: [ModelKind; 2] = [ModelKind::Wan21, ModelKind::Wan22];

    /// The `--model` spelling: `wan2.1` or `wan2.2`.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Wan21 => "wan2.1",
            ModelKind::Wan22 => "wan2.2",
        }
    }

    /// For messages: `the Wan 2.1 VAE` / `the Wan 2.2 VAE (TI2V-5B)`.
    pub fn title(self) -> &'static str {
        match self {
            ModelKind::Wan21 => "Wan 2.1 VAE",
            ModelKind::Wan22 => "Wan 2.2 VAE (TI2V-5B)",
        }
    }

    /// The real checkpoint's config.
    pub fn config(self) -> Config {
        match self {
            ModelKind::Wan21 => Config::wan21(),
            ModelKind::Wan22 => Config::wan22(),
        }
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ModelKind {
    type Err = crate::util::error::UserError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace(['_', ' '], "").as_str() {
            "wan2.1" | "wan21" => Ok(ModelKind::Wan21),
            "wan2.2" | "wan22" => Ok(ModelKind::Wan22),
            _ => Err(crate::util::error::UserError::invalid("model", s, "wan2.1 or wan2.2")),
        }
    }
}

/// Hyper-parameters of a Wan VAE, named as in the reference's `WanVAE_` constructor.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Encoder base width: stage widths are `dim * dim_mult`.
    pub dim: usize,
    /// Decoder base width (`dec_dim`; equal to `dim` in Wan 2.1).
    pub dec_dim: usize,
    /// Latent channels.
    pub z_dim: usize,
    /// Width multiplier of each stage (encoder order).
    pub dim_mult: Vec<usize>,
    /// Residual blocks per encoder stage (the decoder has one more).
    pub num_res_blocks: usize,
    /// Which encoder stages halve time, one per stage but the last (the decoder uses the
    /// reverse for upsampling). The reference's spelling is `temperal_downsample`.
    pub temporal_downsample: Vec<bool>,
    /// Pixels folded into channels per side before the encoder (and unfolded after the
    /// decoder): 1 = no patchify (Wan 2.1), 2 in Wan 2.2.
    pub patch_size: usize,
    /// Whether the upsampling conv2d halves the width (Wan 2.1) or keeps it (Wan 2.2).
    pub upsample_halves_width: bool,
    pub stage_shortcut: StageShortcut,
    /// Latent channel means and standard deviations (`z_dim` of each for the real model;
    /// test models with another `z_dim` pad with mean 0 and std 1, or truncate).
    pub latent_mean: Vec<f32>,
    pub latent_std: Vec<f32>,
}

/// One encoder or decoder stage, derived from a [`Config`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage {
    /// Width entering the stage.
    pub inp: usize,
    /// Width of its residual blocks' outputs.
    pub out: usize,
    pub res_blocks: usize,
    /// The resample after the residual blocks (none in the last stage).
    pub resample: Option<ResampleMode>,
    /// Width leaving the stage (after the resample).
    pub resampled: usize,
}

impl Stage {
    /// Blocks of this stage in the checkpoint's list: residual blocks, then the resample.
    pub fn blocks(&self) -> usize {
        self.res_blocks + usize::from(self.resample.is_some())
    }
}

/// The 16 latent channel means of Wan 2.1.
const WAN21_LATENT_MEAN: [f32; 16] = [
    -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508, 0.4134, -0.0715, 0.5517, -0.3632, -0.1922,
    -0.9497, 0.2503, -0.2921,
];
/// The 16 latent channel standard deviations of Wan 2.1.
const WAN21_LATENT_STD: [f32; 16] = [
    2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743, 3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253,
    2.8251, 1.9160,
];
/// The 48 latent channel means of Wan 2.2 (`Wan2_2_VAE.__init__`).
const WAN22_LATENT_MEAN: [f32; 48] = [
    -0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174, 0.1838, 0.1557, -0.1382, 0.0542, 0.2813, 0.0891, 0.1570,
    -0.0098, 0.0375, -0.1825, -0.2246, -0.1207, -0.0698, 0.5109, 0.2665, -0.2108, -0.2158, 0.2502, -0.2055, -0.0322,
    0.1109, 0.1567, -0.0729, 0.0899, -0.2799, -0.1230, -0.0313, -0.1649, 0.0117, 0.0723, -0.2839, -0.2083, -0.0520,
    0.3748, 0.0152, 0.1957, 0.1433, -0.2944, 0.3573, -0.0548, -0.1681, -0.0667,
];
/// The 48 latent channel standard deviations of Wan 2.2.
const WAN22_LATENT_STD: [f32; 48] = [
    0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.4990, 0.4818, 0.5013, 0.8158, 1.0344, 0.5894, 1.0901, 0.6885, 0.6165,
    0.8454, 0.4978, 0.5759, 0.3523, 0.7135, 0.6804, 0.5833, 1.4146, 0.8986, 0.5659, 0.7069, 0.5338, 0.4889, 0.4917,
    0.4069, 0.4999, 0.6866, 0.4093, 0.5709, 0.6065, 0.6415, 0.4944, 0.5726, 1.2042, 0.5458, 1.6887, 0.3971, 1.0600,
    0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744,
];

impl Config {
    /// The real Wan 2.1 VAE (`Wan2.1_VAE.pth`, `docs/wan21-vae.md`).
    pub fn wan21() -> Self {
        Config {
            dim: 96,
            dec_dim: 96,
            z_dim: 16,
            dim_mult: vec![1, 2, 4, 4],
            num_res_blocks: 2,
            temporal_downsample: vec![false, true, true],
            patch_size: 1,
            upsample_halves_width: true,
            stage_shortcut: StageShortcut::None,
            latent_mean: WAN21_LATENT_MEAN.to_vec(),
            latent_std: WAN21_LATENT_STD.to_vec(),
        }
    }

    /// Wan 2.1's architecture at another width / latent size (test checkpoints).
    pub fn wan21_sized(dim: usize, z_dim: usize) -> Self {
        Config {
            dim,
            dec_dim: dim,
            z_dim,
            ..Config::wan21()
        }
    }

    /// The real Wan 2.2 VAE (`Wan2.2_VAE.pth`, `docs/wan22-vae.md`): a 2x2 patchify, stage
    /// shortcuts, width-keeping upsamples, a 256-wide decoder and 48 latent channels.
    pub fn wan22() -> Self {
        Config {
            dim: 160,
            dec_dim: 256,
            z_dim: 48,
            dim_mult: vec![1, 2, 4, 4],
            num_res_blocks: 2,
            temporal_downsample: vec![false, true, true],
            patch_size: 2,
            upsample_halves_width: false,
            stage_shortcut: StageShortcut::AvgDup,
            latent_mean: WAN22_LATENT_MEAN.to_vec(),
            latent_std: WAN22_LATENT_STD.to_vec(),
        }
    }

    /// Wan 2.2's architecture at other widths / latent size (test checkpoints).
    pub fn wan22_sized(dim: usize, dec_dim: usize, z_dim: usize) -> Self {
        Config {
            dim,
            dec_dim,
            z_dim,
            ..Config::wan22()
        }
    }

    /// Which released architecture this is (the widths may differ from the real model's).
    pub fn kind(&self) -> ModelKind {
        match self.stage_shortcut {
            StageShortcut::None => ModelKind::Wan21,
            StageShortcut::AvgDup => ModelKind::Wan22,
        }
    }

    /// Video channels the encoder takes and the decoder gives (RGB after patchify).
    pub fn image_channels(&self) -> usize {
        3 * self.patch_size * self.patch_size
    }

    /// Pixels per latent position along height and width.
    pub fn spatial_compression(&self) -> usize {
        self.patch_size << (self.dim_mult.len() - 1)
    }

    /// Input frames per latent frame after the first.
    pub fn temporal_compression(&self) -> usize {
        1 << self.temporal_downsample.iter().filter(|&&t| t).count()
    }

    /// Width of the encoder's middle and head (its last stage).
    pub fn encoder_width(&self) -> usize {
        self.dim * self.dim_mult.last().copied().unwrap_or(1)
    }

    /// Width of the decoder's `conv1`, middle and first stage.
    pub fn decoder_width(&self) -> usize {
        self.dec_dim * self.dim_mult.last().copied().unwrap_or(1)
    }

    /// Encoder stages: widths `dim * [1, dim_mult..]` pairwise, `num_res_blocks` residual
    /// blocks each, then a `downsample3d` / `downsample2d` but after the last.
    pub fn encoder_stages(&self) -> Vec<Stage> {
        let n = self.dim_mult.len();
        let widths: Vec<usize> = std::iter::once(1)
            .chain(self.dim_mult.iter().copied())
            .map(|m| self.dim * m)
            .collect();
        (0..n)
            .map(|i| Stage {
                inp: widths[i],
                out: widths[i + 1],
                res_blocks: self.num_res_blocks,
                resample: (i + 1 < n).then(|| match self.temporal_downsample[i] {
                    true => ResampleMode::Downsample3d,
                    false => ResampleMode::Downsample2d,
                }),
                resampled: widths[i + 1],
            })
            .collect()
    }

    /// Decoder stages: widths `dec_dim * [last, reversed dim_mult..]`, `num_res_blocks + 1`
    /// residual blocks each, then an `upsample3d` / `upsample2d` (time reversed from the
    /// encoder) but after the last; each stage starts at the previous one's output width.
    pub fn decoder_stages(&self) -> Vec<Stage> {
        let n = self.dim_mult.len();
        let widths: Vec<usize> = std::iter::once(self.dim_mult[n - 1])
            .chain(self.dim_mult.iter().rev().copied())
            .map(|m| self.dec_dim * m)
            .collect();
        let mut inp = widths[0];
        let mut stages = Vec::with_capacity(n);
        for i in 0..n {
            let out = widths[i + 1];
            let resample = (i + 1 < n).then(|| match self.temporal_downsample[n - 2 - i] {
                true => ResampleMode::Upsample3d,
                false => ResampleMode::Upsample2d,
            });
            let resampled = match resample {
                Some(_) if self.upsample_halves_width => out / 2,
                _ => out,
            };
            stages.push(Stage {
                inp,
                out,
                res_blocks: self.num_res_blocks + 1,
                resample,
                resampled,
            });
            inp = resampled;
        }
        stages
    }

    /// Key path, below `encoder.` / `decoder.`, of block `j` of stage `stage` in the list
    /// `list` (`downsamples` or `upsamples`); `flat` is its index in the whole list.
    /// Wan 2.1: `downsamples.{flat}`; Wan 2.2: `downsamples.{stage}.downsamples.{j}`.
    pub fn block_path(&self, list: &str, stage: usize, j: usize, flat: usize) -> String {
        match self.stage_shortcut {
            StageShortcut::None => format!("{list}.{flat}"),
            StageShortcut::AvgDup => format!("{list}.{stage}.{list}.{j}"),
        }
    }

    /// Frames the reference encodes out of `frames`: `1 + tc*((frames-1)/tc)` with `tc` the
    /// temporal compression (frames past the last full group are ignored); zero is an error.
    pub fn frames_used(&self, frames: usize) -> Result<usize, crate::util::error::UserError> {
        let tc = self.temporal_compression();
        if frames == 0 {
            return Err(crate::util::error::UserError::invalid(
                "frames",
                "0",
                format!("at least 1 frame (1+{tc}k frames, e.g. 1, 5, 9, 21, 81)"),
            ));
        }
        Ok(1 + tc * ((frames - 1) / tc))
    }

    /// Height and width must be positive multiples of the spatial compression (8 for Wan
    /// 2.1, 16 for Wan 2.2); the error names the model and the nearest valid sizes.
    pub fn check_size(&self, width: usize, height: usize) -> Result<(), crate::util::error::UserError> {
        let sc = self.spatial_compression();
        for (what, v) in [("width", width), ("height", height)] {
            if v == 0 || !v.is_multiple_of(sc) {
                let lo = v / sc * sc;
                let hi = lo + sc;
                let nearest = if lo == 0 {
                    format!("{hi}")
                } else {
                    format!("{lo} or {hi}")
                };
                return Err(crate::util::error::UserError::invalid(
                    what,
                    v.to_string(),
                    format!(
                        "a multiple of {sc} for the {} (nearest valid: {nearest})",
                        self.kind().title()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Tiles and overlaps must be multiples of the spatial compression (tiles are cut in
    /// latent positions); the error names the model and the nearest valid values.
    pub fn check_tiling(&self, t: &super::Tiling) -> Result<(), crate::util::error::UserError> {
        let sc = self.spatial_compression();
        if t.tile_px.is_multiple_of(sc) && t.overlap_px.is_multiple_of(sc) {
            return Ok(());
        }
        let round = |v: usize| (v / sc * sc).max(sc);
        let tile = round(t.tile_px);
        let overlap = (t.overlap_px / sc * sc).min(tile - sc);
        Err(crate::util::error::UserError::invalid(
            "tile",
            format!("{}:{}", t.tile_px, t.overlap_px),
            format!(
                "TILE_PX:OVERLAP_PX both multiples of {sc} for the {} (nearest valid: {tile}:{overlap})",
                self.kind().title()
            ),
        ))
    }

    /// One line in the reference's terms, for `inspect`.
    pub fn summary(&self) -> String {
        let list = |v: &[String]| format!("[{}]", v.join(","));
        let mult: Vec<String> = self.dim_mult.iter().map(|m| m.to_string()).collect();
        let temporal: Vec<String> = self.temporal_downsample.iter().map(|t| t.to_string()).collect();
        let mut s = format!("dim={}", self.dim);
        if self.dec_dim != self.dim {
            s += &format!(" dec_dim={}", self.dec_dim);
        }
        s += &format!(
            " z_dim={} dim_mult={} num_res_blocks={} temperal_downsample={}",
            self.z_dim,
            list(&mult),
            self.num_res_blocks,
            list(&temporal)
        );
        if self.patch_size != 1 {
            s += &format!(" patch_size={}", self.patch_size);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResampleMode::*;

    #[test]
    fn wan21_stages_are_the_reference_tables() {
        let c = Config::wan21_sized(8, 4);
        let enc: Vec<_> = c
            .encoder_stages()
            .iter()
            .map(|s| (s.inp, s.out, s.res_blocks, s.resample))
            .collect();
        assert_eq!(
            enc,
            [
                (8, 8, 2, Some(Downsample2d)),
                (8, 16, 2, Some(Downsample3d)),
                (16, 32, 2, Some(Downsample3d)),
                (32, 32, 2, None)
            ]
        );
        // docs/wan21-vae.md: stage 1 starts at 2dim (the upsample halves 4dim), and so on.
        let dec: Vec<_> = c
            .decoder_stages()
            .iter()
            .map(|s| (s.inp, s.out, s.res_blocks, s.resample, s.resampled))
            .collect();
        assert_eq!(
            dec,
            [
                (32, 32, 3, Some(Upsample3d), 16),
                (16, 32, 3, Some(Upsample3d), 16),
                (16, 16, 3, Some(Upsample2d), 8),
                (8, 8, 3, None, 8)
            ]
        );
        assert_eq!((c.spatial_compression(), c.temporal_compression()), (8, 4));
        assert_eq!(c.image_channels(), 3);
    }

    #[test]
    fn wan22_stages_are_the_reference_tables() {
        let c = Config::wan22();
        let enc: Vec<_> = c
            .encoder_stages()
            .iter()
            .map(|s| (s.inp, s.out, s.res_blocks, s.resample))
            .collect();
        assert_eq!(
            enc,
            [
                (160, 160, 2, Some(Downsample2d)),
                (160, 320, 2, Some(Downsample3d)),
                (320, 640, 2, Some(Downsample3d)),
                (640, 640, 2, None)
            ]
        );
        // docs/wan22-vae.md: decoder widths 1024, 1024, 1024, 512, 256; upsamples keep width.
        let dec: Vec<_> = c
            .decoder_stages()
            .iter()
            .map(|s| (s.inp, s.out, s.res_blocks, s.resample, s.resampled))
            .collect();
        assert_eq!(
            dec,
            [
                (1024, 1024, 3, Some(Upsample3d), 1024),
                (1024, 1024, 3, Some(Upsample3d), 1024),
                (1024, 512, 3, Some(Upsample2d), 512),
                (512, 256, 3, None, 256)
            ]
        );
        assert_eq!((c.spatial_compression(), c.temporal_compression()), (16, 4));
        assert_eq!((c.image_channels(), c.kind()), (12, ModelKind::Wan22));
        assert_eq!(c.latent_mean.len(), 48);
        assert_eq!(c.block_path("upsamples", 2, 3, 99), "upsamples.2.upsamples.3");
    }

    #[test]
    fn size_and_tile_rules_name_the_model_and_the_nearest_valid_value() {
        use super::super::Tiling;
        let (a, b) = (Config::wan21(), Config::wan22());
        assert!(a.check_size(40, 24).is_ok());
        let err = b.check_size(40, 32).unwrap_err().to_string();
        assert!(
            err.contains("multiple of 16 for the Wan 2.2 VAE") && err.contains("32 or 48"),
            "{err}"
        );
        let err = a.check_size(64, 4).unwrap_err().to_string();
        assert!(
            err.contains("height") && err.contains("Wan 2.1 VAE") && err.contains("valid: 8)"),
            "{err}"
        );
        let t = Tiling::new(200, 56).unwrap();
        assert!(a.check_tiling(&t).is_ok());
        let err = b.check_tiling(&t).unwrap_err().to_string();
        assert!(err.contains("multiples of 16") && err.contains("192:48"), "{err}");
        assert_eq!(b.frames_used(7).unwrap(), 5);
        assert!(b.frames_used(0).is_err());
        assert_eq!("WAN2.2".parse::<ModelKind>().unwrap(), ModelKind::Wan22);
        assert!("wan3"
            .parse::<ModelKind>()
            .unwrap_err()
            .to_string()
            .contains("wan2.1 or wan2.2"));
    }

    #[test]
    fn summary_names_the_reference_arguments() {
        assert_eq!(
            Config::wan21().summary(),
            "dim=96 z_dim=16 dim_mult=[1,2,4,4] num_res_blocks=2 temperal_downsample=[false,true,true]"
        );
    }
}
