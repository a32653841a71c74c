//! `scripts/gpu-check.sh` and its report reader `scripts/gpu-check-report.py` on the CPU:
//! the verdict per case status (through the fault hook, so nothing is computed), the
//! validate step's UNSUPPORTED line on a build without CUDA, and the `oom` check on a
//! hand-written report. Needs bash and python3 (standard library only).
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::cli::{scratch, stderr, stdout, write, BIN};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(name)
}

fn gpu_check(args: &[&str]) -> Output {
    Command::new("bash")
        .arg(script("gpu-check.sh"))
        .args(args)
        .env("WAN_VAE_BENCH", BIN)
        .env_remove("WAN_VAE_BENCH_FAULT")
        .output()
        .expect("run bash")
}

/// The verdict lines (`PASS ...`, `FAIL ...`) of the script's standard output.
fn verdicts(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| {
            let (v, rest) = l.split_once(' ')?;
            matches!(v, "PASS" | "FAIL" | "UNSUPPORTED" | "SKIP" | "INFO")
                .then(|| (v.to_string(), rest.trim().to_string()))
        })
        .collect()
}

const FAULTS: &str = r#"
[model]
weights = "synthetic"
device = "cpu"
[run]
warmup = 0
runs = 1
order = "as-written"
[matrix]
env = ["fine", "oom", "unsupported", "fail"]
[env.fine]
WAN_VAE_BENCH_FAULT = "fake"
[env.oom]
WAN_VAE_BENCH_FAULT = "oom"
[env.unsupported]
WAN_VAE_BENCH_FAULT = "unsupported"
[env.fail]
WAN_VAE_BENCH_FAULT = "fail"
"#;

#[test]
fn gpu_check_gives_one_verdict_per_case_and_fails_on_a_failure() {
    let dir = scratch();
    let cfg = write(dir.path(), "faults.toml", FAULTS);
    let out_dir = dir.path().join("out");
    let out = gpu_check(&[
        "--smoke",
        "--engines",
        "candle",
        "--steps",
        "faults",
        "--configs",
        cfg.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--",
        "--fault-hooks",
    ]);
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a FAIL makes exit 1\n{text}\n{}",
        stderr(&out)
    );
    let v = verdicts(&text);
    let find = |env: &str| {
        v.iter()
            .find(|(_, rest)| rest.starts_with(&format!("run faults fp32-chunk1-untiled-5x64x64-{env}:")))
            .unwrap_or_else(|| panic!("no verdict for {env}\n{text}"))
            .0
            .clone()
    };
    assert_eq!(find("fine"), "PASS");
    assert_eq!(find("oom"), "FAIL");
    assert_eq!(find("unsupported"), "UNSUPPORTED");
    assert_eq!(find("fail"), "FAIL");
    assert!(
        text.contains("summary: 1 PASS, 2 FAIL, 1 UNSUPPORTED, 0 SKIP"),
        "{text}"
    );
    // What the verdicts were read from stays beside them.
    let checks = std::fs::read_to_string(out_dir.join("checks.txt")).unwrap();
    assert_eq!(checks.lines().count(), 4, "{checks}");
    assert!(out_dir.join("faults.json").is_file() && out_dir.join("faults.log").is_file());
}

#[test]
fn gpu_check_says_unsupported_when_the_build_has_no_cuda() {
    if cfg!(feature = "cuda") {
        return; // A CUDA build may have a GPU to validate on.
    }
    let dir = scratch();
    let out_dir = dir.path().join("out");
    let out = gpu_check(&[
        "--device",
        "cuda:0",
        "--engines",
        "candle",
        "--steps",
        "validate",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "UNSUPPORTED is not a failure\n{text}\n{}",
        stderr(&out)
    );
    let v = verdicts(&text);
    assert_eq!(v.len(), 4, "candle x (wan21, wan22) x (fp32, bf16)\n{text}");
    for (verdict, rest) in &v {
        assert_eq!(verdict, "UNSUPPORTED", "{rest}");
        assert!(rest.contains("this build has no CUDA support"), "{rest}");
    }
}

#[test]
fn gpu_check_rejects_an_unknown_step() {
    let dir = scratch();
    let out = gpu_check(&["--steps", "wan99", "--out", dir.path().join("o").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown step wan99"), "{}", stderr(&out));
}

fn oom_report(message: &str, next_status: &str) -> String {
    format!(
        r#"{{"run": {{"device": "cuda:0"}}, "cases": [
  {{"id": "torch-fp32-big", "engine": "torch", "width": 3072, "height": 1792, "passes": "both", "precision": "fp32",
    "status": "oom", "error": "{message}"}},
  {{"id": "torch-fp32-small", "engine": "torch", "width": 320, "height": 320, "passes": "both",
    "status": "{next_status}", "encode": {{"median_s": 0.5}}, "decode": {{"median_s": 0.9}}}}
]}}"#
    )
}

