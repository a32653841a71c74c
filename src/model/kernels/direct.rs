//! The direct path (spatial stride 1, kernel width 1 or 3): no im2col. The input is copied
//! once into a zero-padded buffer (bf16: channel pairs interleaved into `u32`), and output
//! positions are numbered over the padded row width, so that every `K` row of a register
//! strip is one contiguous load at a fixed offset from the strip's origin. The padding
//! columns are computed too and dropped at write-back (2 of `w+2` lanes per row).
//!
//! Must not: choose between the paths (`super` does) nor hold intrinsics (`avx512` has them).
use std::ops::Range;
use std::sync::Mutex;

use rayon::prelude::*;

use super::{Aligned, ConvShape, Operands, PackedWeights, Plan, Run, Src, MR, NR};

/// Padded-input buffer kept between calls up to this size (bytes): smaller ones would
/// otherwise be page-faulted in on every call; larger ones are freed so that they do not
/// add to the peak memory outside the conv.
const KEEP_BYTES: usize = 64 << 20;

/// The padded-input buffer, reused across calls (convs run one at a time; a concurrent
/// caller gets a fresh buffer).
static PADDED: Mutex<Aligned> = Mutex::new(Aligned(Vec::new()));

/// `K` rows per block of channel groups, so that a weight block stays in L1/L2.
const K_ROWS: usize = 256;

/// Free the kept padded-input buffer (a worker starting a case: what an earlier, larger
/// case left must not count in this case's peak memory).
pub(super) fn release() {
    if let Ok(mut b) = PADDED.lock() {
        *b = Aligned::default();
    }
}

/// Whether the direct path runs this shape.
pub(super) fn supports(g: &ConvShape) -> bool {
    g.stride[1] == 1 && g.stride[2] == 1 && matches!(g.kernel[2], 1 | 3)
}

/// Build the padded input of `src` and run `f` on the plan.
pub(super) fn with_plan(pw: &PackedWeights, g: &ConvShape, parts: &[Src], f: impl FnOnce(&dyn Plan)) {
    let live = g.live_taps();
    let [_, kh, kw] = g.kernel;
    // Zero frames still read by some live tap; padded frame = input frame + zf.
    let zf = g.front - live.start.min(g.front);
    let (hp, wp) = (g.ho + kh - 1, g.wo + kw - 1);
    let tp = zf + g.t;
    let fp = hp * wp;
    let gstride = tp * fp;
    let len = pw.groups * gstride + NR + kw;
    let mut fresh = Aligned::default();
    let mut guard = PADDED.try_lock().ok();
    let buf = match guard.as_deref_mut() {
        Some(b) => b,
        None => &mut fresh,
    };
    buf.ensure(len);
    let geo = Geo {
        g: *g,
        live,
        zf,
        hp,
        wp,
        gstride,
        spf: (g.ho * wp).div_ceil(NR),
    };
    fill_padded(&geo, pw.groups, parts, &mut buf.u32s()[..len]);
    let plan = Direct {
        geo,
        x: &buf.u32s()[..len],
    };
    f(&plan);
    if len * 4 > KEEP_BYTES {
        *buf = Aligned::default();
    }
}

/// Geometry of the padded input and the strip numbering.
struct Geo {
    g: ConvShape,
    live: Range<usize>,
    zf: usize,
    hp: usize,
    wp: usize,
    gstride: usize,
    /// Strips per output frame (`ho*wp` positions).
    spf: usize,
}

struct Direct<'a> {
    geo: Geo,
    /// `[groups][zf + t][hp][wp]` f32 bits or bf16 pairs, then `NR + kw` slack.
    x: &'a [u32],
}

/// Copy the input `parts` (consecutive in time) into the padded layout (zeros around), one
/// `(group, frame)` plane per task.
fn fill_padded(geo: &Geo, groups: usize, parts: &[Src], dst: &mut [u32]) {
    let g = &geo.g;
    let frame_len = g.c * g.h * g.w;
    // (part, its frame count, its first frame)
    let mut spans = Vec::with_capacity(parts.len());
    let mut t0 = 0;
    for p in parts {
        let t = match p {
            Src::F32(x) => x.len(),
            Src::Bf16(x) => x.len(),
        } / frame_len;
        spans.push((*p, t, t0));
        t0 += t;
    }
    let plane = geo.hp * geo.wp;
    let tp = geo.zf + g.t;
    let (main, slack) = dst.split_at_mut(groups * tp * plane);
    slack.fill(0);
    main.par_chunks_mut(plane).enumerate().for_each(|(idx, out)| {
        let (grp, tau) = (idx / tp, idx % tp);
        if tau < geo.zf {
            out.fill(0);
            return;
        }
        let it = tau - geo.zf;
        let &(src, pt, first) = spans.iter().find(|s| it < s.2 + s.1).expect("frame in a part");
        let lt = it - first;
        for (r, row) in out.chunks_mut(geo.wp).enumerate() {
            let ih = r as isize - g.top as isize;
            if ih < 0 || ih >= g.h as isize {
                row.fill(0);
                continue;
            }
            let (left, rest) = row.split_at_mut(g.left);
            left.fill(0);
            let n = g.w.min(rest.len());
            let (mid, right) = rest.split_at_mut(n);
            right.fill(0);
            let at = |ci: usize| ((ci * pt + lt) * g.h + ih as usize) * g.w;
            match src {
                Src::F32(x) => {
                    for (d, &v) in mid.iter_mut().zip(&x[at(grp)..][..n]) {
                        *d = v.to_bits();
                    }
                }
                Src::Bf16(x) => {
                    let lo = &x[at(2 * grp)..][..n];
                    if 2 * grp + 1 < g.c {
                        let hi = &x[at(2 * grp + 1)..][..n];
                        for ((d, &l), &h) in mid.iter_mut().zip(lo).zip(hi) {
                            *d = l as u32 | (h as u32) << 16;
                        }
                    } else {
                        for (d, &l) in mid.iter_mut().zip(lo) {
                            *d = l as u32;
                        }
                    }
                }
            }
        }
    });
}

