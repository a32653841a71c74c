//! cuDNN's choices as plain data, so that they are tested without a GPU: what a plan is
//! cached under ([`PlanKey`]), which of the algorithms its heuristics rank ([`Candidate`]) a
//! convolution runs under the case's math ([`MathPolicy`], [`choose`]), the names and families recorded for them, the workspace
//! cap and how the one workspace grows ([`grow_workspace`]), the descriptor arithmetic
//! ([`packed_strides`], [`fits_int`], [`out_dims`]) and cuDNN's version number.
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

/// The most workspace one convolution may use: 1 GiB. An algorithm that wants more is
/// passed over for the next one cuDNN ranks. (Implicit-GEMM algorithms want little; FFT ones
/// can want several GiB, and the workspace counts in the process's device memory.)
pub const WORKSPACE_CAP_BYTES: usize = 1 << 30;

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
/// convolution on a device. `D` names the device (candle's `DeviceId` on CUDA).
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
        assert_eq!(choose(&ranked, MathPolicy::TrueFp32, WORKSPACE_CAP_BYTES), Some(1));
        assert_eq!(choose(&ranked, MathPolicy::Tf32, WORKSPACE_CAP_BYTES), Some(0));
        // Nothing under FMA math: no choice (the convolution takes candle's path).
        assert_eq!(choose(&ranked[..1], MathPolicy::TrueFp32, WORKSPACE_CAP_BYTES), None);
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
        assert_eq!(choose(&ranked, MathPolicy::Bf16, WORKSPACE_CAP_BYTES), Some(4));
        assert_eq!(
            choose(&ranked, MathPolicy::Bf16, 1 << 40),
            Some(2),
            "a larger cap takes FFT_TILING"
        );
        assert_eq!(choose(&[], MathPolicy::Bf16, WORKSPACE_CAP_BYTES), None);
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
}
