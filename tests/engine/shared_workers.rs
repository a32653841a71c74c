//! Issue 31: cases of one engine and env variant share a worker process (imports and model
//! loaded once), each still gets the settings it asked for, env variants never share a
//! process, a crash in a group loses only its case, the report says fresh or reused with the
//! start-up time, and `--isolate case` gives every case its own process.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::util::cli::{bench, python, scratch, stderr};

/// `run ARGS -o DIR/NAME` (1 frame of 16x16, no warmup, 1 run), its report.
fn run(dir: &Path, name: &str, args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let (code, report) = run_timed(dir, name, "1", args, env);
    assert!(code <= 1, "exit {code}");
    report
}

/// [`run`] with `runs` timed runs a case: its exit code (its stderr said on a crash) and
/// report.
fn run_timed(dir: &Path, name: &str, runs: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, serde_json::Value) {
    let out_path = dir.join(name);
    let mut cmd = bench();
    cmd.args(["run", "--weights", "synthetic", "--frames", "1", "--size", "16x16"])
        .args(["--warmup", "0", "--runs", runs, "--quiet", "-o"])
        .arg(&out_path)
        .args(args)
        .envs(env.iter().copied());
    let out = cmd.output().unwrap();
    let code = out.status.code().unwrap_or_else(|| panic!("killed: {}", stderr(&out)));
    assert!(code <= 1, "{}", stderr(&out));
    let report = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    (code, report)
}

fn cases(report: &serde_json::Value) -> &Vec<serde_json::Value> {
    report["cases"].as_array().unwrap()
}

fn pid(case: &serde_json::Value) -> u64 {
    case["worker"]["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("no worker pid: {case}"))
}

/// Each pid's cases: the first is `fresh` with its start-up time, the others `reused`.
fn check_fresh_then_reused(report: &serde_json::Value) {
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for c in cases(report) {
        let w = &c["worker"];
        let before = seen.entry(pid(c)).or_insert(0);
        assert_eq!(w["cases_before"].as_u64(), Some(*before as u64), "{c}");
        let fresh = *before == 0;
        assert_eq!(w["process"], if fresh { "fresh" } else { "reused" }, "{c}");
        assert_eq!(w["spawn_to_ready_s"].is_f64(), fresh, "{c}");
        if c["status"] == "ok" {
            let startup = w["startup_s"].as_f64().unwrap();
            assert!(startup.is_finite() && startup >= 0.0, "{c}");
        }
        *before += 1;
    }
}

#[test]
fn a_grouped_run_gives_each_case_its_settings_and_env_variants_their_own_process() {
    let py = crate::need!(python());
    let dir = scratch();
    let report = run(
        dir.path(),
        "grouped.json",
        &[
            "--engine",
            "torch,candle",
            "--python",
            py.to_str().unwrap(),
            "--precision",
            "fp32,bf16",
            "--chunk",
            "1,2",
            "--env-var",
            "WAN_VAE_BENCH_TEST_MARK=a,b",
            "--seed",
            "7",
            // Blocks: a worker per engine and variant, its precisions in turn (rounds keep
            // one per precision as well: the test below).
            "--schedule",
            "blocks",
            "--control",
            "off",
        ],
        &[],
    );
    assert_eq!(report["run"]["isolate"], "worker");
    let all = cases(&report);
    // 2 engines x 2 precisions x 2 chunks x 3 variants (baseline, a, b).
    assert_eq!(all.len(), 24, "{report}");
    let mut pids: BTreeMap<(String, String), BTreeSet<u64>> = BTreeMap::new();
    for c in all {
        assert_eq!(c["status"], "ok", "{c}");
        let (engine, variant) = (
            c["engine"].as_str().unwrap_or("candle"),
            c["env_variant"].as_str().unwrap(),
        );
        pids.entry((engine.to_string(), variant.to_string()))
            .or_default()
            .insert(pid(c));
        // The precision it asked for is what ran.
        let dtype = c["compute_dtype"].as_str().unwrap();
        let want = if c["precision"] == "fp32" { "f32" } else { "bf16" };
        assert!(dtype.starts_with(want), "{}: {dtype}", c["id"]);
        // Its variant's variable, as the worker saw it (the baseline has none).
        let mark = c["env"].get("WAN_VAE_BENCH_TEST_MARK").and_then(|v| v.as_str());
        let expected = variant.strip_prefix("WAN_VAE_BENCH_TEST_MARK=");
        assert_eq!(mark, expected, "{}: {}", c["id"], c["env"]);
        // torch reads its knobs back in every case, the shared worker's too.
        if engine == "torch" {
            assert!(c["knobs_in_force"]["cudnn"].is_string(), "{c}");
            assert!(c["worker"]["import_s"].is_f64(), "{c}");
        }
    }
    // One process per engine and variant, never shared between variants.
    assert_eq!(pids.len(), 6, "{pids:?}");
    assert!(pids.values().all(|p| p.len() == 1), "{pids:?}");
    let distinct: BTreeSet<u64> = pids.values().flatten().copied().collect();
    assert_eq!(distinct.len(), 6, "{pids:?}");
    check_fresh_then_reused(&report);
    // The model is kept while the precision stays: each worker builds it once per precision.
    let reused = all.iter().filter(|c| c["worker"]["model_reused"] == true).count();
    assert_eq!(reused, 12, "{report}");
}

/// In rounds (the default), the compared settings' workers are alive side by side: one per
/// precision, and the A/A control in one of its own; each visit returns to its case's worker.
#[test]
fn rounds_keep_a_worker_per_precision_and_one_for_the_control() {
    let dir = scratch();
    let (code, report) = run_timed(
        dir.path(),
        "rounds.json",
        "2",
        &["--precision", "fp32,bf16", "--chunk", "1,2", "--seed", "3"],
        &[],
    );
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["run"]["schedule"], "rounds", "{report}");
    let all = cases(&report);
    assert_eq!(all.len(), 5, "{report}");
    let mut lanes: BTreeMap<(String, bool), BTreeSet<u64>> = BTreeMap::new();
    for c in all {
        assert_eq!(c["status"], "ok", "{c}");
        assert_eq!(c["rounds"]["done"], 2, "{c}");
        let lane = (
            c["precision"].as_str().unwrap().to_string(),
            c["added_as_control"] == true,
        );
        lanes.entry(lane).or_default().insert(pid(c));
    }
    assert_eq!(lanes.len(), 3, "{lanes:?}");
    assert!(lanes.values().all(|p| p.len() == 1), "{lanes:?}");
    let distinct: BTreeSet<u64> = lanes.values().flatten().copied().collect();
    assert_eq!(distinct.len(), 3, "{lanes:?}");
}

