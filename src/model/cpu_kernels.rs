//! Fused CPU kernels for the elementwise work around the convolutions, where a chain of
//! candle ops would make one full pass (and one allocation) per op.
use rayon::prelude::*;

/// Positions per parallel block: a block of every channel plane stays in L2.
const BLOCK: usize = 2048;

/// Raw pointer that rayon tasks may share; each task writes a disjoint set of indices.
#[derive(Clone, Copy)]
struct SyncPtr(*mut f32);
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}

impl SyncPtr {
    /// A method call (unlike `.0`) makes closures capture the whole `Send` wrapper.
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// `RMS_norm` over channels of a contiguous `[B, C, S]` f32 buffer, optionally followed by
/// SiLU: `y = x / max(||x[:, p]||_2, 1e-12) * g[c]` (`g` already holds `gamma * sqrt(C)`).
pub fn rms_norm(x: &[f32], b: usize, c: usize, s: usize, g: &[f32], silu: bool) -> Vec<f32> {
    assert_eq!(x.len(), b * c * s);
    assert_eq!(g.len(), c);
    let mut out: Vec<f32> = Vec::with_capacity(x.len());
    let dst = SyncPtr(out.as_mut_ptr());
    let blocks_per_batch = s.div_ceil(BLOCK);
    (0..b * blocks_per_batch).into_par_iter().for_each(|task| {
        let (bi, blk) = (task / blocks_per_batch, task % blocks_per_batch);
        let p0 = blk * BLOCK;
        let len = BLOCK.min(s - p0);
        let base = bi * c * s;
        let mut sumsq = [0f32; BLOCK];
        let sumsq = &mut sumsq[..len];
        for ci in 0..c {
            let plane = &x[base + ci * s + p0..base + ci * s + p0 + len];
            for (acc, &v) in sumsq.iter_mut().zip(plane) {
                *acc += v * v;
            }
        }
        for acc in sumsq.iter_mut() {
            *acc = 1.0 / acc.sqrt().max(1e-12);
        }
        for (ci, &gc) in g.iter().enumerate() {
            let off = base + ci * s + p0;
            let plane = &x[off..off + len];
            // SAFETY: task (bi, blk) alone writes indices off..off+len for every ci.
            let out = unsafe { std::slice::from_raw_parts_mut(dst.get().add(off), len) };
            if silu {
                for ((o, &v), &inv) in out.iter_mut().zip(plane).zip(sumsq.iter()) {
                    let y = v * inv * gc;
                    *o = y / (1.0 + (-y).exp());
                }
            } else {
                for ((o, &v), &inv) in out.iter_mut().zip(plane).zip(sumsq.iter()) {
                    *o = v * inv * gc;
                }
            }
        }
    });
    // SAFETY: the tasks above wrote every one of the b*c*s elements.
    unsafe { out.set_len(x.len()) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formula() {
        let (b, c, s) = (2, 3, 5000);
        let x: Vec<f32> = (0..b * c * s).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
        let g = [0.5, -1.0, 2.0];
        for silu in [false, true] {
            let y = rms_norm(&x, b, c, s, &g, silu);
            for bi in 0..b {
                for p in (0..s).step_by(499) {
                    let norm: f32 = (0..c)
                        .map(|ci| x[(bi * c + ci) * s + p].powi(2))
                        .sum::<f32>()
                        .sqrt()
                        .max(1e-12);
                    for ci in 0..c {
                        let mut want = x[(bi * c + ci) * s + p] / norm * g[ci];
                        if silu {
                            want /= 1.0 + (-want).exp();
                        }
                        let got = y[(bi * c + ci) * s + p];
                        assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "{got} vs {want}");
                    }
                }
            }
        }
    }
}
