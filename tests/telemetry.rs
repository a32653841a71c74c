//! Issue 32: the parent samples the device while each case runs. A fake amdgpu card whose
//! clock drops during a case, and a fake `nvidia-smi` reporting a thermal limit, both make
//! the case `throttled`, marked in the table, and the answer refuses to call a winner; with no
//! telemetry at all, the case says why and holds nothing made up.
use std::path::{Path, PathBuf};

use crate::util::cli::executable;
use crate::util::cli::{bench, scratch, stderr};
use crate::util::procs::{fake_python, result_json};

/// A fake Python worker: an encode pass of 0.5 s, then `between` (a shell command), then a
/// decode pass of 0.5 s, then an ok result.
fn worker(dir: &Path, between: &str) -> PathBuf {
    let body = format!(
        "echo '@@wan-vae-bench-phase encode run 1/1' >&2\nsleep 0.5\n{between}\n\
         echo '@@wan-vae-bench-phase decode run 1/1' >&2\nsleep 0.5\n\
         echo '@@wan-vae-bench-phase outputs' >&2\nprintf '%s' '{}' > \"$r\"\nexit 0",
        result_json("[0.5]", "0.5")
    );
    fake_python(dir, &body)
}

/// `run` two torch cases on `cuda:0` through `py`, with `env`; the output and the report.
fn run(dir: &Path, py: &Path, env: &[(&str, String)]) -> (std::process::Output, serde_json::Value) {
    let report = dir.join("r.json");
    let out = bench()
        .args([
            "run",
            "--engine",
            "torch",
            "--device",
            "cuda:0",
            "--weights",
            "synthetic",
        ])
        .args([
            "--frames",
            "1",
            "--size",
            "16x16",
            "--precision",
            "fp32,bf16",
            "--tf32",
            "off",
        ])
        .args(["--warmup", "0", "--runs", "1", "--python"])
        .arg(py)
        .arg("-o")
        .arg(&report)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    (out, serde_json::from_str(&text).unwrap())
}

fn cases(r: &serde_json::Value) -> &Vec<serde_json::Value> {
    r["cases"].as_array().unwrap()
}

/// The environment of a run with `script` as `nvidia-smi` on `PATH` and an empty sysfs root
/// (no amdgpu card).
fn with_fake_smi(dir: &Path, script: &str) -> [(&'static str, String); 2] {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    executable(&bin, "nvidia-smi", script);
    let empty = dir.join("empty-root");
    std::fs::create_dir(&empty).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    [
        ("PATH", path),
        ("WAN_VAE_BENCH_SYSFS_ROOT", empty.display().to_string()),
    ]
}

/// The answer refuses, and the table marks the cases.
fn assert_refused(out: &std::process::Output, r: &serde_json::Value) {
    let answers = r["summary"]["answers"].as_array().unwrap();
    assert!(
        answers
            .iter()
            .all(|a| a["verdict"] == "throttled" && a["fastest"].is_null()),
        "{answers:?}"
    );
    let sentence = answers[0]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("ran throttled") && sentence.contains("--cooldown"),
        "{sentence}"
    );
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out));
    let marked = text.lines().filter(|l| l.contains("ok (throttled)")).count();
    // The case's line as it finishes, and its row in the table.
    assert!(marked >= 4, "the case lines and the table mark the cases: {text}");
}

