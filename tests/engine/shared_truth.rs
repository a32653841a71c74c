//! Issue 37 (reliability round 4): a case's figures in a shared worker are those of a process
//! of its own: its peak memory is its own, knobs set by an earlier case of another precision
//! do not leak, a decode-only case's latent is prepared in a worker no measured case reuses, a
//! reused worker that dies or goes deaf before acknowledging a case is replaced rather than
//! blamed on the case; and the up-front checks and notes of the same round (TMPDIR, knobs that
//! collapse on the device).
use std::path::Path;
use std::time::Duration;

use crate::util::cli::{bench, python, scratch, stderr};
use crate::util::procs::run_bounded;

/// `run ARGS -o DIR/NAME` (1 warmup-free timed run, quiet), its exit code, stderr and report.
fn run(dir: &Path, name: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String, serde_json::Value) {
    let out_path = dir.join(name);
    let mut cmd = bench();
    cmd.args(["run", "--warmup", "0", "--runs", "1", "--quiet", "-o"])
        .arg(&out_path)
        .args(args)
        .envs(env.iter().copied());
    let out = run_bounded(cmd, Duration::from_secs(600));
    let code = out.status.code().unwrap_or(-1);
    let text = std::fs::read_to_string(&out_path).unwrap_or_else(|_| panic!("no report: {}", stderr(&out)));
    (code, stderr(&out), serde_json::from_str(&text).unwrap())
}

fn case<'a>(report: &'a serde_json::Value, part: &str) -> &'a serde_json::Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"].as_str().unwrap().contains(part))
        .unwrap_or_else(|| panic!("no case with {part}: {report}"))
}

fn peak(c: &serde_json::Value) -> f64 {
    c["peak_rss_bytes"].as_f64().unwrap_or_else(|| panic!("no peak: {c}"))
}

/// A small case after a large one in the same worker records its own peak, within 10% of the
/// same case in a process of its own (it recorded what the large case's freed memory and the
/// convolutions' kept buffers left resident: the large case's figure, or near it).
fn peak_is_its_own(engine_args: &[&str]) {
    let dir = scratch();
    let common = ["--weights", "synthetic", "--precision", "fp32", "--frames", "5"];
    let shared_args: Vec<&str> = common
        .iter()
        .chain(&["--size", "128x128,16x16", "--order", "as-written"])
        .chain(engine_args)
        .copied()
        .collect();
    let (code, err, shared) = run(dir.path(), "shared.json", &shared_args, &[]);
    assert_eq!(code, 0, "{err}");
    let alone_args: Vec<&str> = common
        .iter()
        .chain(&["--size", "16x16"])
        .chain(engine_args)
        .copied()
        .collect();
    let (code, err, alone) = run(dir.path(), "alone.json", &alone_args, &[]);
    assert_eq!(code, 0, "{err}");
    let (large, small) = (case(&shared, "5x128x128"), case(&shared, "5x16x16"));
    assert_eq!(small["worker"]["process"], "reused", "{small}");
    assert_eq!(small["worker"]["pid"], large["worker"]["pid"], "{shared}");
    let own = peak(case(&alone, "5x16x16"));
    assert!(peak(large) > own * 1.2, "the large case should need more: {large}");
    // Within 10% of its own process's peak, and nearer it than the large case's by far (a
    // quarter of the gap at most): the defect recorded the large case's figure, or near it.
    // torch keeps some memory of a larger case that malloc_trim cannot give back (72 MB, 6%,
    // after this 128x128 case on the 2-core VM; 70 MB in a full suite after a 64x64 one,
    // whose own excess over the small case is only 12%: hence the larger case here).
    let ratio = peak(small) / own;
    let (excess, large_excess) = (peak(small) - own, peak(large) - own);
    assert!(
        (0.95..=1.10).contains(&ratio) && excess < 0.25 * large_excess,
        "{} bytes after the large case ({}) against {own} in its own process ({ratio:.3})",
        peak(small),
        peak(large)
    );
}

#[test]
fn a_reused_candle_workers_peak_is_the_cases_own() {
    peak_is_its_own(&[]);
}

