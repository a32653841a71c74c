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
use std::ops::Range;
use std::sync::OnceLock;

use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
pub mod avx512;
mod direct;
mod pack;

/// Output channels per register tile.
pub const MR: usize = 12;
/// Output pixels per register tile.
pub const NR: usize = 32;

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
    fn live_taps(&self) -> Range<usize> {
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
    /// Room for at least `len` values (contents unspecified: a grown buffer is fresh,
    /// not a copy of the old one).
    fn ensure(&mut self, len: usize) {
        let lines = len.div_ceil(16);
        if self.0.len() < lines {
            self.0 = vec![Line([0; 16]); lines];
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
/// `K` is ordered `(dt, dh, g, dw)` over channel groups `g`: one channel for
/// `Operands::F32`, the pair `(2g, 2g+1)` (one `u32`, zero-padded past `c`) for
/// `Operands::Bf16`. The live time taps are then one contiguous range of `K`, and each
/// `(dt, dh)` is one contiguous run of `groups*kw` rows (what the direct path walks).
/// Layout: for each strip of `MR` output channels, `K` rows of `MR` elements.
pub struct PackedWeights {
    m: usize,
    m_pad: usize,
    c: usize,
    kernel: [usize; 3],
    groups: usize,
    operands: Operands,
    data: Aligned,
    /// `m_pad` floats (zeros past `m`).
    bias: Vec<f32>,
}

impl PackedWeights {
    /// Pack `w` `[m, c, kt, kh, kw]` (f32 values; for `Operands::Bf16` already rounded to
    /// bf16, so keeping the top 16 bits is exact) and `bias` `[m]`.
    pub fn new(w: &[f32], bias: &[f32], m: usize, c: usize, kernel: [usize; 3], operands: Operands) -> Self {
        let [kt, kh, kw] = kernel;
        assert_eq!(w.len(), m * c * kt * kh * kw);
        assert_eq!(bias.len(), m);
        let groups = match operands {
            Operands::F32 => c,
            Operands::Bf16 => c.div_ceil(2),
        };
        let k = kt * kh * groups * kw;
        let m_pad = m.next_multiple_of(MR);
        let weight = |o: usize, ci: usize, dt: usize, dh: usize, dw: usize| -> f32 {
            if o >= m || ci >= c {
                return 0.0;
            }
            w[(((o * c + ci) * kt + dt) * kh + dh) * kw + dw]
        };
        let mut data = Aligned::with_len(m_pad * k);
        let d = data.u32s();
        for s in 0..m_pad / MR {
            let mut kk = 0;
            for dt in 0..kt {
                for dh in 0..kh {
                    for g in 0..groups {
                        for dw in 0..kw {
                            for i in 0..MR {
                                let o = s * MR + i;
                                d[(s * k + kk) * MR + i] = match operands {
                                    Operands::F32 => weight(o, g, dt, dh, dw).to_bits(),
                                    Operands::Bf16 => {
                                        let bits = |ci| weight(o, ci, dt, dh, dw).to_bits() >> 16;
                                        bits(2 * g) | (bits(2 * g + 1) << 16)
                                    }
                                };
                            }
                            kk += 1;
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
            groups,
            operands,
            data,
            bias: b,
        }
    }

    pub fn operands(&self) -> Operands {
        self.operands
    }

    /// Rows of `K` per time tap.
    fn per_tap(&self) -> usize {
        self.kernel[1] * self.groups * self.kernel[2]
    }

    fn k(&self) -> usize {
        self.kernel[0] * self.per_tap()
    }

    /// Weights of channel strip `s` from `K` row `kk`.
    fn a(&self, s: usize, kk: usize) -> *const u32 {
        // SAFETY: in bounds for s < m_pad/MR, kk <= k.
        unsafe { (self.data.0.as_ptr() as *const u32).add((s * self.k() + kk) * MR) }
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

/// Register strips per task: 256 output positions, whose blocks stay in L2.
const STRIPS_PER_TASK: usize = 8;

/// Lanes `[lane, lane+len)` of strip `strip` (counted from the task's first strip) hold
/// output pixels `[pixel, pixel+len)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    strip: usize,
    lane: usize,
    len: usize,
    pixel: usize,
}

/// How one path lays output positions on register strips and computes them.
trait Plan: Sync {
    /// Strips of `NR` lanes in all.
    fn strips(&self) -> usize;
    /// Runs of valid lanes of strips `strips`.
    fn runs(&self, strips: Range<usize>) -> Vec<Run>;
    /// `acc` = bias + conv for channel strips `ms` x position strips `ns` (row stride `ldc`,
    /// `ns.len()*NR` columns used).
    #[allow(clippy::too_many_arguments)]
    fn compute(
        &self,
        pw: &PackedWeights,
        ns: Range<usize>,
        runs: &[Run],
        ms: Range<usize>,
        panel: &mut Aligned,
        acc: &mut [f32],
        ldc: usize,
    );
}

/// Free the buffers the kernels keep between calls (the padded input, this thread's
/// blocks): a worker starting a case calls it, so that what an earlier, larger case left
/// does not count in this case's peak memory.
pub fn release_caches() {
    direct::release();
    SCRATCH.with(|s| *s.borrow_mut() = (Aligned::default(), Aligned::default()));
}

/// `dst = bias + conv(src)` on the AVX-512 kernels: the direct path for stride 1 in space
/// (kernel width 1 or 3), the packing path otherwise.
///
/// Panics if the operand types do not match the packed weights (`Src::Bf16` with
/// `Operands::Bf16`, `Src::F32` with `Operands::F32`), the slice lengths do not match `g`,
/// or the CPU lacks the instructions (callers check [`Isa::detect`]).
pub fn conv(pw: &PackedWeights, g: &ConvShape, src: Src, dst: Dst) {
    conv_parts(pw, g, &[src], dst)
}

/// As [`conv`] with the input given as `parts` `[c, t_i, h, w]` that follow each other in
/// time (cached frames, then the new ones), with `sum t_i = g.t`: no concatenated copy.
pub fn conv_parts(pw: &PackedWeights, g: &ConvShape, parts: &[Src], dst: Dst) {
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
    let plane = g.c * g.h * g.w;
    let mut frames = 0;
    for part in parts {
        let len = match (part, pw.operands) {
            (Src::F32(s), Operands::F32) => s.len(),
            (Src::Bf16(s), Operands::Bf16) => s.len(),
            _ => panic!("input type does not match the packed weights ({:?})", pw.operands),
        };
        assert!(
            plane > 0 && len % plane == 0,
            "input part of {len} values is not whole frames"
        );
        frames += len / plane;
    }
    assert_eq!(frames, g.t, "input parts hold {frames} frames, the shape {}", g.t);
    let n = g.pixels();
    let (out, bf16) = match dst {
        Dst::F32(d) => {
            assert_eq!(d.len(), pw.m * n);
            (SharedOut(d.as_mut_ptr() as *mut u8), false)
        }
        Dst::Bf16(d) => {
            assert_eq!(d.len(), pw.m * n);
            (SharedOut(d.as_mut_ptr() as *mut u8), true)
        }
    };
    if direct::supports(g) {
        direct::with_plan(pw, g, parts, |plan| run(pw, plan, n, out, bf16));
    } else if let [src] = parts {
        run(pw, &pack::Packing::new(g, *src), n, out, bf16);
    } else {
        // The packing path reads one buffer: join the parts (downsampling convs only).
        match pw.operands {
            Operands::F32 => {
                let x = join(parts, g.c, |p| if let Src::F32(s) = p { s } else { unreachable!() });
                run(pw, &pack::Packing::new(g, Src::F32(&x)), n, out, bf16);
            }
            Operands::Bf16 => {
                let x = join(parts, g.c, |p| if let Src::Bf16(s) = p { s } else { unreachable!() });
                run(pw, &pack::Packing::new(g, Src::Bf16(&x)), n, out, bf16);
            }
        }
    }
}

/// `[c, t_i, h, w]` parts joined along time into one `[c, sum t_i, h, w]` buffer.
fn join<'a, T: Copy + 'a>(parts: &[Src<'a>], c: usize, slice: impl Fn(&Src<'a>) -> &'a [T]) -> Vec<T> {
    let slices: Vec<&[T]> = parts.iter().map(slice).collect();
    let mut out = Vec::with_capacity(slices.iter().map(|s| s.len()).sum());
    for ci in 0..c {
        for s in &slices {
            let per = s.len() / c;
            out.extend_from_slice(&s[ci * per..(ci + 1) * per]);
        }
    }
    out
}

/// Run `plan` in parallel tasks of [`STRIPS_PER_TASK`] strips (and, for small images, a
/// share of the output channels) and write each task's block to `out`.
fn run(pw: &PackedWeights, plan: &dyn Plan, n: usize, out: SharedOut, bf16: bool) {
    let strips = plan.strips();
    let n_tasks = strips.div_ceil(STRIPS_PER_TASK);
    let m_strips = pw.m_pad / MR;
    // Small images: split output channels too, so every thread has work.
    let threads = rayon::current_num_threads();
    let m_split = if n_tasks >= 2 * threads {
        1
    } else {
        (2 * threads).div_ceil(n_tasks).min(m_strips)
    };
    let per_split = m_strips.div_ceil(m_split);
    (0..n_tasks * m_split).into_par_iter().for_each(|task| {
        let (nt, mt) = (task / m_split, task % m_split);
        let ms = mt * per_split..((mt + 1) * per_split).min(m_strips);
        if ms.is_empty() {
            return;
        }
        let ns = nt * STRIPS_PER_TASK..((nt + 1) * STRIPS_PER_TASK).min(strips);
        let runs = plan.runs(ns.clone());
        let ldc = ns.len() * NR;
        SCRATCH.with_borrow_mut(|(panel, acc)| {
            acc.ensure(ms.len() * MR * ldc);
            let acc = acc.f32s();
            plan.compute(pw, ns, &runs, ms.clone(), panel, acc, ldc);
            // SAFETY: this task alone writes output channels of strips `ms` at the pixels
            // of `runs`, which no other task's strips cover.
            unsafe { write_back(pw, acc, ldc, &runs, ms, n, out.get(), bf16) };
        });
    });
}

/// Copy the valid lanes of `acc` into the output `[m, n]`.
///
/// # Safety
/// `out` points to `m*n` f32 (or u16 when `bf16`) of which no other thread writes these.
#[allow(clippy::too_many_arguments)]
unsafe fn write_back(
    pw: &PackedWeights,
    acc: &[f32],
    ldc: usize,
    runs: &[Run],
    ms: Range<usize>,
    n: usize,
    out: *mut u8,
    bf16: bool,
) {
    let rows = (ms.start * MR)..(ms.end * MR).min(pw.m);
    for (r, o) in rows.enumerate() {
        for run in runs {
            let from = &acc[r * ldc + run.strip * NR + run.lane..][..run.len];
            let at = o * n + run.pixel;
            if bf16 {
                let to = std::slice::from_raw_parts_mut((out as *mut u16).add(at), run.len);
                for (d, &v) in to.iter_mut().zip(from) {
                    *d = half::bf16::from_f32(v).to_bits();
                }
            } else {
                std::slice::from_raw_parts_mut((out as *mut f32).add(at), run.len).copy_from_slice(from);
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
