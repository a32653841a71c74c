//! CPU convolution on AVX-512, chosen at run time: implicit im2col packed straight from the
//! channels-first activations into register-tile panels, then `MR x NR` micro-kernels
//! (`avx512.rs`): f32 FMA, or bf16 products with f32 accumulation (`vdpbf16ps`) where the
//! CPU has AVX512-BF16.
//!
//! Owns the ISA choice ([`Isa`]), the packed weight layout ([`PackedWeights`]), the blocked
//! loop nest with its per-thread buffers, and the peak-throughput probe ([`peak_gflops`]).
//! Must not know about tensors or the model: `conv.rs` hands it slices, and keeps the
//! portable (gemm crate) path for CPUs without AVX-512.
use std::cell::RefCell;
use std::sync::OnceLock;

use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
pub mod avx512;

/// Output channels per register tile.
pub const MR: usize = 12;
/// Output pixels per register tile.
pub const NR: usize = 32;
/// Output pixels per task: a task's packed input block (`KC x NC`) and output block stay in L2.
const NC: usize = 256;
/// Rows of `K` per block (f32); bf16 blocks hold twice as many rows in the same bytes.
const KC_F32: usize = 256;
const KC_BF16: usize = 512;

/// Environment variable that caps the instruction set, for before/after measurements in one
/// build: `portable`, `avx512` or `avx512-bf16` (never above what the CPU has).
pub const ISA_ENV: &str = "WAN_VAE_BENCH_CPU_ISA";

/// Instruction set of the CPU convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    /// The gemm crate's kernels (AVX2/FMA on x86-64), in `conv.rs`.
    Portable,
    /// AVX-512F f32 micro-kernels; bf16 models compute in f32.
    Avx512,
    /// As `Avx512`, plus bf16 models multiply bf16 operands with f32 accumulation.
    Avx512Bf16,
}

impl Isa {
    /// The best the CPU has, capped by [`ISA_ENV`] when it is set (read once per process).
    pub fn detect() -> Isa {
        static ISA: OnceLock<Isa> = OnceLock::new();
        *ISA.get_or_init(|| {
            let hw = Isa::hardware();
            match std::env::var(ISA_ENV).ok().as_deref().and_then(Isa::parse) {
                Some(cap) => cap.min(hw),
                None => hw,
            }
        })
    }

    /// What the CPU supports, ignoring the environment.
    pub fn hardware() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                if std::arch::is_x86_feature_detected!("avx512bf16") {
                    return Isa::Avx512Bf16;
                }
                return Isa::Avx512;
            }
        }
        Isa::Portable
    }

    pub fn parse(s: &str) -> Option<Isa> {
        match s.trim().to_ascii_lowercase().as_str() {
            "portable" => Some(Isa::Portable),
            "avx512" => Some(Isa::Avx512),
            "avx512-bf16" | "avx512bf16" => Some(Isa::Avx512Bf16),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx512 => "avx512",
            Isa::Avx512Bf16 => "avx512-bf16",
        }
    }
}

/// Shape of one (batch-1) convolution: input `[c, t, h, w]` channels-first, output
/// `[m, to, ho, wo]`, zero padding `front` frames before, `top`/`left` before in space
/// (after-padding is implied by the output size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvShape {
    pub c: usize,
    pub t: usize,
    pub h: usize,
    pub w: usize,
    pub to: usize,
    pub ho: usize,
    pub wo: usize,
    pub kernel: [usize; 3],
    pub stride: [usize; 3],
    pub front: usize,
    pub top: usize,
    pub left: usize,
}

impl ConvShape {
    fn pixels(&self) -> usize {
        self.to * self.ho * self.wo
    }

    /// Time taps that read a real input frame for at least one output frame: the others
    /// lie wholly in the zero padding (2 of 3 on each first single-frame call) and add
    /// exact zeros, so they are left out of `K`.
    fn live_taps(&self) -> std::ops::Range<usize> {
        let kt = self.kernel[0];
        let lo = self.front.saturating_sub((self.to - 1) * self.stride[0]);
        let hi = kt.min(self.t + self.front);
        lo.min(hi)..hi
    }
}

/// 64-byte aligned f32/u32 storage (one zmm per element).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; 16]);

/// A growable buffer of 64-byte aligned `u32`/`f32` slots.
#[derive(Default)]
struct Aligned(Vec<Line>);

