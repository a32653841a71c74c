//! Quality of every case against its fp32/untiled/chunk-1 reference, on the tiny fixture
//! weights (dim 8, 32x32, 5 frames): missing references are added and run, bf16 and tiled
//! cases show their error, chunk 2 matches the reference, the round trip is reported with
//! real weights; `--keep-outputs` keeps the scratch directory (removed otherwise);
//! `--export-markdown` and `--export-svg` write every case.
use crate::util::cli::*;

use std::path::Path;

use wan_vae_bench::report::{CaseStatus, Report};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/wan21_tiny.weights.safetensors"
);

const REF: &str = "fp32-chunk1-untiled-5x32x32-baseline";

/// `run` on the tiny weights with `TMPDIR` = `tmp` (so the scratch directory lands there).
fn run_tiny(dir: &Path, tmp: &Path, args: &[&str]) -> (std::process::Output, Report) {
    let report = dir.join("report.json");
    let out = bench()
        .args([
            "run",
            "--fault-hooks",
            "--quiet",
            "--weights",
            FIXTURE,
            "--size",
            "32x32",
            "--frames",
            "5",
        ])
        .args(["--runs", "1", "--warmup", "0", "--order", "as-written"])
        .args(args)
        .arg("--output")
        .arg(&report)
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), stdout(&out));
    (out, load(&report))
}

fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect()
}

#[test]
fn missing_reference_is_added_and_every_case_is_compared_with_it() {
    let dir = scratch();
    let tmp = scratch();
    let (md, svg) = (dir.path().join("t/results.md"), dir.path().join("t/chart.svg"));
    let (out, r) = run_tiny(
        dir.path(),
        tmp.path(),
        &[
            "--precision",
            "bf16,fp32",
            "--chunk",
            "2",
            "--tile",
            "none,16:8",
            "--keep-outputs",
            "--export-markdown",
            md.to_str().unwrap(),
            "--export-svg",
            svg.to_str().unwrap(),
        ],
    );
    let ids: Vec<&str> = r.cases.iter().map(|c| c.id.as_str()).collect();
    // Four asked for, the added reference and its A/A control (the default, timed twice).
    assert_eq!(ids.len(), 6, "{ids:?}");
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
        assert_eq!(c.added_as_reference, c.id == REF, "{}", c.id);
        let q = c.quality.as_ref().unwrap_or_else(|| panic!("{} has no quality", c.id));
        assert_eq!(q.reference_id, REF);
        // Real (fixture) weights: the round trip is measured; random weights, so it is poor.
        let rt = q.roundtrip_psnr_db.unwrap();
        assert!(rt.is_finite() && rt > 0.0, "{}: {rt}", c.id);
    }
    let case = |id: &str| r.cases.iter().find(|c| c.id == id).unwrap();
    let reference = case(REF).quality.as_ref().unwrap();
    assert!(reference.latent.is_none() && reference.decoded.is_none());

    // bf16: clearly different, but close.
    let bf16 = case("bf16-chunk2-untiled-5x32x32-baseline").quality.as_ref().unwrap();
    for e in [bf16.latent.as_ref().unwrap(), bf16.decoded.as_ref().unwrap()] {
        let p = e.psnr_db.unwrap();
        assert!((30.0..80.0).contains(&p), "bf16 PSNR {p}");
        assert!(!e.identical && e.max_abs > 0.0 && e.mean_abs > 0.0 && e.mean_abs <= e.max_abs);
    }
    // fp32 chunk 2: the same computation in other call sizes, near-identical.
    let chunk2 = case("fp32-chunk2-untiled-5x32x32-baseline").quality.as_ref().unwrap();
    for e in [chunk2.latent.as_ref().unwrap(), chunk2.decoded.as_ref().unwrap()] {
        assert!(e.identical || e.psnr_db.unwrap() > 100.0, "{e:?}");
        assert!(e.max_abs < 1e-4, "{e:?}");
        if e.identical {
            assert_eq!((e.psnr_db, e.max_abs, e.mean_abs), (None, 0.0, 0.0));
        }
    }
    // Tiled fp32: a finite error (tile seams), reported in the same row.
    let tiled = case("fp32-chunk2-tile16o8-5x32x32-baseline").quality.as_ref().unwrap();
    assert!(tiled.decoded.as_ref().unwrap().max_abs > 0.0);

    // The end table has the PSNR column.
    let table = stdout(&out);
    assert!(table.contains("PSNR dB") && table.contains(" ref"), "{table}");

    // --keep-outputs: the directory is kept, printed, and holds every case's outputs.
    let kept = table
        .lines()
        .find_map(|l| l.strip_prefix("outputs: "))
        .unwrap_or_else(|| panic!("no outputs line in {table}"));
    let kept = Path::new(kept);
    assert!(kept.starts_with(tmp.path()), "{}", kept.display());
    for id in &ids {
        assert!(
            wan_vae_bench::engine::protocol::outputs_path(kept, id).is_file(),
            "{id}"
        );
    }

    // Exports: every case in both files, by its row's name (issue 67: what differs among
    // the cases; the full ids stay in the report).
    let md = std::fs::read_to_string(&md).unwrap();
    let svg = std::fs::read_to_string(&svg).unwrap();
    let names = wan_vae_bench::analysis::export::rows::ShortIds::of(&r);
    for id in &ids {
        let name = names.name(id);
        assert!(md.contains(&format!("`{name}`")), "{name} ({id}) missing from\n{md}");
        assert!(svg.contains(name), "{name} ({id}) missing from the SVG");
    }
    assert!(md.contains("reference") && md.contains("round-trip"), "{md}");
}

