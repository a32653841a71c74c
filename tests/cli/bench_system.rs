//! `system` reads `/sys` through `WAN_VAE_BENCH_SYSFS_ROOT`: a fake Strix Halo (gfx1151)
//! tree shows up in `system --json`, and an empty root gives nulls, not a crash.
use crate::util::cli::*;

use wan_vae_bench::machine::system::SystemInfo;

/// Write `text` at `rel` under the fake root `root`, making its folders.
fn put(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

pub fn fake_strix_halo(root: &std::path::Path) {
    let mk = |rel: &str, text: &str| put(root, rel, text);
    let nodes = "sys/class/kfd/kfd/topology/nodes";
    mk(
        &format!("{nodes}/0/properties"),
        "cpu_cores_count 32\nsimd_count 0\ngfx_target_version 0\n",
    );
    mk(
        &format!("{nodes}/1/properties"),
        "cpu_cores_count 0\nsimd_count 80\nsimd_per_cu 2\ngfx_target_version 110501\ndrm_render_minor 128\n",
    );
    mk("sys/class/drm/card1/device/mem_info_vram_total", "536870912\n");
    mk("sys/class/drm/card1/device/mem_info_gtt_total", "103079215104\n");
    mk("sys/class/drm/renderD128/device/mem_info_vram_total", "536870912\n");
    mk("sys/class/drm/renderD128/device/mem_info_gtt_total", "103079215104\n");
    mk("sys/module/amdgpu/version", "6.12.12\n");
    mk("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
    mk("opt/rocm/.info/version", "6.4.1-120\n");
}

fn system_json(root: &std::path::Path) -> SystemInfo {
    let out = bench()
        .args(["system", "--json"])
        .env("WAN_VAE_BENCH_SYSFS_ROOT", root)
        .env("ROCM_PATH", root.join("opt/rocm"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("system --json is SystemInfo")
}

#[test]
fn fake_gfx1151_tree_is_reported() {
    let dir = scratch();
    fake_strix_halo(dir.path());
    let info = system_json(dir.path());
    let amd: Vec<_> = info.gpus.iter().filter(|g| g.vendor == "amd").collect();
    assert_eq!(amd.len(), 1, "{:?}", info.gpus);
    let g = amd[0];
    assert_eq!(g.gfx_target.as_deref(), Some("gfx1151"));
    assert_eq!(g.compute_units, Some(40));
    assert_eq!(g.vram_total_bytes, Some(536870912));
    assert_eq!(g.gtt_total_bytes, Some(103079215104));
    assert_eq!(g.driver_version.as_deref(), Some("6.12.12"));
    // An APU: its memory is GTT, not the carve-out that mem_info_vram_total shows.
    assert_eq!((g.integrated, g.device_memory.as_deref()), (Some(true), Some("gtt")));
    assert_eq!(info.rocm_version.as_deref(), Some("6.4.1-120"));
    assert_eq!(info.cpu_governor.as_deref(), Some("performance"));
    assert!(info.rustc_version.as_deref().unwrap_or("").starts_with("rustc "));
    assert_eq!(info.candle_version.as_deref(), Some("0.11.1"));

    let text = bench()
        .arg("system")
        .env("WAN_VAE_BENCH_SYSFS_ROOT", dir.path())
        .output()
        .unwrap();
    assert!(stdout(&text).contains("gfx1151"), "{}", stdout(&text));
}

#[test]
fn missing_pieces_are_null() {
    let dir = scratch();
    let info = system_json(dir.path());
    assert!(info.gpus.iter().all(|g| g.vendor != "amd"));
    assert_eq!(info.cpu_governor, None);
    assert_eq!(info.rocm_version, None);
    assert!(info.os.is_some());
}

/// Issue 30 item 20: a FIFO where a sysfs file should be does not block `system`.
#[test]
fn a_fifo_in_the_fake_root_does_not_block() {
    let dir = scratch();
    fake_strix_halo(dir.path());
    let vram = dir.path().join("sys/class/drm/card1/device/mem_info_vram_total");
    std::fs::remove_file(&vram).unwrap();
    let c = std::ffi::CString::new(vram.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = bench()
        .args(["system", "--json"])
        .env("WAN_VAE_BENCH_SYSFS_ROOT", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("system blocked on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// Issue 47: the sysfs values a real Strix Halo published (noamsto/nix-amd-ai #42, kept in
/// tests/fixtures/rocm/nix-amd-ai-42-strix-halo-gtt-sysfs.txt): a 4 GiB carve-out as
/// `mem_info_vram_total`, 96 GiB of GTT; and a machine that reports gfx1152
/// (lemonade-sdk/vllm-rocm #8) is an APU too. `system` names GTT as the device's memory.
#[test]
fn a_real_strix_halo_reads_as_an_apu_whose_memory_is_gtt() {
    let fixture_text = std::fs::read_to_string(fixture("rocm/nix-amd-ai-42-strix-halo-gtt-sysfs.txt")).unwrap();
    let value = |file: &str| -> String {
        let mut lines = fixture_text.lines();
        lines.find(|l| l.ends_with(file)).expect(file);
        lines.next().unwrap().split_whitespace().next().unwrap().to_string()
    };
    let (gtt, vram) = (value("mem_info_gtt_total"), value("mem_info_vram_total"));
    assert_eq!((gtt.as_str(), vram.as_str()), ("103079215104", "4294967296"));
    for (target, version) in [("gfx1151", "110501"), ("gfx1152", "110502")] {
        let dir = scratch();
        let root = dir.path();
        let mk = |rel: &str, text: &str| put(root, rel, text);
        mk(
            "sys/class/kfd/kfd/topology/nodes/1/properties",
            &format!("simd_count 80\nsimd_per_cu 2\ngfx_target_version {version}\ndrm_render_minor 128\n"),
        );
        mk(
            "sys/class/drm/renderD128/device/mem_info_vram_total",
            &format!("{vram}\n"),
        );
        mk(
            "sys/class/drm/renderD128/device/mem_info_gtt_total",
            &format!("{gtt}\n"),
        );
        let info = system_json(root);
        let g = info.gpus.iter().find(|g| g.vendor == "amd").expect("the APU");
        assert_eq!(g.gfx_target.as_deref(), Some(target));
        assert_eq!(
            (g.integrated, g.device_memory.as_deref()),
            (Some(true), Some("gtt")),
            "{target}"
        );
        assert_eq!(g.gtt_total_bytes, Some(103079215104));
        let text = bench()
            .arg("system")
            .env("WAN_VAE_BENCH_SYSFS_ROOT", root)
            .output()
            .unwrap();
        let line = stdout(&text)
            .lines()
            .find(|l| l.contains(target))
            .unwrap_or_default()
            .to_string();
        assert!(
            line.contains("GTT=96.0") && line.contains("its memory is GTT"),
            "{line}"
        );
    }
}

/// A real KFD node of an old-kernel APU (ROCm/ROCm #121, Bristol Ridge): CPU cores and SIMDs
/// in one node, no `gfx_target_version`. `system` reads it without naming a gfx target it
/// was not given.
#[test]
fn a_real_old_apu_kfd_node_without_a_gfx_target_names_none() {
    let text = std::fs::read_to_string(fixture("rocm/rocm-121-bristol-ridge-apu-kfd-topology.txt")).unwrap();
    let properties: String = text
        .lines()
        .skip_while(|l| !l.starts_with("cat /sys/class/kfd"))
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(properties.contains("simd_count 32") && properties.contains("cpu_cores_count 4"));
    let dir = scratch();
    let node = dir.path().join("sys/class/kfd/kfd/topology/nodes/0");
    std::fs::create_dir_all(&node).unwrap();
    std::fs::write(node.join("properties"), properties).unwrap();
    let info = system_json(dir.path());
    assert!(
        info.gpus.iter().all(|g| g.vendor != "amd" || g.gfx_target.is_none()),
        "{:?}",
        info.gpus
    );
}
