//! Kernel and solver names sorted into families, so a profile says *how* a layer ran:
//! `naive/direct` (MIOpen's naive kernels, `naive_conv_fwd_*` and their renamed
//! `naive_conv_nonpacked_*`, direct solvers), the implicit GEMMs by vendor:
//! `implicit-gemm/cudnn` (NVIDIA's cuDNN/CUTLASS, `xmma_fprop`, cuDNN's `IMPLICIT_GEMM` and
//! `IMPLICIT_PRECOMP_GEMM`), `implicit-gemm/ck` (AMD's Composable Kernel instances and the
//! MIOpen solvers built on it, `ConvHipImplicitGemm*Group*`/`FwdXdlops`),
//! `implicit-gemm/miopen` (MIOpen's own: `ConvAsmImplicitGemm*`, `igemm_*`), `winograd`,
//! `fft`, `gemm+im2col` (im2col/vol2col, torch's `slow_conv*`, MIOpen's `GemmFwd*`),
//! `gemm` (plain matrix products: rocBLAS/Tensile `Cijk_*`, cuBLAS, `aten::bmm`),
//! `onednn` (torch's CPU convolutions through oneDNN), `copy/pad`, `resample`,
//! `attention`, `norm`, `elementwise`, else `other`.
//!
//! The rules match on fragments, lowercase, in a fixed order, so a renamed kernel that keeps
//! its family's fragment (ROCm's `naive_conv_fwd_*` -> `naive_conv_nonpacked_*`) keeps its
//! family. Must not: read profiles or logs.
use crate::report::profile::KernelRow;

/// Rules in order: the first family whose fragments one occurs in the name wins.
const RULES: &[(&str, &[&str])] = &[
    // MIOpen's assembly Winograd kernels are `miopenSp3AsmConv_*` (`..._f3x2_stride1`).
    ("winograd", &["winograd", "wino", "sp3asmconv"]),
    ("fft", &["fft"]),
    // `MIOpenConvUni.kd`: MIOpen's universal direct OpenCL kernel.
    (
        "naive/direct",
        &["naive_conv", "naiveconv", "convdirectnaive", "miopenconvuni"],
    ),
    // Transposed convolutions, before `copy/pad` takes their "transpose": torch's im2col
    // one, and the others (`ConvTranspose1d_dilated_cuda`).
    ("gemm+im2col", &["slow_conv_transpose"]),
    ("conv (other)", &["convtranspose", "conv_transpose"]),
    // NVIDIA's (cuDNN's kernels and algorithm names; underscores, unlike MIOpen's CamelCase).
    (
        "implicit-gemm/cudnn",
        &[
            "xmma_fprop",
            "fprop_implicit",
            "implicit_convolve",
            "implicit_gemm",
            "precomp_gemm",
            "cutlass_tensorop_s1688fprop",
            "fprop",
        ],
    ),
    // AMD's Composable Kernel: its instances, and the MIOpen solvers that run them.
    (
        "implicit-gemm/ck",
        &[
            "conv_fwd_xdl",
            "grouped_conv_fwd",
            "device_conv",
            "deviceconv",
            "gridwise_conv",
            "ck::",
            "convck",
            "conv_ck",
            "hipimplicitgemmgroup",
            "hipimplicitgemm3dgroup",
            "hipimplicitgemmfwdxdlops",
        ],
    ),
    // MIOpen's own implicit GEMMs (assembly `igemm_*`, the older HIP ones, MLIR's).
    ("implicit-gemm/miopen", &["implicitgemm", "igemm"]),
    (
        "copy/pad",
        &[
            "copy",
            "pad",
            "::cat",
            "cat_",
            "concat",
            "memcpy",
            "memset",
            "transpose",
            "contiguous",
            "clone",
            "fill",
            "aten::cat",
            "aten::stack",
        ],
    ),
    ("resample", &["upsample", "interpolate", "nearest"]),
    (
        "gemm+im2col",
        &[
            "im2col",
            "2col",
            "vol2col",
            "slow_conv",
            "gemmfwd",
            "gemm_fwd",
            "gemmbwd",
            "gemmwrw",
        ],
    ),
    (
        "naive/direct",
        &[
            "direct",
            "convocl",
            "conv_fwd_nchw",
            "convolution_forward_direct",
            // MIOpen's assembly direct solvers (`ConvAsm3x3U`, `ConvAsm1x1U`, ...).
            "convasm1x1",
            "convasm3x3",
            "convasm5x10",
            "convasm7x7",
        ],
    ),
    ("onednn", &["mkldnn", "onednn", "dnnl", "brgconv", "jit:"]),
    (
        "attention",
        &["softmax", "flash", "fmha", "attention", "sdpa", "scaled_dot_product"],
    ),
    (
        "gemm",
        &[
            "gemm",
            "cijk_",
            "bmm",
            "matmul",
            "aten::mm",
            "aten::addmm",
            "aten::linear",
            "cublas",
            "hipblas",
        ],
    ),
    ("norm", &["norm", "rms", "var_mean", "aten::mean", "reduce"]),
    (
        "elementwise",
        &[
            "elementwise",
            "aten::add",
            "aten::mul",
            "aten::sub",
            "aten::div",
            "silu",
            "sigmoid",
            "aten::where",
            "aten::clamp",
            "aten::rsqrt",
            "aten::sqrt",
            "aten::pow",
            "gelu",
            "aten::neg",
            "vectorized",
        ],
    ),
    ("conv (other)", &["conv"]),
];

