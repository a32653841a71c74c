//! System context: OS, CPU, memory, GPUs (AMD via KFD/DRM sysfs, NVIDIA via nvidia-smi),
//! ROCm version, toolchain (build facts from [`crate::machine::tool`]); and the `system` command.
//! Missing pieces are `None`. All `/sys` reads go through [`sysfs_root`]
//! (`WAN_VAE_BENCH_SYSFS_ROOT` replaces `/`); a one-shot `nvidia-smi` runs only in
//! [`nvidia_smi_bounded`], under a time limit and an output cap (`process::output_bounded`),
//! so one that hangs or prints without end costs the system context a field, not the run.
//!
//! Must not: depend on the report (the report embeds [`SystemInfo`], not the other way).
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::sysfs::{drm_cards, drm_device_dir, kfd_nodes, read_trimmed, sys_read, sysfs_root};

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
    /// A keyed hash of `/etc/machine-id` ([`crate::machine::sysfs::machine_id`]): with
    /// `board` and the memory, what tells two machines of one host name and CPU apart;
    /// absent in reports written before it, or where there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    /// The board as DMI names it (vendor and name; [`crate::machine::sysfs::board`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
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
    /// Tool version.
    pub tool_version: Option<String>,
    /// Git commit the tool was built from, when the build ran in a git checkout
    /// ([`crate::machine::tool::this_tool`]).
    pub git_commit: Option<String>,
    /// What could not be asked, and why (`nvidia_gpus`: `unavailable: nvidia-smi gave no
    /// answer within 10 s`, or printed without end, or failed); absent when every query
    /// answered or its program is not installed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unavailable: std::collections::BTreeMap<String, String>,
}

impl SystemInfo {
    /// The [`GpuVendors`] of the GPUs this record lists.
    pub fn gpu_vendors(&self) -> GpuVendors {
        GpuVendors::of(
            self.gpus.iter().any(|g| g.vendor == "amd"),
            self.gpus.iter().any(|g| g.vendor == "nvidia"),
        )
    }

    /// `host (CPU; GPU, GPU)`: the machine's label. Two records of one label are one machine
    /// unless their machine id, board or memory differ
    /// ([`crate::machine::identity::Machines`] names them then).
    pub fn machine(&self) -> String {
        let gpus: Vec<&str> = self
            .gpus
            .iter()
            .map(|g| {
                g.name
                    .as_deref()
                    .or(g.gfx_target.as_deref())
                    .unwrap_or(g.vendor.as_str())
            })
            .collect();
        format!(
            "{} ({}{})",
            self.hostname.as_deref().unwrap_or("unknown host"),
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            if gpus.is_empty() {
                String::new()
            } else {
                format!("; {}", gpus.join(", "))
            }
        )
    }
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
    /// An APU (integrated GPU: Strix Halo, Strix Point, Phoenix, ...), known by its gfx
    /// target ([`APU_TARGETS`]) or a KFD node that holds CPU cores too; `None` where not known
    /// (a target both APUs and discrete cards have, such as MI300A's and MI300X's gfx942).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrated: Option<bool>,
    /// Which memory is the device's: `gtt` on an APU, whose `mem_info_vram_total` is only
    /// the BIOS carve-out while GTT (system memory the GPU maps) holds the real memory and
    /// torch's `total_memory` follows it; `None` where the tool cannot tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_memory: Option<String>,
}

/// The gfx targets of AMD's APUs: Raven/Picasso/Renoir/Cezanne (gfx902, gfx909, gfx90c),
/// Van Gogh and Rembrandt (gfx1033, gfx1035), Raphael's and others' iGPU (gfx1036, gfx1037),
/// Phoenix and Hawk Point (gfx1103), Strix Point (gfx1150), Strix Halo (gfx1151), and the
/// gfx1152/gfx1153 some Strix and Krackan machines report.
pub const APU_TARGETS: &[&str] = &[
    "gfx902", "gfx909", "gfx90c", "gfx1033", "gfx1035", "gfx1036", "gfx1037", "gfx1103", "gfx1150", "gfx1151",
    "gfx1152", "gfx1153",
];