#[test]
fn an_amd_clock_that_drops_during_a_case_marks_it_throttled_and_the_answer_refuses() {
    let dir = scratch();
    let card = dir.path().join("root/sys/class/drm/card0/device");
    let hwmon = card.join("hwmon/hwmon3");
    std::fs::create_dir_all(&hwmon).unwrap();
    let sclk = card.join("pp_dpm_sclk");
    std::fs::write(&sclk, "0: 600Mhz\n1: 2900Mhz *\n").unwrap();
    std::fs::write(card.join("gpu_busy_percent"), "97\n").unwrap();
    std::fs::write(card.join("mem_info_vram_used"), "1073741824\n").unwrap();
    std::fs::write(card.join("mem_info_gtt_used"), "2147483648\n").unwrap();
    std::fs::write(hwmon.join("name"), "amdgpu\n").unwrap();
    std::fs::write(hwmon.join("temp1_input"), "71000\n").unwrap();
    std::fs::write(hwmon.join("temp2_input"), "88000\n").unwrap();
    std::fs::write(hwmon.join("power1_average"), "95000000\n").unwrap();
    // Between the passes the clock drops to its lowest level (and stays there).
    let drop = format!("printf '0: 600Mhz *\\n1: 2900Mhz\\n' > '{}'", sclk.display());
    let py = worker(dir.path(), &drop);
    let root = dir.path().join("root").display().to_string();
    let (out, r) = run(dir.path(), &py, &[("WAN_VAE_BENCH_SYSFS_ROOT", root)]);
    let first = &cases(&r)[0];
    let t = &first["telemetry"];
    assert!(t["source"].as_str().unwrap().starts_with("amdgpu sysfs"), "{t}");
    assert_eq!(t["clock_max_mhz"], 2900.0);
    // The encode ran at the peak, the decode at 600 of 2900 MHz.
    assert_eq!(t["encode"]["clock_median_fraction"], 1.0, "{t}");
    assert!(t["encode"]["samples"].as_u64().unwrap() >= 2, "{t}");
    assert_eq!(t["encode"]["throttled"], false);
    let f = t["decode"]["clock_median_fraction"].as_f64().unwrap();
    assert!((f - 600.0 / 2900.0).abs() < 1e-9, "{t}");
    assert_eq!(t["decode"]["throttled"], true);
    assert_eq!(t["throttled"], true);
    assert!(
        t["throttle_why"].as_str().unwrap().contains("decode: median clock 21%"),
        "{t}"
    );
    // Peak temperature, mean power, load, memory and energy of a pass.
    assert_eq!(t["encode"]["temp_peak_c"], 88.0);
    assert_eq!(t["encode"]["power_mean_w"], 95.0);
    assert_eq!(t["encode"]["busy_mean_pct"], 97.0);
    assert_eq!(t["encode"]["gtt_used_peak_bytes"], 2147483648u64);
    assert_eq!(t["encode"]["energy_per_pass_j"], 95.0 * 0.5);
    assert!(!t["series"].as_array().unwrap().is_empty());
    assert_refused(&out, &r);
    // The plot draws the clock and temperature under the bars.
    let svg = dir.path().join("r.svg");
    let plot = bench()
        .arg("plot")
        .arg(dir.path().join("r.json"))
        .arg("-o")
        .arg(&svg)
        .output()
        .unwrap();
    assert_eq!(plot.status.code(), Some(0), "{}", stderr(&plot));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains("clock (% of its maximum) and temperature") && text.contains("throttle line"),
        "{text}"
    );
}

#[test]
fn a_thermal_throttle_reason_from_nvidia_smi_marks_the_case() {
    let dir = scratch();
    // Full clock, but the driver says hw_thermal_slowdown (0x40) while the case runs.
    let env = with_fake_smi(
        dir.path(),
        "#!/bin/sh\ncase \"$*\" in\n *-lms*) while :; do echo '1980, 1980, 87, 412.5, 100, 0x0000000000000040'; \
         sleep 0.05; done;;\n *) exit 9;;\nesac\n",
    );
    let py = worker(dir.path(), "true");
    let (out, r) = run(dir.path(), &py, &env);
    let t = &cases(&r)[0]["telemetry"];
    assert_eq!(t["source"], "nvidia-smi (GPU 0)", "{t}");
    assert_eq!(t["encode"]["clock_median_fraction"], 1.0, "{t}");
    assert_eq!(t["encode"]["throttle_reasons"][0], "hw_thermal_slowdown", "{t}");
    assert_eq!(t["throttled"], true);
    assert!(
        t["throttle_why"].as_str().unwrap().contains("hw_thermal_slowdown"),
        "{t}"
    );
    assert_eq!(t["encode"]["energy_per_pass_j"], 412.5 * 0.5);
    assert_refused(&out, &r);
}

#[test]
fn without_telemetry_every_field_is_absent_and_says_why() {
    let dir = scratch();
    // An nvidia-smi without a driver: it exits at once.
    let env = with_fake_smi(dir.path(), "#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n");
    let py = worker(dir.path(), "true");
    let (out, r) = run(dir.path(), &py, &env);
    for c in cases(&r) {
        let t = c["telemetry"].as_object().unwrap();
        let keys: Vec<&String> = t.keys().collect();
        assert_eq!(keys, ["interval_ms", "samples", "throttled", "unavailable"], "{t:?}");
        assert_eq!(t["samples"], 0);
        let why = t["unavailable"]["all"].as_str().unwrap();
        assert!(
            why.contains("0 amdgpu card(s)") && why.contains("nvidia-smi gave no reading"),
            "{why}"
        );
    }
    // Nothing throttled: the answer is drawn as usual.
    assert!(!stderr(&out).contains("(throttled)"));
    // `--telemetry-ms 0` records none at all.
    let report = dir.path().join("off.json");
    let off = bench()
        .args([
            "run",
            "--weights",
            "synthetic",
            "--frames",
            "1",
            "--size",
            "8x8",
            "--precision",
            "fp32",
        ])
        .args(["--warmup", "0", "--runs", "1", "--quiet", "--telemetry-ms", "0", "-o"])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(off.status.code(), Some(0), "{}", stderr(&off));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(cases(&r).iter().all(|c| c.get("telemetry").is_none()));
}
