//! cuDNN's choices as plain data, so that they are tested without a GPU: what a plan is
//! cached under ([`PlanKey`]: the GPU, not candle's per-instance device id), which of the
//! algorithms its heuristics rank ([`Candidate`]) a convolution runs under the case's math
//! ([`MathPolicy`], [`choose`], [`choose_within`]), the names and families recorded for them,
//! the workspace cap sized from the GPU's free memory ([`workspace_cap`]) and what it passed
//! over ([`PassedOver`]), how the one workspace grows ([`grow_workspace`]), what a handle
//! needs when another candle device of the same GPU asks ([`handle_action`]), the descriptor
//! arithmetic ([`packed_strides`], [`fits_int`], [`out_dims`]) and cuDNN's version number.
//!
//! The math: fp32 is true fp32 unless the case allows TF32 (cuDNN's default math type lets
//! Ampere and newer GPUs run fp32 convolutions in TF32, so true fp32 takes `FMA` math, as
//! torch does with `allow_tf32` off); bf16 runs on tensor cores with fp32 accumulation
//! (cuDNN's `PSEUDO_BFLOAT16_CONFIG`: bf16 tensors, float compute type). cuDNN's heuristics
//! may rank an algorithm under another math type than the descriptor's (oneflow #3460,
//! pytorch #9486): the chosen candidate's math type is set on the descriptor before its
//! workspace is asked for and it runs, and a candidate whose math the case does not allow is
//! skipped.
//!
//! Must not: call cuDNN (that is `cudnn.rs`).

/// What the workspace cap leaves free for the tensors still to come: 2 GiB.
pub const WORKSPACE_RESERVE_BYTES: usize = 2 << 30;

/// The most workspace one convolution may use when its plan is built with `free` bytes of
/// the GPU free: half of what is free beyond [`WORKSPACE_RESERVE_BYTES`]. torch (cuDNN's v8
/// frontend, benchmark off) has no cap of its own: it takes the first engine whose workspace
/// its allocator can give, so a fixed cap would pass over algorithms torch runs. The one
/// shared workspace stays allocated for the whole case (torch's goes back to its cache after
/// each call), hence half and a reserve rather than all of it. An algorithm that wants more
/// is passed over for the next one cuDNN ranks, and the record says so ([`PassedOver`]).
pub fn workspace_cap(free: usize) -> usize {
    free.saturating_sub(WORKSPACE_RESERVE_BYTES) / 2
}

/// cuDNN's forward algorithms (`cudnnConvolutionFwdAlgo_t`, in its order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algo {
    ImplicitGemm,
    ImplicitPrecompGemm,
    Gemm,
    Direct,
    Fft,
    FftTiling,
    Winograd,
    WinogradNonfused,
}

impl Algo {
    /// From cuDNN's number (`None` for `COUNT` and unknown values).
    pub fn from_index(i: u32) -> Option<Algo> {
        use Algo::*;
        [
            ImplicitGemm,
            ImplicitPrecompGemm,
            Gemm,
            Direct,
            Fft,
            FftTiling,
            Winograd,
            WinogradNonfused,
        ]
        .get(i as usize)
        .copied()
    }

    /// cuDNN's name without `CUDNN_CONVOLUTION_FWD_ALGO_`.
    pub fn name(self) -> &'static str {
        use Algo::*;
        match self {
            ImplicitGemm => "IMPLICIT_GEMM",
            ImplicitPrecompGemm => "IMPLICIT_PRECOMP_GEMM",
            Gemm => "GEMM",
            Direct => "DIRECT",
            Fft => "FFT",
            FftTiling => "FFT_TILING",
            Winograd => "WINOGRAD",
            WinogradNonfused => "WINOGRAD_NONFUSED",
        }
    }

    /// Its kernel family, by vendor (`crate::report::profile::kernels`' names): cuDNN's implicit
    /// GEMMs are NVIDIA's, not AMD's Composable Kernel; `GEMM` builds an im2col matrix.
    pub fn family(self) -> &'static str {
        use Algo::*;
        match self {
            ImplicitGemm | ImplicitPrecompGemm => "implicit-gemm/cudnn",
            Gemm => "gemm+im2col",
            Direct => "naive/direct",
            Fft | FftTiling => "fft",
            Winograd | WinogradNonfused => "winograd",
        }
    }
}