/// Collect the system context. Never fails: unknown pieces are `None`.
pub fn collect() -> SystemInfo {
    let mut sys = sysinfo::System::new_with_specifics(
        sysinfo::RefreshKind::nothing()
            .with_cpu(sysinfo::CpuRefreshKind::nothing())
            .with_memory(sysinfo::MemoryRefreshKind::nothing().with_ram()),
    );
    sys.refresh_memory();
    let cpu_model = sys
        .cpus()
        .first()
        .map(|c| c.brand().trim().to_string())
        .filter(|s| !s.is_empty());
    let threads = std::thread::available_parallelism().ok().map(|n| n.get());
    let mut gpus = amd_gpus();
    let mut unavailable = std::collections::BTreeMap::new();
    let (nvidia, nvidia_driver_version) = nvidia_gpus().unwrap_or_else(|why| {
        unavailable.insert("nvidia_gpus".to_string(), why);
        (Vec::new(), None)
    });
    gpus.extend(nvidia);
    let tool = crate::machine::tool::this_tool();
    SystemInfo {
        os: Some(std::env::consts::OS.to_string()),
        distro: sysinfo::System::long_os_version().or_else(sysinfo::System::name),
        kernel: sysinfo::System::kernel_version(),
        hostname: sysinfo::System::host_name(),
        cpu_model,
        cpu_cores: sys.physical_core_count(),
        cpu_threads: threads.or_else(|| (!sys.cpus().is_empty()).then(|| sys.cpus().len())),
        cpu_simd: simd_features(),
        cpu_governor: sys_read("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        memory_total_bytes: Some(sys.total_memory()).filter(|&m| m > 0),
        machine_id: super::sysfs::machine_id(),
        board: super::sysfs::board(),
        gpus,
        rocm_version: rocm_version(),
        nvidia_driver_version,
        rustc_version: crate::machine::tool::rustc_version(),
        candle_version: crate::machine::tool::candle_version(),
        cargo_features: crate::machine::device::compiled_features(),
        tool_version: Some(tool.version),
        git_commit: tool.git_commit,
        unavailable,
    }
}

/// SIMD features relevant to candle's CPU kernels that this CPU has.
pub fn simd_features() -> Vec<String> {
    #[allow(unused_mut)]
    let mut out: Vec<&str> = Vec::new();
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        macro_rules! check {
            ($($f:tt),*) => { $( if std::arch::is_x86_feature_detected!($f) { out.push($f); } )* };
        }
        check!(
            "sse4.2",
            "avx",
            "avx2",
            "fma",
            "f16c",
            "avx512f",
            "avx512bw",
            "avx512vl",
            "avx512vnni",
            "avx512bf16"
        );
    }
    #[cfg(target_arch = "aarch64")]
    {
        macro_rules! check {
            ($($f:tt),*) => { $( if std::arch::is_aarch64_feature_detected!($f) { out.push($f); } )* };
        }
        check!("neon", "fp16", "bf16", "i8mm", "dotprod", "sve", "sve2");
    }
    out.into_iter().map(str::to_string).collect()
}

/// `gfx_target_version` (e.g. 110501) as a gfx target name (`gfx1151`); 0 (a CPU) is `None`.
pub fn gfx_target_name(version: u64) -> Option<String> {
    if version == 0 {
        return None;
    }
    let (major, minor, step) = (version / 10000, (version / 100) % 100, version % 100);
    Some(format!("gfx{major}{minor:x}{step:x}"))
}

/// Whose GPUs a machine's `cuda:N` devices are, as far as a vendor's knobs go: TF32 is
/// NVIDIA's, MIOpen's database AMD's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuVendors {
    /// AMD GPUs and no NVIDIA driver: the `tf32` knob cannot act.
    AmdOnly,
    /// An NVIDIA driver and no AMD GPU: the `miopen_db` knob cannot act.
    NvidiaOnly,
    /// Both, or neither: every knob is taken as it is asked.
    Other,
}

impl GpuVendors {
    fn of(amd: bool, nvidia: bool) -> GpuVendors {
        match (amd, nvidia) {
            (true, false) => GpuVendors::AmdOnly,
            (false, true) => GpuVendors::NvidiaOnly,
            _ => GpuVendors::Other,
        }
    }
}

