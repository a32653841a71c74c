//! The results table in Markdown (`run --export-markdown FILE`), one row per case.
//!
//! Rows in the order of their axes, named by what differs, what every case shares said
//! above ([`super::rows`]). Columns: case, encode and decode median ± stddev [s], encode and
//! decode GFLOP/s, time / fastest (the case's encode+decode median total over the fastest ok
//! case's total among cases of the same frames and size: above 1, slower; said under the
//! table), median alone when a pass has one run,
//! status, PSNR [dB] of the decoded and latent output when any case has quality (`reference`
//! for a reference case, `∞` when identical), and the round-trip PSNR [dB] when any case has it.
//!
//! Must not: write files (the [`super::ExportManager`] does); numbers go through `crate::util::format`.
use std::collections::BTreeSet;
use std::fmt::Write;

use crate::report::{CaseRecord, CaseStatus, ErrorStats, PassStats, Report};
use crate::util::format::md_cell;
use crate::util::format::seconds_plain as secs;

fn time_cell(p: Option<&PassStats>) -> String {
    p.map_or("–".into(), |p| match p.samples_s.len() {
        // One run has no spread: print none rather than "± 0".
        0 | 1 => secs(p.median_s),
        _ => format!("{} ± {}", secs(p.median_s), secs(p.stddev_s)),
    })
}

fn gflops_cell(p: Option<&PassStats>) -> String {
    p.filter(|p| p.gflop_per_s > 0.0)
        .map_or("–".into(), |p| format!("{:.1}", p.gflop_per_s))
}

/// Sum of the measured passes' medians (None when nothing was measured or not ok).
fn total(case: &CaseRecord) -> Option<f64> {
    if case.outcome.status != CaseStatus::Ok {
        return None;
    }
    let ps: Vec<f64> = super::passes(case)
        .iter()
        .filter_map(|(_, p)| p.map(|p| p.median_s))
        .collect();
    (!ps.is_empty()).then(|| ps.iter().sum())
}

fn psnr_text(e: &Option<ErrorStats>) -> String {
    match e {
        None => "–".into(),
        Some(e) => crate::util::format::psnr(e.psnr_db, 2, "∞"),
    }
}

fn quality_cell(case: &CaseRecord, references: &BTreeSet<&str>) -> String {
    match &case.quality {
        Some(q) if q.reference_id == case.id => "reference".into(),
        Some(q) => format!("{} / {}", psnr_text(&q.decoded), psnr_text(&q.latent)),
        None if references.contains(case.id.as_str()) => "reference".into(),
        None => "–".into(),
    }
}

/// Render the report's cases as a Markdown table (ends with a newline).
pub fn markdown_table(report: &Report) -> String {
    // "relative" is against the fastest ok case of the same frames and size only.
    let key = |c: &CaseRecord| (c.settings.frames, c.settings.width, c.settings.height);
    let fastest = |c: &CaseRecord| {
        report
            .cases
            .iter()
            .filter(|o| key(o) == key(c))
            .filter_map(total)
            .fold(f64::INFINITY, f64::min)
    };
    let has_quality = report.cases.iter().any(|c| c.quality.is_some());
    let roundtrip = |c: &CaseRecord| c.quality.as_ref().and_then(|q| q.roundtrip_psnr_db);
    let has_roundtrip = report.cases.iter().any(|c| roundtrip(c).is_some());
    let references: BTreeSet<&str> = report
        .cases
        .iter()
        .filter_map(|c| c.quality.as_ref())
        .map(|q| q.reference_id.as_str())
        .collect();
    let names = super::rows::ShortIds::of(report);
    let mut o = String::new();
    if let Some(line) = names.common_line() {
        let _ = writeln!(o, "{}\n", md_cell(&line));
    }
    o.push_str("| case | encode [s] | decode [s] | encode GFLOP/s | decode GFLOP/s | time / fastest | status |");
    let synthetic = report.model.is_synthetic();
    if has_quality {
        o.push_str(if synthetic {
            " PSNR [dB] decoded / latent † |"
        } else {
            " PSNR [dB] decoded / latent |"
        });
    }
    if has_roundtrip {
        o.push_str(" round-trip PSNR [dB] |");
    }
    o.push_str("\n|:---|---:|---:|---:|---:|---:|:---|");
    if has_quality {
        o.push_str("---:|");
    }
    if has_roundtrip {
        o.push_str("---:|");
    }
    o.push('\n');
    for case in super::rows::sorted(report) {
        let best = fastest(case);
        let relative = total(case)
            .filter(|_| best > 0.0 && best.is_finite())
            .map_or("–".into(), |t| format!("{:.2}", t / best));
        let mut status = case.outcome.status_label();
        if case.added_as_reference {
            status.push_str(" (added as reference)");
        }
        let _ = write!(
            o,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            md_cell(names.name(&case.id)),
            time_cell(case.outcome.encode.as_ref()),
            time_cell(case.outcome.decode.as_ref()),
            gflops_cell(case.outcome.encode.as_ref()),
            gflops_cell(case.outcome.decode.as_ref()),
            relative,
            status
        );
        if has_quality {
            let _ = write!(o, " {} |", quality_cell(case, &references));
        }
        if has_roundtrip {
            let _ = write!(o, " {} |", roundtrip(case).map_or("–".into(), |v| format!("{v:.2}")));
        }
        o.push('\n');
    }
    let _ = write!(
        o,
        "\ntime / fastest: this case's encode+decode median / the fastest ok case's of the same frames and size \
         (1.00 is the fastest; the answer's \"faster\" divides the other way: the default's time / the case's).\n"
    );
    if has_quality && synthetic {
        let _ = write!(o, "\n† {}\n", crate::report::SYNTHETIC_QUALITY_NOTE);
    }
    o
}
