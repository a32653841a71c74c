//! `run` orchestration without the model, through the worker's `WAN_VAE_BENCH_FAULT` hook:
//! env variants reach the worker; crashing, hanging, failing, out-of-memory and unsupported
//! workers leave the other cases and a valid report; killing the parent leaves a parseable
//! report and no worker behind.
use crate::util::cli::*;

use wan_vae_bench::report::CaseStatus;

const FAKE: &str = r#"
[model]
weights = "synthetic"
[run]
warmup = 1
runs = 3
timeout_s = 60
[matrix]
frames = [5]
size = ["32x32"]
precision = ["fp32", "bf16"]
env = ["tuned"]
[env.tuned]
WAN_VAE_BENCH_FAULT = "fake"
MIOPEN_FIND_MODE = 2
MY_CUSTOM_KNOB = "hello"
"#;

#[test]
fn env_variants_reach_the_worker_and_ok_cases_are_measured() {
    let dir = scratch();
    let cfg = write(dir.path(), "fake.toml", FAKE);
    let report_path = dir.path().join("report.json");
    let out = bench()
        .args(["run", "--fault-hooks", "--config"])
        .arg(&cfg)
        .arg("--output")
        .arg(&report_path)
        .env("ROCBLAS_LAYER", "0") // inherited from the parent: a reported prefix
        .env("UNRELATED_VAR", "x") // inherited, not reported
        .env("SWEPT_KNOB", "7") // inherited, reported because named in WAN_VAE_BENCH_RECORD_ENV
        .env("WAN_VAE_BENCH_RECORD_ENV", "SWEPT_KNOB")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = load(&report_path);
    assert_eq!(r.cases.len(), 2);
    assert_eq!(r.run.order, "shuffled");
    assert!(r.run.shuffle_seed.is_some());
    assert_eq!(r.run.config_path.as_deref(), Some(cfg.to_str().unwrap()));
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{:?}", c.outcome.error);
        assert_eq!(c.settings.env_variant, "tuned");
        assert_eq!(c.outcome.env.get("MIOPEN_FIND_MODE").map(String::as_str), Some("2"));
        assert_eq!(c.outcome.env.get("MY_CUSTOM_KNOB").map(String::as_str), Some("hello"));
        assert_eq!(c.outcome.env.get("ROCBLAS_LAYER").map(String::as_str), Some("0"));
        assert!(!c.outcome.env.contains_key("UNRELATED_VAR"));
        assert_eq!(c.outcome.env.get("SWEPT_KNOB").map(String::as_str), Some("7"));
        assert!(!c.outcome.env.contains_key("WAN_VAE_BENCH_ENV_PADDING"));
        let e = c.outcome.encode.as_ref().unwrap();
        assert_eq!(e.samples_s.len(), 3);
        assert_eq!(e.warmup_s.len(), 1);
        assert!(e.min_s > 0.0 && e.min_s <= e.median_s && e.median_s <= e.max_s);
        assert!(c.outcome.decode.as_ref().unwrap().median_s > 0.0);
        assert!(c.outcome.peak_rss_bytes.unwrap() > 0);
        assert_eq!(c.settings.tile_px(), None);
        assert_eq!(c.settings.overlap_px(), None);
    }
    let ids: Vec<&str> = r.cases.iter().map(|c| c.id.as_str()).collect();
    assert!(ids.contains(&"fp32-chunk1-untiled-5x32x32-tuned"), "{ids:?}");
    // The table names each row by what differs (issue 67): here the precision, under a line
    // that says what every case shares.
    let table = stdout(&out);
    assert!(
        table.contains("every case: candle, chunk1, untiled, 5x32x32, tuned")
            && table.lines().any(|l| l.starts_with("bf16  "))
            && table.contains("1.00x"),
        "{table}"
    );
    assert!(table.contains("report: "), "{table}");
}

