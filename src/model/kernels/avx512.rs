//! AVX-512 micro-kernels of the CPU convolution: one `MR x NR` tile of the output,
//! accumulated in 24 zmm registers over a block of `K`.
//!
//! Owns only register-level arithmetic on packed panels (layouts in `super`); callers must
//! have checked the CPU features (see `super::Isa`) before calling anything here.
//!
//! Must not: pack panels or pick a path (that is `pack`, `direct` and `super`).
use std::arch::x86_64::*;

/// Output channels per tile (rows, broadcast from the packed weights).
pub const MR: usize = 12;
/// Output pixels per tile (columns, two zmm of 16 lanes).
pub const NR: usize = 32;

/// `c[i][j] (+)= sum_p a[p][i] * b[p][j]` for an `MR x NR` tile, f32 FMA.
///
/// `a`: `kc` rows of `MR` weights; `b`: `kc` rows of `NR` pixels; `c`: `MR` rows of `NR`
/// floats, row stride `ldc`. With `bias` non-null the tile starts from `bias[i]` instead of
/// from `c` (first block of `K`).
///
/// # Safety
/// The CPU has AVX-512F; `a` holds `kc*MR`, `b` `kc*NR` floats, `c` `MR` rows of `ldc >= NR`
/// floats, `bias` (when non-null) `MR` floats.
#[target_feature(enable = "avx512f")]
pub unsafe fn tile_f32(kc: usize, a: *const f32, b: *const f32, c: *mut f32, ldc: usize, bias: *const f32) {
    let mut lo = [_mm512_setzero_ps(); MR];
    let mut hi = [_mm512_setzero_ps(); MR];
    for i in 0..MR {
        if bias.is_null() {
            lo[i] = _mm512_loadu_ps(c.add(i * ldc));
            hi[i] = _mm512_loadu_ps(c.add(i * ldc + 16));
        } else {
            lo[i] = _mm512_set1_ps(*bias.add(i));
            hi[i] = lo[i];
        }
    }
    for p in 0..kc {
        let b0 = _mm512_loadu_ps(b.add(p * NR));
        let b1 = _mm512_loadu_ps(b.add(p * NR + 16));
        let ap = a.add(p * MR);
        for i in 0..MR {
            let ai = _mm512_set1_ps(*ap.add(i));
            lo[i] = _mm512_fmadd_ps(ai, b0, lo[i]);
            hi[i] = _mm512_fmadd_ps(ai, b1, hi[i]);
        }
    }
    for i in 0..MR {
        _mm512_storeu_ps(c.add(i * ldc), lo[i]);
        _mm512_storeu_ps(c.add(i * ldc + 16), hi[i]);
    }
}

/// As [`tile_f32`] with bf16 operands and f32 accumulation (`vdpbf16ps`): each `u32` of `a`
/// and `b` holds the bf16 values of `K` rows `2p` (low half) and `2p+1` (high half), so
/// one instruction adds two products per lane. `kc2` is the number of such row pairs.
///
/// # Safety
/// The CPU has AVX-512F and AVX512-BF16; `a` holds `kc2*MR`, `b` `kc2*NR` `u32`s, `c` and
/// `bias` as in [`tile_f32`].
#[target_feature(enable = "avx512f,avx512bf16")]
pub unsafe fn tile_bf16(kc2: usize, a: *const u32, b: *const u32, c: *mut f32, ldc: usize, bias: *const f32) {
    let mut lo = [_mm512_setzero_ps(); MR];
    let mut hi = [_mm512_setzero_ps(); MR];
    for i in 0..MR {
        if bias.is_null() {
            lo[i] = _mm512_loadu_ps(c.add(i * ldc));
            hi[i] = _mm512_loadu_ps(c.add(i * ldc + 16));
        } else {
            lo[i] = _mm512_set1_ps(*bias.add(i));
            hi[i] = lo[i];
        }
    }
    for p in 0..kc2 {
        // SAFETY (transmute): __m512i and __m512bh are both 64 plain bytes.
        let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.add(p * NR) as *const _));
        let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.add(p * NR + 16) as *const _));
        let ap = a.add(p * MR);
        for i in 0..MR {
            let ai: __m512bh = std::mem::transmute(_mm512_set1_epi32(*ap.add(i) as i32));
            lo[i] = _mm512_dpbf16_ps(lo[i], ai, b0);
            hi[i] = _mm512_dpbf16_ps(hi[i], ai, b1);
        }
    }
    for i in 0..MR {
        _mm512_storeu_ps(c.add(i * ldc), lo[i]);
        _mm512_storeu_ps(c.add(i * ldc + 16), hi[i]);
    }
}

