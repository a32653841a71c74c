//! Render a [`Comparison`] as terminal text, a Markdown PR comment, or JSON.
//!
//! Must not: decide verdicts (that is [`super::verdict`]); numbers go through `crate::util::format`.
use std::fmt::Write;

use super::verdict::{CaseComparison, Comparison, PassComparison, Verdict};

use crate::util::format::{md_cell, seconds_plain as secs};

fn p_text(p: &PassComparison) -> String {
    match p.p_value {
        Some(v) if v < 1e-4 => "<0.0001".into(),
        Some(v) => format!("{v:.4}"),
        None => "n<2".into(),
    }
}

/// The verdict in words. A change beyond the threshold that the test does not carry is
/// "not significant", never "no change": 1.25x slower at p = 0.38 is not shown to be the
/// same speed.
fn verdict_text(p: &PassComparison, threshold: f64) -> String {
    use super::verdict::Test;
    let beyond = if p.ratio > 1.0 + threshold {
        Some("slower")
    } else if p.ratio < 1.0 - threshold {
        Some("faster")
    } else {
        None
    };
    let mut t = match (p.verdict, p.test, beyond) {
        (Verdict::Slower, _, _) if p.explained_by_load => "slower, put down to load (busy run; rerun)".to_string(),
        (Verdict::Slower, _, _) => "REGRESSION".to_string(),
        (Verdict::Faster, _, _) => "faster".to_string(),
        (Verdict::NoChange, Test::InsufficientSamples, Some(b)) => {
            format!("{b}, not significant (insufficient samples, the ranges overlap)")
        }
        (Verdict::NoChange, Test::InsufficientSamples, None) => "no change (insufficient samples)".to_string(),
        (Verdict::NoChange, Test::Welch, Some(b)) => format!("{b}, not significant"),
        (Verdict::NoChange, Test::Welch, None) => "no change".to_string(),
    };
    match (p.baseline_outliers, p.current_outliers) {
        (0, 0) => {}
        (b, c) => {
            let _ = write!(t, " ({b} + {c} outlier(s) set aside)");
        }
    }
    t
}

fn psnr(v: Option<f64>) -> String {
    crate::util::format::psnr(v, 2, "inf")
}

fn header(c: &Comparison) -> String {
    format!(
        "threshold {:.1}%, alpha {}, PSNR drop {} dB (ceiling {} dB)",
        c.rules.threshold * 100.0,
        c.rules.alpha,
        c.rules.psnr_drop_db,
        c.rules.psnr_ceiling_db
    )
}

fn summary(c: &Comparison) -> String {
    if c.regression {
        format!(
            "REGRESSION in {} of {} compared case(s)",
            c.regressed_cases,
            c.cases.len()
        )
    } else {
        format!("no regression in {} compared case(s)", c.cases.len())
    }
}

/// Plain text for a terminal.
pub fn text(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "compare {} (baseline) -> {} (current)", c.baseline, c.current);
    let _ = writeln!(o, "{}", header(c));
    for w in &c.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    for case in &c.cases {
        let _ = writeln!(o, "\n{}{}", case.id, status_suffix(case));
        for p in &case.passes {
            let _ = writeln!(
                o,
                "  {:<7} {:>9} s -> {:>9} s  {:<14} p={:<8} {}",
                p.pass,
                secs(p.baseline_median_s),
                secs(p.current_median_s),
                p.change,
                p_text(p),
                verdict_text(p, c.rules.threshold)
            );
        }
        for q in &case.quality {
            let _ = writeln!(
                o,
                "  {:<9} PSNR {} dB -> {} dB ({:+.2} dB after clamping){}",
                q.output,
                psnr(q.baseline_psnr_db),
                psnr(q.current_psnr_db),
                -q.drop_db,
                if q.regression { "  REGRESSION" } else { "" }
            );
        }
        for n in &case.notes {
            let _ = writeln!(o, "  note: {n}");
        }
    }
    if !c.only_in_baseline.is_empty() {
        let _ = writeln!(o, "\nonly in baseline: {}", c.only_in_baseline.join(", "));
    }
    if !c.only_in_current.is_empty() {
        let _ = writeln!(o, "\nonly in current: {}", c.only_in_current.join(", "));
    }
    let _ = writeln!(o, "\n{}", summary(c));
    o
}

fn status_suffix(case: &CaseComparison) -> String {
    if case.baseline_status == case.current_status {
        String::new()
    } else {
        format!(
            "  [status {} -> {}]{}",
            case.baseline_status.name(),
            case.current_status.name(),
            if case.status_regression { " REGRESSION" } else { "" }
        )
    }
}

/// Markdown for a PR comment.
pub fn markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let icon = if c.regression { "❌" } else { "✅" };
    let _ = writeln!(o, "### {icon} Benchmark comparison: {}\n", summary(c));
    let _ = writeln!(
        o,
        "Baseline `{}`, current `{}`; {}.\n",
        c.baseline,
        c.current,
        header(c)
    );
    for w in &c.warnings {
        let _ = writeln!(o, "> **Warning:** {}\n", md_cell(w));
    }
    let _ = writeln!(o, "| case | pass | baseline [s] | current [s] | change | p | verdict |");
    let _ = writeln!(o, "|:---|:---|---:|---:|---:|---:|:---|");
    for case in &c.cases {
        for p in &case.passes {
            let v = verdict_text(p, c.rules.threshold);
            let v = if p.verdict == Verdict::Slower {
                format!("**{v}**")
            } else {
                v
            };
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} | {} | {} |",
                md_cell(&case.id),
                p.pass,
                secs(p.baseline_median_s),
                secs(p.current_median_s),
                p.change,
                p_text(p),
                v
            );
        }
    }
    let quality: Vec<_> = c
        .cases
        .iter()
        .flat_map(|k| k.quality.iter().map(move |q| (k, q)))
        .collect();
    if !quality.is_empty() {
        let _ = writeln!(
            o,
            "\n| case | output | baseline PSNR [dB] | current PSNR [dB] | drop [dB] | verdict |"
        );
        let _ = writeln!(o, "|:---|:---|---:|---:|---:|:---|");
        for (k, q) in quality {
            let v = if q.regression { "**REGRESSION**" } else { "ok" };
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {:.2} | {v} |",
                md_cell(&k.id),
                q.output,
                psnr(q.baseline_psnr_db),
                psnr(q.current_psnr_db),
                q.drop_db
            );
        }
    }
    let notes: Vec<_> = c
        .cases
        .iter()
        .flat_map(|k| k.notes.iter().map(move |n| (k, n)))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(o, "\n**Notes**\n");
        for (k, n) in notes {
            let _ = writeln!(o, "- `{}`: {}", md_cell(&k.id), md_cell(n));
        }
    }
    for (label, ids) in [
        ("Only in baseline", &c.only_in_baseline),
        ("Only in current", &c.only_in_current),
    ] {
        if !ids.is_empty() {
            let list: Vec<String> = ids.iter().map(|i| format!("`{}`", md_cell(i))).collect();
            let _ = writeln!(o, "\n**{label}:** {}", list.join(", "));
        }
    }
    o
}

/// Pretty JSON.
pub fn json(c: &Comparison) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(c)? + "\n")
}
