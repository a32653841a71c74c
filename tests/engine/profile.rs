//! `run --profile` (issue 39) for real, on the CPU: candle and torch (and diffusers) on the
//! tiny fixture weights. The profile's rows sum to its pass, its layers' GFLOP to the case's,
//! convolutions hold its work, and every engine names the same layers the same
//! (the checkpoint keys' prefixes). The profiled pass never enters the timings.
use std::collections::BTreeSet;
use std::path::Path;

use crate::need;
use crate::util::cli::*;
use wan_vae_bench::report::profile::{LayerRow, PassProfile, OUTSIDE};
use wan_vae_bench::report::{CaseRecord, CaseStatus, PassStats, Report};

fn profiled_run(dir: &Path, extra: &[&str]) -> Report {
    let mut args = vec![
        "--precision",
        "fp32",
        "--warmup",
        "0",
        "--runs",
        "1",
        "--profile",
        "--timeout",
        "300",
    ];
    args.extend_from_slice(extra);
    let (out, path) = run(dir, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    load(&path)
}

/// The checks every profiled pass must pass; returns its layer names.
fn check_pass(case: &CaseRecord, name: &str, p: &PassProfile, timed: &PassStats) -> BTreeSet<String> {
    let sum_ms: f64 = p.layers.iter().map(|r| r.ms).sum();
    assert!(
        (sum_ms - p.total_ms).abs() <= 1e-6 * p.total_ms,
        "{}: rows {sum_ms} ms, pass {} ms",
        case.id,
        p.total_ms
    );
    let sum_gflop: f64 = p.layers.iter().map(|r| r.gflop).sum();
    assert!(timed.gflop > 0.0);
    assert!(
        (sum_gflop - timed.gflop).abs() <= 1e-9 * timed.gflop,
        "{} {name}: layers {sum_gflop} GFLOP, case {}",
        case.id,
        timed.gflop
    );
    assert_eq!(p.layers.last().unwrap().layer, OUTSIDE);
    // Which layer or op costs most is a timing, one sample of it, and depends on the CPU and
    // its load: asserted here is only what is deterministic. The rows are ordered costliest
    // first (by their own ms) with the outside row last; every op kind's rollup is the sum of
    // its rows; and the work is convolution's (by GFLOP, analytic).
    let rows: Vec<&LayerRow> = p.layers.iter().filter(|r| r.layer != OUTSIDE).collect();
    assert!(
        rows.windows(2).all(|w| w[0].ms >= w[1].ms),
        "{} {name}: rows not costliest first",
        case.id
    );
    assert!(
        p.by_op.windows(2).all(|w| w[0].ms >= w[1].ms),
        "{} {name}: {:?}",
        case.id,
        p.by_op
    );
    for op in &p.by_op {
        let sum: f64 = p.layers.iter().filter(|r| r.op == op.name).map(|r| r.ms).sum();
        assert!(
            (sum - op.ms).abs() <= 1e-6 * p.total_ms.max(1.0),
            "{} {name}: {op:?} vs rows {sum}",
            case.id
        );
    }
    let conv_gflop: f64 = rows.iter().filter(|r| r.op.starts_with("conv")).map(|r| r.gflop).sum();
    assert!(
        conv_gflop >= 0.9 * timed.gflop,
        "{} {name}: convolutions hold {conv_gflop} of {} GFLOP",
        case.id,
        timed.gflop
    );
    // Whichever layer came first: recorded with its calls, input shape and dtype.
    let top = rows[0];
    assert!(
        top.calls >= 1 && !top.input_shape.is_empty() && top.dtype == "f32",
        "{top:?}"
    );
    assert!((p.timed_median_ms - timed.median_s * 1e3).abs() < 1e-9 && p.overhead > 0.0);
    let by_op: f64 = p.by_op.iter().map(|r| r.ms).sum();
    assert!((by_op - p.total_ms).abs() <= 1e-6 * p.total_ms);
    p.layers
        .iter()
        .filter(|r| r.layer != OUTSIDE)
        .map(|r| r.layer.clone())
        .collect()
}

#[test]
fn candle_and_torch_profile_the_same_layers_by_their_official_names() {
    let py = need!(python());
    let dir = scratch();
    let traces = dir.path().join("traces");
    let weights = fixture("wan21_tiny.weights.safetensors");
    let r = profiled_run(
        dir.path(),
        &[
            "--engine",
            "candle,torch",
            "--python",
            py.to_str().unwrap(),
            "--weights",
            weights.to_str().unwrap(),
            "--frames",
            "5",
            "--size",
            "64x64",
            "--export-trace",
            traces.to_str().unwrap(),
        ],
    );
    let mut names = Vec::new();
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{:?}", c.outcome.error);
        let profile = c.profile.as_ref().expect("a profile");
        assert_eq!(profile.error, None);
        let mut passes = Vec::new();
        for (name, p) in profile.passes() {
            let timed = if name == "encode" {
                &c.outcome.encode
            } else {
                &c.outcome.decode
            };
            let timed = timed.as_ref().unwrap();
            // The profiled pass is not a timed sample.
            assert_eq!(timed.samples_s.len(), 1);
            passes.push((check_pass(c, name, p, timed), p.clone()));
        }
        assert_eq!(passes.len(), 2, "{}: encode and decode", c.id);
        // One trace per profiled pass, in the trace event format.
        assert_eq!(profile.trace_files.len(), 2, "{:?}", profile.trace_files);
        for t in &profile.trace_files {
            let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(t).unwrap()).unwrap();
            let events = v["traceEvents"].as_array().unwrap();
            assert!(!events.is_empty(), "{t}");
            // Named, not "pid N / Thread 1" (issue 49): the engine and case, the pass.
            let meta = |kind: &str| {
                events
                    .iter()
                    .find(|e| e["ph"] == "M" && e["name"] == kind)
                    .map(|e| e["args"]["name"].clone())
            };
            let process = meta("process_name").unwrap_or_default();
            assert!(
                process.as_str().is_some_and(|p| p.starts_with("wan-vae-bench ")),
                "{t}: {process}"
            );
            assert!(
                events.iter().any(|e| e["ph"] == "M"
                    && e["name"] == "thread_name"
                    && e["args"]["name"].as_str().is_some_and(|n| n.ends_with(" pass"))),
                "{t}"
            );
        }
        let torch = c.settings.engine.name() == "torch";
        assert_eq!(profile.method, if torch { "torch.profiler" } else { "spans" });
        if torch {
            // The operators behind the costliest convolution, classified.
            let p = profile.decode.as_ref().unwrap();
            let conv = p.layers.iter().find(|r| r.op == "conv3d").unwrap();
            assert!(
                !conv.kernels.is_empty() && conv.kernels.iter().all(|k| !k.family.is_empty()),
                "{conv:?}"
            );
        }
        names.push(passes);
    }
    assert_eq!(names.len(), 2);
    for (a, b) in names[0].iter().zip(&names[1]) {
        assert_eq!(a.0, b.0, "candle and torch name the same layers");
        // Every layer is, by name, the same layer in the other: same op, same input shape
        // (the reference's, e.g. a resample's 2D conv sees frames folded into the batch).
        // All of them, not the costliest few: which layers cost most depends on the CPU.
        let rows = |p: &PassProfile| -> Vec<(String, String, Vec<usize>)> {
            let mut v: Vec<_> = p
                .layers
                .iter()
                .map(|r| (r.layer.clone(), r.op.clone(), r.input_shape.clone()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(rows(&a.1), rows(&b.1));
    }
    let text = std::fs::read_dir(&traces).unwrap().count();
    assert_eq!(text, 4);
}

#[test]
fn diffusers_maps_its_module_names_onto_the_official_ones() {
    let py = need!(python());
    let dir = scratch();
    let weights = fixture("wan22_tiny.weights.safetensors");
    let r = profiled_run(
        dir.path(),
        &[
            "--engine",
            "diffusers,candle",
            "--python",
            py.to_str().unwrap(),
            "--weights",
            weights.to_str().unwrap(),
            "--frames",
            "1",
            "--size",
            "32x32",
        ],
    );
    let mut layers = Vec::new();
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{:?}", c.outcome.error);
        let p = c.profile.as_ref().unwrap().decode.as_ref().expect("a decode profile");
        let sum_gflop: f64 = p.layers.iter().map(|r| r.gflop).sum();
        let case_gflop = c.outcome.decode.as_ref().unwrap().gflop;
        assert!(
            (sum_gflop - case_gflop).abs() <= 1e-9 * case_gflop,
            "{}: {sum_gflop} vs {case_gflop}",
            c.id
        );
        let names: BTreeSet<String> = p.layers.iter().map(|r| r.layer.clone()).collect();
        assert!(
            names.contains("decoder.middle.1") && names.contains("decoder.head.2"),
            "{names:?}"
        );
        layers.push(names);
    }
    assert_eq!(layers[0], layers[1], "diffusers' rows carry candle's (official) names");
}

#[test]
fn without_profile_no_profile_and_a_bad_trace_folder_is_refused() {
    let dir = scratch();
    let (out, path) = run(
        dir.path(),
        &[
            "--engine",
            "candle",
            "--precision",
            "fp32",
            "--frames",
            "1",
            "--size",
            "16x16",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--weights",
            fixture("wan21_tiny.weights.safetensors").to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(load(&path).cases.iter().all(|c| c.profile.is_none()));
    let file = write(dir.path(), "a-file", "x");
    let (out, _) = run(
        dir.path(),
        &[
            "--engine",
            "candle",
            "--export-trace",
            file.join("sub").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--export-trace"), "{}", stderr(&out));
}

#[test]
fn the_table_and_the_markdown_say_where_the_time_goes() {
    use crate::util::reports::{case, report};
    use wan_vae_bench::report::profile::{CaseProfile, LayerRow, Rollup};
    let mut c = case("fp32-chunk1-untiled-5x64x64-baseline", &[0.1], &[0.2]);
    let row = |layer: &str, op: &str, ms: f64| LayerRow {
        layer: layer.into(),
        op: op.into(),
        calls: 2,
        ms,
        share: ms / 200.0,
        ..Default::default()
    };
    c.profile = Some(CaseProfile {
        decode: Some(PassProfile {
            total_ms: 200.0,
            timed_median_ms: 190.0,
            overhead: 200.0 / 190.0,
            layers: vec![
                row("decoder.upsamples.12.residual.2", "conv3d", 150.0),
                row(OUTSIDE, "other", 50.0),
            ],
            by_op: vec![Rollup {
                name: "conv3d".into(),
                ms: 150.0,
                share: 0.75,
                gflop: 1.0,
            }],
            ..Default::default()
        }),
        ..Default::default()
    });
    let r = report("h", vec![c]);
    let text = wan_vae_bench::analysis::export::profile::text(&r);
    assert!(
        text.contains("fp32-chunk1-untiled-5x64x64-baseline decode: profiled 200.0 ms (1.05x the timed median)"),
        "{text}"
    );
    assert!(
        text.contains("decoder.upsamples.12.residual.2") && text.contains("by op: conv3d 75%"),
        "{text}"
    );
    let md = wan_vae_bench::analysis::export::profile::markdown(&r);
    assert!(
        md.contains("## Where the time goes") && md.contains("| `decoder.upsamples.12.residual.2` | conv3d |"),
        "{md}"
    );
    let p = r.cases[0].profile.as_ref().unwrap().decode.as_ref().unwrap();
    assert_eq!(
        wan_vae_bench::analysis::export::profile::one_line(p),
        "conv3d 75% (costliest: decoder.upsamples.12.residual.2 75%)"
    );
}

#[test]
fn comfyui_profiles_carry_the_official_names() {
    let py = need!(python());
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    // ComfyUI hard-codes the real widths: synthetic weights, one frame at 16x16.
    let r = profiled_run(
        dir.path(),
        &[
            "--engine",
            "comfyui",
            "--comfyui",
            folder.to_str().unwrap(),
            "--python",
            py.to_str().unwrap(),
            "--frames",
            "1",
            "--size",
            "16x16",
        ],
    );
    let c = &r.cases[0];
    assert_eq!(c.outcome.status, CaseStatus::Ok, "{:?}", c.outcome.error);
    let profile = c.profile.as_ref().unwrap();
    for (name, p) in profile.passes() {
        let timed = if name == "encode" {
            &c.outcome.encode
        } else {
            &c.outcome.decode
        };
        let case_gflop = timed.as_ref().unwrap().gflop;
        let sum_gflop: f64 = p.layers.iter().map(|r| r.gflop).sum();
        assert!(
            (sum_gflop - case_gflop).abs() <= 1e-9 * case_gflop,
            "{name}: {sum_gflop} vs {case_gflop}"
        );
        let sum_ms: f64 = p.layers.iter().map(|r| r.ms).sum();
        assert!((sum_ms - p.total_ms).abs() <= 1e-6 * p.total_ms);
        let middle = format!("{}r.middle.1", if name == "encode" { "encode" } else { "decode" });
        assert!(
            p.layers.iter().any(|r| r.layer == middle && r.op == "attention"),
            "{name}: no {middle}"
        );
    }
}

/// `compare` points at the layer that slowed down, in its text and in `--json`, and the
/// layers never decide the verdict.
#[test]
fn compare_points_at_the_layer_that_slowed_in_text_and_json() {
    use crate::util::reports::{bench, case, report, save};
    use wan_vae_bench::report::profile::{CaseProfile, LayerRow};
    let profiled = |conv_ms: f64| {
        let mut c = case(
            "fp32-chunk1-untiled-5x64x64-baseline",
            &[0.1, 0.1, 0.1],
            &[0.2, 0.2, 0.2],
        );
        let row = |layer: &str, ms: f64| LayerRow {
            layer: layer.into(),
            op: "conv3d".into(),
            calls: 2,
            ms,
            ..Default::default()
        };
        c.profile = Some(CaseProfile {
            decode: Some(PassProfile {
                layers: vec![
                    row("decoder.head.2", 40.0),
                    row("decoder.upsamples.12.residual.2", conv_ms),
                ],
                ..Default::default()
            }),
            ..Default::default()
        });
        report("h", vec![c])
    };
    let dir = scratch();
    let (b, c) = (
        save(dir.path(), "b.json", &profiled(100.0)),
        save(dir.path(), "c.json", &profiled(160.0)),
    );
    let text = bench(&["compare".as_ref(), b.as_os_str(), c.as_os_str()]);
    assert_eq!(
        text.code, 0,
        "equal timed samples: no regression, whatever the layers say"
    );
    assert!(
        text.stdout.contains(
            "fp32-chunk1-untiled-5x64x64-baseline decode decoder.upsamples.12.residual.2: 100.0 ms -> 160.0 ms (+60.0 ms)"
        ),
        "{}",
        text.stdout
    );
    let json = bench(&["compare".as_ref(), b.as_os_str(), c.as_os_str(), "--json".as_ref()]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let first = &v["layer_changes"][0];
    assert_eq!(first["layer"], "decoder.upsamples.12.residual.2", "{v}");
    assert_eq!(
        (first["baseline_ms"].as_f64(), first["current_ms"].as_f64()),
        (Some(100.0), Some(160.0))
    );
    assert_eq!(first["pass"], "decode");
    // Without a profile on one side, the list is there and empty.
    let plain = save(
        dir.path(),
        "p.json",
        &report(
            "h",
            vec![case(
                "fp32-chunk1-untiled-5x64x64-baseline",
                &[0.1, 0.1, 0.1],
                &[0.2, 0.2, 0.2],
            )],
        ),
    );
    let json = bench(&["compare".as_ref(), plain.as_os_str(), c.as_os_str(), "--json".as_ref()]);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["layer_changes"], serde_json::json!([]), "{v}");
}

#[test]
fn the_trace_folder_is_checked_against_the_outputs_before_anything_runs() {
    // Issue 48: the report's own path as the trace folder measured the case, then exited 2
    // with no report (the path had become a folder of traces).
    let dir = scratch();
    let report = write(dir.path(), "r.json", "{\"mine\": true}");
    let traces = dir.path().join("traces");
    let csv = dir.path().join("t.csv");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--export-trace", report.to_str().unwrap()],
            "a folder of its own, not -o's path",
        ),
        (
            &[
                "--export-trace",
                traces.to_str().unwrap(),
                "--export-csv",
                traces.to_str().unwrap(),
            ],
            "not --export-csv's path",
        ),
        (
            &[
                "--export-trace",
                dir.path().to_str().unwrap(),
                "--export-csv",
                csv.to_str().unwrap(),
            ],
            "-o is inside the --export-trace folder",
        ),
    ];
    for (args, why) in cases {
        let out = bench()
            .args([
                "run",
                "--frames",
                "1",
                "--size",
                "16x16",
                "--precision",
                "fp32",
                "--runs",
                "1",
                "--warmup",
                "0",
            ])
            .arg("--output")
            .arg(&report)
            .args(args)
            .output()
            .unwrap();
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(why), "{args:?}: {e}");
        assert_eq!(std::fs::read_to_string(&report).unwrap(), "{\"mine\": true}");
        assert!(!traces.exists());
    }
}

#[test]
fn a_folder_or_fifo_at_a_traces_name_is_refused_before_anything_runs() {
    // Issue 48: torch's rename replaced a FIFO or an empty folder at a trace's name, a
    // non-empty folder left a `.tmp` behind, and candle found a folder only at run time,
    // losing the case's whole profile.
    let dir = scratch();
    let traces = dir.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let args = [
        "run",
        "--frames",
        "1",
        "--size",
        "16x16",
        "--precision",
        "fp32",
        "--runs",
        "1",
        "--warmup",
        "0",
    ];
    let list = bench().args(args).arg("--list").output().unwrap();
    let id = stdout(&list)
        .lines()
        .find(|l| l.starts_with("fp32-"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let stem = wan_vae_bench::report::profile::options::file_name(&id);
    let blocker = traces.join(format!("{stem}.decode.json"));
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("keep"), "mine").unwrap();
    let report = dir.path().join("r.json");
    let out = bench()
        .args(args)
        .args([
            "--export-trace",
            traces.to_str().unwrap(),
            "-o",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("cannot be the --export-trace file") && e.contains("not a regular file"),
        "{e}"
    );
    assert!(!report.exists());
    assert_eq!(std::fs::read_to_string(blocker.join("keep")).unwrap(), "mine");
    let left: Vec<_> = std::fs::read_dir(&traces)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}