#[test]
fn a_reused_torch_workers_peak_is_the_cases_own() {
    let py = crate::need!(python());
    peak_is_its_own(&["--engine", "torch", "--python", py.to_str().unwrap()]);
}

/// A worker that rebuilds its engine for a new precision starts from the process's knobs, not
/// from those the previous case set: after an fp32 case with cuDNN off and benchmark on, a
/// bf16 case with both `auto` runs with torch's own (enabled, not benchmarking).
#[test]
fn knobs_do_not_leak_across_a_precision_change() {
    let py = crate::need!(python());
    let dir = scratch();
    let weights = crate::util::cli::fixture("wan21_tiny.weights.safetensors");
    let code = r#"
import json, os, sys
sys.path.insert(0, sys.argv[1])
import wan_worker as ww
import torch
session = ww.Session()
def spec(precision, cudnn, bench):
    return {"id": precision, "engine": "torch", "python_module": "wan_torch", "weights": sys.argv[2],
            "weights_path": sys.argv[2], "device": "cpu", "precision": precision, "chunk": 1, "frames": 1,
            "width": 16, "height": 16, "warmup": 0, "runs": 1, "cudnn": cudnn, "cudnn_benchmark": bench,
            "tf32": "auto"}
start = (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark)
ww.measure(spec("fp32", "off", "on"), session)
after_fp32 = (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark)
ww.measure(spec("bf16", "auto", "auto"), session)
print("start", start, "after_fp32", after_fp32, "bf16_ran_with", (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark))
"#;
    let script = crate::util::cli::write(dir.path(), "knobs.py", code);
    let worker_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/python");
    let out = std::process::Command::new(&py)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(&script)
        .arg(&worker_dir)
        .arg(&weights)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("after_fp32 (False, True)"), "{text}");
    assert!(text.contains("bf16_ran_with (True, False)"), "{text}");
}

