//! Which environment variables can act on a case (issue 63, item 3): a variable of a
//! library the case's engine never loads on its device (MIOpen, rocBLAS or hipBLASLt on a
//! CPU or NVIDIA case; cuDNN or cuBLAS on a CPU or AMD case; anything of torch on candle;
//! rayon's on a torch engine) cannot have changed what the case measured, whatever the
//! clock said. The answer measures such a variable when asked but never advises it
//! (`analysis::answer::apply`), as the `miopen_db` knob is `n/a` where it cannot act.
//!
//! The families are the variables' documented prefixes and names, kept narrow: a variable
//! that is not clearly one library's is [`Reach::Unknown`] (advised only when it beats the
//! machine's drift with its value alone changed), never called inert by a guess. Variables
//! HIP reads under CUDA's names (`CUDA_VISIBLE_DEVICES`, `PYTORCH_CUDA_ALLOC_CONF`) act on
//! any GPU.
//!
//! Must not: read reports or decide verdicts.
use crate::machine::system::GpuVendors;
use crate::report::values::Engine;

/// Whether a variable can act on a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// A library the case's engine loads on its device reads it.
    Acts,
    /// No code of the case reads it: why, in words (`MIOpen's, which torch never loads on the CPU`).
    CannotAct(String),
    /// The tool does not know which library reads it.
    Unknown,
}