#[test]
fn outputs_are_removed_without_keep_outputs_and_failed_runs_still_export() {
    let dir = scratch();
    let tmp = scratch();
    let md = dir.path().join("results.md");
    let (out, r) = run_tiny(
        dir.path(),
        tmp.path(),
        &["--precision", "fp32", "--export-markdown", md.to_str().unwrap()],
    );
    assert_eq!(r.cases.len(), 1);
    assert!(!r.cases[0].added_as_reference);
    let q = r.cases[0].quality.as_ref().unwrap();
    assert_eq!(q.reference_id, REF);
    assert!(!stdout(&out).contains("outputs: "));
    assert!(entries(tmp.path()).is_empty(), "{:?}", entries(tmp.path()));
    assert!(std::fs::read_to_string(&md).unwrap().contains(REF));

    // Synthetic weights (here through the `fake` hook: no model, no outputs): no round trip,
    // no quality; a failing case still gets the exports written.
    let cfg = write(
        dir.path(),
        "fake.toml",
        r#"
[model]
weights = "synthetic"
[run]
warmup = 0
runs = 1
[matrix]
size = ["32x32"]
precision = ["bf16"]
env = ["fake", "broken"]
[env.fake]
WAN_VAE_BENCH_FAULT = "fake"
[env.broken]
WAN_VAE_BENCH_FAULT = "fail"
"#,
    );
    let svg = dir.path().join("chart.svg");
    let report = dir.path().join("fake.json");
    let out = bench()
        .args(["run", "--fault-hooks", "--quiet", "--config"])
        .arg(&cfg)
        .arg("--output")
        .arg(&report)
        .arg("--export-svg")
        .arg(&svg)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = load(&report);
    assert_eq!(r.cases.len(), 4, "two cases plus two added references");
    assert_eq!(r.cases.iter().filter(|c| c.added_as_reference).count(), 2);
    assert!(r.cases.iter().all(|c| c.quality.is_none()));
    let svg = std::fs::read_to_string(&svg).unwrap();
    let names = wan_vae_bench::analysis::export::rows::ShortIds::of(&r);
    assert!(r.cases.iter().all(|c| svg.contains(names.name(&c.id))));
    assert!(entries(tmp.path()).is_empty());
}