fn read_oom(dir: &Path, report: &str) -> Vec<(String, String)> {
    let path = write(dir, "oom.json", report);
    let out = Command::new("python3")
        .arg(script("gpu-check-report.py"))
        .args([
            "run",
            "--name",
            "oom",
            "--device",
            "cuda:0",
            "--rc",
            "1",
            "--log",
            "/dev/null",
            "--oom",
        ])
        .arg(&path)
        .output()
        .expect("run python3");
    assert!(out.status.success(), "{}", stderr(&out));
    verdicts(&stdout(&out))
}

#[test]
fn gpu_check_oom_wants_the_size_in_the_message_and_a_next_case_that_runs() {
    let dir = scratch();
    let v = read_oom(
        dir.path(),
        &oom_report(
            "out of memory: 5 frames at 3072x1792, encode+decode, fp32, untiled, chunk 1 on cuda:0 (failed in \
             `decode run 1/1`; 79.19 GiB total, 0.31 GiB free when it failed); try spatial tiles",
            "ok",
        ),
    );
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].0, "PASS", "{v:?}");
    assert!(v[0].1.contains("names the size"), "{v:?}");
    assert_eq!(v[1].0, "PASS", "{v:?}");

    let v = read_oom(
        dir.path(),
        &oom_report("CUDA out of memory. Tried to allocate 20 GiB", "failed"),
    );
    assert_eq!(v[0].0, "FAIL", "no size in the message: {v:?}");
    assert!(v[0].1.contains("does not name the size 3072x1792"), "{v:?}");
    assert!(v[0].1.contains("the precision fp32, the device memory"), "{v:?}");
    assert_eq!(v[1].0, "FAIL", "the next case must run: {v:?}");
}

#[test]
fn gpu_check_takes_the_comfyui_engine_into_its_matrices() {
    let dir = scratch();
    let refused_out = dir.path().join("refused");
    let out = gpu_check(&[
        "--comfyui",
        dir.path().join("nowhere").to_str().unwrap(),
        "--out",
        refused_out.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a ComfyUI folder"), "{}", stderr(&out));
    assert!(!refused_out.exists(), "refused before anything is written");

    // A folder that passes the script's check; the fault hook stands in for the engines.
    let comfy = dir.path().join("ComfyUI");
    std::fs::create_dir_all(comfy.join("comfy")).unwrap();
    write(&comfy.join("comfy"), "sd.py", "");
    let cfg = write(dir.path(), "faults.toml", FAULTS);
    let out_dir = dir.path().join("out");
    let out = gpu_check(&[
        "--smoke",
        "--engines",
        "candle",
        "--comfyui",
        comfy.to_str().unwrap(),
        "--steps",
        "validate,faults",
        "--configs",
        cfg.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--",
        "--fault-hooks",
        "--python",
        "python3",
    ]);
    let text = stdout(&out);
    let v = verdicts(&text);
    assert!(
        v.iter()
            .any(|(verdict, rest)| verdict == "SKIP" && rest.starts_with("validate comfyui")),
        "{text}\n{}",
        stderr(&out)
    );
    assert!(
        v.iter().any(|(verdict, rest)| verdict == "PASS"
            && rest.starts_with("run faults comfyui-fp32-chunk1-untiled-5x64x64-fine:")),
        "{text}\n{}",
        stderr(&out)
    );
}