/// The untimed encode that prepares a decode-only case's latent runs in a worker of its own:
/// the measured case starts fresh, loads its model, and its start-up is its own.
#[test]
fn a_decode_only_case_is_not_measured_in_the_preparers_worker() {
    let dir = scratch();
    let (code, err, report) = run(
        dir.path(),
        "decode.json",
        &[
            "--weights",
            "synthetic",
            "--precision",
            "fp32",
            "--frames",
            "1",
            "--size",
            "16x16",
            "--passes",
            "decode",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let c = case(&report, "decode");
    let w = &c["worker"];
    assert_eq!(w["process"], "fresh", "{c}");
    assert_eq!(w["cases_before"], 0, "{c}");
    assert_eq!(w["model_reused"], false, "{c}");
    assert!(c["load_s"].as_f64().unwrap() > 0.0, "{c}");
    assert!(w["startup_s"].as_f64().unwrap() > 0.0, "{c}");
    // Beside cases that encode: the group keeps one worker (the preparation runs before the
    // first case, in its own), and the preparer never took a case's place.
    let (code, err, report) = run(
        dir.path(),
        "mixed.json",
        &[
            "--weights",
            "synthetic",
            "--precision",
            "fp32",
            "--frames",
            "1",
            "--size",
            "16x16",
            "--passes",
            "both,decode",
            "--chunk",
            "1,2",
            "--order",
            "as-written",
            "--control",
            "off",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let all = report["cases"].as_array().unwrap();
    assert_eq!(all.len(), 4, "{report}");
    let pids: std::collections::BTreeSet<u64> = all.iter().map(|c| c["worker"]["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids.len(), 1, "{report}");
    assert!(
        all.iter()
            .all(|c| c["status"] == "ok" && c["worker"]["replaced"].is_null()),
        "{report}"
    );
    assert_eq!(all[0]["worker"]["process"], "fresh", "{report}");
}

/// A reused worker that ends (exit 0) when the next case arrives, or stops reading its
/// stdin, never started that case: the case runs in a fresh worker and is `ok`, saying so.
fn replaced_worker(fault: &str) {
    let dir = scratch();
    let (code, err, report) = run(
        dir.path(),
        "between.json",
        &[
            "--fault-hooks",
            "--weights",
            "synthetic",
            "--precision",
            "fp32",
            "--frames",
            "1",
            "--size",
            "16x16",
            "--chunk",
            "1,2",
            "--order",
            "as-written",
            "--timeout",
            "60",
        ],
        &[
            ("WAN_VAE_BENCH_FAULT", fault),
            ("WAN_VAE_BENCH_FAULT_CASE", "chunk1"),
            ("WAN_VAE_BENCH_ACK_WAIT_MS", "2000"),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (one, two) = (case(&report, "chunk1"), case(&report, "chunk2"));
    assert_eq!(one["status"], "ok", "{one}");
    assert_eq!(two["status"], "ok", "{two}");
    let w = &two["worker"];
    assert_eq!(w["process"], "fresh", "{two}");
    assert_ne!(one["worker"]["pid"], w["pid"], "{report}");
    let why = w["replaced"].as_str().unwrap_or_else(|| panic!("no `replaced`: {two}"));
    assert!(why.contains("never acknowledged this case"), "{why}");
}

#[test]
fn a_reused_worker_that_exits_between_cases_is_replaced_not_blamed() {
    replaced_worker("exit-between");
}

#[test]
fn a_reused_worker_that_stops_reading_is_replaced_within_the_acknowledgement_wait() {
    let start = std::time::Instant::now();
    replaced_worker("deaf-between");
    // The 2 s acknowledgement wait, not the case's 60 s timeout.
    assert!(start.elapsed() < Duration::from_secs(50), "{:?}", start.elapsed());
}

/// A temp folder whose path is not UTF-8 is refused up front, naming TMPDIR (exit 2): the
/// workers' case lines could not carry it, and every case failed at run time.
#[test]
fn a_non_utf8_tmpdir_is_refused_naming_it() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch();
    let bad = dir.path().join(std::ffi::OsStr::from_bytes(b"tmp-\xff"));
    std::fs::create_dir(&bad).unwrap();
    let mut cmd = bench();
    cmd.args([
        "run",
        "--weights",
        "synthetic",
        "--frames",
        "1",
        "--size",
        "16x16",
        "--quiet",
        "-o",
    ])
    .arg(dir.path().join("r.json"))
    .env("TMPDIR", &bad);
    let out = run_bounded(cmd, Duration::from_secs(120));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("TMPDIR") && err.contains("not valid UTF-8"), "{err}");
    assert!(!dir.path().join("r.json").exists());
}

/// Knob values that do not act on the device collapse into one case, and the run says so
/// once, naming them.
#[test]
fn knob_values_that_collapse_on_the_cpu_are_named_once() {
    let out = bench()
        .args([
            "run",
            "--weights",
            "synthetic",
            "--frames",
            "1",
            "--size",
            "16x16",
            "--tf32",
            "on,off",
            "--list",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("were collapsed").count(), 1, "{err}");
    assert!(err.contains("--tf32 on,off: planned as candle (n/a)"), "{err}");
    let quiet = bench()
        .args([
            "run",
            "--weights",
            "synthetic",
            "--frames",
            "1",
            "--size",
            "16x16",
            "--list",
        ])
        .output()
        .unwrap();
    assert!(!stderr(&quiet).contains("collapsed"), "{}", stderr(&quiet));
}

/// With a `peak_rss_gb` budget every case runs in a process of its own (said once), so the
/// budget's verdict cannot depend on the shuffle seed.
#[test]
fn a_peak_rss_budget_gives_every_case_its_own_process() {
    let dir = scratch();
    let config = crate::util::cli::write(
        dir.path(),
        "m.toml",
        "[model]\nweights = \"synthetic\"\n[matrix]\nframes = [1]\nsize = [\"16x16\"]\nprecision = [\"fp32\"]\n\
         chunk = [1, 2]\n[budgets]\npeak_rss_gb = 50\n",
    );
    let (code, err, report) = run(dir.path(), "b.json", &["--config", config.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("a peak_rss_gb budget is set").count(), 1, "{err}");
    assert_eq!(report["run"]["isolate"], "case", "{report}");
    let pids: std::collections::BTreeSet<u64> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["worker"]["pid"].as_u64().unwrap())
        .collect();
    // chunk 1, chunk 2 and chunk 1's A/A control: three processes.
    assert_eq!(pids.len(), 3, "{report}");
}
