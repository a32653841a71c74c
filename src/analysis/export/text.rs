//! The plain-text summary table printed at the end of `run`: case, encode and decode
//! median ± stddev (the median alone for one run), each as a time over the fastest case's
//! of that pass with the same frames and size (`time / fastest`: above 1, slower), and the
//! PSNR of the decoded video against the case's reference (`ref` for a reference case,
//! `inf` when identical, `-` when unknown); a pass no case runs has no columns. Rows in the order of their axes, named by what
//! differs, what every case shares said above ([`super::rows`]); the engines' cross-check
//! under it.
//!
//! Columns are padded by display width (unicode-width), not by chars.
//!
//! Must not: write files (the [`super::Exporter`] caller does).
use unicode_width::UnicodeWidthStr;

use crate::report::{CaseRecord, CaseStatus, PassStats, Report};

/// Render the summary table of `report`.
pub fn render_table(report: &Report) -> String {
    // "vs fastest" compares a case with the fastest ok case of the same frames and size
    // only: rows of other sizes do different work.
    let fastest = |c: &CaseRecord, pick: fn(&CaseRecord) -> Option<&PassStats>| {
        let s = &c.settings;
        report
            .cases
            .iter()
            .filter(|o| o.outcome.status == CaseStatus::Ok)
            .filter(|o| (o.settings.frames, o.settings.width, o.settings.height) == (s.frames, s.width, s.height))
            .filter_map(pick)
            .map(|p| p.median_s)
            .filter(|m| *m > 0.0)
            .fold(f64::INFINITY, f64::min)
    };
    let synthetic = report.model.is_synthetic();
    let header = [
        "case",
        "status",
        "encode median ± stddev",
        "time / fastest*",
        "decode median ± stddev",
        "time / fastest*",
        if synthetic { "PSNR dB†" } else { "PSNR dB" },
    ];
    let names = super::rows::ShortIds::of(report);
    let mut rows: Vec<[String; 7]> = vec![header.map(str::to_string)];
    for c in super::rows::sorted(report) {
        let (e, er) = cell(c.outcome.encode.as_ref(), fastest(c, |c| c.outcome.encode.as_ref()));
        let (d, dr) = cell(c.outcome.decode.as_ref(), fastest(c, |c| c.outcome.decode.as_ref()));
        let status = c.outcome.status_label();
        let name = names.name(&c.id);
        let id = crate::util::format::printable(&if c.added_as_reference {
            format!("{name} (added)")
        } else {
            name.to_string()
        });
        rows.push([id, status, e, er, d, dr, psnr_cell(c)]);
    }
    // A pass no case runs has no columns (a decode-only sweep's table is two columns narrower).
    let encodes = report.cases.iter().any(|c| c.settings.passes.encodes());
    let decodes = report.cases.iter().any(|c| c.settings.passes.decodes()) || !encodes;
    let keep = [true, true, encodes, encodes, decodes, decodes, true];
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| r.into_iter().zip(keep).filter(|(_, k)| *k).map(|(c, _)| c).collect())
        .collect();
    let mut widths = vec![0usize; rows[0].len()];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.width());
        }
    }
    let mut out = String::new();
    if let Some(line) = names.common_line() {
        out.push_str(&crate::util::format::printable(&line));
        out.push('\n');
    }
    for (i, r) in rows.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(k, (cell, w))| {
                // Padding by display width: `{:<w$}` counts chars, which misaligns wide
                // (CJK, emoji) or combining characters in env names.
                let pad = " ".repeat(w.saturating_sub(cell.width()));
                if k >= 2 {
                    format!("{pad}{cell}")
                } else {
                    format!("{cell}{pad}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
            out.push('\n');
        }
    }
    out.push_str(TIME_OVER_FASTEST);
    out.push('\n');
    if synthetic {
        out.push_str(&format!("† {}\n", crate::report::SYNTHETIC_QUALITY_NOTE));
    }
    out.push_str(&super::rows::cross_checks(report, &names));
    out
}

/// The footnote of the `time / fastest` columns: what the ratio divides, and that the
/// answer's speed-ups divide the other way.
pub const TIME_OVER_FASTEST: &str =
    "* time / fastest = this case's median / the fastest ok case's of the same frames and \
     size: 1.00x is the fastest, 1.35x takes 35% longer (the answer's \"faster\" divides the other way: the default's \
     time / the case's)";

/// Decoded PSNR against the reference: `ref`, `inf` (identical), `12.3`, or `-`.
pub fn psnr_cell(c: &CaseRecord) -> String {
    match &c.quality {
        Some(q) if q.reference_id == c.id => "ref".into(),
        Some(q) => match &q.decoded {
            Some(e) => crate::util::format::psnr(e.psnr_db, 1, "inf"),
            None => "-".into(),
        },
        None => "-".into(),
    }
}

fn cell(p: Option<&PassStats>, best: f64) -> (String, String) {
    match p {
        None => ("-".into(), "-".into()),
        Some(p) => {
            let rel = if best.is_finite() && best > 0.0 {
                format!("{:.2}x", p.median_s / best)
            } else {
                "-".into()
            };
            (
                crate::util::format::median_spread(p.median_s, p.stddev_s, p.samples_s.len()),
                rel,
            )
        }
    }
}