/// This machine's [`GpuVendors`]: the KFD topology's AMD GPUs, and whether an NVIDIA kernel
/// driver is loaded (`/proc/driver/nvidia/version`; both read through [`sysfs_root`]). Read
/// once per process.
pub fn gpu_vendors() -> GpuVendors {
    static VENDORS: std::sync::OnceLock<GpuVendors> = std::sync::OnceLock::new();
    *VENDORS.get_or_init(|| {
        GpuVendors::of(
            !amd_gpus().is_empty(),
            sysfs_root().join("proc/driver/nvidia/version").exists(),
        )
    })
}

/// Whether this machine has an AMD GPU (the KFD topology's, read through [`sysfs_root`] once
/// per process): then a `cuda:N` device may be one, run by ROCm's libraries.
pub fn has_amd_gpu() -> bool {
    static AMD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AMD.get_or_init(|| !amd_gpus().is_empty())
}

/// Whether this machine's `cuda:N` devices are AMD GPUs only ([`gpu_vendors`]). Then TF32,
/// an NVIDIA feature, does not act (the `tf32` knob is `n/a`, so fp32 references are not
/// measured twice).
pub fn amd_gpus_only() -> bool {
    gpu_vendors() == GpuVendors::AmdOnly
}

/// AMD GPUs from the KFD topology, with VRAM/GTT from the matching DRM device.
fn amd_gpus() -> Vec<GpuInfo> {
    let root = sysfs_root();
    let nodes = kfd_nodes(&root);
    let cards = drm_cards(&root);
    let driver_version = sys_read("sys/module/amdgpu/version");
    let mut gpus = Vec::new();
    for (node, props) in nodes {
        let Some(gfx_target) = props.get("gfx_target_version").copied().and_then(gfx_target_name) else {
            continue;
        };
        let compute_units = match (props.get("simd_count"), props.get("simd_per_cu")) {
            (Some(&simds), Some(&per_cu)) if per_cu > 0 && simds > 0 => Some(simds / per_cu),
            _ => None,
        };
        let card = props
            .get("drm_render_minor")
            .and_then(|m| drm_device_dir(&root, &format!("renderD{m}")))
            .or_else(|| cards.get(gpus.len()).cloned());
        let mem = |name: &str| {
            card.as_ref()
                .and_then(|c| read_trimmed(&c.join(name)))
                .and_then(|s| s.parse().ok())
        };
        let name = read_trimmed(&node.join("name"))
            .or_else(|| card.as_ref().and_then(|c| read_trimmed(&c.join("product_name"))));
        // An APU by its target, or by a node that holds CPU cores too (older kernels); other
        // targets are not known to be discrete (MI300A shares gfx942 with MI300X): no claim.
        let apu = APU_TARGETS.contains(&gfx_target.as_str()) || props.get("cpu_cores_count").is_some_and(|&n| n > 0);
        let integrated = apu.then_some(true);
        gpus.push(GpuInfo {
            vendor: "amd".to_string(),
            name,
            gfx_target: Some(gfx_target),
            compute_units,
            vram_total_bytes: mem("mem_info_vram_total"),
            gtt_total_bytes: mem("mem_info_gtt_total"),
            driver_version: driver_version.clone(),
            integrated,
            device_memory: apu.then(|| "gtt".to_string()),
        });
    }
    gpus
}

/// ROCm version from `$ROCM_PATH/.info/version` (default `/opt/rocm`).
fn rocm_version() -> Option<String> {
    let base = std::env::var_os("ROCM_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/rocm"));
    read_trimmed(&base.join(".info/version"))
}

