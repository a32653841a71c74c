//! Analytic cost of encode and decode in GFLOP (2 x multiply-adds of every convolution and
//! matmul, bias and elementwise work not counted), walking the same layers and frame
//! counts as the chunked reference computes them (`docs/wan21-vae.md` and
//! `docs/wan22-vae.md`, "Cost"): the stage tables come from [`Config`]. Wan 2.2's patchify
//! and stage shortcuts are reshapes, copies and averages: no multiply-adds, not counted.
//!
//! Must not build or run the model: the count is analytic.
use super::blocks::ResampleMode;
use super::config::Config;

/// Running total plus the current activation shape (frames, height, width).
struct Walk {
    macs: f64,
    t: usize,
    h: usize,
    w: usize,
}

impl Walk {
    /// A conv over `frames` output frames at the current spatial size.
    fn conv(&mut self, cin: usize, cout: usize, taps: usize, frames: usize) {
        self.macs += (cin * cout * taps) as f64 * (frames * self.h * self.w) as f64;
    }
    fn residual(&mut self, cin: usize, cout: usize) {
        self.conv(cin, cout, 27, self.t);
        self.conv(cout, cout, 27, self.t);
        if cin != cout {
            self.conv(cin, cout, 1, self.t);
        }
    }
    fn attention(&mut self, c: usize) {
        let l = (self.h * self.w) as f64;
        let t = self.t as f64;
        // qkv and proj projections, q k^T and attn v.
        self.macs += t * (4.0 * (c * c) as f64 * l + 2.0 * l * l * c as f64);
    }
    fn middle(&mut self, c: usize) {
        self.residual(c, c);
        self.attention(c);
        self.residual(c, c);
    }
}

/// Cost of encoding `frames` frames (trailing frames past `1+4k` are not encoded).
pub fn encode_gflop(cfg: &Config, frames: usize, width: usize, height: usize) -> f64 {
    let tc = cfg.temporal_compression();
    let t = 1 + tc * ((frames.max(1) - 1) / tc);
    let p = cfg.patch_size;
    let mut m = Walk {
        macs: 0.0,
        t,
        h: height / p,
        w: width / p,
    };
    m.conv(cfg.image_channels(), cfg.dim, 27, t);
    for st in cfg.encoder_stages() {
        m.residual(st.inp, st.out);
        for _ in 1..st.res_blocks {
            m.residual(st.out, st.out);
        }
        if let Some(mode) = st.resample {
            let c = st.out;
            // stride-2 conv2d on every frame (output at half size)
            m.h = m.h.div_ceil(2);
            m.w = m.w.div_ceil(2);
            m.conv(c, c, 9, m.t);
            if mode == ResampleMode::Downsample3d {
                // time conv (3,1,1) stride 2: skipped on the first frame, then halves the rest
                let computed = (m.t - 1) / 2;
                m.conv(c, c, 3, computed);
                m.t = 1 + computed;
            }
        }
    }
    m.middle(cfg.encoder_width());
    let z = cfg.z_dim;
    m.conv(cfg.encoder_width(), 2 * z, 27, m.t);
    m.conv(2 * z, 2 * z, 1, m.t);
    2.0 * m.macs / 1e9
}

/// Cost of decoding the latent of a `frames`-frame `width` x `height` video.
pub fn decode_gflop(cfg: &Config, frames: usize, width: usize, height: usize) -> f64 {
    let z = cfg.z_dim;
    let lt = 1 + (frames.max(1) - 1) / cfg.temporal_compression();
    let sc = cfg.spatial_compression();
    let mut m = Walk {
        macs: 0.0,
        t: lt,
        h: height / sc,
        w: width / sc,
    };
    let c = cfg.decoder_width();
    m.conv(z, z, 1, lt);
    m.conv(z, c, 27, lt);
    m.middle(c);
    let mut last = c;
    for st in cfg.decoder_stages() {
        m.residual(st.inp, st.out);
        for _ in 1..st.res_blocks {
            m.residual(st.out, st.out);
        }
        if let Some(mode) = st.resample {
            if mode == ResampleMode::Upsample3d {
                // time conv (3,1,1) C -> 2C on every frame but the first, doubling them
                let computed = m.t - 1;
                m.conv(st.out, 2 * st.out, 3, computed);
                m.t = 1 + 2 * computed;
            }
            m.h *= 2;
            m.w *= 2;
            m.conv(st.out, st.resampled, 9, m.t);
        }
        last = st.resampled;
    }
    m.conv(last, cfg.image_channels(), 27, m.t);
    2.0 * m.macs / 1e9
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
