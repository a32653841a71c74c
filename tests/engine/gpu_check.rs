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
    report_verdicts(
        &path,
        &[
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
        ],
    )
}

/// The verdict lines of `gpu-check-report.py CMD PATH`.
fn report_verdicts(path: &Path, cmd: &[&str]) -> Vec<(String, String)> {
    let out = Command::new("python3")
        .arg(script("gpu-check-report.py"))
        .args(cmd)
        .arg(path)
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

/// A matrix report of `cases` (JSON objects) on `cuda:0`, read by `gpu-check-report.py CMD`.
fn read_report(dir: &Path, name: &str, cmd: &[&str], cases: &str) -> Vec<(String, String)> {
    let path = write(
        dir,
        name,
        &format!(r#"{{"run": {{"device": "cuda:0"}}, "cases": [{cases}]}}"#),
    );
    report_verdicts(&path, cmd)
}

#[test]
fn gpu_check_oom_expects_the_true_fp32_twin_of_the_big_case_to_fail_too() {
    // On NVIDIA `run` adds the fp32 case's TF32-off reference, as large: the H200 check of
    // 2026-11-26 called its `oom` a failed "next case".
    let dir = scratch();
    let msg = "out of memory: 5 frames at 3072x1792, encode+decode, fp32, untiled, chunk 1 on cuda:0 (failed in \
               `encode run 1/1`; 139.80 GiB total, 2.92 GiB free when it failed); try spatial tiles";
    let big = |id: &str| {
        format!(
            r#"{{"id": "{id}", "engine": "torch", "width": 3072, "height": 1792, "precision": "fp32", "status": "oom", "error": "{msg}"}}"#
        )
    };
    let small = |id: &str| {
        format!(
            r#"{{"id": "{id}", "engine": "torch", "width": 320, "height": 320, "status": "ok", "encode": {{"median_s": 0.4}}, "decode": {{"median_s": 0.1}}}}"#
        )
    };
    let cases = [big("big"), big("big-tf32_off"), small("small"), small("small-tf32_off")].join(",");
    let v = read_report(
        dir.path(),
        "oom.json",
        &[
            "run",
            "--name",
            "oom",
            "--device",
            "cuda:0",
            "--rc",
            "0",
            "--log",
            "/dev/null",
            "--oom",
        ],
        &cases,
    );
    assert_eq!(v.len(), 4, "{v:?}");
    assert!(v.iter().all(|(verdict, _)| verdict == "PASS"), "{v:?}");
    assert!(v[1].1.starts_with("oom oom big-tf32_off: status oom"), "{v:?}");
}

/// A lever case of the levers' matrix: decode median `median_s`, `tf32` as the axis says and
/// `in_force` as torch read it back, error `max_abs` against the run's fp32 reference.
fn lever_case(
    id: &str,
    layout: &str,
    tf32: &str,
    in_force: &str,
    median_s: f64,
    max_abs: f64,
    reference: bool,
) -> String {
    format!(
        r#"{{"id": "{id}", "engine": "torch", "precision": "fp32", "layout": "{layout}", "conv3d": "native",
            "tf32": "{tf32}", "cudnn": "auto", "cudnn_benchmark": "auto", "added_as_reference": {reference},
            "knobs_in_force": {{"tf32": "{in_force}"}}, "status": "ok",
            "decode": {{"median_s": {median_s}, "samples_s": [{median_s}]}},
            "quality": {{"reference_id": "ref", "decoded": {{"max_abs": {max_abs}, "psnr_db": 70.0, "identical": false}}}}}}"#
    )
}