/// cuDNN's math types (`cudnnMathType_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathType {
    /// Lets fp32 run in TF32 on Ampere and newer.
    Default,
    TensorOp,
    /// Tensor cores with down-conversion of fp32 to fp16: never allowed here.
    TensorOpAllowConversion,
    /// FMA instructions only: true fp32.
    Fma,
}

impl MathType {
    pub fn from_index(i: u32) -> Option<MathType> {
        use MathType::*;
        [Default, TensorOp, TensorOpAllowConversion, Fma]
            .get(i as usize)
            .copied()
    }

    pub fn index(self) -> u32 {
        self as u32
    }

    /// cuDNN's name without `CUDNN_` and `_MATH`.
    pub fn name(self) -> &'static str {
        match self {
            MathType::Default => "DEFAULT",
            MathType::TensorOp => "TENSOR_OP",
            MathType::TensorOpAllowConversion => "TENSOR_OP_ALLOW_CONVERSION",
            MathType::Fma => "FMA",
        }
    }
}

/// The math a case allows a convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathPolicy {
    /// fp32, no TF32 (the numerics standard's default).
    TrueFp32,
    /// fp32 with TF32 allowed (the case's `tf32 = "on"`).
    Tf32,
    /// bf16 tensors, fp32 accumulation, tensor cores.
    Bf16,
}

impl MathPolicy {
    /// The math type set on the descriptor before asking the heuristics.
    pub fn initial(self) -> MathType {
        match self {
            MathPolicy::TrueFp32 => MathType::Fma,
            MathPolicy::Tf32 => MathType::Default,
            MathPolicy::Bf16 => MathType::TensorOp,
        }
    }

    /// Whether a candidate ranked under `math` may run.
    pub fn allows(self, math: MathType) -> bool {
        match self {
            MathPolicy::TrueFp32 => math == MathType::Fma,
            MathPolicy::Tf32 | MathPolicy::Bf16 => math != MathType::TensorOpAllowConversion,
        }
    }

    /// How the case record says it.
    pub fn describe(self) -> &'static str {
        match self {
            MathPolicy::TrueFp32 => "fp32: FMA math (no TF32)",
            MathPolicy::Tf32 => "fp32 with TF32 allowed (tf32 on): cuDNN's default math",
            MathPolicy::Bf16 => "bf16 on tensor cores, fp32 accumulation",
        }
    }
}

impl MathPolicy {
    /// The math of a convolution in `dtype` when the case allows TF32 (`tf32`) or not;
    /// `None` for dtypes the plans do not cover (candle's path runs them).
    pub fn for_dtype(dtype: candle_core::DType, tf32: bool) -> Option<MathPolicy> {
        match dtype {
            candle_core::DType::F32 if tf32 => Some(MathPolicy::Tf32),
            candle_core::DType::F32 => Some(MathPolicy::TrueFp32),
            candle_core::DType::BF16 => Some(MathPolicy::Bf16),
            _ => None,
        }
    }
}

/// What a plan (descriptors, algorithm, workspace size) is cached under: one per distinct
/// convolution on a GPU. `D` names the GPU (its ordinal on CUDA): not candle's `DeviceId`,
/// which is new for every candle device, so a plan built in one case serves the next.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlanKey<D> {
    pub device: D,
    pub dtype: candle_core::DType,
    /// `[B, C, T, H, W]`, after the explicit padding.
    pub x: [usize; 5],
    /// `[O, C, kT, kH, kW]`.
    pub w: [usize; 5],
    pub stride: [usize; 3],
    /// The library's symmetric padding.
    pub pad: [usize; 3],
    pub policy: MathPolicy,
}

impl<D> PlanKey<D> {
    /// The key of convolving `x` with `w` on `device` in `dtype` (math from `tf32`); `None`
    /// when the dims are not 5-D or the dtype has no plan.
    pub fn new(
        device: D,
        dtype: candle_core::DType,
        x: &[usize],
        w: &[usize],
        stride: [usize; 3],
        pad: [usize; 3],
        tf32: bool,
    ) -> Option<PlanKey<D>> {
        Some(PlanKey {
            device,
            dtype,
            x: x.try_into().ok()?,
            w: w.try_into().ok()?,
            stride,
            pad,
            policy: MathPolicy::for_dtype(dtype, tf32)?,
        })
    }
}