impl Aligned {
    fn with_len(len: usize) -> Self {
        let mut a = Aligned::default();
        a.ensure(len);
        a
    }
    /// Room for at least `len` values (contents unspecified).
    fn ensure(&mut self, len: usize) {
        let lines = len.div_ceil(16);
        if self.0.len() < lines {
            self.0.resize(lines, Line([0; 16]));
        }
    }
    fn u32s(&mut self) -> &mut [u32] {
        let len = self.0.len() * 16;
        // SAFETY: `Line` is 16 plain u32 with no padding.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr() as *mut u32, len) }
    }
    fn f32s(&mut self) -> &mut [f32] {
        let len = self.0.len() * 16;
        // SAFETY: every u32 bit pattern is a valid f32.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr() as *mut f32, len) }
    }
}

/// Which operand type a [`PackedWeights`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operands {
    /// f32 weights and activations, FMA.
    F32,
    /// bf16 weights and activations, `vdpbf16ps` with f32 accumulation.
    Bf16,
}

/// Weights packed for the micro-kernels, plus bias.
///
/// `K` is ordered `(dt, ci, dh, dw)`, each time tap padded to an even `kg` rows (zero
/// weights), so that the live time taps are one contiguous, even range of `K`.
/// Layout: for each strip of `MR` output channels, `K` rows of `MR` f32
/// (`Operands::F32`), or `K/2` rows of `MR` u32 bf16 pairs (`Operands::Bf16`).
pub struct PackedWeights {
    m: usize,
    m_pad: usize,
    c: usize,
    kernel: [usize; 3],
    kg: usize,
    operands: Operands,
    data: Aligned,
    /// `m_pad` floats (zeros past `m`).
    bias: Vec<f32>,
}

impl PackedWeights {
    /// Pack `w` `[m, c, kt, kh, kw]` (f32 values; for `Operands::Bf16` already rounded to
    /// bf16, so the truncation below is exact) and `bias` `[m]`.
    pub fn new(w: &[f32], bias: &[f32], m: usize, c: usize, kernel: [usize; 3], operands: Operands) -> Self {
        let [kt, kh, kw] = kernel;
        assert_eq!(w.len(), m * c * kt * kh * kw);
        assert_eq!(bias.len(), m);
        let kg = (c * kh * kw).next_multiple_of(2);
        let k = kt * kg;
        let m_pad = m.next_multiple_of(MR);
        // Value of packed row `kk` (in K order) of output channel `o`.
        let weight = |o: usize, kk: usize| -> f32 {
            let (dt, r) = (kk / kg, kk % kg);
            if o >= m || r >= c * kh * kw {
                return 0.0;
            }
            let (ci, tap) = (r / (kh * kw), r % (kh * kw));
            w[((o * c + ci) * kt + dt) * kh * kw + tap]
        };
        let mut data = Aligned::with_len(m_pad * k);
        match operands {
            Operands::F32 => {
                let d = data.f32s();
                for s in 0..m_pad / MR {
                    for kk in 0..k {
                        for i in 0..MR {
                            d[(s * k + kk) * MR + i] = weight(s * MR + i, kk);
                        }
                    }
                }
            }
            Operands::Bf16 => {
                let d = data.u32s();
                let bits = |v: f32| v.to_bits() >> 16;
                for s in 0..m_pad / MR {
                    for k2 in 0..k / 2 {
                        for i in 0..MR {
                            let o = s * MR + i;
                            d[(s * k / 2 + k2) * MR + i] =
                                bits(weight(o, 2 * k2)) | (bits(weight(o, 2 * k2 + 1)) << 16);
                        }
                    }
                }
            }
        }
        let mut b = bias.to_vec();
        b.resize(m_pad, 0.0);
        PackedWeights {
            m,
            m_pad,
            c,
            kernel,
            kg,
            operands,
            data,
            bias: b,
        }
    }

    pub fn operands(&self) -> Operands {
        self.operands
    }

    fn k(&self) -> usize {
        self.kernel[0] * self.kg
    }
}