#[test]
fn failing_workers_leave_the_other_cases_and_a_valid_report() {
    let dir = scratch();
    let cfg = write(
        dir.path(),
        "faults.toml",
        r#"
[run]
warmup = 0
runs = 2
timeout_s = 3
order = "as-written"
[matrix]
frames = [5]
size = ["32x32"]
env = ["crash", "ok1", "hang", "fail", "unsupported", "oom", "ok2"]
[env.ok1]
WAN_VAE_BENCH_FAULT = "fake"
[env.ok2]
WAN_VAE_BENCH_FAULT = "fake"
[env.crash]
WAN_VAE_BENCH_FAULT = "crash"
[env.hang]
WAN_VAE_BENCH_FAULT = "hang"
[env.fail]
WAN_VAE_BENCH_FAULT = "fail"
[env.unsupported]
WAN_VAE_BENCH_FAULT = "unsupported"
[env.oom]
WAN_VAE_BENCH_FAULT = "oom"
"#,
    );
    let (out, report) = run(dir.path(), &["--fault-hooks", "--config", cfg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = load(&report);
    let status = |variant: &str| {
        let c = r.cases.iter().find(|c| c.settings.env_variant == variant).unwrap();
        (c.outcome.status, c.outcome.error.clone().unwrap_or_default(), c)
    };
    assert_eq!(r.cases.len(), 7);
    assert_eq!(r.run.shuffle_seed, None);
    let order: Vec<&str> = r.cases.iter().map(|c| c.settings.env_variant.as_str()).collect();
    assert_eq!(order, ["crash", "ok1", "hang", "fail", "unsupported", "oom", "ok2"]);
    assert_eq!(status("ok1").0, CaseStatus::Ok);
    assert_eq!(status("ok2").0, CaseStatus::Ok);
    let (s, e, c) = status("crash");
    assert_eq!(s, CaseStatus::Failed);
    assert!(e.contains("injected crash") && e.contains("SIGABRT"), "{e}");
    assert!(c.outcome.encode.is_none());
    assert_eq!(
        c.outcome.env.get("WAN_VAE_BENCH_FAULT").map(String::as_str),
        Some("crash")
    );
    let (s, e, _) = status("hang");
    assert_eq!(s, CaseStatus::Timeout);
    assert!(e.contains("timed out after 3.000 s"), "{e}");
    let (s, e, _) = status("fail");
    assert_eq!(s, CaseStatus::Failed);
    assert!(e.contains("injected failure"), "{e}");
    assert_eq!(status("unsupported").0, CaseStatus::Unsupported);
    let (s, e, _) = status("oom");
    assert_eq!(s, CaseStatus::Oom);
    assert!(e.contains("memory allocation of"), "{e}");
    let table = stdout(&out);
    assert!(table.contains("timeout") && table.contains("oom"), "{table}");
}

#[test]
fn a_device_this_build_lacks_is_unsupported() {
    let dir = scratch();
    let (out, report) = run(
        dir.path(),
        &["--device", "cuda:7", "--precision", "fp32", "--runs", "1"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = load(&report);
    assert_eq!(r.run.device, "cuda:7");
    assert_eq!(r.cases.len(), 1);
    assert_eq!(
        r.cases[0].outcome.status,
        CaseStatus::Unsupported,
        "{:?}",
        r.cases[0].outcome.error
    );
}

#[test]
fn allow_status_unsupported_makes_an_unsupported_case_exit_0() {
    let dir = scratch();
    let base = ["--device", "cuda:7", "--precision", "fp32", "--runs", "1"];
    let (out, report) = run(
        dir.path(),
        &[&base[..], &["--allow-status", "unsupported,oom"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(load(&report).cases[0].outcome.status, CaseStatus::Unsupported);
    let dir2 = scratch();
    let (out, _) = run(dir2.path(), &[&base[..], &["--allow-status", "failed"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (out, _) = run(dir2.path(), &[&base[..], &["--allow-status", "ok"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--allow-status"), "{}", stderr(&out));
}

#[test]
fn settings_an_engine_cannot_run_are_unsupported_without_a_worker() {
    // diffusers runs chunk 1 only, and the PyTorch engines no metal: both are recorded
    // from the engine's entry before any worker starts, so the missing interpreter is
    // never reached; the added chunk-1 reference does start one and says so.
    let dir = scratch();
    let missing = dir.path().join("no-such-python");
    let (out, report) = run(
        dir.path(),
        &[
            "--engine",
            "diffusers",
            "--chunk",
            "2",
            "--python",
            missing.to_str().unwrap(),
            "--size",
            "32x32",
            "--precision",
            "fp32",
            "--runs",
            "1",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = load(&report);
    assert_eq!(
        r.cases.len(),
        3,
        "the chunk-2 case, its reference and the reference's A/A control"
    );
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Unsupported, "{}", c.id);
        let e = c.outcome.error.as_deref().unwrap();
        if c.settings.chunk == 2 {
            assert!(e.contains("chunk 2 is not supported by the diffusers engine"), "{e}");
            assert!(!e.contains("no-such-python"), "no worker was started: {e}");
        } else {
            assert!(e.contains("no-such-python"), "{e}");
        }
    }
    let v = bench()
        .args([
            "validate",
            "--engine",
            "torch",
            "--device",
            "metal",
            "--weights",
            "synthetic",
        ])
        .arg("--cases")
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .output()
        .unwrap();
    assert_eq!(v.status.code(), Some(2), "{}", stderr(&v));
    assert!(
        stderr(&v).contains("device metal is not supported by the torch engine"),
        "{}",
        stderr(&v)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn killing_the_parent_mid_sweep_leaves_a_parseable_report_and_no_worker() {
    use crate::util::procs::{alive, kill_tree, processes_mentioning, spawn_group};
    use std::time::{Duration, Instant};
    let dir = scratch();
    // The run's own temp folder: its scratch folder goes there, and the worker's command
    // line names it (`--result TMP/wan-vae-bench-XXXXXX/...`).
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let cfg = write(
        dir.path(),
        "kill.toml",
        r#"
[run]
warmup = 0
runs = 1
timeout_s = 120
order = "as-written"
[matrix]
size = ["32x32"]
env = ["quick", "slow"]
[env.quick]
WAN_VAE_BENCH_FAULT = "fake"
[env.slow]
WAN_VAE_BENCH_FAULT = "hang"
"#,
    );
    let report = dir.path().join("report.json");
    let mut parent = spawn_group(
        bench()
            .args(["run", "--fault-hooks", "--quiet", "--config"])
            .arg(&cfg)
            .arg("--output")
            .arg(&report)
            .env("TMPDIR", &tmp)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let give_up = |what: &str, parent: i32| -> ! {
        kill_tree(parent);
        panic!("{what}");
    };
    let start = Instant::now();
    loop {
        if start.elapsed() > Duration::from_secs(60) {
            give_up("first case never finished", parent.id() as i32);
        }
        if let Ok(r) = wan_vae_bench::report::Report::load(&report) {
            if !r.cases.is_empty() {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // The hanging worker of the second case.
    let needle = tmp.to_str().unwrap().to_string();
    let start = Instant::now();
    let workers = loop {
        let found = processes_mentioning(&needle);
        if !found.is_empty() {
            break found;
        }
        if start.elapsed() > Duration::from_secs(30) {
            give_up("the second case's worker never started", parent.id() as i32);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    parent.kill().unwrap(); // SIGKILL: no chance to clean up
    parent.wait().unwrap();
    let r = load(&report);
    assert_eq!(r.cases.len(), 1);
    assert_eq!(r.cases[0].outcome.status, CaseStatus::Ok);
    // The worker dies with its parent (PR_SET_PDEATHSIG).
    let deadline = Instant::now() + Duration::from_secs(10);
    while workers.iter().any(|&w| alive(w)) {
        if Instant::now() > deadline {
            workers.iter().for_each(|&w| kill_tree(w));
            panic!("worker survived its parent");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(processes_mentioning(&needle).is_empty());
    // The dead run's scratch folder stays (nothing could remove it); the next run in the
    // same temp folder removes it as stale, and its own at its end.
    let left = entries(&tmp);
    assert!(left.len() == 1 && left[0].starts_with("wan-vae-bench-"), "{left:?}");
    let quick = write(
        dir.path(),
        "quick.toml",
        &FAKE.replace("precision = [\"fp32\", \"bf16\"]", "precision = [\"fp32\"]"),
    );
    let out = bench()
        .args(["run", "--fault-hooks", "--quiet", "--config"])
        .arg(&quick)
        .arg("--output")
        .arg(dir.path().join("again.json"))
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch left in the temp folder");
}
