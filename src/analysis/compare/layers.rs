//! `compare` pointing at layers (`run --profile`, issue 39): when both reports carry a
//! profile of the same case and pass, the layers whose time changed most, so a regression
//! points at a layer. Rendered after the verdict table (text or Markdown), and in `--json`
//! as the comparison's `layer_changes`.
//!
//! Must not: decide verdicts (the profiled pass is one sample: these are pointers, not tests).
use std::fmt::Write;

use crate::report::profile::PassProfile;
use crate::report::Report;

/// Layers listed per case and pass.
pub const TOP: usize = 5;

/// One layer's time in both reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LayerChange {
    pub case: String,
    pub pass: &'static str,
    pub layer: String,
    pub baseline_ms: f64,
    pub current_ms: f64,
}

impl LayerChange {
    pub fn delta_ms(&self) -> f64 {
        self.current_ms - self.baseline_ms
    }
}

/// Per case and pass profiled in both, the [`TOP`] layers whose time changed most (a layer
/// one side lacks counts 0 ms there), largest change first.
pub fn changes(baseline: &Report, current: &Report) -> Vec<LayerChange> {
    let mut out = Vec::new();
    for cur in &current.cases {
        let Some(base) = baseline.cases.iter().find(|b| b.id == cur.id) else {
            continue;
        };
        let (Some(bp), Some(cp)) = (&base.profile, &cur.profile) else {
            continue;
        };
        for (pass, b, c) in [("encode", &bp.encode, &cp.encode), ("decode", &bp.decode, &cp.decode)] {
            let (Some(b), Some(c)) = (b, c) else { continue };
            let mut rows = pass_changes(&cur.id, pass, b, c);
            rows.sort_by(|x, y| y.delta_ms().abs().total_cmp(&x.delta_ms().abs()));
            out.extend(rows.into_iter().take(TOP));
        }
    }
    out
}

fn pass_changes(case: &str, pass: &'static str, b: &PassProfile, c: &PassProfile) -> Vec<LayerChange> {
    let ms_of = |p: &PassProfile, layer: &str| p.layers.iter().find(|r| r.layer == layer).map_or(0.0, |r| r.ms);
    let mut names: Vec<&str> = b.layers.iter().chain(&c.layers).map(|r| r.layer.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|layer| LayerChange {
            case: case.to_string(),
            pass,
            layer: layer.to_string(),
            baseline_ms: ms_of(b, layer),
            current_ms: ms_of(c, layer),
        })
        .collect()
}

/// The block after the verdicts; empty when no case was profiled in both.
pub fn render(changes: &[LayerChange], markdown: bool) -> String {
    if changes.is_empty() {
        return String::new();
    }
    let secs = |ms: f64| crate::util::format::seconds(ms / 1e3);
    let mut o = String::new();
    if markdown {
        o.push_str("\n### Layers whose time changed most (one profiled pass each)\n\n");
        o.push_str("| case | pass | layer | baseline | current | change |\n|:---|:---|:---|---:|---:|---:|\n");
    } else {
        o.push_str("\nLayers whose time changed most (one profiled pass each, not a test):\n");
    }
    for c in changes {
        let sign = if c.delta_ms() >= 0.0 { "+" } else { "-" };
        let delta = format!("{sign}{}", secs(c.delta_ms().abs()));
        if markdown {
            let _ = writeln!(
                o,
                "| `{}` | {} | `{}` | {} | {} | {delta} |",
                crate::util::format::md_cell(&c.case),
                c.pass,
                c.layer,
                secs(c.baseline_ms),
                secs(c.current_ms)
            );
        } else {
            let _ = writeln!(
                o,
                "  {} {} {}: {} -> {} ({delta})",
                crate::util::format::printable(&c.case),
                c.pass,
                c.layer,
                secs(c.baseline_ms),
                secs(c.current_ms)
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::profile::{CaseProfile, LayerRow};

    #[test]
    fn the_layer_that_slowed_down_comes_first() {
        let row = |layer: &str, ms: f64| LayerRow {
            layer: layer.into(),
            calls: 1,
            ms,
            ..Default::default()
        };
        let profile = |rows: Vec<LayerRow>| CaseProfile {
            decode: Some(PassProfile {
                layers: rows,
                ..Default::default()
            }),
            ..Default::default()
        };
        let b = profile(vec![row("decoder.head.2", 10.0), row("decoder.middle.1", 5.0)]);
        let c = profile(vec![
            row("decoder.head.2", 10.5),
            row("decoder.middle.1", 9.0),
            row("decoder.conv1", 1.0),
        ]);
        let changes = pass_changes("x", "decode", b.decode.as_ref().unwrap(), c.decode.as_ref().unwrap());
        let mut sorted = changes.clone();
        sorted.sort_by(|x, y| y.delta_ms().abs().total_cmp(&x.delta_ms().abs()));
        assert_eq!(sorted[0].layer, "decoder.middle.1");
        assert_eq!((sorted[0].baseline_ms, sorted[0].current_ms), (5.0, 9.0));
        assert_eq!(
            sorted[1].layer, "decoder.conv1",
            "a layer only the current profile has counts from 0"
        );
        let text = render(&sorted, false);
        assert!(
            text.contains("x decode decoder.middle.1: 5.0 ms -> 9.0 ms (+4.0 ms)"),
            "{text}"
        );
        assert!(render(&sorted, true).contains("| `x` | decode | `decoder.middle.1` |"));
        assert_eq!(render(&[], false), "");
    }
}
