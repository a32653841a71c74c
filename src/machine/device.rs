//! `--device` parsing (`cpu`, `cuda:N`, `metal[:N]`), whether this machine has a GPU for a
//! `cuda:N` at all ([`no_gpu_for`]), and device synchronization.
//! Accelerators exist only in builds with the matching cargo feature; asking for one that
//! this build lacks is a clear error, not a panic.
//!
//! Must not: build or run a model; it only names devices and waits for them.
use candle_core::Device;

use crate::util::error::UserError;

/// Parse a device string.
pub fn parse(s: &str) -> Result<Device, UserError> {
    let spec = s.trim().to_ascii_lowercase();
    let (kind, index) = match spec.split_once(':') {
        Some((k, i)) => {
            let n = i
                .parse::<usize>()
                .map_err(|_| UserError::invalid("device", s, "cpu, cuda:N or metal:N with N a number"))?;
            (k.to_string(), n)
        }
        None => (spec.clone(), 0),
    };
    match kind.as_str() {
        "cpu" => Ok(Device::Cpu),
        "cuda" => cuda(index, s),
        "metal" => metal(index, s),
        _ => Err(UserError::invalid("device", s, "cpu, cuda:N or metal:N")),
    }
}

#[cfg(feature = "cuda")]
fn cuda(index: usize, s: &str) -> Result<Device, UserError> {
    Device::new_cuda(index).map_err(|e| UserError::invalid("device", s, format!("a usable CUDA device ({e})")))
}
#[cfg(not(feature = "cuda"))]
fn cuda(_index: usize, s: &str) -> Result<Device, UserError> {
    Err(UserError::Unsupported(format!(
        "device {s}: this build has no CUDA support (rebuild with `cargo build --release --features cuda`, or cudnn)"
    )))
}

#[cfg(feature = "metal")]
fn metal(index: usize, s: &str) -> Result<Device, UserError> {
    Device::new_metal(index).map_err(|e| UserError::invalid("device", s, format!("a usable Metal device ({e})")))
}
#[cfg(not(feature = "metal"))]
fn metal(_index: usize, s: &str) -> Result<Device, UserError> {
    Err(UserError::Unsupported(format!(
        "device {s}: this build has no Metal support (rebuild with `cargo build --release --features metal`)"
    )))
}

/// Why `device` cannot be used on this machine before any worker tries it (issue 67): a
/// `cuda:N` on a machine that shows no sign of a GPU at all: no AMD GPU in the KFD topology
/// or among the DRM cards, no GPU device file (`/dev/kfd` for ROCm, `/dev/nvidiactl` or
/// `/dev/nvidia0` for CUDA, `/dev/dxg` for WSL2), no NVIDIA driver
/// (`/proc/driver/nvidia/version`), all read through [`crate::machine::sysfs::sysfs_root`],
/// and no `nvidia-smi` on `PATH`. `None` for `cpu`, or wherever a GPU may be.
pub fn no_gpu_for(device: &str) -> Option<String> {
    let spec = device.trim().to_ascii_lowercase();
    if !spec.starts_with("cuda") {
        return None;
    }
    let root = crate::machine::sysfs::sysfs_root();
    let files = [
        "dev/kfd",
        "dev/nvidiactl",
        "dev/nvidia0",
        "dev/dxg",
        "proc/driver/nvidia/version",
    ];
    let amd = || {
        !crate::machine::sysfs::kfd_gpu_nodes(&root).is_empty()
            || !crate::machine::sysfs::drm_cards_with(&root, "pp_dpm_sclk").is_empty()
            || !crate::machine::sysfs::drm_cards_with(&root, "mem_info_vram_total").is_empty()
    };
    let smi = || {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("nvidia-smi").is_file()))
    };
    if files.iter().any(|f| root.join(f).exists()) || amd() || smi() {
        return None;
    }
    Some(format!(
        "device {device}: this machine shows no GPU (no AMD GPU in /sys/class/kfd or /sys/class/drm, no /dev/kfd, \
         /dev/nvidiactl or /dev/dxg, no nvidia-smi): use --device cpu here, or run on the machine with the GPU"
    ))
}

/// Cargo features compiled into this build.
pub fn compiled_features() -> Vec<String> {
    let mut f = Vec::new();
    if cfg!(feature = "cuda") {
        f.push("cuda".to_string());
    }
    if cfg!(feature = "cudnn") {
        f.push("cudnn".to_string());
    }
    if cfg!(feature = "metal") {
        f.push("metal".to_string());
    }
    f
}

/// Wait for queued device work before reading a clock.
pub fn synchronize(device: &Device) -> anyhow::Result<()> {
    device.synchronize()?;
    Ok(())
}