/// Input activations `[c, t, h, w]`.
#[derive(Clone, Copy)]
pub enum Src<'a> {
    F32(&'a [f32]),
    /// bf16 bit patterns.
    Bf16(&'a [u16]),
}

/// Output `[m, to, ho, wo]`.
pub enum Dst<'a> {
    F32(&'a mut [f32]),
    /// bf16 bit patterns, rounded to nearest even from the f32 accumulators.
    Bf16(&'a mut [u16]),
}

/// Raw output pointer that rayon tasks share; each task writes a disjoint block.
#[derive(Clone, Copy)]
struct SharedOut(*mut u8);
// SAFETY: tasks write disjoint (channel-range x pixel-range) blocks of the output.
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// A method call (unlike `.0`) makes closures capture the whole `Send` wrapper.
    fn get(self) -> *mut u8 {
        self.0
    }
}

thread_local! {
    /// Per-thread packed input block and output block, reused across calls and passes:
    /// a fresh buffer per conv costs page faults on every call.
    static SCRATCH: RefCell<(Aligned, Aligned)> = RefCell::new((Aligned::default(), Aligned::default()));
}

/// One contiguous run of output pixels within an output row and a register strip.
#[derive(Clone, Copy)]
struct Run {
    strip: usize,
    lane: usize,
    len: usize,
    ot: usize,
    oh: usize,
    ow0: usize,
}

/// `dst = bias + conv(src)` on the AVX-512 kernels.
///
/// Panics if the operand types do not match the packed weights (`Src::Bf16` with
/// `Operands::Bf16`, `Src::F32` with `Operands::F32`), the slice lengths do not match `g`,
/// or the CPU lacks the instructions (callers check [`Isa::detect`]).
pub fn conv(pw: &PackedWeights, g: &ConvShape, src: Src, dst: Dst) {
    assert_eq!(
        (g.c, g.kernel),
        (pw.c, pw.kernel),
        "packed weights do not match the conv shape"
    );
    let need = match pw.operands {
        Operands::F32 => Isa::Avx512,
        Operands::Bf16 => Isa::Avx512Bf16,
    };
    assert!(Isa::hardware() >= need, "this CPU lacks the {} kernels", need.name());
    let in_len = g.c * g.t * g.h * g.w;
    match (src, pw.operands) {
        (Src::F32(s), Operands::F32) => assert_eq!(s.len(), in_len),
        (Src::Bf16(s), Operands::Bf16) => assert_eq!(s.len(), in_len),
        _ => panic!("input type does not match the packed weights ({:?})", pw.operands),
    }
    let n = g.pixels();
    let (out, out_bf16) = match dst {
        Dst::F32(d) => {
            assert_eq!(d.len(), pw.m * n);
            (SharedOut(d.as_mut_ptr() as *mut u8), false)
        }
        Dst::Bf16(d) => {
            assert_eq!(d.len(), pw.m * n);
            (SharedOut(d.as_mut_ptr() as *mut u8), true)
        }
    };
    let n_blocks = n.div_ceil(NC);
    let m_strips = pw.m_pad / MR;
    // Small images: split output channels too, so every thread has work.
    let threads = rayon::current_num_threads();
    let m_split = if n_blocks >= 2 * threads {
        1
    } else {
        (2 * threads).div_ceil(n_blocks).min(m_strips)
    };
    let strips_per_task = m_strips.div_ceil(m_split);
    (0..n_blocks * m_split).into_par_iter().for_each(|task| {
        let (nb, mb) = (task / m_split, task % m_split);
        let s0 = mb * strips_per_task;
        let s1 = (s0 + strips_per_task).min(m_strips);
        if s0 >= s1 {
            return;
        }
        let n0 = nb * NC;
        let nc = NC.min(n - n0);
        SCRATCH.with_borrow_mut(|(panel, acc)| {
            conv_block(pw, g, src, n0, nc, s0..s1, panel, acc);
            // SAFETY: this task alone writes rows [s0*MR, s1*MR) x columns [n0, n0+nc).
            unsafe { write_back(pw, acc, n, n0, nc, s0..s1, out.get(), out_bf16) };
        });
    });
}

/// Accumulate output channels of strips `strips` x pixels `[n0, n0+nc)` into `acc`
/// (`strips.len()*MR` rows of `nc` rounded up to `NR`).
#[allow(clippy::too_many_arguments)]
fn conv_block(
    pw: &PackedWeights,
    g: &ConvShape,
    src: Src,
    n0: usize,
    nc: usize,
    strips: std::ops::Range<usize>,
    panel: &mut Aligned,
    acc: &mut Aligned,
) {
    let n_strips = nc.div_ceil(NR);
    let ldc = n_strips * NR;
    acc.ensure(strips.len() * MR * ldc);
    let runs = runs_of(g, n0, nc);
    let k = pw.k();
    let live = g.live_taps();
    let (klo, khi) = (live.start * pw.kg, live.end * pw.kg);
    if klo == khi {
        let acc = acc.f32s();
        for (r, s) in strips.clone().enumerate() {
            for i in 0..MR {
                acc[(r * MR + i) * ldc..][..ldc].fill(pw.bias[s * MR + i]);
            }
        }
        return;
    }
    let kc_max = match pw.operands {
        Operands::F32 => KC_F32,
        Operands::Bf16 => KC_BF16,
    };
    let mut kb = klo;
    while kb < khi {
        let kc = kc_max.min(khi - kb);
        let first = kb == klo;
        match src {
            Src::F32(x) => {
                panel.ensure(n_strips * kc * NR);
                pack_f32(x, g, pw.kg, kb, kc, &runs, n_strips, nc, panel.f32s());
            }
            Src::Bf16(x) => {
                panel.ensure(n_strips * kc / 2 * NR);
                pack_bf16(x, g, pw.kg, kb, kc, &runs, n_strips, nc, panel.u32s());
            }
        }
        let acc_ptr = acc.f32s().as_mut_ptr();
        for (r, s) in strips.clone().enumerate() {
            let bias = if first {
                pw.bias[s * MR..].as_ptr()
            } else {
                std::ptr::null()
            };
            for j in 0..n_strips {
                // SAFETY: `Isa::hardware()` was checked in `conv`; the panels hold `kc` rows
                // of this strip (weights: strip `s` has `k` rows from `kb`), and `acc` has
                // `MR` rows of `ldc` floats at row `r*MR`, column `j*NR`.
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    let c = acc_ptr.add(r * MR * ldc + j * NR);
                    match pw.operands {
                        Operands::F32 => {
                            let a = (pw.data.0.as_ptr() as *const f32).add((s * k + kb) * MR);
                            let b = (panel.0.as_ptr() as *const f32).add(j * kc * NR);
                            avx512::tile_f32(kc, a, b, c, ldc, bias);
                        }
                        Operands::Bf16 => {
                            let a = (pw.data.0.as_ptr() as *const u32).add((s * k + kb) / 2 * MR);
                            let b = (panel.0.as_ptr() as *const u32).add(j * kc / 2 * NR);
                            avx512::tile_bf16(kc / 2, a, b, c, ldc, bias);
                        }
                    }
                }
                #[cfg(not(target_arch = "x86_64"))]
                let _ = (acc_ptr, bias, j);
            }
        }
        kb += kc;
    }
}