/// How long a one-shot `nvidia-smi` may take (it can take a few seconds to start on a
/// machine with many GPUs and no persistence daemon).
pub const NVIDIA_SMI_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The most a one-shot `nvidia-smi` may print (a query of a few fields per GPU prints far
/// less).
pub const NVIDIA_SMI_MAX_BYTES: usize = 1 << 20;

/// Standard output of `nvidia-smi ARGS`, bounded by [`NVIDIA_SMI_LIMIT`] and
/// [`NVIDIA_SMI_MAX_BYTES`] (the one place that runs it once); `Err` says why there is none.
pub fn nvidia_smi_bounded(args: &[&str]) -> Result<String, crate::util::process::Bounded> {
    let mut cmd = std::process::Command::new("nvidia-smi");
    cmd.args(args);
    crate::util::process::output_bounded(cmd, NVIDIA_SMI_LIMIT, NVIDIA_SMI_MAX_BYTES)
}

/// [`nvidia_smi_bounded`]'s output; `None` when it is not installed or fails.
pub fn nvidia_smi(args: &[&str]) -> Option<String> {
    nvidia_smi_bounded(args).ok()
}

/// NVIDIA GPUs and driver version via `nvidia-smi`: none when it is not installed; `Err`
/// says why when it is and gave no answer.
fn nvidia_gpus() -> Result<(Vec<GpuInfo>, Option<String>), String> {
    let text = match nvidia_smi_bounded(&[
        "--query-gpu=name,memory.total,driver_version",
        "--format=csv,noheader,nounits",
    ]) {
        Ok(t) => t,
        Err(crate::util::process::Bounded::NotFound) => return Ok((Vec::new(), None)),
        Err(why) => return Err(format!("unavailable: nvidia-smi {why}")),
    };
    let mut driver = None;
    let gpus = text
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            if f.len() < 3 {
                return None;
            }
            driver = Some(f[2].to_string());
            Some(GpuInfo {
                vendor: "nvidia".to_string(),
                name: Some(f[0].to_string()),
                vram_total_bytes: f[1].parse::<u64>().ok().map(|mib| mib * 1024 * 1024),
                driver_version: Some(f[2].to_string()),
                ..Default::default()
            })
        })
        .collect();
    Ok((gpus, driver))
}

/// Human-readable rendering of `info` for `wan-vae-bench system`.
pub fn render_text(info: &SystemInfo) -> String {
    fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
        v.as_ref().map(|x| x.to_string()).unwrap_or_else(|| "unknown".into())
    }
    fn gib(b: Option<u64>) -> String {
        b.map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64))
            .unwrap_or_else(|| "unknown".into())
    }
    let mut s = String::new();
    let mut line = |k: &str, v: String| s.push_str(&format!("{k:<14} {v}\n"));
    line("os", format!("{} ({})", opt(&info.os), opt(&info.distro)));
    line("kernel", opt(&info.kernel));
    line("hostname", opt(&info.hostname));
    line("cpu", opt(&info.cpu_model));
    line(
        "cores/threads",
        format!("{} / {}", opt(&info.cpu_cores), opt(&info.cpu_threads)),
    );
    line("simd", info.cpu_simd.join(" "));
    line("governor", opt(&info.cpu_governor));
    line("memory", gib(info.memory_total_bytes));
    line("board", opt(&info.board));
    line(
        "machine id",
        format!("{} (a keyed hash of /etc/machine-id)", opt(&info.machine_id)),
    );
    if info.gpus.is_empty() {
        line("gpus", "none found".into());
    }
    for (i, g) in info.gpus.iter().enumerate() {
        line(
            &format!("gpu {i}"),
            format!(
                "{} {} {} CUs={} VRAM={} GTT={} driver={}{}",
                g.vendor,
                opt(&g.name),
                opt(&g.gfx_target),
                opt(&g.compute_units),
                gib(g.vram_total_bytes),
                gib(g.gtt_total_bytes),
                opt(&g.driver_version),
                match g.device_memory.as_deref() {
                    Some("gtt") =>
                        " (APU: its memory is GTT, VRAM is the BIOS carve-out; its power includes the CPU's)",
                    _ => "",
                }
            ),
        );
    }
    line("rocm", opt(&info.rocm_version));
    line("nvidia driver", opt(&info.nvidia_driver_version));
    line("rustc", opt(&info.rustc_version));
    line("candle", opt(&info.candle_version));
    line(
        "features",
        if info.cargo_features.is_empty() {
            "(none)".into()
        } else {
            info.cargo_features.join(",")
        },
    );
    line(
        "tool",
        format!("{} ({})", opt(&info.tool_version), opt(&info.git_commit)),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gfx_names() {
        assert_eq!(gfx_target_name(110501).as_deref(), Some("gfx1151"));
        assert_eq!(gfx_target_name(90010).as_deref(), Some("gfx90a"));
        assert_eq!(gfx_target_name(110000).as_deref(), Some("gfx1100"));
        assert_eq!(gfx_target_name(90402).as_deref(), Some("gfx942"));
        assert_eq!(gfx_target_name(0), None);
    }
}
