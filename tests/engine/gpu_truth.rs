//! Issue 27 on the CPU: TF32 as a knob (ids, references, CSV, budgets; `n/a` on the CPU and on
//! a machine whose GPUs are AMD's; the Python side's set and read-back; validate's rule),
//! decode-only latents encoded by an engine on the run's device, and out-of-memory messages
//! that say what did not fit.
use std::path::Path;

use crate::need;
use crate::util::cli::*;
use wan_vae_bench::report::CaseStatus;

/// `run --list` on `device` with `args`, under the fake sysfs `root` (else an empty one, a
/// machine without AMD GPUs, whatever this one has): the ids.
fn listed(device: &str, args: &[&str], root: Option<&Path>) -> Vec<String> {
    let empty = scratch();
    let mut cmd = bench();
    cmd.env("WAN_VAE_BENCH_SYSFS_ROOT", root.unwrap_or(empty.path()));
    let out = cmd
        .args([
            "run",
            "--list",
            "--device",
            device,
            "--frames",
            "5",
            "--size",
            "32x32",
            "--precision",
            "fp32",
            "--control",
            "off",
        ])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // The rows: after the header, up to the totals (the forecast's lines follow).
    text.lines()
        .skip(1)
        .take_while(|l| !l.contains("case(s),"))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

#[test]
fn tf32_is_a_knob_with_a_true_fp32_reference_on_nvidia_and_na_elsewhere() {
    let ids = listed("cuda:0", &["--engine", "candle,torch", "--tf32", "auto,on"], None);
    assert_eq!(
        ids,
        [
            // candle: its `auto` is true fp32 (the id it always had) and the reference of its
            // TF32 case (issue 57: TF32 acts on candle on NVIDIA GPUs).
            "fp32-chunk1-untiled-5x32x32-baseline",
            "fp32-chunk1-untiled-5x32x32-baseline-tf32_on",
            "torch-fp32-chunk1-untiled-5x32x32-baseline-miopen_user",
            "torch-fp32-chunk1-untiled-5x32x32-baseline-miopen_user-tf32_on",
            // The reference of both of torch's: true fp32, added to the matrix.
            "torch-fp32-chunk1-untiled-5x32x32-baseline-miopen_user-tf32_off",
        ]
    );
    // A machine whose GPUs are AMD's (ROCm names them cuda:N too): no TF32, no second reference.
    let dir = scratch();
    crate::bench_system::fake_strix_halo(dir.path());
    let ids = listed(
        "cuda:0",
        &["--engine", "torch", "--tf32", "auto,on,off"],
        Some(dir.path()),
    );
    assert_eq!(ids, ["torch-fp32-chunk1-untiled-5x32x32-baseline-miopen_user"]);
    // Bad values name the flag and what is valid, before anything runs.
    let out = bench().args(["run", "--tf32", "fast"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--tf32") && stderr(&out).contains("auto, on or off"),
        "{}",
        stderr(&out)
    );
}

/// A matrix of fake torch cases (standard-library Python only) on `device`.
fn fake_torch(dir: &Path, device: &str, extra: &str) -> (std::process::Output, wan_vae_bench::report::Report) {
    let cfg = write(
        dir,
        "m.toml",
        &format!(
            "[model]\ndevice = \"{device}\"\n[run]\nwarmup = 0\nruns = 1\norder = \"as-written\"\n[matrix]\n\
             engine = [\"torch\"]\nsize = [\"16x8\"]\ntf32 = [\"on\", \"off\"]\nenv = [\"fake\"]\n\
             [env.fake]\nWAN_VAE_BENCH_FAULT = \"fake\"\n{extra}"
        ),
    );
    let csv = dir.join("cases.csv");
    let (out, report) = run(
        dir,
        &[
            "--fault-hooks",
            "--config",
            cfg.to_str().unwrap(),
            "--python",
            "python3",
            "--export-csv",
            csv.to_str().unwrap(),
        ],
    );
    (out, load(&report))
}

#[test]
fn tf32_reaches_csv_and_budgets_and_is_na_on_the_cpu() {
    let dir = scratch();
    let budget = "[[budgets.case]]\ntf32 = \"on\"\ndecode_median_s = 1000\n";
    let (out, r) = fake_torch(dir.path(), "cuda:0", budget);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ids: Vec<&str> = r.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "torch-fp32-chunk1-untiled-5x16x8-fake-miopen_user-tf32_on",
            "torch-fp32-chunk1-untiled-5x16x8-fake-miopen_user-tf32_off"
        ]
    );
    let scopes: Vec<usize> = r.cases.iter().map(|c| c.budgets.len()).collect();
    assert_eq!(scopes, [1, 0], "the tf32 filter picks the `on` case");
    let csv = std::fs::read_to_string(dir.path().join("cases.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "tf32").expect("a tf32 column");
    let values: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(col).unwrap()).collect();
    // Rows in the order of their axes (issue 67): `off` before `on`.
    assert_eq!(values, ["off", "on"]);

    // On the CPU the knob does not act: one case, recorded n/a.
    let cpu = scratch();
    let (out, r) = fake_torch(cpu.path(), "cpu", "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r.cases.len(), 1);
    assert_eq!(r.cases[0].settings.knobs.tf32.name(), "n/a");
    let csv = std::fs::read_to_string(cpu.path().join("cases.csv")).unwrap();
    assert!(csv.lines().nth(1).unwrap().contains(",n/a,"), "{csv}");
}

#[test]
fn the_python_side_sets_tf32_and_reads_it_back() {
    let py = need!(python());
    let code = r#"
import sys
sys.path.insert(0, sys.argv[1])
import torch, wan_common as wc, wan_runtime as rt
cuda = torch.device("cuda", 0)
wc.set_tf32(True); print("on:", wc.tf32_flags())
wc.set_tf32(False); print("off:", wc.tf32_flags())
print("applied:", rt.apply_knobs(torch, {"tf32": "on", "cudnn": "auto"}, cuda)["tf32"], wc.tf32_flags())
print("cpu:", rt.apply_knobs(torch, {"tf32": "n/a"}, torch.device("cpu"))["tf32"])
torch.version.hip = "6.4.0"
print("rocm:", rt.apply_knobs(torch, {"tf32": "off"}, cuda)["tf32"], wc.tf32_flags())
"#;
    let text = python_code(&py, code);
    for want in [
        "on: (True, True)",
        "off: (False, False)",
        "applied: on (True, True)",
        "cpu: not applicable (cpu)",
        // On ROCm the knob is not applied: the flags stay as they were.
        "rocm: not applicable (rocm) (True, True)",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
}

#[test]
fn validate_checks_true_fp32_and_refuses_tf32_for_candle() {
    let py = need!(python());
    let out = bench()
        .args(["validate", "--json", "--engine", "torch", "--tf32", "on", "--python"])
        .arg(&py)
        .arg("--weights")
        .arg(fixture("wan21_tiny.weights.safetensors"))
        .arg("--cases")
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // No TF32 on the CPU: the fp32 rule, and the knob says why.
    assert_eq!(v["knobs"]["tf32"], "not applicable (cpu)");
    assert_eq!(v["tolerance_rule"], "max_abs_error <= 1e-4 x max(1, max|expected|)");
    let out = bench()
        .args([
            "validate",
            "--engine",
            "candle",
            "--tf32",
            "on",
            "--weights",
            "synthetic",
            "--cases",
        ])
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--tf32") && stderr(&out).contains("true fp32"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn decode_only_latents_come_from_an_engine_on_the_runs_device() {
    let py = need!(python());
    let dir = scratch();
    let weights = fixture("wan21_tiny.weights.safetensors");
    let args = |engines: &'static str| {
        vec![
            "--fault-hooks".to_string(),
            "--engine".into(),
            engines.into(),
            "--passes".into(),
            "decode".into(),
            "--weights".into(),
            weights.display().to_string(),
            "--python".into(),
            py.display().to_string(),
            "--size".into(),
            "32x32".into(),
            "--precision".into(),
            "fp32".into(),
            "--warmup".into(),
            "0".into(),
            "--runs".into(),
            "1".into(),
        ]
    };
    // Candle made unavailable for the device (as a build without CUDA is on a GPU): torch encodes.
    let report = dir.path().join("r.json");
    let out = bench()
        .env("WAN_VAE_BENCH_FAULT", "candle-lacks-device")
        .arg("run")
        .args(args("candle,torch"))
        .arg("-o")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = load(&report);
    assert!(
        r.run.prepared_latents.as_deref().unwrap_or("").starts_with("torch "),
        "{:?}",
        r.run.prepared_latents
    );
    assert_eq!(r.cases.len(), 2);
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
    }
    // Both engines decoded the same bits: torch's decode is within fp32 rounding of candle's.
    let t = r.cases.iter().find(|c| c.id.starts_with("torch-")).unwrap();
    let x = t
        .quality
        .as_ref()
        .and_then(|q| q.cross_engine.as_ref())
        .expect("cross_engine");
    assert!(x.max_abs_error <= 1e-4 * x.max_abs_reference.max(1.0), "{x:?}");

    // candle's own encode fails (its device path broken): torch encodes instead, and the
    // decode-only cases of both engines still run (issue 57: the first run of a new path).
    let report = dir.path().join("fallback.json");
    let out = bench()
        .env("WAN_VAE_BENCH_FAULT", "candle-prepare-fails")
        .arg("run")
        .args(args("candle,torch"))
        .arg("-o")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = load(&report);
    assert!(
        r.run.prepared_latents.as_deref().unwrap_or("").starts_with("torch "),
        "{:?}",
        r.run.prepared_latents
    );
    assert!(
        r.cases.iter().all(|c| c.outcome.status == CaseStatus::Ok),
        "{:?}",
        r.cases
    );
    assert!(
        stderr(&out).contains("injected failure of candle's latent preparation")
            && stderr(&out).contains("encoded by torch instead"),
        "{}",
        stderr(&out)
    );

    // Without a Python engine nothing can encode there: refused before anything runs.
    let report = dir.path().join("refused.json");
    let out = bench()
        .env("WAN_VAE_BENCH_FAULT", "candle-lacks-device")
        .arg("run")
        .args(args("candle"))
        .arg("-o")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    for needle in ["decode-only", "candle has no cpu support", "--input", "--engine torch"] {
        assert!(stderr(&out).contains(needle), "{needle}: {}", stderr(&out));
    }
    assert!(!report.exists());
}

#[test]
fn an_out_of_memory_case_says_what_did_not_fit_and_what_to_try() {
    let dir = scratch();
    // The default (`baseline`) runs out of memory; a fake case beside it runs.
    let cfg = write(
        dir.path(),
        "m.toml",
        "[run]\nwarmup = 0\nruns = 1\norder = \"as-written\"\n[matrix]\nsize = [\"32x32\"]\nframes = [21]\n\
         env = [\"baseline\", \"fine\"]\n[env.baseline]\nWAN_VAE_BENCH_FAULT = \"oom\"\n\
         [env.fine]\nWAN_VAE_BENCH_FAULT = \"fake\"\n",
    );
    let (out, report) = run(dir.path(), &["--fault-hooks", "--config", cfg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = load(&report);
    let c = &r.cases[0];
    assert_eq!(c.outcome.status, CaseStatus::Oom);
    let error = c.outcome.error.as_deref().unwrap();
    let first = error.lines().next().unwrap();
    for needle in [
        "out of memory: 21 frames at 32x32, encode+decode, fp32, untiled, chunk 1 on cpu",
        "GiB total",
        "GiB free when it failed",
        "--tile 512:128",
        "--precision bf16",
        "--temporal-tile 64:8",
    ] {
        assert!(first.contains(needle), "{needle}: {first}");
    }
    assert!(
        error.contains("memory allocation of"),
        "the worker's own text follows: {error}"
    );
    let m = c.outcome.memory_at_failure.as_ref().expect("memory at failure");
    assert!(
        m.total_bytes >= m.free_bytes && m.source.contains("/proc/meminfo"),
        "{m:?}"
    );
    // The table's line and the answer say it too.
    let lines = format!("{}{}", stdout(&out), stderr(&out));
    assert!(lines.contains("out of memory: 21 frames at 32x32"), "{lines}");
    let a = &r.summary.as_ref().unwrap().answers[0];
    let base = a.baseline.as_ref().expect("the default is cited");
    assert_eq!(base.error.as_deref(), Some(first));
}
