//! Issue 32: the parent samples the device while each case runs. A fake amdgpu card whose
//! clock drops during a case, and a fake `nvidia-smi` reporting a thermal limit, both make
//! the case `throttled`, marked in the table, and the answer refuses to call a winner; with no
//! telemetry at all, the case says why and holds nothing made up.
//!
//! Issue 37: a pass is judged only on readings taken during it (too few: no verdict); a
//! `nvidia-smi` that ended is not repeated; one that hangs or prints without end costs a
//! field ("unavailable: ..."), not the run; `CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`
//! and `ROCR_VISIBLE_DEVICES` pick the GPU that is read.
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::cli::executable;
use crate::util::cli::{bench, entries, scratch, stderr};
use crate::util::procs::{fake_python, result_json};

/// A fake Python worker: an encode pass of 0.5 s, then `between` (a shell command), then a
/// decode pass of 0.5 s, then an ok result.
fn worker(dir: &Path, between: &str) -> PathBuf {
    worker_timed(dir, 0.5, between)
}

/// A fake Python worker: an encode pass of `pass_s`, then `between`, then a decode pass of
/// `pass_s`, then an ok result.
fn worker_timed(dir: &Path, pass_s: f64, between: &str) -> PathBuf {
    worker_after(dir, "true", pass_s, between)
}

/// As [`worker_timed`], running `before` (a shell command) before its encode pass starts.
fn worker_after(dir: &Path, before: &str, pass_s: f64, between: &str) -> PathBuf {
    let body = format!(
        "{before}\necho '@@wan-vae-bench-phase encode run 1/1' >&2\nsleep {pass_s}\n{between}\n\
         echo '@@wan-vae-bench-phase decode run 1/1' >&2\nsleep {pass_s}\n\
         echo '@@wan-vae-bench-phase outputs' >&2\nprintf '%s' '{}' > \"$r\"\nexit 0",
        result_json(&format!("[{pass_s}]"), &pass_s.to_string())
    );
    fake_python(dir, &body)
}

/// A fake `nvidia-smi`: `lms` (shell) answers `-lms` (with `$gpu` its `-i`), the device
/// list names two GPUs of the model `models` (`H100` or `A100,H100`), and every other query
/// runs `other`.
fn smi(lms: &str, models: &str, other: &str) -> String {
    let (m0, m1) = models.split_once(',').unwrap_or((models, models));
    format!(
        "#!/bin/sh\ngpu=\nprev=\nfor a in \"$@\"; do [ \"$prev\" = -i ] && gpu=$a; prev=$a; done\n\
         case \"$*\" in\n *-lms*) {lms};;\n *index,uuid,name*) echo '0, GPU-0000aaaa, NVIDIA {m0}'; \
         echo '1, GPU-1111bbbb, NVIDIA {m1}';;\n *) {other};;\nesac\n"
    )
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
    let telemetry: Vec<&serde_json::Value> = cases(r).iter().map(|c| &c["telemetry"]).collect();
    assert!(
        marked >= 4,
        "the case lines and the table mark the cases: {text} {telemetry:?}"
    );
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
        &smi(
            "while :; do echo '1980, 1980, 87, 412.5, 100, 0x0000000000000040'; sleep 0.05; done",
            "H100",
            "exit 9",
        ),
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
            why.contains("0 amdgpu card(s)")
                && why.contains("nvidia-smi cannot list the GPUs: ended with exit status: 9"),
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

/// `run` one fp32 torch case (and one per `--env-var` value) on `cuda:0` through `py`,
/// `extra` flags, `env`; the output and the report.
fn run_one(dir: &Path, py: &Path, extra: &[&str], env: &[(&str, String)]) -> (std::process::Output, serde_json::Value) {
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
            "fp32",
            "--tf32",
            "off",
        ])
        .args(["--warmup", "0", "--runs", "1", "--order", "as-written", "--python"])
        .arg(py)
        .args(extra)
        .arg("-o")
        .arg(&report)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    (out, serde_json::from_str(&text).unwrap())
}