#[test]
fn a_crash_in_the_middle_of_a_group_loses_only_that_case() {
    let dir = scratch();
    let report = run(
        dir.path(),
        "crash.json",
        &[
            "--fault-hooks",
            "--precision",
            "fp32",
            "--chunk",
            "1,2,4",
            "--order",
            "as-written",
        ],
        &[("WAN_VAE_BENCH_FAULT", "crash"), ("WAN_VAE_BENCH_FAULT_CASE", "chunk2")],
    );
    let all = cases(&report);
    let by_id = |part: &str| all.iter().find(|c| c["id"].as_str().unwrap().contains(part)).unwrap();
    let (one, two, four) = (by_id("chunk1"), by_id("chunk2"), by_id("chunk4"));
    assert_eq!(one["status"], "ok", "{one}");
    assert_eq!(two["status"], "failed", "{two}");
    assert!(two["error"].as_str().unwrap().contains("injected crash"), "{two}");
    assert_eq!(four["status"], "ok", "{four}");
    // chunk1 and chunk2 shared the worker that crashed; chunk4 ran in a new one.
    assert_eq!(pid(one), pid(two));
    assert_ne!(pid(two), pid(four));
    assert_eq!(four["worker"]["process"], "fresh");
    check_fresh_then_reused(&report);
}

#[test]
fn isolate_case_gives_every_case_a_fresh_process() {
    let dir = scratch();
    let report = run(
        dir.path(),
        "isolated.json",
        &["--isolate", "case", "--precision", "fp32,bf16", "--chunk", "1,2"],
        &[],
    );
    assert_eq!(report["run"]["isolate"], "case");
    let all = cases(&report);
    let pids: BTreeSet<u64> = all.iter().map(pid).collect();
    assert_eq!(pids.len(), all.len(), "{report}");
    assert!(
        all.iter()
            .all(|c| c["worker"]["process"] == "fresh" && c["status"] == "ok"),
        "{report}"
    );
    check_fresh_then_reused(&report);
}

/// A worker that keeps its engine puts the knobs back as the engine's start-up left them
/// before each case: an `auto` case after an `on`/`off` one inherits nothing (TF32 through
/// torch's own API, cuDNN's switches).
#[test]
fn knobs_are_put_back_between_the_cases_of_a_worker() {
    let py = crate::need!(python());
    let code = r#"
import sys
sys.path.insert(0, sys.argv[1])
import torch, wan_common as wc, wan_runtime as rt
cuda = torch.device("cuda", 0)
start = rt.snapshot_knobs(torch)
before = (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark, wc.tf32_flags())
rt.apply_knobs(torch, {"cudnn": "off", "cudnn_benchmark": "on", "tf32": "on"}, cuda)
print("changed:", (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark, wc.tf32_flags()) != before)
rt.restore_knobs(torch, start)
print("restored:", (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark, wc.tf32_flags()) == before)
"#;
    let text = crate::util::cli::python_code(&py, code);
    assert!(
        text.contains("changed: True") && text.contains("restored: True"),
        "{text}"
    );
}
