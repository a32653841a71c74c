//! Where the time goes (`run --profile`): under the terminal table, per profiled case and
//! pass, the few costliest layers and the op-kind roll-up ([`text`]); the Markdown section
//! ([`markdown`]); the answer's line for the default and the recommended case of each
//! workload ([`answer_text`], [`answer_markdown`]); and the one-line summary those share
//! ([`one_line`]).
//!
//! Must not: compute the profile (`crate::report::profile::complete`) or the answer (`crate::analysis::answer`).
use std::fmt::Write;

use crate::report::profile::{PassProfile, OUTSIDE};
use crate::report::Report;
use crate::util::format::md_cell;

/// Layers listed per profiled pass.
pub const TOP_LAYERS: usize = 5;

fn ms(v: f64) -> String {
    crate::util::format::seconds(v / 1e3)
}

fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// `conv3d 64%, attention 13%, conv2d 12% (costliest: decoder.upsamples.12.residual.2 9%)`.
pub fn one_line(p: &PassProfile) -> String {
    let ops: Vec<String> = p
        .by_op
        .iter()
        .take(3)
        .map(|r| format!("{} {}", r.name, pct(r.share)))
        .collect();
    let top = p.layers.iter().find(|r| r.layer != OUTSIDE);
    let top = top.map_or(String::new(), |r| format!(" (costliest: {} {})", r.layer, pct(r.share)));
    format!("{}{top}", ops.join(", "))
}

/// The block under the terminal table: per profiled case and pass, its wall time and
/// overhead, the [`TOP_LAYERS`] costliest layers and the op-kind roll-up.
pub fn text(report: &Report) -> String {
    let mut o = String::new();
    for c in report.cases.iter().filter(|c| c.profile.is_some()) {
        let profile = c.profile.as_ref().unwrap();
        if o.is_empty() {
            o.push_str("\nWhere the time goes (one profiled pass per pass kind, not in the timings):\n");
        }
        if let Some(e) = &profile.error {
            let _ = writeln!(o, "* {}: no profile: {e}", crate::util::format::printable(&c.id));
            continue;
        }
        for (name, p) in profile.passes() {
            let _ = writeln!(
                o,
                "* {} {name}: profiled {} ({:.2}x the timed median)",
                crate::util::format::printable(&c.id),
                ms(p.total_ms),
                p.overhead
            );
            let width = p
                .layers
                .iter()
                .take(TOP_LAYERS)
                .map(|r| r.layer.len())
                .max()
                .unwrap_or(0);
            for r in p.layers.iter().filter(|r| r.layer != OUTSIDE).take(TOP_LAYERS) {
                let rate = if r.gflop > 0.0 {
                    format!("  {:.1} GFLOP/s", r.gflop_per_s)
                } else {
                    String::new()
                };
                let kernel = r
                    .kernels
                    .first()
                    .map_or(String::new(), |k| format!("  [{}: {}]", k.family, k.name));
                let _ = writeln!(
                    o,
                    "    {:<width$}  {:<9} {:>9} {:>4}  x{}{rate}{kernel}",
                    r.layer,
                    r.op,
                    ms(r.ms),
                    pct(r.share),
                    r.calls
                );
            }
            let ops: Vec<String> = p.by_op.iter().map(|r| format!("{} {}", r.name, pct(r.share))).collect();
            let _ = writeln!(o, "    by op: {}", ops.join(", "));
        }
    }
    o
}