#[test]
fn a_pass_shorter_than_the_interval_is_not_judged_on_a_reading_from_before_it() {
    let dir = scratch();
    // Every 2 s (the interval asked) a reading of an idle GPU (15% of its clock, taken
    // between the passes); the passes last 50 ms each, between two readings.
    let env = with_fake_smi(
        dir.path(),
        &smi(
            "while :; do echo '300, 1980, 40, 60, 0, 0x1'; sleep 2; done",
            "H100",
            "exit 9",
        ),
    );
    let py = worker_timed(dir.path(), 0.05, "true");
    let (out, r) = run_one(dir.path(), &py, &["--telemetry-ms", "2000"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = &cases(&r)[0]["telemetry"];
    assert_eq!(t["throttled"], false, "{t}");
    for pass in ["encode", "decode"] {
        let why = t["unavailable"][format!("{pass}_verdict")].as_str().unwrap_or_default();
        assert!(why.starts_with("too few samples for a verdict"), "{t}");
    }
    assert!(!stderr(&out).contains("(throttled)"), "{}", stderr(&out));
    assert_ne!(r["summary"]["answers"][0]["verdict"], "throttled");
}

#[test]
fn an_nvidia_smi_that_ended_is_not_read_again() {
    let dir = scratch();
    // One reading of a throttled GPU, then it exits.
    let env = with_fake_smi(
        dir.path(),
        &smi("echo '300, 1980, 91, 60, 100, 0x40'; exit 0", "H100", "exit 9"),
    );
    // Its one reading comes at the case's start: the worker waits before its first pass, so
    // that the reading falls in no pass's window whatever the machine's load.
    let py = worker_after(dir.path(), "sleep 0.3", 0.5, "true");
    let (out, r) = run(dir.path(), &py, &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for c in cases(&r) {
        let t = &c["telemetry"];
        assert!(t["samples"].as_u64().unwrap() <= 1, "{t}");
        assert_eq!(t["throttled"], false, "{t}");
        assert!(t.get("encode").is_none() && t.get("decode").is_none(), "{t}");
        let ended = t["unavailable"]["ended"].as_str().unwrap_or_default();
        assert!(
            ended.contains("nvidia-smi: it ended after 1 line(s)") && ended.contains("no reading after it"),
            "{t}"
        );
        let verdict = t["unavailable"]["encode_verdict"].as_str().unwrap_or_default();
        assert!(verdict.starts_with("too few samples"), "{t}");
    }
}

/// `run` under a time bound and a 4 GiB address space (the old code read an endless
/// output until its memory was gone), with `--wait-temp 90` and scratch files in `DIR/tmp`;
/// it must exit 0 and leave neither scratch nor lock.
fn run_bounded_smi(dir: &Path, script: &str, limit: Duration) -> (crate::util::files::Bounded, serde_json::Value) {
    let env = with_fake_smi(dir, script);
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let py = worker_timed(dir, 0.3, "true");
    let report = dir.join("r.json");
    let mut cmd = std::process::Command::new(crate::util::cli::BIN);
    cmd.env_remove("WAN_VAE_BENCH_FAULT")
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
            "fp32",
            "--tf32",
            "off",
        ])
        .args(["--warmup", "0", "--runs", "1", "--wait-temp", "90", "--python"])
        .arg(&py)
        .arg("-o")
        .arg(&report)
        .env("TMPDIR", &tmp)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    let out = crate::util::files::run_limited(cmd, limit, 4 << 30);
    assert_eq!(out.code, Some(0), "{:?} {}", out.signal, out.stderr);
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch left behind");
    assert!(!dir.join("r.json.lock").exists(), "lock left behind");
    let text = std::fs::read_to_string(&report).unwrap();
    (out, serde_json::from_str(&text).unwrap())
}

#[test]
fn an_nvidia_smi_that_never_answers_costs_a_field_not_the_run() {
    let dir = scratch();
    // Every query hangs, the device list too.
    let hang = smi("sleep 1000", "H100", "sleep 1000").replace("*index,uuid,name*)", "*index,uuid,name*) sleep 1000;");
    let (out, r) = run_bounded_smi(dir.path(), &hang, Duration::from_secs(120));
    let why = r["system"]["unavailable"]["nvidia_gpus"].as_str().unwrap_or_default();
    assert_eq!(
        why, "unavailable: nvidia-smi gave no answer within 10 s",
        "{}",
        r["system"]
    );
    let t = &cases(&r)[0]["telemetry"];
    let all = t["unavailable"]["all"].as_str().unwrap_or_default();
    assert!(all.contains("gave no answer within 10 s"), "{t}");
    let wait = t["unavailable"]["wait_temp"].as_str().unwrap_or_default();
    assert!(wait.contains("cannot read the temperature"), "{t}");
    // One wait for the system context and one for the device list, not one per reader.
    assert!(out.elapsed < Duration::from_secs(60), "{:?}", out.elapsed);
}

#[test]
fn an_nvidia_smi_that_prints_without_end_costs_a_field_not_the_run() {
    let dir = scratch();
    // The system query prints without end; the stream gives one reading, then a line that
    // never ends.
    let flood = smi(
        "echo '1980, 1980, 50, 100, 90, 0x0'; sleep 0.5; exec cat /dev/zero",
        "H100",
        "exec yes",
    );
    let (_, r) = run_bounded_smi(dir.path(), &flood, Duration::from_secs(120));
    let why = r["system"]["unavailable"]["nvidia_gpus"].as_str().unwrap_or_default();
    assert_eq!(
        why, "unavailable: nvidia-smi printed more than 1048576 bytes",
        "{}",
        r["system"]
    );
    let t = &cases(&r)[0]["telemetry"];
    let ended = t["unavailable"]["ended"].as_str().unwrap_or_default();
    assert!(ended.contains("a line longer than 4096 bytes after 1 line(s)"), "{t}");
}

/// A fake `nvidia-smi -lms` body: GPU 0 hot (95 °C) and throttled, GPU 1 at full clock and
/// 60 °C.
const TWO_GPUS: &str = "while :; do if [ \"$gpu\" = 0 ]; then echo '700, 1980, 95, 300, 100, 0x40'; \
                        else echo '1980, 1980, 60, 350, 100, 0x0'; fi; sleep 0.05; done";

#[test]
fn cuda_visible_devices_picks_the_gpu_that_is_sampled() {
    let dir = scratch();
    let env = with_fake_smi(dir.path(), &smi(TWO_GPUS, "H100", "exit 9"));
    let py = worker(dir.path(), "true");
    // The baseline's cuda:0 is GPU 0, the env variant's GPU 1.
    let (_, r) = run_one(dir.path(), &py, &["--env-var", "CUDA_VISIBLE_DEVICES=1"], &env);
    let variant = |c: &serde_json::Value| c["env_variant"].as_str().unwrap().to_string();
    assert_eq!(cases(&r).len(), 2);
    for c in cases(&r) {
        let t = &c["telemetry"];
        let (gpu, throttled) = if variant(c) == "baseline" {
            (0, true)
        } else {
            (1, false)
        };
        assert_eq!(t["source"], format!("nvidia-smi (GPU {gpu})"), "{}: {t}", variant(c));
        assert_eq!(t["throttled"], throttled, "{}: {t}", variant(c));
    }
    // In the run's environment, for --wait-temp too: GPU 1 is at 60 °C, so no wait (GPU 0,
    // at 95 °C, would be waited for until the 10-minute limit).
    let mut env1 = env.to_vec();
    env1.push(("CUDA_VISIBLE_DEVICES", "1".to_string()));
    let (out, r) = run_one(dir.path(), &py, &["--wait-temp", "90"], &env1);
    let t = &cases(&r)[0]["telemetry"];
    assert_eq!(t["source"], "nvidia-smi (GPU 1)", "{t}");
    assert!(t["unavailable"].get("wait_temp").is_none(), "{t}");
    assert!(!stderr(&out).contains("waiting for"), "{}", stderr(&out));
    // Two models in CUDA's default order (fastest first): which is cuda:0 cannot be told.
    let dir = scratch();
    let mut env2 = with_fake_smi(dir.path(), &smi(TWO_GPUS, "A100,H100", "exit 9")).to_vec();
    env2.push(("CUDA_VISIBLE_DEVICES", "1".to_string()));
    let py = worker(dir.path(), "true");
    let (_, r) = run_one(dir.path(), &py, &[], &env2);
    let t = &cases(&r)[0]["telemetry"];
    assert!(t.get("source").is_none(), "{t}");
    let why = t["unavailable"]["all"].as_str().unwrap_or_default();
    assert!(why.contains("set CUDA_DEVICE_ORDER=PCI_BUS_ID"), "{t}");
}

#[test]
fn hip_and_rocr_visible_devices_pick_the_amd_card_that_is_sampled() {
    let dir = scratch();
    let root = dir.path().join("root");
    // Two AMD GPUs, KFD nodes 1 and 2 (node 0 is the CPU), cards 0 and 1: card 0 idles at
    // its lowest clock, card 1 runs at its peak.
    let kfd = root.join("sys/class/kfd/kfd/topology/nodes");
    std::fs::create_dir_all(kfd.join("0")).unwrap();
    std::fs::write(kfd.join("0/properties"), "gfx_target_version 0\n").unwrap();
    for (card, sclk) in [(0, "0: 600Mhz *\n1: 2900Mhz\n"), (1, "0: 600Mhz\n1: 2900Mhz *\n")] {
        let node = kfd.join((card + 1).to_string());
        std::fs::create_dir_all(&node).unwrap();
        let props = format!("gfx_target_version 110000\ndrm_render_minor {}\n", 128 + card);
        std::fs::write(node.join("properties"), props).unwrap();
        let dev = root.join(format!("sys/class/drm/card{card}/device"));
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("pp_dpm_sclk"), sclk).unwrap();
        let render = root.join(format!("sys/class/drm/renderD{}", 128 + card));
        std::fs::create_dir_all(&render).unwrap();
        std::os::unix::fs::symlink(&dev, render.join("device")).unwrap();
    }
    let py = worker(dir.path(), "true");
    let sysfs = ("WAN_VAE_BENCH_SYSFS_ROOT", root.display().to_string());
    for var in ["HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"] {
        let (out, r) = run_one(dir.path(), &py, &[], &[sysfs.clone(), (var, "1".to_string())]);
        let t = &cases(&r)[0]["telemetry"];
        let source = t["source"].as_str().unwrap_or_default();
        assert!(source.contains("renderD129"), "{var}: {t} {}", stderr(&out));
        assert_eq!(t["encode"]["clock_median_fraction"], 1.0, "{var}: {t}");
        assert_eq!(t["throttled"], false, "{var}: {t}");
    }
    // A UUID is not mapped to a card: nothing is read rather than another GPU.
    let uuid = ("ROCR_VISIBLE_DEVICES", "GPU-1234".to_string());
    let (_, r) = run_one(dir.path(), &py, &[], &[sysfs, uuid]);
    let t = &cases(&r)[0]["telemetry"];
    let why = t["unavailable"]["all"].as_str().unwrap_or_default();
    assert!(why.contains("UUIDs are not mapped"), "{t}");
}
