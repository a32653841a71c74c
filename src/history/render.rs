//! A [`History`] as the terminal table and as Markdown (a CI job summary): one line per
//! series (case, pass, machine) with its segments' medians, then one line per step with its
//! date, run and what changed in the stack.
//!
//! Must not: fit or judge (that is [`super::steps`] and [`super`]); numbers go through
//! `crate::format`.
use std::fmt::Write;

use unicode_width::UnicodeWidthStr;

use super::{file_name, History, Series, Step};
use crate::format::seconds;

/// The segments' medians: `100.0 ms -> 125.0 ms (+25.0%)`.
fn segments(s: &Series) -> String {
    let mut out = s
        .segments
        .iter()
        .map(|g| seconds(g.median_s))
        .collect::<Vec<_>>()
        .join(" -> ");
    if let Some(st) = s.steps.last() {
        let _ = write!(out, " ({:+.1}%)", st.change * 100.0);
    }
    out
}

/// `run 7 of 12, 2026-11-20T03:00:00Z (r07.json)`.
fn when(h: &History, s: &Series, st: &Step) -> String {
    format!(
        "run {} of {}, {} ({})",
        st.point + 1,
        s.points.len(),
        st.created_at,
        file_name(&h.reports[s.points[st.point].report].path)
    )
}

/// What changed at a step, or that nothing in the stack did.
pub fn changed(st: &Step) -> String {
    if st.changes.is_empty() {
        "nothing in the stack changed: the cause is elsewhere (thermal state, the machine, noise)".into()
    } else {
        st.changes.iter().map(|c| c.text()).collect::<Vec<_>>().join("; ")
    }
}

/// The verdict of a series: `SLOWER +25.0% than the best earlier (p 0.0001)`, `ok`.
fn verdict(s: &Series) -> String {
    let v = &s.verdict;
    match (v.regression, v.slower) {
        (true, Some(x)) => format!(
            "SLOWER {:+.1}% than the best earlier{}",
            x * 100.0,
            v.p_value.map(|p| format!(" (p {p:.4})")).unwrap_or_default()
        ),
        (false, Some(x)) if x > 0.0 => {
            format!("ok ({:+.1}% vs the best earlier, within threshold or noise)", x * 100.0)
        }
        _ => "ok".into(),
    }
}

fn summary(h: &History) -> String {
    let machines: std::collections::BTreeSet<&str> = h.series.iter().map(|s| s.machine.as_str()).collect();
    let steps: usize = h.series.iter().map(|s| s.steps.len()).sum();
    let mut out = format!(
        "{} series from {} on {}; {}; threshold {:.1}%, alpha {}",
        h.series.len(),
        crate::format::count(h.reports.len(), "report"),
        crate::format::count(machines.len(), "machine"),
        crate::format::count(steps, "step"),
        h.threshold * 100.0,
        h.alpha
    );
    let _ = write!(
        out,
        "\n{}",
        match h.regressions {
            0 => "no case is slower now than its best earlier segment".to_string(),
            n => format!("REGRESSION: {n} series slower now than in their best earlier segment"),
        }
    );
    out
}

/// The terminal table.
pub fn text(h: &History) -> String {
    let head = ["case", "pass", "machine", "runs", "segments (median)", "verdict"];
    let rows: Vec<[String; 6]> = h
        .series
        .iter()
        .map(|s| {
            [
                s.case_id.clone(),
                s.pass.to_string(),
                place(h, s),
                s.points.len().to_string(),
                segments(s),
                verdict(s),
            ]
        })
        .collect();
    let mut width = head.map(|c| c.width());
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.width());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = if i + 1 == cells.len() {
                0
            } else {
                width[i] - c.width() + 2
            };
            let _ = write!(l, "{c}{}", " ".repeat(pad));
        }
        l.trim_end().to_string() + "\n"
    };
    let mut out = line(&head.map(String::from));
    for (s, r) in h.series.iter().zip(&rows) {
        out.push_str(&line(r));
        for st in &s.steps {
            let _ = writeln!(
                out,
                "    step {:+.1}% at {}: {}",
                st.change * 100.0,
                when(h, s, st),
                changed(st)
            );
        }
    }
    out + &summary(h) + "\n"
}

/// Markdown: a table of series, then one bullet per step.
pub fn markdown(h: &History) -> String {
    let cell = crate::format::md_cell;
    let mut out =
        String::from("## Benchmark history\n\n| case | pass | machine | runs | segments (median) | verdict |\n");
    out.push_str("| --- | --- | --- | ---: | --- | --- |\n");
    for s in &h.series {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            cell(&s.case_id),
            s.pass,
            cell(&place(h, s)),
            s.points.len(),
            segments(s),
            if s.verdict.regression {
                format!("**{}**", verdict(s))
            } else {
                verdict(s)
            }
        );
    }
    let steps: Vec<String> = h
        .series
        .iter()
        .flat_map(|s| {
            s.steps.iter().map(move |st| {
                format!(
                    "- `{}` {} on {}: {:+.1}% at {}: {}",
                    cell(&s.case_id),
                    s.pass,
                    cell(&place(h, s)),
                    st.change * 100.0,
                    when(h, s, st),
                    changed(st)
                )
            })
        })
        .collect();
    if !steps.is_empty() {
        out.push_str("\n### Steps\n\n");
        out.push_str(&steps.join("\n"));
        out.push('\n');
    }
    out + "\n" + &summary(h) + "\n"
}

/// Where a series was measured: its machine, and its model too when the history holds
/// several (Wan 2.1 and Wan 2.2 runs are separate series, never one).
fn place(h: &History, s: &super::Series) -> String {
    let models: std::collections::BTreeSet<&str> = h.series.iter().map(|x| x.model.as_str()).collect();
    match models.len() {
        0 | 1 => s.machine.clone(),
        _ => format!("{}, {}", s.machine, s.model),
    }
}