/// One entry of cuDNN's ranking (`cudnnConvolutionFwdAlgoPerf_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// `None`: a number this build does not know.
    pub algo: Option<Algo>,
    /// `status == CUDNN_STATUS_SUCCESS`.
    pub ok: bool,
    /// Its workspace, bytes.
    pub memory: usize,
    /// `None`: a number this build does not know.
    pub math: Option<MathType>,
}

/// The first candidate, in cuDNN's order, that succeeded, is known, runs under a math type
/// `policy` allows and needs at most `cap` bytes of workspace: its index.
pub fn choose(candidates: &[Candidate], policy: MathPolicy, cap: usize) -> Option<usize> {
    candidates
        .iter()
        .position(|c| c.ok && c.algo.is_some() && c.math.is_some_and(|m| policy.allows(m)) && c.memory <= cap)
}

/// The first algorithm the math allowed, passed over because its workspace was over the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassedOver {
    /// Its place in the ranking.
    pub index: usize,
    pub algo: Algo,
    pub math: MathType,
    /// The workspace it wanted under its own math type, bytes.
    pub wanted: usize,
    /// The cap it was over, bytes.
    pub cap: usize,
}

impl PassedOver {
    /// How the plan record says it.
    pub fn describe(&self, by: &str) -> String {
        let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
        format!(
            "{by}'s first choice {} ({} math, rank {}) wanted {:.2} GiB of workspace, over the cap of {:.2} GiB",
            self.algo.name(),
            self.math.name(),
            self.index,
            gib(self.wanted),
            gib(self.cap)
        )
    }
}

/// The algorithm a plan runs: the first candidate, in cuDNN's order, that [`choose`] allows
/// (its ranking's workspace ignored) whose workspace asked under its own math type
/// (`workspace_of(index)`, cuDNN's `cudnnGetConvolutionForwardWorkspaceSize` after the math
/// type is set) is at most `cap`; with the first allowed candidate when that one was passed
/// over for its workspace. `None`: no allowed candidate fits.
pub fn choose_within<E>(
    candidates: &[Candidate],
    policy: MathPolicy,
    cap: usize,
    mut workspace_of: impl FnMut(usize) -> Result<usize, E>,
) -> Result<Option<(usize, usize, Option<PassedOver>)>, E> {
    let mut passed = None;
    let mut from = 0;
    while let Some(i) = choose(&candidates[from..], policy, usize::MAX).map(|i| i + from) {
        let ws = workspace_of(i)?;
        if ws <= cap {
            return Ok(Some((i, ws, passed)));
        }
        let c = &candidates[i];
        passed.get_or_insert(PassedOver {
            index: i,
            algo: c.algo.expect("choose takes known algorithms"),
            math: c.math.expect("choose takes known math types"),
            wanted: ws,
            cap,
        });
        from = i + 1;
    }
    Ok(None)
}

/// What a GPU's cuDNN handle needs when a candle device of that GPU asks for it: candle makes
/// a device (with its own id) per case, all on the GPU's primary context, so the handle, the
/// plans and the workspace are kept per GPU, and the handle only follows the asking device's
/// stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleAction {
    /// No handle for this GPU yet.
    Create,
    /// The handle runs on this stream already.
    Reuse,
    /// Set the handle's stream to the asking device's.
    SetStream,
}

/// The [`HandleAction`] for a GPU whose handle runs on `have` (`None`: no handle) when a
/// device on `stream` asks.
pub fn handle_action<S: PartialEq>(have: Option<&S>, stream: &S) -> HandleAction {
    match have {
        None => HandleAction::Create,
        Some(s) if s == stream => HandleAction::Reuse,
        Some(_) => HandleAction::SetStream,
    }
}

/// The size the one shared workspace must be reallocated to for a convolution that needs
/// `need` bytes when it holds `have` (`None`: it is large enough; it never shrinks, and it
/// is not cleared between calls).
pub fn grow_workspace(have: usize, need: usize) -> Option<usize> {
    (need > have).then_some(need)
}

/// cuDNN's version number as `major.minor.patch` (cuDNN 9: `MMmmpp`, e.g. 91900; cuDNN 8
/// and older: `Mmpp`, e.g. 8907).
pub fn version_string(v: usize) -> String {
    if v >= 90000 {
        format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    } else {
        format!("{}.{}.{}", v / 1000, v / 100 % 10, v % 100)
    }
}

