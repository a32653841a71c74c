//! The packing path (any stride): for each block of `K`, copy the input values of every
//! output pixel of a task into register-strip panels (implicit im2col, zeros in the
//! padding), then run the packed-panel micro-kernels. Used where the direct path cannot
//! run: spatial stride 2 (the downsampling convs).
//!
//! Must not: choose between the paths (`super` does) nor hold intrinsics (`avx512` has them).
use std::ops::Range;

use super::{Aligned, ConvShape, Operands, PackedWeights, Plan, Run, Src, NR};

/// `K` rows per block: an f32 panel of `KC x NR` is 32 KiB.
const KC: usize = 256;

pub(super) struct Packing<'a> {
    g: ConvShape,
    src: Src<'a>,
}

impl<'a> Packing<'a> {
    pub(super) fn new(g: &ConvShape, src: Src<'a>) -> Self {
        Packing { g: *g, src }
    }
}

impl Plan for Packing<'_> {
    fn strips(&self) -> usize {
        self.g.pixels().div_ceil(NR)
    }

    /// Consecutive output pixels, split where an output row ends.
    fn runs(&self, strips: Range<usize>) -> Vec<Run> {
        let g = &self.g;
        let (p0, p1) = (strips.start * NR, (strips.end * NR).min(g.pixels()));
        let mut runs = Vec::new();
        let mut p = p0;
        while p < p1 {
            let (local, ow) = (p - p0, p % g.wo);
            let (strip, lane) = (local / NR, local % NR);
            let len = (g.wo - ow).min(NR - lane).min(p1 - p);
            runs.push(Run {
                strip,
                lane,
                len,
                pixel: p,
            });
            p += len;
        }
        runs
    }

    fn compute(
        &self,
        pw: &PackedWeights,
        ns: Range<usize>,
        runs: &[Run],
        ms: Range<usize>,
        panel: &mut Aligned,
        acc: &mut [f32],
        ldc: usize,
    ) {
        let live = self.g.live_taps();
        let (klo, khi) = (live.start * pw.per_tap(), live.end * pw.per_tap());
        let n_strips = ns.len();
        if klo == khi {
            for (r, s) in ms.enumerate() {
                for i in 0..super::MR {
                    acc[(r * super::MR + i) * ldc..][..ldc].fill(pw.bias[s * super::MR + i]);
                }
            }
            return;
        }
        let mut kb = klo;
        while kb < khi {
            let kc = KC.min(khi - kb);
            panel.ensure(n_strips * kc * NR);
            // Lanes past the runs keep stale values: lanes are independent, and write-back
            // skips them.
            let p = panel.u32s();
            for kk in 0..kc {
                for run in runs {
                    let at = (run.strip * kc + kk) * NR + run.lane;
                    self.fill(pw, kb + kk, run, &mut p[at..at + run.len]);
                }
            }
            let bias = kb == klo;
            for (r, s) in ms.clone().enumerate() {
                for j in 0..n_strips {
                    let bias = if bias {
                        pw.bias[s * super::MR..].as_ptr()
                    } else {
                        std::ptr::null()
                    };
                    // SAFETY: `conv` checked the CPU; the panel holds `kc` rows of strip `j`,
                    // the weights `kc` rows of strip `s` from `kb`, and `acc` `MR` rows of
                    // `ldc >= (j+1)*NR` floats from row `r*MR`.
                    #[cfg(target_arch = "x86_64")]
                    unsafe {
                        let c = acc.as_mut_ptr().add(r * super::MR * ldc + j * NR);
                        let b = p.as_ptr().add(j * kc * NR);
                        match pw.operands {
                            Operands::F32 => {
                                super::avx512::tile_f32(kc, pw.a(s, kb) as *const f32, b as *const f32, c, ldc, bias)
                            }
                            Operands::Bf16 => super::avx512::tile_bf16(kc, pw.a(s, kb), b, c, ldc, bias),
                        }
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    let _ = (bias, j, r, s);
                }
            }
            kb += kc;
        }
    }
}

impl Packing<'_> {
    /// Packed `K` row `kk` (`(dt, dh, g, dw)`) of one run: f32 bits, or the bf16 pair of
    /// channels `2g`, `2g+1`.
    fn fill(&self, pw: &PackedWeights, kk: usize, run: &Run, out: &mut [u32]) {
        let kw = self.g.kernel[2];
        let (dt, r) = (kk / pw.per_tap(), kk % pw.per_tap());
        let (dh, r) = (r / (pw.groups * kw), r % (pw.groups * kw));
        let (grp, dw) = (r / kw, r % kw);
        let tap = [dt, dh, dw];
        match self.src {
            Src::F32(x) => {
                let mut vals = [0f32; NR];
                fill_run(x, &self.g, grp, tap, run, &mut vals[..run.len]);
                for (o, v) in out.iter_mut().zip(vals) {
                    *o = v.to_bits();
                }
            }
            Src::Bf16(x) => {
                let (mut lo, mut hi) = ([0u16; NR], [0u16; NR]);
                fill_run(x, &self.g, 2 * grp, tap, run, &mut lo[..run.len]);
                if 2 * grp + 1 < self.g.c {
                    fill_run(x, &self.g, 2 * grp + 1, tap, run, &mut hi[..run.len]);
                }
                for ((o, l), h) in out.iter_mut().zip(lo).zip(hi) {
                    *o = l as u32 | (h as u32) << 16;
                }
            }
        }
    }
}

/// Input values of channel `ci` at tap `[dt, dh, dw]` for the pixels of `run`, zeros in
/// the padding.
fn fill_run<T: Copy + Default>(x: &[T], g: &ConvShape, ci: usize, [dt, dh, dw]: [usize; 3], run: &Run, out: &mut [T]) {
    let [st, sh, sw] = g.stride;
    let (row, ow0) = (run.pixel / g.wo, run.pixel % g.wo);
    let (ot, oh) = (row / g.ho, row % g.ho);
    let it = (ot * st + dt) as isize - g.front as isize;
    let ih = (oh * sh + dh) as isize - g.top as isize;
    if it < 0 || it >= g.t as isize || ih < 0 || ih >= g.h as isize {
        out.fill(T::default());
        return;
    }
    let src = &x[((ci * g.t + it as usize) * g.h + ih as usize) * g.w..][..g.w];
    // Input column of lane j: (ow0 + j)*sw + dw - left.
    let base = (ow0 * sw + dw) as isize - g.left as isize;
    for (j, o) in out.iter_mut().enumerate() {
        let iw = base + (j * sw) as isize;
        *o = if iw >= 0 && iw < g.w as isize {
            src[iw as usize]
        } else {
            T::default()
        };
    }
}