/// The Markdown section: per profiled case and pass, a table of its costliest layers and
/// the op-kind roll-up.
pub fn markdown(report: &Report) -> String {
    let mut o = String::new();
    for c in report.cases.iter().filter(|c| c.profile.is_some()) {
        let profile = c.profile.as_ref().unwrap();
        if o.is_empty() {
            o.push_str("\n## Where the time goes\n\nOne profiled pass per pass kind, after the timed ones (not in the timings).\n");
        }
        if let Some(e) = &profile.error {
            let _ = writeln!(o, "\n`{}`: no profile: {e}", md_cell(&c.id));
            continue;
        }
        for (name, p) in profile.passes() {
            let _ = writeln!(
                o,
                "\n### `{}` {name}\n\nProfiled {} ({:.2}x the timed median); by op: {}.\n",
                md_cell(&c.id),
                ms(p.total_ms),
                p.overhead,
                p.by_op
                    .iter()
                    .map(|r| format!("{} {}", r.name, pct(r.share)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            o.push_str("| layer | op | input | calls | time | share | GFLOP/s | top kernel |\n");
            o.push_str("|:---|:---|:---|---:|---:|---:|---:|:---|\n");
            let rows = p.layers.iter().filter(|r| r.layer != OUTSIDE).take(TOP_LAYERS);
            for r in rows.chain(p.layers.iter().filter(|r| r.layer == OUTSIDE)) {
                let shape = r
                    .input_shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("x");
                let kernel = r
                    .kernels
                    .first()
                    .map_or("–".into(), |k| format!("{} (`{}`)", k.family, k.name));
                let rate = if r.gflop > 0.0 {
                    format!("{:.1}", r.gflop_per_s)
                } else {
                    "–".into()
                };
                let _ = writeln!(
                    o,
                    "| `{}` | {} | {} {} | {} | {} | {} | {rate} | {kernel} |",
                    r.layer,
                    r.op,
                    shape,
                    r.dtype,
                    r.calls,
                    ms(r.ms),
                    pct(r.share)
                );
            }
        }
    }
    o
}

/// A role (`default`, `recommended`), its case id, one line per profiled pass.
type Role = (String, String, Vec<String>);

/// `(workload label, roles)` for every answer whose default or recommended case carries a
/// profile.
fn answer_items(report: &Report) -> Vec<(String, Vec<Role>)> {
    let Some(s) = &report.summary else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for a in &s.answers {
        let mut roles = Vec::new();
        let fastest = a
            .fastest
            .as_ref()
            .filter(|f| a.baseline.as_ref().is_none_or(|b| b.id != f.id));
        for (role, case) in [("default", a.baseline.as_ref()), ("recommended", fastest)] {
            let Some(case) = case else { continue };
            let Some(p) = report
                .cases
                .iter()
                .find(|c| c.id == case.id)
                .and_then(|c| c.profile.as_ref())
            else {
                continue;
            };
            let lines: Vec<String> = p.passes().map(|(n, p)| format!("{n}: {}", one_line(p))).collect();
            if !lines.is_empty() {
                roles.push((role.to_string(), case.id.clone(), lines));
            }
        }
        if !roles.is_empty() {
            out.push((
                format!(
                    "{}, {} frames at {}x{}, engine {}",
                    a.model, a.frames, a.width_px, a.height_px, a.engine
                ),
                roles,
            ));
        }
    }
    out
}

/// The answer's "where the time goes" line(s) for the terminal.
pub fn answer_text(report: &Report) -> String {
    let mut o = String::new();
    for (workload, roles) in answer_items(report) {
        if o.is_empty() {
            o.push_str("\nWhere the time goes (the answer's cases, profiled):\n");
        }
        let _ = writeln!(o, "* {workload}:");
        for (role, id, lines) in roles {
            let _ = writeln!(
                o,
                "  {role} {}: {}",
                crate::util::format::printable(&id),
                lines.join("; ")
            );
        }
    }
    o
}

/// The same in Markdown.
pub fn answer_markdown(report: &Report) -> String {
    let mut o = String::new();
    for (workload, roles) in answer_items(report) {
        if o.is_empty() {
            o.push_str("\n### Where the time goes (the answer's cases)\n\n");
        }
        for (role, id, lines) in roles {
            let _ = writeln!(o, "- {workload}, {role} `{id}`: {}", lines.join("; "));
        }
    }
    o
}
