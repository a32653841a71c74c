//! Analytic cost of encode and decode in GFLOP (2 x multiply-adds of every convolution and
//! matmul, bias and elementwise work not counted), walking the same layers and frame
//! counts as the chunked reference computes them.
use super::VaeConfig;

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
pub fn encode_gflop(cfg: &VaeConfig, frames: usize, width: usize, height: usize) -> f64 {
    let (d, z) = (cfg.dim, cfg.z_dim);
    let t = 1 + 4 * ((frames.max(1) - 1) / 4);
    let k = (t - 1) / 4;
    let mut m = Walk {
        macs: 0.0,
        t,
        h: height,
        w: width,
    };
    m.conv(3, d, 27, t);
    let dims = [d, d, 2 * d, 4 * d, 4 * d];
    for stage in 0..4 {
        m.residual(dims[stage], dims[stage + 1]);
        m.residual(dims[stage + 1], dims[stage + 1]);
        if stage < 3 {
            let c = dims[stage + 1];
            // stride-2 conv2d on every frame (output at half size)
            m.h = m.h.div_ceil(2);
            m.w = m.w.div_ceil(2);
            m.conv(c, c, 9, m.t);
            if stage > 0 {
                // time conv (3,1,1) stride 2: skipped on the first frame; 4k -> 2k -> k
                let computed = if stage == 1 { 2 * k } else { k };
                m.conv(c, c, 3, computed);
                m.t = 1 + computed;
            }
        }
    }
    m.middle(4 * d);
    m.conv(4 * d, 2 * z, 27, m.t);
    m.conv(2 * z, 2 * z, 1, m.t);
    2.0 * m.macs / 1e9
}

/// Cost of decoding the latent of a `frames`-frame `width` x `height` video.
pub fn decode_gflop(cfg: &VaeConfig, frames: usize, width: usize, height: usize) -> f64 {
    let (d, z) = (cfg.dim, cfg.z_dim);
    let lt = 1 + (frames.max(1) - 1) / 4;
    let mut m = Walk {
        macs: 0.0,
        t: lt,
        h: height / 8,
        w: width / 8,
    };
    m.conv(z, z, 1, lt);
    m.conv(z, 4 * d, 27, lt);
    m.middle(4 * d);
    let dims = [4 * d, 4 * d, 4 * d, 2 * d, d];
    for stage in 0..4 {
        let out = dims[stage + 1];
        let inp = if stage == 0 { dims[0] } else { dims[stage] / 2 };
        m.residual(inp, out);
        m.residual(out, out);
        m.residual(out, out);
        if stage < 3 {
            if stage < 2 {
                // time conv (3,1,1) C -> 2C on every frame but the first, doubling them
                let computed = m.t - 1;
                m.conv(out, 2 * out, 3, computed);
                m.t = 1 + 2 * computed;
            }
            m.h *= 2;
            m.w *= 2;
            m.conv(out, out / 2, 9, m.t);
        }
    }
    m.conv(d, 3, 27, m.t);
    2.0 * m.macs / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::layout::REAL_CONFIG;

    #[test]
    fn matches_the_costs_in_wan_vae_md() {
        // WAN_VAE.md: 5 frames at 64x64 cost 109.25 GFLOP to encode, 182.40 to decode.
        let e = encode_gflop(&REAL_CONFIG, 5, 64, 64);
        let d = decode_gflop(&REAL_CONFIG, 5, 64, 64);
        assert!((e - 109.25).abs() < 0.01, "encode {e}");
        assert!((d - 182.40).abs() < 0.01, "decode {d}");
    }
}