/// The packed (contiguous NCDHW) strides of `dims`.
pub fn packed_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// Whether cuDNN's legacy API (C `int` dims and strides) can describe a packed tensor of
/// `dims`: every dim and stride, and the element count, below 2^31. Larger tensors take
/// candle's path.
pub fn fits_int(dims: &[usize]) -> bool {
    let max = i32::MAX as usize;
    let count = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    count.is_some_and(|n| n <= max) && dims.iter().all(|&d| d <= max)
}

/// `[B, O, To, Ho, Wo]` of input `x` `[B, C, T, H, W]` and weight `w` `[O, C, kT, kH, kW]`
/// with `stride` and symmetric padding `pad`, as cuDNN computes it; `None` when the
/// channels differ or the padded input is smaller than the kernel.
pub fn out_dims(x: [usize; 5], w: [usize; 5], stride: [usize; 3], pad: [usize; 3]) -> Option<[usize; 5]> {
    if x[1] != w[1] || stride.contains(&0) {
        return None;
    }
    let mut out = [x[0], w[0], 0, 0, 0];
    for d in 0..3 {
        let padded = x[2 + d] + 2 * pad[d];
        if padded < w[2 + d] {
            return None;
        }
        out[2 + d] = (padded - w[2 + d]) / stride[d] + 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: usize = 1 << 30;

    fn cand(algo: u32, ok: bool, memory: usize, math: MathType) -> Candidate {
        Candidate {
            algo: Algo::from_index(algo),
            ok,
            memory,
            math: Some(math),
        }
    }

    #[test]
    fn true_fp32_runs_only_fma_math_and_the_first_allowed_candidate_wins() {
        use MathType::*;
        // As cuDNN may rank: a TF32 kernel first (DEFAULT math), then FMA ones.
        let ranked = [
            cand(1, true, 1 << 20, Default),
            cand(1, true, 1 << 20, Fma),
            cand(0, true, 0, Fma),
        ];
        assert_eq!(choose(&ranked, MathPolicy::TrueFp32, CAP), Some(1));
        assert_eq!(choose(&ranked, MathPolicy::Tf32, CAP), Some(0));
        // Nothing under FMA math: no choice (the convolution takes candle's path).
        assert_eq!(choose(&ranked[..1], MathPolicy::TrueFp32, CAP), None);
    }

    #[test]
    fn failed_unknown_converting_or_too_large_candidates_are_passed_over() {
        use MathType::*;
        let ranked = [
            cand(4, false, 0, TensorOp), // status not success
            Candidate {
                algo: None,
                ok: true,
                memory: 0,
                math: Some(TensorOp),
            }, // unknown algo
            cand(5, true, 3 << 30, TensorOp), // over the cap
            cand(1, true, 64, TensorOpAllowConversion), // fp16 down-conversion
            cand(6, true, 64, TensorOp),
        ];
        assert_eq!(choose(&ranked, MathPolicy::Bf16, CAP), Some(4));
        assert_eq!(
            choose(&ranked, MathPolicy::Bf16, 1 << 40),
            Some(2),
            "a larger cap takes FFT_TILING"
        );
        assert_eq!(choose(&[], MathPolicy::Bf16, CAP), None);
    }

    #[test]
    fn the_descriptor_starts_in_the_policys_math() {
        assert_eq!(MathPolicy::TrueFp32.initial(), MathType::Fma);
        assert_eq!(MathPolicy::Tf32.initial(), MathType::Default);
        assert_eq!(MathPolicy::Bf16.initial(), MathType::TensorOp);
        for m in [0, 1, 2, 3] {
            assert_eq!(MathType::from_index(m).unwrap().index(), m);
        }
        assert_eq!(MathType::from_index(4), None);
    }

    #[test]
    fn algorithms_are_named_as_cudnn_and_filed_by_vendor() {
        let names: Vec<_> = (0..8).map(|i| Algo::from_index(i).unwrap().name()).collect();
        assert_eq!(names[1], "IMPLICIT_PRECOMP_GEMM");
        assert_eq!(names[7], "WINOGRAD_NONFUSED");
        assert_eq!(
            Algo::from_index(8),
            None,
            "CUDNN_CONVOLUTION_FWD_ALGO_COUNT is no algorithm"
        );
        assert_eq!(Algo::ImplicitPrecompGemm.family(), "implicit-gemm/cudnn");
        // The families agree with the kernel-name rules where a name says it.
        for a in [Algo::Winograd, Algo::Fft, Algo::FftTiling, Algo::ImplicitGemm] {
            assert_eq!(
                crate::report::profile::kernels::family(a.name()),
                a.family(),
                "{}",
                a.name()
            );
        }
    }

    #[test]
    fn one_plan_per_device_dtype_shape_stride_padding_and_math() {
        use candle_core::DType::{BF16, F16, F32};
        use std::collections::HashSet;
        let x = [1, 96, 6, 480, 832];
        let w = [96, 96, 3, 3, 3];
        let key = |dev: u32, dt, x: &[usize], st, pad, tf32| PlanKey::new(dev, dt, x, &w, st, pad, tf32).unwrap();
        let base = key(0, F32, &x, [1; 3], [0, 1, 1], false);
        assert_eq!(
            base,
            key(0, F32, &x, [1; 3], [0, 1, 1], false),
            "the same convolution: one plan"
        );
        assert_eq!(base.policy, MathPolicy::TrueFp32);
        let others = [
            key(1, F32, &x, [1; 3], [0, 1, 1], false),                    // another device
            key(0, BF16, &x, [1; 3], [0, 1, 1], false),                   // another dtype
            key(0, F32, &[1, 96, 5, 480, 832], [1; 3], [0, 1, 1], false), // another frame count
            key(0, F32, &x, [1, 2, 2], [0, 1, 1], false),                 // another stride
            key(0, F32, &x, [1; 3], [0, 0, 0], false),                    // another padding
            key(0, F32, &x, [1; 3], [0, 1, 1], true),                     // TF32 allowed
        ];
        let mut set: HashSet<_> = others.iter().cloned().collect();
        assert_eq!(set.len(), others.len());
        assert!(set.insert(base), "differs from every one");
        assert_eq!(others[5].policy, MathPolicy::Tf32);
        assert_eq!(
            key(0, BF16, &x, [1; 3], [0; 3], true).policy,
            MathPolicy::Bf16,
            "TF32 is fp32's only"
        );
        assert!(
            PlanKey::new(0, F16, &x, &w, [1; 3], [0; 3], false).is_none(),
            "no plan for f16"
        );
        assert!(
            PlanKey::new(0, F32, &x[..4], &w, [1; 3], [0; 3], false).is_none(),
            "4-D is not a plan's"
        );
    }

    #[test]
    fn the_workspace_only_grows() {
        assert_eq!(grow_workspace(0, 0), None);
        assert_eq!(grow_workspace(0, 4096), Some(4096));
        assert_eq!(grow_workspace(1 << 20, 4096), None);
        assert_eq!(grow_workspace(4096, 1 << 20), Some(1 << 20));
    }

    #[test]
    fn versions_and_descriptor_arithmetic() {
        assert_eq!(version_string(91900), "9.19.0");
        assert_eq!(version_string(90201), "9.2.1");
        assert_eq!(version_string(8907), "8.9.7");
        assert_eq!(
            packed_strides(&[1, 96, 6, 480, 832]),
            [96 * 6 * 480 * 832, 6 * 480 * 832, 480 * 832, 832, 1]
        );
        assert!(fits_int(&[1, 96, 6, 480, 832]));
        // 2^31 elements or more: not describable with C ints.
        assert!(!fits_int(&[1, 1024, 16, 384, 384]));
        assert!(!fits_int(&[usize::MAX, 2]));
        // Causal 3x3x3 after the explicit front frames: T + 2 frames in, T out; space kept.
        assert_eq!(
            out_dims([1, 96, 6, 480, 832], [96, 96, 3, 3, 3], [1, 1, 1], [0, 1, 1]),
            Some([1, 96, 4, 480, 832])
        );
        // Downsampling after its right/bottom pad: stride 2, 481x833 -> 240x416.
        assert_eq!(
            out_dims([1, 96, 4, 481, 833], [96, 96, 1, 3, 3], [1, 2, 2], [0, 0, 0]),
            Some([1, 96, 4, 240, 416])
        );
        // The time conv of downsample3d: stride 2 in time.
        assert_eq!(
            out_dims([1, 192, 5, 120, 208], [192, 192, 3, 1, 1], [2, 1, 1], [0; 3]),
            Some([1, 192, 2, 120, 208])
        );
        assert_eq!(
            out_dims([1, 3, 1, 4, 4], [8, 4, 1, 1, 1], [1; 3], [0; 3]),
            None,
            "channels differ"
        );
        assert_eq!(
            out_dims([1, 3, 1, 4, 4], [8, 3, 3, 1, 1], [1; 3], [0; 3]),
            None,
            "kernel longer than input"
        );
    }

    #[test]
    fn the_cap_follows_free_memory_and_keeps_a_reserve() {
        const GIB: usize = 1 << 30;
        // An H200 with 139 GiB free: 68.5 GiB; a 24 GiB card with 20 GiB free: 9 GiB.
        assert_eq!(workspace_cap(139 * GIB), 137 * GIB / 2);
        assert_eq!(workspace_cap(20 * GIB), 9 * GIB);
        // Less free than the reserve: no workspace at all (zero-workspace algorithms only).
        assert_eq!(workspace_cap(GIB), 0);
        assert_eq!(workspace_cap(0), 0);
    }

    #[test]
    fn a_first_choice_over_the_cap_is_passed_over_and_said() {
        use MathType::*;
        const GIB: usize = 1 << 30;
        // The ranking's own workspace figures are not what decides: the size asked under the
        // candidate's math type is (here FFT_TILING wants 3 GiB once asked).
        let ranked = [
            cand(1, true, 64, Default), // TF32: not allowed in true fp32
            cand(5, true, 0, Fma),      // FFT_TILING
            cand(1, true, 0, Fma),      // IMPLICIT_PRECOMP_GEMM
        ];
        let sizes = [0usize, 3 * GIB, 8 << 20];
        let asked = |i: usize| -> Result<usize, ()> { Ok(sizes[i]) };
        // A cap from an H200's free memory: the first choice runs, nothing passed over.
        assert_eq!(
            choose_within(&ranked, MathPolicy::TrueFp32, workspace_cap(139 * GIB), asked),
            Ok(Some((1, 3 * GIB, None)))
        );
        // A 1 GiB cap (the old fixed one): the second allowed one runs, the first is recorded.
        let (i, ws, passed) = choose_within(&ranked, MathPolicy::TrueFp32, GIB, asked)
            .unwrap()
            .unwrap();
        assert_eq!((i, ws), (2, 8 << 20));
        let p = passed.expect("the first choice was passed over");
        assert_eq!(
            (p.index, p.algo, p.math, p.wanted, p.cap),
            (1, Algo::FftTiling, Fma, 3 * GIB, GIB)
        );
        assert_eq!(
            p.describe("heuristics"),
            "heuristics's first choice FFT_TILING (FMA math, rank 1) wanted 3.00 GiB of workspace, over the cap of 1.00 GiB"
        );
        // Nothing fits: no choice (candle's path runs it, and the check fails the case).
        assert_eq!(choose_within(&ranked, MathPolicy::TrueFp32, 1 << 20, asked), Ok(None));
        // The search's fastest, re-checked against the cap measured after the search: a
        // smaller cap then takes the next the math allows.
        let searched = [cand(5, true, 3 * GIB, Fma), cand(0, true, 0, Fma)];
        let after = |i: usize| -> Result<usize, ()> { Ok([3 * GIB, 0][i]) };
        assert_eq!(
            choose_within(&searched, MathPolicy::TrueFp32, workspace_cap(6 * GIB), after)
                .unwrap()
                .map(|(i, _, p)| (i, p.map(|p| p.index))),
            Some((1, Some(0)))
        );
        // An error asking the size is the caller's.
        assert_eq!(
            choose_within(&ranked, MathPolicy::TrueFp32, GIB, |_| Err("cuDNN")),
            Err("cuDNN")
        );
    }

    #[test]
    fn a_gpus_handle_is_made_once_and_follows_the_asking_devices_stream() {
        // Each case makes a candle device of its own (a new DeviceId) on the same GPU.
        assert_eq!(handle_action::<u64>(None, &7), HandleAction::Create);
        assert_eq!(handle_action(Some(&7u64), &7), HandleAction::Reuse);
        assert_eq!(handle_action(Some(&7u64), &9), HandleAction::SetStream);
        // The plan key names the GPU: two devices of GPU 0 share every plan.
        let x = [1, 96, 6, 480, 832];
        let w = [96, 96, 3, 3, 3];
        let gpu0_case1 = PlanKey::new(0usize, candle_core::DType::F32, &x, &w, [1; 3], [0, 1, 1], false);
        let gpu0_case2 = PlanKey::new(0usize, candle_core::DType::F32, &x, &w, [1; 3], [0, 1, 1], false);
        assert_eq!(gpu0_case1, gpu0_case2);
    }
}
