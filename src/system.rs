//! System context: OS, CPU, memory, GPUs (AMD via KFD/DRM sysfs, NVIDIA via nvidia-smi),
//! ROCm version, toolchain; and the `system` command. Missing pieces are `None`.
//! All `/sys` reads go through [`sysfs_root`] (`WAN_VAE_BENCH_SYSFS_ROOT` replaces `/`).
use serde::{Deserialize, Serialize};

/// Everything a report records about the machine and build.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SystemInfo {
    /// `linux`, `macos`, ...
    pub os: Option<String>,
    /// Distribution name and version (from os-release).
    pub distro: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Host name.
    pub hostname: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Physical cores.
    pub cpu_cores: Option<usize>,
    /// Hardware threads.
    pub cpu_threads: Option<usize>,
    /// SIMD features the CPU reports (avx2, avx512f, neon, ...).
    pub cpu_simd: Vec<String>,
    /// cpufreq scaling governor of cpu0.
    pub cpu_governor: Option<String>,
    /// Total RAM, bytes.
    pub memory_total_bytes: Option<u64>,
    /// GPUs found.
    pub gpus: Vec<GpuInfo>,
    /// ROCm version from `$ROCM_PATH/.info/version`.
    pub rocm_version: Option<String>,
    /// NVIDIA driver version (nvidia-smi).
    pub nvidia_driver_version: Option<String>,
    /// rustc version the binary was built with.
    pub rustc_version: Option<String>,
    /// candle-core version.
    pub candle_version: Option<String>,
    /// Cargo features compiled in (cuda, cudnn, metal).
    pub cargo_features: Vec<String>,
    /// Tool version and git commit.
    pub tool_version: Option<String>,
    /// Tool git commit.
    pub git_commit: Option<String>,
}

/// One GPU.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GpuInfo {
    /// `amd` or `nvidia`.
    pub vendor: String,
    /// Marketing or product name when known.
    pub name: Option<String>,
    /// AMD gfx target, e.g. `gfx1151`.
    pub gfx_target: Option<String>,
    /// AMD compute units / NVIDIA SMs when known.
    pub compute_units: Option<u64>,
    /// Dedicated VRAM, bytes.
    pub vram_total_bytes: Option<u64>,
    /// GTT (system memory the GPU can map), bytes.
    pub gtt_total_bytes: Option<u64>,
    /// Kernel driver version (amdgpu module version / NVIDIA driver).
    pub driver_version: Option<String>,
}

/// Arguments of `wan-vae-bench system`.
#[derive(Debug, clap::Args)]
pub struct SystemArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Collect the system context. Never fails: unknown pieces are `None`.
pub fn collect() -> SystemInfo {
    SystemInfo::default()
}

pub fn command(_args: SystemArgs) -> anyhow::Result<i32> {
    anyhow::bail!("system: not implemented yet")
}