/// The family of a kernel, operator or solver name.
pub fn family(name: &str) -> &'static str {
    let n = name.to_ascii_lowercase();
    RULES
        .iter()
        .find(|(_, frags)| frags.iter().any(|f| n.contains(f)))
        .map_or("other", |(fam, _)| fam)
}

/// A layer's kernels merged by name, classified, with their shares of the layer's
/// kernel time, costliest first.
pub fn finish(kernels: &mut Vec<KernelRow>) {
    let mut merged: Vec<KernelRow> = Vec::new();
    for k in kernels.drain(..) {
        match merged.iter_mut().find(|m| m.name == k.name) {
            Some(m) => {
                m.ms += k.ms;
                m.calls += k.calls;
            }
            None => merged.push(k),
        }
    }
    let total: f64 = merged.iter().map(|k| k.ms).sum();
    for k in &mut merged {
        k.family = family(&k.name).to_string();
        k.share = if total > 0.0 { k.ms / total } else { 0.0 };
    }
    merged.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.name.cmp(&b.name)));
    *kernels = merged;
}

#[cfg(test)]
mod tests {
    use super::family;

    #[test]
    fn rocm_kernels_keep_their_family_across_renames() {
        // ROCm 6.x's naive kernels, and the name ComfyUI #5759's trace shows after the rename.
        for name in [
            "naive_conv_fwd_ncdhw_float_double_float",
            "naive_conv_nonpacked_fwd_ncdhw_half_double_half",
            "naive_conv_nonpacked_fwd_ndhwc_bfloat16_double_bfloat16",
            "ConvDirectNaiveConvFwd",
        ] {
            assert_eq!(family(name), "naive/direct", "{name}");
        }
        assert_eq!(family("ConvOclDirectFwd1x1"), "naive/direct");
    }

