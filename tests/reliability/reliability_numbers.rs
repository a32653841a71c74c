//! Issue 10, "wrong numbers that look right": non-finite outputs, frame counts that are not
//! `1+4k`, and `compare` on reports it cannot soundly compare.
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::cli::fixture;
use crate::util::cli::{load, run, scratch, stderr};
use crate::util::reports::{case, report, steady, Out};

/// The tiny checkpoint with every value of `conv1.bias` set to NaN.
pub(crate) fn nan_weights(dir: &Path) -> PathBuf {
    use candle_core::{Device, Tensor};
    let mut tensors = candle_core::safetensors::load(fixture("wan21_tiny.weights.safetensors"), &Device::Cpu).unwrap();
    let bias = &tensors["conv1.bias"];
    let nan = Tensor::full(f32::NAN, bias.shape(), &Device::Cpu)
        .unwrap()
        .to_dtype(bias.dtype())
        .unwrap();
    tensors.insert("conv1.bias".into(), nan);
    let path = dir.join("nan.safetensors");
    candle_core::safetensors::save(&tensors, &path).unwrap();
    path
}

#[test]
fn nan_outputs_fail_the_case_naming_pass_and_count() {
    let dir = scratch();
    let weights = nan_weights(dir.path());
    let (out, report) = run(
        dir.path(),
        &[
            "--weights",
            weights.to_str().unwrap(),
            "--frames",
            "1",
            "--size",
            "16x16",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--precision",
            "fp32,bf16",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = load(&report);
    assert_eq!(r.cases.len(), 3, "fp32, bf16 and fp32's A/A control");
    for c in &r.cases {
        assert_eq!(c.outcome.status.name(), "failed", "{}", c.id);
        let e = c.outcome.error.as_deref().unwrap_or("");
        assert!(e.contains("encode produced") && e.contains("non-finite"), "{e}");
        assert!(c.quality.is_none(), "{}: quality of a NaN output", c.id);
    }
}

#[test]
fn quality_never_calls_nan_identical() {
    use wan_vae_bench::report::quality::error_stats;
    for (a, b) in [(f32::NAN, f32::NAN), (f32::INFINITY, f32::INFINITY)] {
        let s = error_stats(&[0.5, a], &[0.5, b]);
        assert!(!s.identical, "{a} vs {b}");
        assert!(s.psnr_db.is_some_and(f64::is_finite), "{s:?}");
    }
}

#[test]
fn frames_not_1_plus_4k_warn_once_and_count_the_frames_used() {
    let dir = scratch();
    let (out, report) = run(
        dir.path(),
        &[
            "--frames",
            "2,3",
            "--size",
            "8x8",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--precision",
            "fp32",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("not 1+4k").count(), 1, "one warning per run: {err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for c in v["cases"].as_array().unwrap() {
        assert_eq!(c["frames_used"], 1, "{c}");
        for pass in ["encode", "decode"] {
            let p = &c[pass];
            let fps = p["frames_per_s"].as_f64().unwrap();
            let expected = 1.0 / p["median_s"].as_f64().unwrap();
            assert!((fps - expected).abs() <= 1e-9 * expected, "{pass}: {fps} vs {expected}");
        }
    }
}

/// Save two JSON reports and compare them.
fn compare_json(base: &Value, cur: &Value, extra: &[&str]) -> Out {
    let dir = scratch();
    let b = dir.path().join("baseline.json");
    let c = dir.path().join("current.json");
    std::fs::write(&b, base.to_string()).unwrap();
    std::fs::write(&c, cur.to_string()).unwrap();
    let mut args = vec!["compare".to_string(), b.display().to_string(), c.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    crate::util::reports::bench(&args)
}

fn json_report(ids: &[&str]) -> Value {
    let cases = ids.iter().map(|id| case(id, &steady(1.0), &steady(2.0))).collect();
    serde_json::to_value(report("host-a", cases)).unwrap()
}

#[test]
fn compare_without_a_common_case_exits_2() {
    let out = compare_json(&json_report(&["a"]), &json_report(&["b"]), &[]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("no case id in common"), "{}", out.stderr);
}

#[test]
fn compare_refuses_duplicate_ids_and_bad_samples_naming_the_case() {
    let good = json_report(&["a", "b"]);
    let out = compare_json(&good, &json_report(&["a", "a"]), &[]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("\"a\" appears more than once"), "{}", out.stderr);
    // (JSON has no NaN or Inf: such a value fails to parse, exit 2 before these checks.)
    let mut negative = good.clone();
    negative["cases"][1]["decode"]["samples_s"][2] = (-1.0).into();
    let out = compare_json(&good, &negative, &[]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("case \"b\": decode sample 3 is -1"),
        "{}",
        out.stderr
    );
}

#[test]
fn compare_warns_about_other_machines_and_strict_system_refuses() {
    let base = json_report(&["a"]);
    let mut cur = base.clone();
    cur["system"]["cpu_model"] = "Other CPU 9000".into();
    cur["system"]["cpu_simd"] = serde_json::json!(["avx2", "avx512f"]);
    let mut base2 = base.clone();
    base2["system"]["cpu_model"] = "Some CPU 1000".into();
    base2["system"]["cpu_simd"] = serde_json::json!(["avx2"]);
    let out = compare_json(&base2, &cur, &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("different CPU models (Some CPU 1000 vs Other CPU 9000)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("current only: avx512f"), "{}", out.stderr);
    let out = compare_json(&base2, &cur, &["--strict-system"]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("different machines"), "{}", out.stderr);
}

#[test]
fn timings_too_small_to_be_real_are_refused_naming_the_report_and_field() {
    // Issue 64, item 13: 1e-300 s or subnormal timings passed the checks: `compare` printed a
    // 310-digit factor or "infx", `history` "+inf% ... (p = NaN)", exit 0.
    use crate::util::reports::{bench, save};
    let dir = scratch();
    let d = dir.path();
    let base = save(
        d,
        "base.json",
        &report("box", vec![case("a", &steady(1.0), &steady(1.0))]),
    );
    for tiny in [1e-300, 5e-324, 1e-12] {
        let mut r = report("box", vec![case("a", &steady(1.0), &steady(tiny))]);
        // As a report that holds such timings would have them: rates that stay finite.
        let dec = r.cases[0].outcome.decode.as_mut().unwrap();
        (dec.frames_per_s, dec.gflop_per_s) = (5.0, 10.0);
        r.created_at = "2025-01-02T00:00:00Z".into();
        let bad = save(d, "tiny.json", &r);
        let svg = d.join("c.svg");
        let merged = d.join("m.json");
        let (b, t) = (base.to_str().unwrap(), bad.to_str().unwrap());
        let runs: Vec<Vec<&str>> = vec![
            vec!["compare", b, t],
            vec!["compare", t, b],
            vec!["history", b, t],
            vec!["merge", b, t, "-o", merged.to_str().unwrap()],
            vec!["plot", t, "-o", svg.to_str().unwrap()],
        ];
        for args in runs {
            let out: Out = bench(&args);
            assert_eq!(out.code, 2, "{tiny} {args:?}: {}{}", out.stdout, out.stderr);
            assert!(
                out.stderr.contains("tiny.json") && out.stderr.contains("decode") && out.stderr.contains("at least"),
                "{tiny} {args:?}: {}",
                out.stderr
            );
            assert!(
                !out.stdout.contains("inf") && !out.stdout.contains("NaN"),
                "{}",
                out.stdout
            );
        }
        assert!(!svg.exists() && !merged.exists());
    }
    // A fast pass that is real (50 microseconds) still compares.
    let mut r = report("box", vec![case("a", &steady(1.0), &steady(5e-5))]);
    r.created_at = "2025-01-02T00:00:00Z".into();
    let fast = save(d, "fast.json", &r);
    let out = bench(&["compare", base.to_str().unwrap(), fast.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}