#[test]
fn gpu_check_levers_compares_each_lever_with_the_default_of_the_same_knobs() {
    // The H200 check of 2026-11-26: TF32 lever cases were held to the 1e-4 bound against the
    // true-fp32 reference (their error was TF32's, 4e-3), and timed against that reference
    // (2.6 s) instead of the TF32 default (0.72 s).
    let dir = scratch();
    let on = "conv on, matmul off";
    let cases = [
        lever_case("default", "ncdhw", "auto", on, 0.72, 4.1e-3, false),
        lever_case("cl3d", "channels_last_3d", "auto", on, 0.64, 4.3e-3, false),
        lever_case("ref", "ncdhw", "off", "conv off, matmul off", 2.62, 0.0, true),
        lever_case(
            "cl3d-tf32_off",
            "channels_last_3d",
            "off",
            "conv off, matmul off",
            2.66,
            1.3e-5,
            false,
        ),
    ]
    .join(",");
    let v = read_report(dir.path(), "levers.json", &["levers", "--name", "levers"], &cases);
    let find = |prefix: &str| {
        v.iter()
            .find(|(_, rest)| rest.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {v:?}"))
    };
    let tf32 = find("levers levers torch fp32 layout=channels_last_3d conv3d=native:");
    assert_eq!(tf32.0, "INFO", "TF32's own error is no lever's: {v:?}");
    assert!(tf32.1.contains("the default's own 4.100e-03"), "{v:?}");
    let speed = find("levers levers torch fp32 layout=channels_last_3d conv3d=native speed:");
    assert!(speed.1.contains("0.640 s vs default 0.720 s: 1.12x"), "{v:?}");
    let exact = find("levers levers torch fp32 tf32=off layout=channels_last_3d conv3d=native:");
    assert_eq!(exact.0, "PASS", "{v:?}");
    let speed = find("levers levers torch fp32 tf32=off layout=channels_last_3d conv3d=native speed:");
    assert!(speed.1.contains("2.660 s vs default 2.620 s: 0.98x"), "{v:?}");

    // In true fp32 a lever whose output moved is a failure.
    let cases = [
        lever_case("ref", "ncdhw", "off", "conv off, matmul off", 2.62, 0.0, false),
        lever_case(
            "cl3d",
            "channels_last_3d",
            "off",
            "conv off, matmul off",
            2.66,
            1e-3,
            false,
        ),
    ]
    .join(",");
    let v = read_report(dir.path(), "levers2.json", &["levers", "--name", "levers"], &cases);
    assert!(
        v.iter()
            .any(|(verdict, rest)| verdict == "FAIL" && rest.contains("max_abs 1.000e-03")),
        "{v:?}"
    );
}

#[test]
fn gpu_check_reads_each_gpu_cases_telemetry() {
    let dir = scratch();
    let case = |id: &str, telemetry: &str| {
        format!(
            r#"{{"id": "{id}", "engine": "torch", "passes": "decode", "status": "ok", "device_peak_allocated_bytes": 1073741824,
                "decode": {{"median_s": 0.5}} {telemetry}}}"#
        )
    };
    let pass = r#"{"samples": 15, "clock_median_fraction": 0.99, "clock_median_mhz": 1965.0, "temp_peak_c": 63.0,
                   "power_mean_w": 630.9, "throttle_reasons": ["sw_power_cap"], "throttled": false}"#;
    let cases = [
        case(
            "fine",
            &format!(r#", "telemetry": {{"source": "nvidia-smi (GPU 0)", "clock_max_mhz": 1980.0, "decode": {pass}}}"#),
        ),
        case("none", ""),
        case(
            "false-verdict",
            &format!(
                r#", "telemetry": {{"source": "nvidia-smi (GPU 0)", "clock_max_mhz": 1980.0, "throttled": true,
                    "throttle_why": "decode: median clock 50%", "decode": {}}}"#,
                pass.replace("[\"sw_power_cap\"]", "[]")
            ),
        ),
    ]
    .join(",");
    let v = read_report(
        dir.path(),
        "run.json",
        &[
            "run",
            "--name",
            "m",
            "--device",
            "cuda:0",
            "--rc",
            "0",
            "--log",
            "/dev/null",
        ],
        &cases,
    );
    let of = |id: &str| {
        v.iter()
            .find(|(_, rest)| rest.starts_with(&format!("telemetry m {id}:")))
            .unwrap_or_else(|| panic!("{id}: {v:?}"))
    };
    assert_eq!(of("fine").0, "PASS", "{v:?}");
    assert!(
        of("fine")
            .1
            .contains("not throttled; nvidia-smi (GPU 0); decode: 15 samples, clock 1965.0 MHz (99% of 1980.0)"),
        "{v:?}"
    );
    assert_eq!(of("none").0, "FAIL", "{v:?}");
    assert_eq!(
        of("false-verdict").0,
        "FAIL",
        "throttled with no thermal or power reason: {v:?}"
    );
}

