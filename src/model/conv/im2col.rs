//! The portable CPU path of [`super::Conv3d`] ([`super::Isa::Portable`]): one im2col matrix
//! per slab of output rows, from a channels-last copy of the input, multiplied by the
//! `[out, in*kt*kh*kw]` weight matrix in one `gemm` crate call (AVX2/FMA on x86-64) that
//! writes straight into the channels-first output. Time taps that read only padding are
//! left out of the product.
//!
//! Must not: pick the path (that is `conv`) or handle dtypes other than f32.
use rayon::prelude::*;

use super::Pad;

/// Floats of im2col buffer per slab (64 MiB): bounds memory at any resolution.
const SLAB_FLOATS: usize = 16 << 20;

/// The shape of one convolution: input `c x t x h x w`, output `to x ho x wo`, kernel,
/// stride and padding.
pub(super) struct Geometry {
    pub(super) c: usize,
    pub(super) t: usize,
    pub(super) h: usize,
    pub(super) w: usize,
    pub(super) to: usize,
    pub(super) ho: usize,
    pub(super) wo: usize,
    pub(super) kernel: [usize; 3],
    pub(super) stride: [usize; 3],
    pub(super) pad: Pad,
}

thread_local! {
    /// im2col buffer reused across calls: a fresh multi-MiB allocation per conv costs
    /// page faults on every call.
    static COLS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Free this thread's kept im2col buffer (see [`super::release_caches`]).
pub(super) fn release() {
    COLS.with_borrow_mut(|cols| *cols = Vec::new());
}

/// Append `bias + W[out, K] @ patches(src)^T` (channels-first `[out, to*ho*wo]`) to `out`.
///
/// The input is first transposed to channels-last, so each patch row (one output pixel,
/// `K = kt*kh*kw*C` values in `(dt, dh, dw, ci)` order, matching the reordered weights) is
/// `kt*kh*kw` contiguous copies of `C` floats. gemm reads the `[N, K]` patch matrix
/// transposed, the layout it runs fastest on for these shapes (2-3x the channels-first
/// im2col layout, measured with `examples/gemm_shapes.rs`).
pub(super) fn conv_f32(src: &[f32], g: &Geometry, w: &[f32], bias: &[f32], out_ch: usize, out: &mut Vec<f32>) {
    let [kt, kh, kw] = g.kernel;
    let k = g.c * kt * kh * kw;
    let n = g.to * g.ho * g.wo;
    let start = out.len();
    for &b in bias.iter().take(out_ch) {
        out.extend(std::iter::repeat_n(b, n));
    }
    let dst = &mut out[start..];
    let threads = rayon::current_num_threads();
    let par = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    let x_cl = to_channels_last(src, g.c, g.t * g.h * g.w);
    let pointwise = k == g.c && g.stride == [1, 1, 1] && g.pad == Pad::default();
    if pointwise {
        // 1x1x1: the channels-last input already is the [N, C] patch matrix.
        debug_assert!(x_cl.len() >= n * k && dst.len() >= out_ch * n);
        // SAFETY: dst holds out_ch rows of n floats, w out_ch rows of k, x_cl n*k floats.
        unsafe { gemm_acc(out_ch, n, k, dst.as_mut_ptr(), n, w, k, x_cl.as_ptr(), par) };
        return;
    }
    // Time taps that fall in the zero padding (or past the input) for every output frame
    // contribute exact zeros: leave them out of K. This is the single-frame first call of
    // each encode/decode, where 2 of 3 taps are padding (the analytic FLOP count, like the
    // reference, still counts them).
    let live = live_time_taps(g);
    let tap_len = kh * kw * g.c;
    let k_live = live.len() * tap_len;
    let w_live = &w[live.start * tap_len..];
    let rows = g.to * g.ho; // output rows of `wo` pixels
    let slab_rows = (SLAB_FLOATS / (k_live * g.wo)).clamp(1, rows);
    COLS.with_borrow_mut(|cols| {
        if cols.len() < k_live * slab_rows * g.wo {
            cols.resize(k_live * slab_rows * g.wo, 0.0);
        }
        let mut row0 = 0;
        while row0 < rows {
            let nrows = slab_rows.min(rows - row0);
            let ncols = nrows * g.wo;
            let cols = &mut cols[..k_live * ncols];
            cols.par_chunks_mut(g.wo * k_live)
                .enumerate()
                .for_each(|(q, patches)| fill_patch_row(&x_cl, g, live.clone(), row0 + q, patches));
            debug_assert!(cols.len() >= ncols * k_live && (row0 * g.wo + ncols) <= n);
            // SAFETY: row0*wo + ncols <= n, so the slab's out_ch rows (stride n) lie in dst
            // (out_ch*n floats); w_live holds out_ch rows of stride k with k_live used (the
            // live taps end at or before each row's end); cols holds ncols*k_live floats.
            let dst_slab = unsafe { dst.as_mut_ptr().add(row0 * g.wo) };
            unsafe { gemm_acc(out_ch, ncols, k_live, dst_slab, n, w_live, k, cols.as_ptr(), par) };
            row0 += nrows;
        }
    });
}

/// Time taps `dt` that read a real input frame for at least one output frame.
fn live_time_taps(g: &Geometry) -> std::ops::Range<usize> {
    let [kt, _, _] = g.kernel;
    let front = g.pad.t_front;
    // Output frame `ot` reads input frame `ot*st + dt - front`.
    let lo = front.saturating_sub((g.to - 1) * g.stride[0]);
    let hi = kt.min(g.t + front);
    lo.min(hi)..hi
}

/// Weights `[out, in, k]` (`k = kt*kh*kw`, the checkpoint's order) in the patch order
/// [`conv_f32`] multiplies by, `[out, k, in]`: one transpose per output channel, in parallel
/// (Wan 2.2's 2.8 GB took 3 s through candle's strided copy on one thread).
pub(super) fn weights_in_patch_order(w: &[f32], in_ch: usize, k: usize) -> Vec<f32> {
    let per = in_ch * k;
    if per == 0 {
        return Vec::new();
    }
    let mut out = vec![0f32; w.len()];
    out.par_chunks_mut(per).zip(w.par_chunks(per)).for_each(|(dst, src)| {
        for (ci, taps) in src.chunks(k).enumerate() {
            for (kk, &v) in taps.iter().enumerate() {
                dst[kk * in_ch + ci] = v;
            }
        }
    });
    out
}

/// `[C, S]` -> `[S, C]`, in cache-friendly tiles.
fn to_channels_last(src: &[f32], c: usize, s: usize) -> Vec<f32> {
    const TILE: usize = 64;
    let mut out = vec![0f32; c * s];
    out.par_chunks_mut(TILE * c).enumerate().for_each(|(blk, dst)| {
        let p0 = blk * TILE;
        let len = dst.len() / c;
        for ci in 0..c {
            let plane = &src[ci * s + p0..ci * s + p0 + len];
            for (p, &v) in plane.iter().enumerate() {
                dst[p * c + ci] = v;
            }
        }
    });
    out
}

/// Patches of the `wo` pixels of output row `orow` (= `ot*ho + oh`): for each pixel, the
/// time taps `taps` x `kh*kw` taps of `C` channels, zeros where a tap falls in the padding.
fn fill_patch_row(x_cl: &[f32], g: &Geometry, taps: std::ops::Range<usize>, orow: usize, patches: &mut [f32]) {
    let [_, kh, kw] = g.kernel;
    let [st, sh, sw] = g.stride;
    let c = g.c;
    let k = c * taps.len() * kh * kw;
    let (ot, oh) = (orow / g.ho, orow % g.ho);
    for ow in 0..g.wo {
        let patch = &mut patches[ow * k..(ow + 1) * k];
        let mut tap = 0;
        for dt in taps.clone() {
            let it = (ot * st + dt) as isize - g.pad.t_front as isize;
            for dh in 0..kh {
                let ih = (oh * sh + dh) as isize - g.pad.top as isize;
                for dw in 0..kw {
                    let iw = (ow * sw + dw) as isize - g.pad.left as isize;
                    let dst = &mut patch[tap * c..(tap + 1) * c];
                    let inside = (0..g.t as isize).contains(&it)
                        && (0..g.h as isize).contains(&ih)
                        && (0..g.w as isize).contains(&iw);
                    if inside {
                        let pix = (it as usize * g.h + ih as usize) * g.w + iw as usize;
                        dst.copy_from_slice(&x_cl[pix * c..(pix + 1) * c]);
                    } else {
                        dst.fill(0.0);
                    }
                    tap += 1;
                }
            }
        }
    }
}

/// `dst[m, n] (row stride dst_rs) += lhs[m, k] (row stride lhs_rs) @ patches[n, k]^T`.
///
/// # Safety
/// `dst` must be valid for `m` rows of `dst_rs` floats with `n` used per row; `lhs` holds
/// `m` rows of `lhs_rs` floats with `k` used; `patches` holds `n*k` floats.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_acc(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut f32,
    dst_rs: usize,
    lhs: &[f32],
    lhs_rs: usize,
    patches: *const f32,
    par: gemm::Parallelism,
) {
    debug_assert!(m == 0 || lhs.len() >= (m - 1) * lhs_rs + k);
    debug_assert!(dst_rs >= n && lhs_rs >= k);
    // SAFETY: the caller guarantees the extents documented above; gemm reads lhs and
    // patches and writes dst only within them (row strides dst_rs and lhs_rs, column stride 1).
    gemm::gemm(
        m,
        n,
        k,
        dst,
        1,
        dst_rs as isize,
        true,
        lhs.as_ptr(),
        1,
        lhs_rs as isize,
        patches,
        k as isize,
        1,
        1.0,
        1.0,
        false,
        false,
        false,
        par,
    );
}