/// Who reads a family of variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// AMD's GPU libraries and runtime (MIOpen, rocBLAS, hipBLASLt, Tensile, HIP, HSA).
    Amd(&'static str),
    /// NVIDIA's (cuDNN, cuBLAS, the CUDA runtime).
    Nvidia(&'static str),
    /// PyTorch's own (and the CPU math libraries it links), on any device.
    Torch(&'static str),
    /// PyTorch's on any GPU (HIP reads them under CUDA's names).
    TorchGpu(&'static str),
    /// candle's (rayon's thread pool).
    Candle(&'static str),
}

/// Prefixes (ending in `_`) and whole names, first match wins: the specific before the general.
const FAMILIES: &[(&str, Family)] = &[
    ("MIOPEN_", Family::Amd("MIOpen")),
    ("ROCBLAS_", Family::Amd("rocBLAS")),
    ("HIPBLASLT_", Family::Amd("hipBLASLt")),
    ("TENSILE_", Family::Amd("Tensile (rocBLAS, hipBLASLt)")),
    ("HIP_", Family::Amd("the HIP runtime")),
    ("HSA_", Family::Amd("the HSA runtime (ROCr)")),
    ("ROCR_", Family::Amd("the ROCr runtime")),
    ("AMD_LOG_LEVEL", Family::Amd("the HIP runtime")),
    ("AMD_SERIALIZE_KERNEL", Family::Amd("the HIP runtime")),
    ("AMD_SERIALIZE_COPY", Family::Amd("the HIP runtime")),
    ("GPU_MAX_HW_QUEUES", Family::Amd("the HIP runtime")),
    ("PYTORCH_HIP_ALLOC_CONF", Family::Amd("PyTorch's ROCm allocator")),
    ("TORCH_BLAS_PREFER_HIPBLASLT", Family::Amd("PyTorch's ROCm BLAS choice")),
    ("PYTORCH_MIOPEN_", Family::Amd("PyTorch's MIOpen path")),
    ("TORCH_ROCM_", Family::Amd("PyTorch's ROCm build")),
    ("CUDNN_", Family::Nvidia("cuDNN")),
    ("CUBLAS_", Family::Nvidia("cuBLAS")),
    ("CUBLASLT_", Family::Nvidia("cuBLASLt")),
    ("NVIDIA_TF32_OVERRIDE", Family::Nvidia("NVIDIA's libraries")),
    ("CUDA_MODULE_LOADING", Family::Nvidia("the CUDA runtime")),
    ("CUDA_DEVICE_MAX_CONNECTIONS", Family::Nvidia("the CUDA runtime")),
    ("CUDA_CACHE_", Family::Nvidia("the CUDA driver")),
    (
        "CUDA_VISIBLE_DEVICES",
        Family::TorchGpu("the GPU runtime (CUDA or HIP)"),
    ),
    ("PYTORCH_CUDA_ALLOC_CONF", Family::TorchGpu("PyTorch's GPU allocator")),
    ("PYTORCH_TUNABLEOP_", Family::TorchGpu("PyTorch's TunableOp")),
    (
        "PYTORCH_NO_CUDA_MEMORY_CACHING",
        Family::TorchGpu("PyTorch's GPU allocator"),
    ),
    ("TORCH_", Family::Torch("PyTorch")),
    ("PYTORCH_", Family::Torch("PyTorch")),
    ("TORCHINDUCTOR_", Family::Torch("PyTorch's compiler")),
    ("OMP_NUM_THREADS", Family::Torch("PyTorch's OpenMP threads")),
    ("MKL_", Family::Torch("MKL (PyTorch's CPU math)")),
    ("ONEDNN_", Family::Torch("oneDNN (PyTorch's CPU convolutions)")),
    ("DNNL_", Family::Torch("oneDNN (PyTorch's CPU convolutions)")),
    ("RAYON_NUM_THREADS", Family::Candle("candle's thread pool (rayon)")),
    ("CANDLE_", Family::Candle("candle")),
];

fn family(var: &str) -> Option<Family> {
    FAMILIES
        .iter()
        .find(|(p, _)| {
            if p.ends_with('_') {
                var.starts_with(p)
            } else {
                var == *p
            }
        })
        .map(|(_, f)| *f)
}

/// The device a case runs on, as the libraries see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    Cpu,
    Amd,
    Nvidia,
    /// A GPU of a machine with both vendors, or whose vendor is not known: every GPU
    /// library may be loaded.
    AnyGpu,
    /// Metal, or a device this table does not know: nothing is called inert.
    Other,
}

fn device_on(device: &str, vendors: GpuVendors) -> On {
    match (super::device_kind(device).as_str(), vendors) {
        ("cpu", _) => On::Cpu,
        ("cuda", GpuVendors::AmdOnly) => On::Amd,
        ("cuda", GpuVendors::NvidiaOnly) => On::Nvidia,
        ("cuda", GpuVendors::Other) => On::AnyGpu,
        _ => On::Other,
    }
}

/// Whether `var` can act on a case of `engine` on `device`, on a machine whose GPUs are
/// `vendors`'.
pub fn reach(var: &str, engine: Engine, device: &str, vendors: GpuVendors) -> Reach {
    let Some(f) = family(var) else {
        return Reach::Unknown;
    };
    let on = device_on(device, vendors);
    if on == On::Other {
        return Reach::Unknown;
    }
    let torch = engine != Engine::Candle;
    let where_ = match on {
        On::Cpu => "on the CPU",
        On::Amd => "on an AMD GPU",
        On::Nvidia => "on an NVIDIA GPU",
        _ => "there",
    };
    let cannot =
        |lib: &str, who: &str| Reach::CannotAct(format!("{var} is read by {lib}, which {who} never loads {where_}"));
    let engine_name = engine.name();
    match f {
        Family::Amd(lib) => match (on, torch) {
            (On::Amd | On::AnyGpu, true) => Reach::Acts,
            _ => cannot(lib, engine_name),
        },
        Family::Nvidia(lib) => match on {
            On::Nvidia | On::AnyGpu => Reach::Acts,
            _ => cannot(lib, engine_name),
        },
        Family::TorchGpu(lib) => match (on, torch) {
            (On::Cpu, _) => cannot(lib, engine_name),
            (_, true) => Reach::Acts,
            // candle on CUDA: its runtime reads the devices it may see.
            (_, false) if var == "CUDA_VISIBLE_DEVICES" => Reach::Acts,
            (_, false) => cannot(lib, engine_name),
        },
        Family::Torch(_) if torch => Reach::Acts,
        Family::Candle(_) if !torch => Reach::Acts,
        Family::Torch(lib) | Family::Candle(lib) => cannot(lib, engine_name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use GpuVendors::*;

    #[test]
    fn each_family_acts_only_where_its_library_is_loaded() {
        let cpu = |v: &str, e| reach(v, e, "cpu", Other);
        assert!(
            matches!(cpu("MIOPEN_FIND_MODE", Engine::Torch), Reach::CannotAct(w) if w.contains("MIOpen") && w.contains("on the CPU"))
        );
        assert!(matches!(
            cpu("MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD", Engine::Candle),
            Reach::CannotAct(_)
        ));
        assert!(matches!(cpu("CUDNN_LOGINFO_DBG", Engine::Torch), Reach::CannotAct(_)));
        assert_eq!(cpu("OMP_NUM_THREADS", Engine::Torch), Reach::Acts);
        assert!(matches!(cpu("OMP_NUM_THREADS", Engine::Candle), Reach::CannotAct(w) if w.contains("candle")));
        assert_eq!(cpu("RAYON_NUM_THREADS", Engine::Candle), Reach::Acts);
        assert!(matches!(cpu("RAYON_NUM_THREADS", Engine::Comfyui), Reach::CannotAct(_)));
        assert!(matches!(
            cpu("PYTORCH_CUDA_ALLOC_CONF", Engine::Torch),
            Reach::CannotAct(_)
        ));
        assert_eq!(cpu("SOME_VARIABLE", Engine::Torch), Reach::Unknown);
        // An AMD GPU: MIOpen acts on torch, never on candle; NVIDIA's libraries never.
        let amd = |v: &str, e| reach(v, e, "cuda:0", AmdOnly);
        assert_eq!(amd("MIOPEN_FIND_MODE", Engine::Diffusers), Reach::Acts);
        assert_eq!(amd("HIPBLASLT_LOG_MASK", Engine::Comfyui), Reach::Acts);
        assert!(matches!(amd("CUBLAS_WORKSPACE_CONFIG", Engine::Torch), Reach::CannotAct(w) if w.contains("AMD GPU")));
        assert_eq!(amd("PYTORCH_CUDA_ALLOC_CONF", Engine::Torch), Reach::Acts);
        // An NVIDIA GPU.
        let nv = |v: &str, e| reach(v, e, "cuda:1", NvidiaOnly);
        assert!(matches!(nv("MIOPEN_FIND_MODE", Engine::Torch), Reach::CannotAct(_)));
        assert_eq!(nv("CUDNN_LOGINFO_DBG", Engine::Candle), Reach::Acts);
        assert_eq!(nv("NVIDIA_TF32_OVERRIDE", Engine::Torch), Reach::Acts);
        // A machine with both, or an unknown device: nothing GPU-side is called inert.
        assert_eq!(reach("MIOPEN_FIND_MODE", Engine::Torch, "cuda:0", Other), Reach::Acts);
        assert_eq!(reach("MIOPEN_FIND_MODE", Engine::Torch, "metal", Other), Reach::Unknown);
        // The specific name wins over the general prefix.
        assert!(matches!(
            cpu("PYTORCH_MIOPEN_SUGGEST_NHWC", Engine::Torch),
            Reach::CannotAct(_)
        ));
        assert_eq!(cpu("PYTORCH_JIT", Engine::Torch), Reach::Acts);
    }
}
