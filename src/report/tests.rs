//! The report's own tests: its records as they serialize and read back.
use super::*;

#[test]
fn pass_stats_derive_rates() {
    let p = PassStats::from_samples(vec![2.0, 1.0, 3.0], vec![5.0], 5, 100.0);
    assert_eq!(p.median_s, 2.0);
    assert_eq!(p.frames_per_s, 2.5);
    assert_eq!(p.gflop_per_s, 50.0);
    assert_eq!(p.warmup_s, vec![5.0]);
}

#[test]
fn json_that_is_not_a_report_says_what_it_is() {
    let why = |text: &str| not_a_report(text, &serde_json::from_str::<Report>(text).unwrap_err());
    assert!(why("[1, 2]").ends_with("found an array"), "{}", why("[1, 2]"));
    assert!(why(" 42").ends_with("found a number"), "{}", why("42"));
    assert!(why("").starts_with("the file is empty"), "{}", why(""));
    assert!(
        why("{\"schema_version\": 3").starts_with("not valid JSON"),
        "{}",
        why("{")
    );
    assert!(why("{}").contains("missing field"), "{}", why("{}"));
}

#[test]
fn a_case_record_has_the_flat_keys_of_the_schema() {
    let settings: CaseSettings = serde_json::from_value(serde_json::json!({"precision": "fp32", "chunk": 1,
        "tile_px": null, "overlap_px": null, "frames": 5, "width": 64, "height": 64}))
    .unwrap();
    let mut outcome = testing::ok();
    outcome.encode = Some(PassStats::from_samples(vec![1.0], vec![], 5, 1.0));
    let rec = testing::case(settings, outcome);
    let v = serde_json::to_value(&rec).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = vec![
        "id",
        "added_as_reference",
        "engine",
        "precision",
        "chunk",
        "tile_px",
        "overlap_px",
        "frames",
        "width",
        "height",
        "env_variant",
        "passes",
        "temporal_tile_frames",
        "temporal_overlap_frames",
        "cudnn",
        "cudnn_benchmark",
        "miopen_db",
        "tf32",
        "layout",
        "conv3d",
        "frames_used",
        "compute_dtype",
        "env",
        "status",
        "error",
        "encode",
        "decode",
        "load_s",
        "peak_rss_bytes",
        "device_memory_bytes",
        "quality",
    ];
    want.sort_unstable();
    assert_eq!(keys, want);
    assert_eq!(serde_json::from_value::<CaseRecord>(v).unwrap(), rec);
}

#[test]
fn status_names_are_the_json_names() {
    for s in [
        CaseStatus::Ok,
        CaseStatus::Failed,
        CaseStatus::Timeout,
        CaseStatus::Oom,
        CaseStatus::Unsupported,
    ] {
        assert_eq!(serde_json::to_value(s).unwrap(), s.name());
    }
}