/// Copy the valid rows/columns of `acc` into the output `[m, n]`.
///
/// # Safety
/// `out` points to `m*n` f32 (or u16 when `bf16`) that no other thread writes in this block.
#[allow(clippy::too_many_arguments)]
unsafe fn write_back(
    pw: &PackedWeights,
    acc: &mut Aligned,
    n: usize,
    n0: usize,
    nc: usize,
    strips: std::ops::Range<usize>,
    out: *mut u8,
    bf16: bool,
) {
    let ldc = nc.div_ceil(NR) * NR;
    let acc = acc.f32s();
    let rows = (strips.start * MR)..(strips.end * MR).min(pw.m);
    for (r, o) in rows.enumerate() {
        let from = &acc[r * ldc..r * ldc + nc];
        if bf16 {
            let to = std::slice::from_raw_parts_mut((out as *mut u16).add(o * n + n0), nc);
            for (d, &v) in to.iter_mut().zip(from) {
                *d = half::bf16::from_f32(v).to_bits();
            }
        } else {
            let to = std::slice::from_raw_parts_mut((out as *mut f32).add(o * n + n0), nc);
            to.copy_from_slice(from);
        }
    }
}

/// Split pixels `[n0, n0+nc)` into runs that stay within one output row and one strip.
fn runs_of(g: &ConvShape, n0: usize, nc: usize) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut p = n0;
    while p < n0 + nc {
        let (row, ow0) = (p / g.wo, p % g.wo);
        let (ot, oh) = (row / g.ho, row % g.ho);
        let local = p - n0;
        let (strip, lane) = (local / NR, local % NR);
        let len = (g.wo - ow0).min(NR - lane).min(n0 + nc - p);
        runs.push(Run {
            strip,
            lane,
            len,
            ot,
            oh,
            ow0,
        });
        p += len;
    }
    runs
}

/// Values of packed `K` row `kk` for one run: input pixels, or zeros in the padding.
fn fill_run<T: Copy + Default>(x: &[T], g: &ConvShape, kg: usize, kk: usize, run: &Run, out: &mut [T]) {
    let [_, kh, kw] = g.kernel;
    let [st, sh, sw] = g.stride;
    let (dt, r) = (kk / kg, kk % kg);
    if r >= g.c * kh * kw {
        out.fill(T::default());
        return;
    }
    let (ci, dh, dw) = (r / (kh * kw), r / kw % kh, r % kw);
    let it = (run.ot * st + dt) as isize - g.front as isize;
    let ih = (run.oh * sh + dh) as isize - g.top as isize;
    if it < 0 || it >= g.t as isize || ih < 0 || ih >= g.h as isize {
        out.fill(T::default());
        return;
    }
    let row = &x[((ci * g.t + it as usize) * g.h + ih as usize) * g.w..][..g.w];
    // Input column of lane j: (ow0 + j)*sw + dw - left.
    let base = (run.ow0 * sw + dw) as isize - g.left as isize;
    if sw == 1 {
        // Lanes [j0, j1) read inside the row.
        let j0 = (-base).clamp(0, run.len as isize) as usize;
        let j1 = (g.w as isize - base).clamp(j0 as isize, run.len as isize) as usize;
        out[..j0].fill(T::default());
        let from = (base + j0 as isize) as usize;
        out[j0..j1].copy_from_slice(&row[from..from + (j1 - j0)]);
        out[j1..].fill(T::default());
    } else {
        for (j, o) in out.iter_mut().enumerate() {
            let iw = base + (j * sw) as isize;
            *o = if iw >= 0 && iw < g.w as isize {
                row[iw as usize]
            } else {
                T::default()
            };
        }
    }
}

