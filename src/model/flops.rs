//! Analytic cost of encode and decode in GFLOP (2 x multiply-adds of every convolution and
//! matmul, bias and elementwise work not counted), walking the same layers and frame
//! counts as the chunked reference computes them (`docs/wan21-vae.md` and
//! `docs/wan22-vae.md`, "Cost"): the stage tables come from [`Config`]. Wan 2.2's patchify
//! and stage shortcuts are reshapes, copies and averages: no multiply-adds, not counted.
//!
//! Must not build or run the model: the count is analytic.
use super::blocks::ResampleMode;
use super::config::Config;

/// Running per-layer list plus the current activation shape (frames, height, width).
struct Walk {
    /// `(layer, multiply-adds)` in visiting order, one entry per conv or attention call site.
    layers: Vec<(String, f64)>,
    t: usize,
    h: usize,
    w: usize,
}

impl Walk {
    /// A conv named `layer` over `frames` output frames at the current spatial size.
    fn conv(&mut self, layer: String, cin: usize, cout: usize, taps: usize, frames: usize) {
        let macs = (cin * cout * taps) as f64 * (frames * self.h * self.w) as f64;
        self.layers.push((layer, macs));
    }
    /// A residual block at checkpoint path `p` (`p.residual.2`, `p.residual.6`, `p.shortcut`).
    fn residual(&mut self, p: &str, cin: usize, cout: usize) {
        self.conv(format!("{p}.residual.2"), cin, cout, 27, self.t);
        self.conv(format!("{p}.residual.6"), cout, cout, 27, self.t);
        if cin != cout {
            self.conv(format!("{p}.shortcut"), cin, cout, 1, self.t);
        }
    }
    /// An attention block at `p`: one layer (its norm, projections and product together).
    fn attention(&mut self, p: &str, c: usize) {
        let l = (self.h * self.w) as f64;
        let t = self.t as f64;
        // qkv and proj projections, q k^T and attn v.
        let macs = t * (4.0 * (c * c) as f64 * l + 2.0 * l * l * c as f64);
        self.layers.push((p.to_string(), macs));
    }
    fn middle(&mut self, p: &str, c: usize) {
        self.residual(&format!("{p}.0"), c, c);
        self.attention(&format!("{p}.1"), c);
        self.residual(&format!("{p}.2"), c, c);
    }
    /// GFLOP per layer (2 x multiply-adds), summed per name, in first-visit order.
    fn finish(self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = Vec::new();
        for (name, macs) in self.layers {
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some(e) => e.1 += 2.0 * macs / 1e9,
                None => out.push((name, 2.0 * macs / 1e9)),
            }
        }
        out
    }
}

/// Cost of encoding `frames` frames (trailing frames past `1+4k` are not encoded).
pub fn encode_gflop(cfg: &Config, frames: usize, width: usize, height: usize) -> f64 {
    encode_layers(cfg, frames, width, height).iter().map(|(_, g)| g).sum()
}

