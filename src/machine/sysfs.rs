//! What the kernel and the installed system say of this host, read from files: `/sys`
//! (KFD's topology, DRM's cards, DMI's board) and `/etc/machine-id`, every path through
//! [`sysfs_root`] (`WAN_VAE_BENCH_SYSFS_ROOT` replaces `/`, for tests that present a fake
//! machine), each a small regular file ([`read_trimmed`]: a FIFO or a device under a fake
//! root never blocks a read). The lowest layer of [`super`]: [`super::system`],
//! [`super::device`] and [`super::identity`] read the host through it.
//!
//! Must not: interpret what it reads beyond parsing it; nothing here knows a report.
use std::path::{Path, PathBuf};

/// The variable that replaces `/` for every `/sys` read ([`sysfs_root`]): for tests that
/// present a fake machine. `run` records it when set (`run.overrides`).
pub const SYSFS_ROOT_ENV: &str = "WAN_VAE_BENCH_SYSFS_ROOT";

/// Root under which `/sys` is read: [`SYSFS_ROOT_ENV`], or `/`.
pub fn sysfs_root() -> PathBuf {
    std::env::var_os(SYSFS_ROOT_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Read a `/sys/...` path through [`sysfs_root`], trimmed; `None` when missing or empty.
pub fn sys_read(path: &str) -> Option<String> {
    read_trimmed(&sysfs_root().join(path.trim_start_matches('/')))
}

/// A small regular file's text, trimmed; `None` for anything else: a FIFO or a device under
/// a test's fake root would block or never end (sysfs attributes are regular files).
pub fn read_trimmed(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(1 << 20)
        .read_to_string(&mut s)
        .ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// `key value` lines of a KFD `properties` file.
fn kfd_properties(text: &str) -> std::collections::HashMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// The KFD topology's nodes under `root`, in node order: (folder, `properties`).
pub fn kfd_nodes(root: &Path) -> Vec<(PathBuf, std::collections::HashMap<String, u64>)> {
    let Ok(entries) = std::fs::read_dir(root.join("sys/class/kfd/kfd/topology/nodes")) else {
        return Vec::new();
    };
    let mut nodes: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect();
    nodes.sort();
    nodes
        .into_iter()
        .filter_map(|(_, node)| {
            let text = read_trimmed(&node.join("properties"))?;
            Some((node, kfd_properties(&text)))
        })
        .collect()
}

/// The `properties` of the KFD topology's GPU nodes (a `gfx_target_version` other than 0)
/// under `root`, in node order: the order ROCm numbers the GPUs.
pub fn kfd_gpu_nodes(root: &Path) -> Vec<std::collections::HashMap<String, u64>> {
    kfd_nodes(root)
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.get("gfx_target_version").is_some_and(|v| *v != 0))
        .collect()
}

/// `/sys/class/drm/<name>/device` when it has `mem_info_vram_total`.
pub fn drm_device_dir(root: &Path, name: &str) -> Option<PathBuf> {
    let dir = root.join("sys/class/drm").join(name).join("device");
    dir.join("mem_info_vram_total").exists().then_some(dir)
}

/// `card*` DRM devices with memory info, in card-number order.
pub fn drm_cards(root: &Path) -> Vec<PathBuf> {
    drm_cards_with(root, "mem_info_vram_total")
}

/// The `device` folders of the `card*` DRM devices under `root` that hold `file` (e.g.
/// `pp_dpm_sclk`: amdgpu cards whose clock can be read), in card-number order.
pub fn drm_cards_with(root: &Path, file: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join("sys/class/drm")) else {
        return Vec::new();
    };
    let mut cards: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let dir = e.path().join("device");
            let n = name.strip_prefix("card")?.parse().ok()?;
            dir.join(file).exists().then_some((n, dir))
        })
        .collect();
    cards.sort();
    cards.into_iter().map(|(_, d)| d).collect()
}

/// A keyed SHA-256 of `/etc/machine-id` (read through [`sysfs_root`]), 16 hex digits: the
/// same on every run of one installed system, and not the id itself, which systemd's
/// documentation asks applications not to expose.
pub fn machine_id() -> Option<String> {
    let root = sysfs_root();
    let raw =
        read_trimmed(&root.join("etc/machine-id")).or_else(|| read_trimmed(&root.join("var/lib/dbus/machine-id")))?;
    use sha2::Digest;
    let hash = sha2::Sha256::digest(format!("wan-vae-bench machine identity\n{raw}").as_bytes());
    Some(hash.iter().take(8).map(|b| format!("{b:02x}")).collect())
}

/// The board as DMI names it (`/sys/class/dmi/id`): its vendor and name (a VM's as its
/// hypervisor presents it), else the system's vendor and product name.
pub fn board() -> Option<String> {
    let root = sysfs_root().join("sys/class/dmi/id");
    let read = |f: &str| read_trimmed(&root.join(f)).filter(|v| !is_placeholder(v));
    let pair = |a: Option<String>, b: Option<String>| match (a, b) {
        (Some(a), Some(b)) if b.starts_with(&a) => Some(b),
        (Some(a), Some(b)) => Some(format!("{a} {b}")),
        (a, b) => a.or(b),
    };
    pair(read("board_vendor"), read("board_name")).or_else(|| pair(read("sys_vendor"), read("product_name")))
}

/// DMI's words for a field its maker left empty.
fn is_placeholder(v: &str) -> bool {
    let low = v.to_ascii_lowercase();
    [
        "to be filled by o.e.m.",
        "default string",
        "not applicable",
        "none",
        "system product name",
    ]
    .iter()
    .any(|p| low == *p)
}