    #[test]
    fn gpu_convolution_families() {
        let cases = [
            // cuDNN on Hopper (Nsight's kernel names), and its older implicit GEMM.
            (
                "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x32_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
                "implicit-gemm/cudnn",
            ),
            ("void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)", "implicit-gemm/cudnn"),
            ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x32x32_stage4_warpsize2x1x1_g1_tensor16x8x8", "implicit-gemm/cudnn"),
            // cuDNN's algorithm names, as candle's cuDNN plans record them.
            ("IMPLICIT_PRECOMP_GEMM", "implicit-gemm/cudnn"),
            ("cuDNN IMPLICIT_GEMM (FMA math)", "implicit-gemm/cudnn"),
            ("ampere_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", "winograd"),
            ("void fft3d_r2c_32x32x32<float, float, float2>(float2*, float const*)", "fft"),
            // MIOpen solvers (MIOPEN_LOG_LEVEL=5 names) and composable-kernel instances.
            ("ConvBinWinogradRxSf2x3g1", "winograd"),
            ("ConvMPBidirectWinograd<3-3>", "winograd"),
            ("ConvHipImplicitGemmGroupFwdXdlops", "implicit-gemm/ck"),
            ("ConvHipImplicitGemmFwdXdlops", "implicit-gemm/ck"),
            ("ConvAsmImplicitGemmGTCDynamicFwdXdlopsNHWC", "implicit-gemm/miopen"),
            ("ConvHipImplicitGemmV4R1Fwd", "implicit-gemm/miopen"),
            ("ConvHipImplicitGemm3DGroupFwdXdlops", "implicit-gemm/ck"),
            ("kernel_grouped_conv_fwd_multiple_abd_xdl_cshuffle<ck::GridwiseGemmMultipleABD_xdl_cshuffle<...MNKPadding>>", "implicit-gemm/ck"),
            ("igemm_fwd_gtcx3_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws2x2_wv0_2x2_cshuffle", "implicit-gemm/miopen"),
            ("GemmFwdRest", "gemm+im2col"),
            // Real ROCm names (tests/fixtures/rocm: MIOpen #3860, tensorflow-upstream #1110).
            ("miopenSp3AsmConv_v30_3_1_gfx11_fp16_dot2_f3x2_stride1", "winograd"),
            ("miopenSp3AsmConv_v21_1_3_gfx10_f3x2_fp32_stride1_group", "winograd"),
            ("MIOpenConvUni.kd", "naive/direct"),
            ("MIOpenConvUni", "naive/direct"),
            ("ConvAsm3x3U", "naive/direct"),
            ("ConvTranspose1d_dilated_cuda", "conv (other)"),
            ("aten::slow_conv_transpose2d", "gemm+im2col"),
            ("GemmWrwUniversal", "gemm+im2col"),
            ("Im2d2ColGPU", "gemm+im2col"),
            ("Cijk_Ailk_Bljk_SB_MT128x128x16_MI32x32x2x1_SN_1LDSB0_APM1", "gemm"),
            // torch's own CUDA/HIP kernels around the convolutions.
            ("void at::native::(anonymous namespace)::replication_pad_forward_kernel3d<float>(at::GenericPackedTensorAccessor<float, 5ul, at::DefaultPtrTraits, long>, at::GenericPackedTensorAccessor<float, 5ul, at::DefaultPtrTraits, long>, int, int, int, int, int, int)", "copy/pad"),
            ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<...>)", "copy/pad"),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", "elementwise"),
            ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 5, 64, 64>", "copy/pad"),
            ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)", "attention"),
            ("void at::native::upsample_nearest3d_out_frame<float, &at::native::nearest_neighbor_exact_compute_source_index>(float const*, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, float*, float, float, float)", "resample"),
        ];
        for (name, want) in cases {
            assert_eq!(family(name), want, "{name}");
        }
    }

    #[test]
    fn cpu_operators() {
        for (name, want) in [
            ("aten::mkldnn_convolution", "onednn"),
            ("aten::slow_conv3d_forward", "gemm+im2col"),
            ("aten::constant_pad_nd", "copy/pad"),
            ("aten::copy_", "copy/pad"),
            ("aten::cat", "copy/pad"),
            ("aten::silu", "elementwise"),
            ("aten::linalg_vector_norm", "norm"),
            ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"),
            ("aten::bmm", "gemm"),
            ("aten::_upsample_nearest_exact2d", "resample"),
            ("aten::empty", "other"),
        ] {
            assert_eq!(family(name), want, "{name}");
        }
    }
}