/// Pack `K` rows `[kb, kb+kc)` of pixels `[n0, n0+nc)`: strip `j` at `j*kc*NR`, row-major
/// `kc x NR`; lanes past `nc` are zero.
#[allow(clippy::too_many_arguments)]
fn pack_f32(
    x: &[f32],
    g: &ConvShape,
    kg: usize,
    kb: usize,
    kc: usize,
    runs: &[Run],
    n_strips: usize,
    nc: usize,
    panel: &mut [f32],
) {
    if nc % NR != 0 {
        panel[(n_strips - 1) * kc * NR..n_strips * kc * NR].fill(0.0);
    }
    for kk in 0..kc {
        for run in runs {
            let at = (run.strip * kc + kk) * NR + run.lane;
            fill_run(x, g, kg, kb + kk, run, &mut panel[at..at + run.len]);
        }
    }
}

/// As [`pack_f32`] for bf16: strip `j` at `j*kc/2*NR`, `kc/2` rows of `NR` u32, each the
/// pair (row `2p` low, row `2p+1` high) that `vdpbf16ps` multiplies.
#[allow(clippy::too_many_arguments)]
fn pack_bf16(
    x: &[u16],
    g: &ConvShape,
    kg: usize,
    kb: usize,
    kc: usize,
    runs: &[Run],
    n_strips: usize,
    nc: usize,
    panel: &mut [u32],
) {
    let kc2 = kc / 2;
    if nc % NR != 0 {
        panel[(n_strips - 1) * kc2 * NR..n_strips * kc2 * NR].fill(0);
    }
    let (mut lo, mut hi) = ([0u16; NR], [0u16; NR]);
    for k2 in 0..kc2 {
        for run in runs {
            fill_run(x, g, kg, kb + 2 * k2, run, &mut lo[..run.len]);
            fill_run(x, g, kg, kb + 2 * k2 + 1, run, &mut hi[..run.len]);
            let at = (run.strip * kc2 + k2) * NR + run.lane;
            for ((d, &l), &h) in panel[at..at + run.len].iter_mut().zip(&lo).zip(&hi) {
                *d = l as u32 | (h as u32) << 16;
            }
        }
    }
}

/// Measured peak GFLOP/s of the conv's inner instruction on `threads` threads (register-only
/// loops, no memory traffic): AVX-512 FMA for `Operands::F32`, `vdpbf16ps` for
/// `Operands::Bf16`, or 256-bit FMA (`portable`) when `isa` is `Portable`. `None` where the
/// CPU lacks the instruction.
pub fn peak_gflops(isa: Isa, operands: Operands, threads: usize) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let hw = Isa::hardware();
        let (run, flop_per_iter): (unsafe fn(usize) -> f32, f64) = match (isa, operands) {
            (Isa::Portable, _) => {
                if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")) {
                    return None;
                }
                (avx512::peak::fma_avx2, 12.0 * 8.0 * 2.0)
            }
            (_, Operands::F32) if hw >= Isa::Avx512 => (avx512::peak::fma_f32, 24.0 * 16.0 * 2.0),
            (Isa::Avx512Bf16, Operands::Bf16) if hw >= Isa::Avx512Bf16 => (avx512::peak::dpbf16, 24.0 * 32.0 * 2.0),
            _ => return None,
        };
        let iters = 20_000_000;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().ok()?;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let s: f32 = pool.install(|| {
                (0..threads)
                    .into_par_iter()
                    // SAFETY: the CPU features were checked above.
                    .map(|_| unsafe { run(iters) })
                    .sum()
            });
            std::hint::black_box(s);
            best = best.min(t.elapsed().as_secs_f64());
        }
        Some(flop_per_iter * iters as f64 * threads as f64 / best / 1e9)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (isa, operands, threads);
        None
    }
}

#[cfg(test)]
mod tests;
