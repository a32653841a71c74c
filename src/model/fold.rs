//! Wan 2.2's parameter-free folds between space/time and channels, as `vae2_2.py` computes
//! them: `patchify` / `unpatchify` (2x2 pixels <-> 12 channels around the whole model) and
//! the stage shortcuts `AvgDown3D` (encoder) and `DupUp3D` (decoder).
//!
//! Owns these reshapes; has no weights and must not know where a fold sits in the model
//! (`coder.rs`, `vae.rs`).
use candle_core::{DType, Result, Tensor};

/// Wan 2.2's `AvgDown3D(in, out, factor_t, factor_s)`: zero-pad time in front to a multiple
/// of `factor_t`, fold `factor_t x factor_s x factor_s` into channels in the order
/// `(C, ft, fs_h, fs_w)`, then average groups of `in*factor/out` consecutive channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AvgDown3d {
    pub out: usize,
    pub factor_t: usize,
    pub factor_s: usize,
}

impl AvgDown3d {
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, c, t, h, w) = x.dims5()?;
        let (ft, fs) = (self.factor_t, self.factor_s);
        let factor = ft * fs * fs;
        if factor == 1 && c == self.out {
            return Ok(x.clone());
        }
        let pad_t = (ft - t % ft) % ft;
        let x = if pad_t > 0 {
            Tensor::cat(&[&Tensor::zeros((b, c, pad_t, h, w), x.dtype(), x.device())?, x], 2)?
        } else {
            x.clone()
        };
        let t = t + pad_t;
        if !h.is_multiple_of(fs) || !w.is_multiple_of(fs) || !(c * factor).is_multiple_of(self.out) {
            candle_core::bail!(
                "AvgDown3D: {c}x{t}x{h}x{w} does not fold by {ft}x{fs}x{fs} into {} channels",
                self.out
            );
        }
        let (to, ho, wo) = (t / ft, h / fs, w / fs);
        let group = c * factor / self.out;
        // [b, c, to, ft, ho, fs, wo, fs] -> [b, c, ft, fs, fs, to, ho, wo]
        let y = x
            .reshape(vec![b, c, to, ft, ho, fs, wo, fs])?
            .permute(vec![0, 1, 3, 5, 7, 2, 4, 6])?
            .reshape(vec![b, self.out, group, to, ho, wo])?;
        // Averaged in f32 so that 16-bit models do not lose the low bits of the sum.
        y.to_dtype(DType::F32)?.mean(2)?.to_dtype(x.dtype())
    }
}

/// Wan 2.2's `DupUp3D(in, out, factor_t, factor_s)`: repeat each channel `out*factor/in`
/// times, unfold `(out, ft, fs, fs)` into time and space; on the first decoder call drop
/// the first `factor_t - 1` frames (the reference's `first_chunk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DupUp3d {
    pub out: usize,
    pub factor_t: usize,
    pub factor_s: usize,
}

impl DupUp3d {
    pub fn forward(&self, x: &Tensor, first_chunk: bool) -> Result<Tensor> {
        let (b, c, t, h, w) = x.dims5()?;
        let (ft, fs) = (self.factor_t, self.factor_s);
        let factor = ft * fs * fs;
        if !(self.out * factor).is_multiple_of(c) {
            candle_core::bail!("DupUp3D: {c} channels do not repeat into {} x {factor}", self.out);
        }
        let repeats = self.out * factor / c;
        // repeat_interleave on channels: [b, c, 1, t, h, w] -> [b, c, repeats, t, h, w]
        let y = x
            .reshape(vec![b, c, 1, t, h, w])?
            .broadcast_as(vec![b, c, repeats, t, h, w])?
            .reshape(vec![b, self.out, ft, fs, fs, t, h, w])?
            // -> [b, out, t, ft, h, fs, w, fs]
            .permute(vec![0, 1, 5, 2, 6, 3, 7, 4])?
            .reshape((b, self.out, t * ft, h * fs, w * fs))?;
        if first_chunk && ft > 1 {
            return y.narrow(2, ft - 1, t * ft - (ft - 1));
        }
        Ok(y)
    }
}

/// Wan 2.2's `patchify`: `b c f (h q) (w r) -> b (c r q) f h w` (channel `c*p*p + r*p + q`,
/// `q` the row offset, `r` the column offset).
pub fn patchify(x: &Tensor, p: usize) -> Result<Tensor> {
    if p == 1 {
        return Ok(x.clone());
    }
    let (b, c, f, h, w) = x.dims5()?;
    x.reshape(vec![b, c, f, h / p, p, w / p, p])?
        .permute(vec![0, 1, 6, 4, 2, 3, 5])?
        .reshape((b, c * p * p, f, h / p, w / p))
}