/// [`encode_gflop`] per layer: `(checkpoint key path, GFLOP)`, e.g.
/// `("encoder.downsamples.0.residual.2", 1.2)`; an attention block is one layer
/// (`encoder.middle.1`). Norms and parameter-free layers cost nothing here and are absent.
pub fn encode_layers(cfg: &Config, frames: usize, width: usize, height: usize) -> Vec<(String, f64)> {
    let tc = cfg.temporal_compression();
    let t = 1 + tc * ((frames.max(1) - 1) / tc);
    let p = cfg.patch_size;
    let mut m = Walk {
        layers: Vec::new(),
        t,
        h: height / p,
        w: width / p,
    };
    m.conv("encoder.conv1".into(), cfg.image_channels(), cfg.dim, 27, t);
    let mut flat = 0;
    for (i, st) in cfg.encoder_stages().iter().enumerate() {
        let mut inp = st.inp;
        for j in 0..st.res_blocks {
            let path = format!("encoder.{}", cfg.block_path("downsamples", i, j, flat));
            m.residual(&path, inp, st.out);
            inp = st.out;
            flat += 1;
        }
        if let Some(mode) = st.resample {
            let path = format!("encoder.{}", cfg.block_path("downsamples", i, st.res_blocks, flat));
            flat += 1;
            let c = st.out;
            // stride-2 conv2d on every frame (output at half size)
            m.h = m.h.div_ceil(2);
            m.w = m.w.div_ceil(2);
            m.conv(format!("{path}.resample.1"), c, c, 9, m.t);
            if mode == ResampleMode::Downsample3d {
                // time conv (3,1,1) stride 2: skipped on the first frame, then halves the rest
                let computed = (m.t - 1) / 2;
                m.conv(format!("{path}.time_conv"), c, c, 3, computed);
                m.t = 1 + computed;
            }
        }
    }
    m.middle("encoder.middle", cfg.encoder_width());
    let z = cfg.z_dim;
    let t = m.t;
    m.conv("encoder.head.2".into(), cfg.encoder_width(), 2 * z, 27, t);
    m.conv("conv1".into(), 2 * z, 2 * z, 1, t);
    m.finish()
}

/// Cost of decoding the latent of a `frames`-frame `width` x `height` video.
pub fn decode_gflop(cfg: &Config, frames: usize, width: usize, height: usize) -> f64 {
    decode_layers(cfg, frames, width, height).iter().map(|(_, g)| g).sum()
}

/// `(encode, decode)` GFLOP of the passes a case runs (0 for a pass it does not run).
pub fn passes_gflop(
    cfg: &Config,
    encodes: bool,
    decodes: bool,
    frames: usize,
    width: usize,
    height: usize,
) -> (f64, f64) {
    let e = if encodes {
        encode_gflop(cfg, frames, width, height)
    } else {
        0.0
    };
    let d = if decodes {
        decode_gflop(cfg, frames, width, height)
    } else {
        0.0
    };
    (e, d)
}

/// [`passes_gflop`] as the model computes a tiled case (issue 67): every spatial tile is
/// encoded or decoded whole, its overlap with its neighbours included, on the grid
/// [`super::tiling`] cuts (origins every `tile - overlap` up to the edge, the last tiles cut
/// short; spatial tiling acts only where the clip is larger than a tile), and every temporal
/// tile ([`super::temporal_tiling::tile_spans`]) decodes its latent frames, `conv2`
/// included, as the candle worker calls the decode per tile. Untiled, it is
/// [`passes_gflop`]. The engines that tile as diffusers does (candle, torch, diffusers)
/// compute this grid; ComfyUI's own tiled nodes cut theirs.
#[allow(clippy::too_many_arguments)]
pub fn computed_gflop(
    cfg: &Config,
    encodes: bool,
    decodes: bool,
    frames: usize,
    width: usize,
    height: usize,
    tiling: Option<super::Tiling>,
    temporal: Option<super::temporal_tiling::TemporalTiling>,
) -> (f64, f64) {
    let (plain_e, plain_d) = passes_gflop(cfg, encodes, decodes, frames, width, height);
    let sc = cfg.spatial_compression();
    let e = match tiling {
        Some(tl) if encodes && (height > tl.tile_px || width > tl.tile_px) => grid(height, tl.tile_px, tl.stride_px())
            .into_iter()
            .flat_map(|th| {
                grid(width, tl.tile_px, tl.stride_px())
                    .into_iter()
                    .map(move |tw| (th, tw))
            })
            .map(|(th, tw)| encode_gflop(cfg, frames, tw, th))
            .sum(),
        _ => plain_e,
    };
    if !decodes {
        return (e, plain_d);
    }
    let tc = cfg.temporal_compression();
    let latent_t = 1 + (frames.max(1) - 1) / tc;
    let spans = match temporal {
        Some(tt) => {
            let (tile, overlap) = tt.latent_frames(tc);
            super::temporal_tiling::tile_spans(latent_t, tile, overlap)
        }
        None => vec![(0, latent_t)],
    };
    let conv2 = |f: usize, w: usize, h: usize| -> f64 {
        decode_layers(cfg, f, w, h)
            .into_iter()
            .find(|(n, _)| n == "conv2")
            .map_or(0.0, |(_, g)| g)
    };
    let mut d = 0.0;
    for (_, n) in spans {
        let video_frames = 1 + tc * (n - 1);
        d += match tiling {
            Some(tl) if height > tl.tile_px || width > tl.tile_px => {
                // The latent is cut in latent units; each tile decodes (without conv2, which
                // ran once on the whole latent) to `sc` pixels per position.
                let (lh, lw, t, st) = (height / sc, width / sc, tl.tile_px / sc, tl.stride_px() / sc);
                let tiles: f64 = grid(lh, t, st)
                    .into_iter()
                    .flat_map(|th| grid(lw, t, st).into_iter().map(move |tw| (th, tw)))
                    .map(|(th, tw)| {
                        decode_gflop(cfg, video_frames, sc * tw, sc * th) - conv2(video_frames, sc * tw, sc * th)
                    })
                    .sum();
                conv2(video_frames, width, height) + tiles
            }
            _ => decode_gflop(cfg, video_frames, width, height),
        };
    }
    (e, d)
}

