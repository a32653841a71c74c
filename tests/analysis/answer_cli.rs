//! The answer block, the CSV and JSON exports and the shell completions, through the
//! binary: a real small run (candle, fp32/bf16 x untiled/tiled, 5 frames of 64x64 on the
//! tiny fixture weights: about 4 s) prints "What to set" under its table, writes the same in the
//! report's `summary` and the Markdown, and one CSV row per case that the csv crate reads
//! back; `--export-json` is `-o`; `completions` writes a script for bash, zsh and fish.
use crate::util::cli::*;

use wan_vae_bench::report::{CaseStatus, Verdict};

#[test]
fn a_small_sweep_prints_the_answer_and_exports_csv() {
    let dir = scratch();
    let (json, csv, md) = (
        dir.path().join("r.json"),
        dir.path().join("out/cases.csv"),
        dir.path().join("r.md"),
    );
    let started = std::time::Instant::now();
    let out = bench()
        .args([
            "run", "--quiet", "--engine", "candle", "--frames", "5", "--size", "64x64",
        ])
        .arg("--weights")
        .arg(fixture("wan21_tiny.weights.safetensors"))
        .args(["--precision", "fp32,bf16", "--tile", "none,32:16"])
        .args(["--warmup", "0", "--runs", "3"])
        .arg("--export-json")
        .arg(&json)
        .arg("--export-csv")
        .arg(&csv)
        .arg("--export-markdown")
        .arg(&md)
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}\n{text}", stderr(&out));
    // --export-json wrote the report (as -o would).
    let r = load(&json);
    // The four asked for and the default's A/A control (issue 63), timed in rounds.
    assert_eq!(r.cases.len(), 5);
    let controls: Vec<_> = r
        .cases
        .iter()
        .filter(|c| c.added_as_control)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(controls, ["fp32-chunk1-untiled-5x64x64-baseline-control"]);
    assert_eq!(r.run.schedule, "rounds");
    assert!(r.cases.iter().all(|c| c.outcome.status == CaseStatus::Ok));

    // The summary: one workload, the default is fp32 untiled, and the verdict is one of
    // those a comparison gives (timings decide which). On these random tiny weights the
    // 32:16 tiles decode far from fp32 (about 13 dB): below the default 40 dB floor.
    let s = r.summary.as_ref().expect("summary written");
    assert_eq!((s.min_psnr_db, s.answers.len()), (40.0, 1));
    let a = &s.answers[0];
    assert_eq!((a.engine.as_str(), a.frames, a.width_px, a.cases), ("candle", 5, 64, 4));
    let tiled_psnr = |c: &&wan_vae_bench::report::CaseRecord| {
        c.settings.tiling.is_some() && c.quality.as_ref().unwrap().decoded.as_ref().unwrap().psnr_db.unwrap() < 40.0
    };
    assert_eq!(r.cases.iter().filter(tiled_psnr).count(), 2);
    assert_eq!(a.cases_qualified, 2, "{a:?}");
    assert_eq!(a.baseline.as_ref().unwrap().id, "fp32-chunk1-untiled-5x64x64-baseline");
    assert!(a.baseline_qualified);
    let fastest = a.fastest.as_ref().unwrap();
    assert!(fastest.id.contains("-untiled-"), "{fastest:?}");
    assert!(
        matches!(
            a.verdict,
            Verdict::Faster | Verdict::WithinNoise | Verdict::WithinDrift | Verdict::BaselineFastest
        ),
        "{a:?}"
    );
    if a.verdict != Verdict::BaselineFastest {
        let (lo, hi) = (a.speedup_ratio_low.unwrap(), a.speedup_ratio_high.unwrap());
        assert!(
            lo <= a.speedup_ratio.unwrap() && a.speedup_ratio.unwrap() <= hi,
            "{a:?}"
        );
    }
    // Printed under the table, sentence included.
    let table_end = text.find("* time / fastest = ").expect("table printed");
    let block = text.find("What to set").expect("answer printed");
    assert!(table_end < block, "{text}");
    assert!(text.contains(&a.sentence), "{text}");
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("## What to set") && markdown.contains(&a.sentence),
        "{markdown}"
    );

    // CSV: a header and one row per case, read back with the csv crate.
    let mut reader = csv::Reader::from_path(&csv).unwrap();
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), r.cases.len());
    // Rows in the order of their axes (issue 67), each naming its case.
    for row in &rows {
        let case = r
            .cases
            .iter()
            .find(|c| c.id == row[col("id")])
            .expect("a case of the report");
        assert_eq!(row.len(), header.len());
        assert_eq!(&row[col("precision")], case.settings.precision.name());
        assert_eq!(&row[col("status")], "ok");
        assert_eq!(row[col("tile_px")].is_empty(), case.settings.tiling.is_none());
        // serde_json reads floats back to within an ulp; the CSV has them at full precision.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        let median: f64 = row[col("decode_median_s")].parse().unwrap();
        assert!(
            close(median, case.outcome.decode.as_ref().unwrap().median_s),
            "{}",
            case.id
        );
        assert!(row[col("decode_gflop_per_s")].parse::<f64>().unwrap() > 0.0);
        assert_eq!(
            row[col("peak_rss_bytes")],
            case.outcome.peak_rss_bytes.unwrap().to_string()
        );
        let psnr = case
            .quality
            .as_ref()
            .and_then(|q| q.decoded.as_ref())
            .and_then(|e| e.psnr_db);
        match (row[col("decoded_psnr_db")].parse::<f64>().ok(), psnr) {
            (Some(a), Some(b)) => assert!(close(a, b), "{}: {a} {b}", case.id),
            (a, b) => {
                // No PSNR: the reference itself, or the A/A control, identical to it.
                let identical = case
                    .quality
                    .as_ref()
                    .and_then(|q| q.decoded.as_ref())
                    .is_some_and(|e| e.identical);
                assert_eq!((a, b), (None, None), "{}", case.id);
                assert!(row[col("reference_id")] == case.id || identical, "{}", case.id);
            }
        }
    }
    // About 4 s on a 2-core machine; loosely bounded, as the machine may be shared.
    assert!(elapsed.as_secs() < 60, "{elapsed:?}");
}

#[test]
fn export_json_conflicts_with_output_and_min_psnr_is_checked() {
    let dir = scratch();
    let out = bench()
        .args(["run", "--list", "--export-json"])
        .arg(dir.path().join("a.json"))
        .arg("-o")
        .arg(dir.path().join("b.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--export-json"), "{}", stderr(&out));
    let out = bench().args(["run", "--list", "--min-psnr=-3"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--min-psnr"), "{}", stderr(&out));
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = bench().args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(
            script.contains("wan-vae-bench") && script.contains("run"),
            "{shell}: {script}"
        );
        assert!(script.contains("export-csv"), "{shell}: the run flags are completed");
    }
    let out = bench().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