/// The inverse of [`patchify`]: `b (c r q) f h w -> b c f (h q) (w r)`.
pub fn unpatchify(x: &Tensor, p: usize) -> Result<Tensor> {
    if p == 1 {
        return Ok(x.clone());
    }
    let (b, cpp, f, h, w) = x.dims5()?;
    let c = cpp / (p * p);
    // [b, c, r, q, f, h, w] -> [b, c, f, h, q, w, r]
    x.reshape(vec![b, c, p, p, f, h, w])?
        .permute(vec![0, 1, 4, 5, 3, 6, 2])?
        .reshape((b, c, f, h * p, w * p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn ramp(dims: (usize, usize, usize, usize, usize)) -> Tensor {
        let n = dims.0 * dims.1 * dims.2 * dims.3 * dims.4;
        Tensor::arange(0f32, n as f32, &Device::Cpu)
            .unwrap()
            .reshape(dims)
            .unwrap()
    }

    fn at(t: &Tensor, i: [usize; 5]) -> f32 {
        let mut x = t.clone();
        for (d, &k) in i.iter().enumerate() {
            x = x.narrow(d, k, 1).unwrap();
        }
        x.flatten_all().unwrap().to_vec1::<f32>().unwrap()[0]
    }

    #[test]
    fn patchify_orders_channels_as_the_reference_and_inverts() {
        let x = ramp((1, 3, 2, 4, 6));
        let p = patchify(&x, 2).unwrap();
        assert_eq!(p.dims(), &[1, 12, 2, 2, 3]);
        // channel c*4 + r*2 + q holds pixel (2h + q, 2w + r) of colour c.
        for (c, q, r, f, h, w) in [
            (0, 0, 0, 0, 0, 0),
            (1, 1, 0, 1, 1, 2),
            (2, 0, 1, 0, 1, 1),
            (2, 1, 1, 1, 0, 2),
        ] {
            assert_eq!(
                at(&p, [0, c * 4 + r * 2 + q, f, h, w]),
                at(&x, [0, c, f, 2 * h + q, 2 * w + r])
            );
        }
        let back = unpatchify(&p, 2).unwrap();
        let same = (back - &x)
            .unwrap()
            .abs()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert_eq!(same, 0.0);
    }

    #[test]
    fn avg_down_averages_the_folded_groups() {
        // 2 -> 4 channels, time and space halved: output o = channel o/2, time offset o%2,
        // averaged over the 2x2 pixels.
        let x = ramp((1, 2, 4, 2, 2));
        let y = AvgDown3d {
            out: 4,
            factor_t: 2,
            factor_s: 2,
        }
        .forward(&x)
        .unwrap();
        assert_eq!(y.dims(), &[1, 4, 2, 1, 1]);
        let mean = |c: usize, t: usize| (0..4).map(|k| at(&x, [0, c, t, k / 2, k % 2])).sum::<f32>() / 4.0;
        for o in 0..4 {
            for t in 0..2 {
                assert_eq!(at(&y, [0, o, t, 0, 0]), mean(o / 2, 2 * t + o % 2), "o {o} t {t}");
            }
        }
        // One frame is padded in front with zeros to a pair.
        let y1 = AvgDown3d {
            out: 4,
            factor_t: 2,
            factor_s: 2,
        }
        .forward(&x.narrow(2, 0, 1).unwrap())
        .unwrap();
        assert_eq!((at(&y1, [0, 0, 0, 0, 0]), at(&y1, [0, 1, 0, 0, 0])), (0.0, mean(0, 0)));
    }

    #[test]
    fn dup_up_repeats_and_unfolds_and_drops_on_the_first_chunk() {
        let x = ramp((1, 4, 2, 1, 1));
        // 4 -> 2 channels, space doubled: repeats 2; output o at row b holds channel 2o + b.
        let y = DupUp3d {
            out: 2,
            factor_t: 1,
            factor_s: 2,
        }
        .forward(&x, false)
        .unwrap();
        assert_eq!(y.dims(), &[1, 2, 2, 2, 2]);
        for (o, b, d) in [(0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 0)] {
            assert_eq!(at(&y, [0, o, 1, b, d]), at(&x, [0, 2 * o + b, 1, 0, 0]));
        }
        // Same width, time and space doubled: nearest-neighbour; the first chunk drops a frame.
        let up = DupUp3d {
            out: 4,
            factor_t: 2,
            factor_s: 2,
        };
        assert_eq!(up.forward(&x, false).unwrap().dims(), &[1, 4, 4, 2, 2]);
        let first = up.forward(&x, true).unwrap();
        assert_eq!(first.dims(), &[1, 4, 3, 2, 2]);
        assert_eq!(at(&first, [0, 3, 0, 1, 1]), at(&x, [0, 3, 0, 0, 0]));
        assert_eq!(at(&first, [0, 3, 2, 1, 0]), at(&x, [0, 3, 1, 0, 0]));
    }
}