impl Plan for Direct<'_> {
    fn strips(&self) -> usize {
        self.geo.g.to * self.geo.spf
    }

    /// Positions `q = oh*wp + ow` of each frame; lanes with `ow >= wo` are padding columns.
    fn runs(&self, strips: Range<usize>) -> Vec<Run> {
        let (g, wp) = (&self.geo.g, self.geo.wp);
        let mut runs = Vec::new();
        for (local, s) in strips.enumerate() {
            let (ot, q0) = (s / self.geo.spf, s % self.geo.spf * NR);
            let q1 = (q0 + NR).min(g.ho * wp);
            let mut q = q0;
            while q < q1 {
                let (oh, ow) = (q / wp, q % wp);
                if ow >= g.wo {
                    q += wp - ow;
                    continue;
                }
                let len = (g.wo - ow).min(q1 - q);
                runs.push(Run {
                    strip: local,
                    lane: q - q0,
                    len,
                    pixel: (ot * g.ho + oh) * g.wo + ow,
                });
                q += len;
            }
        }
        runs
    }

    fn compute(
        &self,
        pw: &PackedWeights,
        ns: Range<usize>,
        _runs: &[Run],
        ms: Range<usize>,
        _panel: &mut Aligned,
        acc: &mut [f32],
        ldc: usize,
    ) {
        let geo = &self.geo;
        let [_, kh, kw] = geo.g.kernel;
        let st = geo.g.stride[0];
        // Offsets of each strip's live (dt, dh) rows in the padded input.
        let rows: Vec<Vec<usize>> = ns
            .clone()
            .map(|s| {
                let (ot, q0) = (s / geo.spf, s % geo.spf * NR);
                let mut v = Vec::with_capacity(geo.live.len() * kh);
                for dt in geo.live.clone() {
                    // padded frame = ot*st + dt - front + zf
                    let tau = ot * st + dt + geo.zf - geo.g.front;
                    for dh in 0..kh {
                        v.push(tau * geo.hp * geo.wp + dh * geo.wp + q0);
                    }
                }
                v
            })
            .collect();
        let per_block = (K_ROWS / (rows[0].len() * kw)).max(1);
        let seg = pw.groups * kw * MR; // weights between consecutive (dt, dh) rows
        let mut g0 = 0;
        while g0 < pw.groups {
            let gb = per_block.min(pw.groups - g0);
            for (r, s) in ms.clone().enumerate() {
                let bias = if g0 == 0 {
                    pw.bias[s * MR..].as_ptr()
                } else {
                    std::ptr::null()
                };
                let a = pw.a(s, (geo.live.start * kh * pw.groups + g0) * kw);
                for (j, offs) in rows.iter().enumerate() {
                    // SAFETY: `conv` checked the CPU; every load lies in the padded buffer
                    // (the last strip reads at most `NR + kw - 1` past the last plane, the
                    // slack); weights: `gb*kw` rows per (dt, dh), `seg` apart; `acc` has
                    // `MR` rows of `ldc >= (j+1)*NR` floats from row `r*MR`.
                    #[cfg(target_arch = "x86_64")]
                    unsafe {
                        let c = acc.as_mut_ptr().add(r * MR * ldc + j * NR);
                        let x = self.x.as_ptr().add(g0 * geo.gstride);
                        use super::avx512::{direct_bf16, direct_f32};
                        match (pw.operands, kw) {
                            (Operands::F32, 3) => {
                                direct_f32::<3>(a as _, x as _, offs, gb, geo.gstride, seg, c, ldc, bias)
                            }
                            (Operands::F32, _) => {
                                direct_f32::<1>(a as _, x as _, offs, gb, geo.gstride, seg, c, ldc, bias)
                            }
                            (Operands::Bf16, 3) => direct_bf16::<3>(a, x, offs, gb, geo.gstride, seg, c, ldc, bias),
                            (Operands::Bf16, _) => direct_bf16::<1>(a, x, offs, gb, geo.gstride, seg, c, ldc, bias),
                        }
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    let _ = (a, offs, seg, bias, j, r, acc.len());
                }
            }
            g0 += gb;
        }
    }
}
