//! `run` end to end with the real model on the tiny fixture weights (dim 8): every case is
//! measured, env variants reach the worker, the report carries the model facts and costs.
use crate::util::cli::*;

use wan_vae_bench::report::CaseStatus;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/wan21_tiny.weights.safetensors"
);

#[test]
fn tiny_model_matrix_runs_end_to_end() {
    let dir = scratch();
    let cfg = write(
        dir.path(),
        "tiny.toml",
        &format!(
            r#"
[model]
weights = "{FIXTURE}"
device = "cpu"
[run]
warmup = 1
runs = 2
timeout_s = 300
[matrix]
frames = [5]
size = ["32x32"]
precision = ["fp32", "bf16"]
tile = ["none", "16:8"]
chunk = [1]
env = ["baseline", "fastfind"]
[env.baseline]
[env.fastfind]
MIOPEN_FIND_MODE = "2"
"#
        ),
    );
    let report_path = dir.path().join("report.json");
    let out = bench()
        .args(["run", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--output")
        .arg(&report_path)
        .env_remove("MIOPEN_FIND_MODE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), stdout(&out));
    let r = load(&report_path);
    // Eight asked for and the default's A/A control (issue 63).
    assert_eq!(r.cases.len(), 9);
    assert_eq!(r.cases.iter().filter(|c| c.added_as_control).count(), 1);
    assert_eq!(r.model.dim, 8);
    assert_eq!(r.model.z_dim, 16);
    assert!(r.model.params > 0);
    assert_eq!(r.model.on_disk_dtype, "f32");
    assert!(r
        .model
        .local_path
        .as_deref()
        .unwrap()
        .ends_with("wan21_tiny.weights.safetensors"));
    assert!(r.model.file_size_bytes.unwrap() > 0);
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
        assert!(c.outcome.compute_dtype.is_some());
        assert!(c.outcome.load_s.unwrap() >= 0.0);
        assert!(c.outcome.peak_rss_bytes.unwrap() > 0);
        for p in [c.outcome.encode.as_ref().unwrap(), c.outcome.decode.as_ref().unwrap()] {
            assert_eq!(p.samples_s.len(), 2);
            assert_eq!(p.warmup_s.len(), 1);
            assert!(p.median_s > 0.0 && p.gflop > 0.0 && p.gflop_per_s > 0.0 && p.frames_per_s > 0.0);
        }
        let seen = c.outcome.env.get("MIOPEN_FIND_MODE").map(String::as_str);
        match c.settings.env_variant.as_str() {
            "fastfind" => assert_eq!(seen, Some("2"), "{}", c.id),
            _ => assert_eq!(seen, None, "{}", c.id),
        }
    }
    assert!(r
        .cases
        .iter()
        .any(|c| c.id == "bf16-chunk1-tile16o8-5x32x32-fastfind" && c.settings.tile_px() == Some(16)));
    let fp32 = r.cases.iter().find(|c| c.settings.precision.name() == "fp32").unwrap();
    assert!(fp32.outcome.compute_dtype.as_deref().unwrap().contains("f32"));
}

#[test]
fn smoke_case_costs_match_the_issue() {
    let cfg = wan_vae_bench::model::Config::wan21();
    let enc = wan_vae_bench::model::flops::encode_gflop(&cfg, 5, 64, 64);
    let dec = wan_vae_bench::model::flops::decode_gflop(&cfg, 5, 64, 64);
    assert!((enc - 109.25).abs() < 0.01, "{enc}");
    assert!((dec - 182.40).abs() < 0.01, "{dec}");
}