/// The lengths of the tiles [`super::tiling`]'s grid cuts along a dimension of `len`:
/// origins `0, stride, ...` below `len`, each `min(tile, len - origin)` long.
fn grid(len: usize, tile: usize, stride: usize) -> Vec<usize> {
    (0..len).step_by(stride.max(1)).map(|o| tile.min(len - o)).collect()
}

/// [`decode_gflop`] per layer, as [`encode_layers`] (`conv2`, `decoder.conv1`,
/// `decoder.upsamples.N...`, `decoder.head.2`).
pub fn decode_layers(cfg: &Config, frames: usize, width: usize, height: usize) -> Vec<(String, f64)> {
    let z = cfg.z_dim;
    let lt = 1 + (frames.max(1) - 1) / cfg.temporal_compression();
    let sc = cfg.spatial_compression();
    let mut m = Walk {
        layers: Vec::new(),
        t: lt,
        h: height / sc,
        w: width / sc,
    };
    let c = cfg.decoder_width();
    m.conv("conv2".into(), z, z, 1, lt);
    m.conv("decoder.conv1".into(), z, c, 27, lt);
    m.middle("decoder.middle", c);
    let mut last = c;
    let mut flat = 0;
    for (i, st) in cfg.decoder_stages().iter().enumerate() {
        let mut inp = st.inp;
        for j in 0..st.res_blocks {
            let path = format!("decoder.{}", cfg.block_path("upsamples", i, j, flat));
            m.residual(&path, inp, st.out);
            inp = st.out;
            flat += 1;
        }
        if let Some(mode) = st.resample {
            let path = format!("decoder.{}", cfg.block_path("upsamples", i, st.res_blocks, flat));
            flat += 1;
            if mode == ResampleMode::Upsample3d {
                // time conv (3,1,1) C -> 2C on every frame but the first, doubling them
                let computed = m.t - 1;
                m.conv(format!("{path}.time_conv"), st.out, 2 * st.out, 3, computed);
                m.t = 1 + 2 * computed;
            }
            m.h *= 2;
            m.w *= 2;
            let t = m.t;
            m.conv(format!("{path}.resample.1"), st.out, st.resampled, 9, t);
        }
        last = st.resampled;
    }
    let t = m.t;
    m.conv("decoder.head.2".into(), last, cfg.image_channels(), 27, t);
    m.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_costs_in_the_wan21_doc() {
        // docs/wan21-vae.md: 5 frames at 64x64 cost 109.25 GFLOP to encode, 182.40 to decode.
        let e = encode_gflop(&Config::wan21(), 5, 64, 64);
        let d = decode_gflop(&Config::wan21(), 5, 64, 64);
        assert!((e - 109.25).abs() < 0.01, "encode {e}");
        assert!((d - 182.40).abs() < 0.01, "decode {d}");
    }

    #[test]
    fn every_layer_is_a_checkpoint_key_path() {
        // Each named layer owns weights in the checkpoint (`<layer>.weight`, or the
        // attention block's `<layer>.to_qkv.weight`), so a profile joins by these names.
        for cfg in [Config::wan21(), Config::wan22()] {
            let keys: std::collections::BTreeSet<String> = crate::weights::layout::expected_tensors(&cfg)
                .into_iter()
                .map(|t| t.name)
                .collect();
            let layers = [encode_layers(&cfg, 5, 64, 64), decode_layers(&cfg, 5, 64, 64)].concat();
            assert!(layers.len() > 20);
            for (name, gflop) in layers {
                assert!(gflop > 0.0, "{name}");
                let owned = [format!("{name}.weight"), format!("{name}.to_qkv.weight")];
                assert!(
                    owned.iter().any(|k| keys.contains(k)),
                    "{name} is not a checkpoint layer"
                );
            }
        }
    }

    /// Issue 67: a tiled case costs its tiles, overlap included, counted on the grid the
    /// model code cuts (64x64 with 32:16 tiles: 4x4 tiles), and a tiling the clip fits in
    /// costs nothing more.
    #[test]
    fn tiles_cost_their_overlap() {
        let c = Config::wan21();
        let tl = |t, o| {
            Some(crate::model::Tiling {
                tile_px: t,
                overlap_px: o,
            })
        };
        let (e0, d0) = computed_gflop(&c, true, true, 5, 64, 64, None, None);
        assert_eq!((e0, d0), passes_gflop(&c, true, true, 5, 64, 64));
        assert_eq!(computed_gflop(&c, true, true, 5, 64, 64, tl(64, 16), None), (e0, d0));
        // Encode: pixel origins 0, 16, 32, 48 (stride 16): tiles of 32, 32, 32, 16 px.
        let (e, d) = computed_gflop(&c, true, true, 5, 64, 64, tl(32, 16), None);
        let sides = [32, 32, 32, 16];
        let want: f64 = sides
            .iter()
            .flat_map(|h| sides.iter().map(|w| encode_gflop(&c, 5, *w, *h)).collect::<Vec<_>>())
            .sum();
        assert!((e - want).abs() < 1e-9, "{e} {want}");
        assert!(e > 1.5 * e0, "the overlap is recomputed: {e} vs {e0}");
        // Decode: latent 8x8, tile 4, stride 2: origins 0, 2, 4, 6 -> 4, 4, 4, 2 positions.
        assert!(d > 1.5 * d0, "{d} vs {d0}");
        // Decode-only costs no encode; temporal tiles of 17 frames (5 latent) at 8:4
        // (2 latent frames, overlap 1): spans (0,2) (1,2) (2,2) (3,2): 4 decodes of 5 frames.
        let tt = crate::model::temporal_tiling::TemporalTiling::new(8, 4).ok();
        let (e, d) = computed_gflop(&c, false, true, 17, 64, 64, None, tt);
        assert_eq!(e, 0.0);
        assert!((d - 4.0 * decode_gflop(&c, 5, 64, 64)).abs() < 1e-9, "{d}");
    }

    #[test]
    fn matches_the_costs_in_the_wan22_doc() {
        // docs/wan22-vae.md: 5 frames at 64x64: encode 76.22, decode 394.66 GFLOP;
        // 1 frame: 19.02 and 93.29.
        let c = Config::wan22();
        for (frames, enc, dec) in [(5, 76.22, 394.66), (1, 19.02, 93.29)] {
            let e = encode_gflop(&c, frames, 64, 64);
            let d = decode_gflop(&c, frames, 64, 64);
            assert!((e - enc).abs() < 0.01, "{frames} frames: encode {e}, reference {enc}");
            assert!((d - dec).abs() < 0.01, "{frames} frames: decode {d}, reference {dec}");
        }
    }
}