/// Direct convolution tile (no im2col): `c (+)= sum` over taps, reading the `NR` pixels of
/// each `K` row straight from the padded input. For each offset `off` in `rows` (one per
/// live `(dt, dh)`), each of `groups` channel groups `g` and each `dw < KW`, the row is
/// `x[off + g*gstride + dw ..][..NR]`; its weights are `MR` values at
/// `a + (i*seg) + (g*KW + dw)*MR` for the `i`-th offset.
/// `bias` non-null starts from the bias, else from `c` (`MR` rows, stride `ldc`).
///
/// # Safety
/// The CPU has AVX-512F; every row read lies in `x`'s allocation; `a` holds the
/// weights read as above; `c` and `bias` as in [`tile_f32`].
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
pub unsafe fn direct_f32<const KW: usize>(
    a: *const f32,
    x: *const f32,
    rows: &[usize],
    groups: usize,
    gstride: usize,
    seg: usize,
    c: *mut f32,
    ldc: usize,
    bias: *const f32,
) {
    let mut lo = [_mm512_setzero_ps(); MR];
    let mut hi = [_mm512_setzero_ps(); MR];
    for i in 0..MR {
        if bias.is_null() {
            lo[i] = _mm512_loadu_ps(c.add(i * ldc));
            hi[i] = _mm512_loadu_ps(c.add(i * ldc + 16));
        } else {
            lo[i] = _mm512_set1_ps(*bias.add(i));
            hi[i] = lo[i];
        }
    }
    for (si, &off) in rows.iter().enumerate() {
        let mut ap = a.add(si * seg);
        let mut xp = x.add(off);
        for _ in 0..groups {
            for dw in 0..KW {
                let b0 = _mm512_loadu_ps(xp.add(dw));
                let b1 = _mm512_loadu_ps(xp.add(dw + 16));
                for i in 0..MR {
                    let ai = _mm512_set1_ps(*ap.add(i));
                    lo[i] = _mm512_fmadd_ps(ai, b0, lo[i]);
                    hi[i] = _mm512_fmadd_ps(ai, b1, hi[i]);
                }
                ap = ap.add(MR);
            }
            xp = xp.add(gstride);
        }
    }
    for i in 0..MR {
        _mm512_storeu_ps(c.add(i * ldc), lo[i]);
        _mm512_storeu_ps(c.add(i * ldc + 16), hi[i]);
    }
}

/// As [`direct_f32`] for bf16: `x` and `a` hold `u32` channel pairs (`2g` low, `2g+1` high)
/// multiplied by `vdpbf16ps` with f32 accumulation.
///
/// # Safety
/// As [`direct_f32`], and the CPU has AVX512-BF16.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bf16")]
pub unsafe fn direct_bf16<const KW: usize>(
    a: *const u32,
    x: *const u32,
    rows: &[usize],
    groups: usize,
    gstride: usize,
    seg: usize,
    c: *mut f32,
    ldc: usize,
    bias: *const f32,
) {
    let mut lo = [_mm512_setzero_ps(); MR];
    let mut hi = [_mm512_setzero_ps(); MR];
    for i in 0..MR {
        if bias.is_null() {
            lo[i] = _mm512_loadu_ps(c.add(i * ldc));
            hi[i] = _mm512_loadu_ps(c.add(i * ldc + 16));
        } else {
            lo[i] = _mm512_set1_ps(*bias.add(i));
            hi[i] = lo[i];
        }
    }
    for (si, &off) in rows.iter().enumerate() {
        let mut ap = a.add(si * seg);
        let mut xp = x.add(off);
        for _ in 0..groups {
            for dw in 0..KW {
                // SAFETY (transmute): __m512i and __m512bh are both 64 plain bytes.
                let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(xp.add(dw) as *const _));
                let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(xp.add(dw + 16) as *const _));
                for i in 0..MR {
                    let ai: __m512bh = std::mem::transmute(_mm512_set1_epi32(*ap.add(i) as i32));
                    lo[i] = _mm512_dpbf16_ps(lo[i], ai, b0);
                    hi[i] = _mm512_dpbf16_ps(hi[i], ai, b1);
                }
                ap = ap.add(MR);
            }
            xp = xp.add(gstride);
        }
    }
    for i in 0..MR {
        _mm512_storeu_ps(c.add(i * ldc), lo[i]);
        _mm512_storeu_ps(c.add(i * ldc + 16), hi[i]);
    }
}

/// Register-only loops for the machine's peak: `iters` rounds of 24 independent
/// accumulators (no memory traffic). Returns a value so the work is not optimized away.
pub mod peak {
    use std::arch::x86_64::*;

    /// 24 independent `vfmadd` zmm chains: `iters * 24 * 16 * 2` FLOP.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn fma_f32(iters: usize) -> f32 {
        let x = _mm512_set1_ps(0.999_999);
        let y = _mm512_set1_ps(1e-7);
        let mut acc = [_mm512_set1_ps(1.0); 24];
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm512_fmadd_ps(*a, x, y);
            }
        }
        let mut s = _mm512_setzero_ps();
        for a in acc {
            s = _mm512_add_ps(s, a);
        }
        _mm512_reduce_add_ps(s)
    }

    /// 24 independent `vdpbf16ps` zmm chains: `iters * 24 * 32 * 2` FLOP.
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX512-BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn dpbf16(iters: usize) -> f32 {
        let x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3), _mm512_set1_ps(1e-3));
        let mut acc = [_mm512_set1_ps(1.0); 24];
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm512_dpbf16_ps(*a, x, x);
            }
        }
        let mut s = _mm512_setzero_ps();
        for a in acc {
            s = _mm512_add_ps(s, a);
        }
        _mm512_reduce_add_ps(s)
    }

    /// 12 independent 256-bit `vfmadd` chains (the AVX2 path's instruction): `iters * 12 * 8 * 2` FLOP.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_avx2(iters: usize) -> f32 {
        let x = _mm256_set1_ps(0.999_999);
        let y = _mm256_set1_ps(1e-7);
        let mut acc = [_mm256_set1_ps(1.0); 12];
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm256_fmadd_ps(*a, x, y);
            }
        }
        let mut s = _mm256_setzero_ps();
        for a in acc {
            s = _mm256_add_ps(s, a);
        }
        let mut out = [0f32; 8];
        _mm256_storeu_ps(out.as_mut_ptr(), s);
        out.iter().sum()
    }
}