#[test]
fn gpu_check_prints_each_engines_nvml_peak_and_candles_cudnn_plans() {
    let dir = scratch();
    let peak =
        r#""device_process_peak": {"peak_bytes": 12884901888, "samples": 420, "interval_ms": 10, "source": "NVML"}"#;
    let plan = |algo: &str, math: &str| {
        format!(
            r#"{{"input": [1, 96, 6, 480, 832], "weight": [96, 96, 3, 3, 3], "stride": [1, 1, 1], "padding": [0, 1, 1],
                "dtype": "f32", "algorithm": "{algo}", "family": "implicit-gemm/cudnn", "math": "{math}",
                "workspace_bytes": 1048576, "heuristic_rank": 0, "chosen_by": "heuristics", "calls": 21}}"#
        )
    };
    let cases = [
        format!(
            r#"{{"id": "torch-fp32", "engine": "torch", "passes": "decode", "status": "ok", "decode": {{"median_s": 0.5}},
                "device_peak_allocated_bytes": 1073741824, "device_peak_reserved_bytes": 2147483648, {peak}}}"#
        ),
        format!(
            r#"{{"id": "fp32", "engine": "candle", "passes": "decode", "status": "ok", "decode": {{"median_s": 0.6}},
                "device_memory_bytes": 1073741824, {peak},
                "conv_library": {{"library": "cuDNN", "version": "9.19.0", "math": "fp32: FMA math (no TF32)",
                  "workspace_cap_bytes": 1073741824, "workspace_bytes": 3145728,
                  "plans": [{}, {}, {}]}}}}"#,
            plan("IMPLICIT_PRECOMP_GEMM", "FMA"),
            plan("IMPLICIT_PRECOMP_GEMM", "FMA"),
            plan("WINOGRAD_NONFUSED", "FMA")
        ),
        r#"{"id": "no-nvml", "engine": "candle", "passes": "decode", "status": "ok", "decode": {"median_s": 0.6},
            "device_process_peak": {"samples": 0, "interval_ms": 10, "source": "NVML",
              "error": "libnvidia-ml.so.1 (NVML, part of the NVIDIA driver) could not be loaded"}}"#
            .to_string(),
    ]
    .join(",");
    let run = [
        "run",
        "--name",
        "m",
        "--device",
        "cuda:0",
        "--rc",
        "0",
        "--log",
        "/dev/null",
    ];
    let v = read_report(dir.path(), "run.json", &run, &cases);
    let of = |check: &str| {
        v.iter()
            .find(|(_, rest)| rest.starts_with(check))
            .unwrap_or_else(|| panic!("{check}: {v:?}"))
    };
    let torch = of("run m torch-fp32:");
    assert_eq!(torch.0, "PASS", "{v:?}");
    assert!(
        torch.1.contains("reserved; process peak 12.0 GiB (NVML, 420 samples)"),
        "{v:?}"
    );
    assert!(
        of("run m fp32:")
            .1
            .contains("(nvidia-smi); process peak 12.0 GiB (NVML"),
        "{v:?}"
    );
    let lib = of("conv_library m fp32:");
    assert_eq!(lib.0, "INFO", "{v:?}");
    assert!(
        lib.1.contains("cuDNN 9.19.0, fp32: FMA math (no TF32); 3 shapes: IMPLICIT_PRECOMP_GEMM (FMA) x2, WINOGRAD_NONFUSED (FMA) x1; workspace 3.0 MiB"),
        "{v:?}"
    );
    assert_eq!(of("run m no-nvml:").0, "PASS", "{v:?}");
    let missing = of("process_peak m no-nvml:");
    assert_eq!(missing.0, "FAIL", "the one memory metric is missing: {v:?}");
    assert!(missing.1.contains("no NVML peak: libnvidia-ml.so.1"), "{v:?}");
    assert!(!v.iter().any(|(_, r)| r.starts_with("process_peak m fp32")), "{v:?}");
    assert!(
        !v.iter().any(|(_, r)| r.starts_with("conv_library m torch")),
        "torch has no plans: {v:?}"
    );
}

#[test]
fn gpu_check_profiles_under_quick_and_smoke() {
    // --quick and --smoke each add --runs (and --smoke the size) to every run: the profile
    // step, which sets its own, was refused ("cannot be used multiple times") before 2026-11-26.
    let dir = scratch();
    let out_dir = dir.path().join("out");
    let out = gpu_check(&[
        "--smoke",
        "--quick",
        "--steps",
        "profile",
        "--engines",
        "candle",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    let v = verdicts(&text);
    assert_eq!(v.len(), 2, "fp32 and bf16: {v:?}");
    assert!(
        v.iter()
            .all(|(verdict, rest)| verdict == "PASS" && rest.contains("per-layer profile")),
        "{v:?}"
    );
}
