//! The rows of a report's tables and chart (issue 67, item 8): in the order of their axes,
//! not the shuffled order they ran in ([`sorted`]), and named by what sets them apart
//! ([`ShortIds`]): a case id holds every axis (up to 130 characters with knobs and levers),
//! a row only the axes that vary among the report's cases; what every case shares is said
//! once above the table. The full id stays in the report, the CSV's `id` column and `compare`.
//! Also the engines' cross-check (`quality.cross_engine`) as lines under the terminal table
//! ([`cross_checks`]).
//!
//! Must not: change the report; it orders and names rows.
use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::plan::axes::{Axis, ENGINE, ENV, FRAMES, ID_ORDER, SIZE};
use crate::report::{CaseRecord, Report};

/// `a` against `b` as people count: runs of digits by value (`chunk2` before `chunk10`).
fn natural(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.chars().peekable(), b.chars().peekable());
    loop {
        match (x.peek().copied(), y.peek().copied()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let take = |it: &mut std::iter::Peekable<std::str::Chars>| {
                    let mut n = String::new();
                    while let Some(c) = it.peek().copied().filter(char::is_ascii_digit) {
                        n.push(c);
                        it.next();
                    }
                    n
                };
                let (m, n) = (take(&mut x), take(&mut y));
                let (m, n) = (m.trim_start_matches('0'), n.trim_start_matches('0'));
                let o = m.len().cmp(&n.len()).then_with(|| m.cmp(n));
                if o != Ordering::Equal {
                    return o;
                }
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(&d);
                }
                x.next();
                y.next();
            }
        }
    }
}

/// The report's cases in the order of their axes: frames, then size (pixels), then each
/// axis in the id's order (engine, precision, chunk, tiling, ..., knobs), values counted
/// naturally; a reference the run added after the user's case of the same axes; ties by id
/// (a merged report's cases of one setting from several machines or runs).
pub fn sorted(report: &Report) -> Vec<&CaseRecord> {
    let mut cases: Vec<&CaseRecord> = report.cases.iter().collect();
    cases.sort_by(|a, b| {
        let (s, t) = (&a.settings, &b.settings);
        s.frames
            .cmp(&t.frames)
            .then((s.width * s.height).cmp(&(t.width * t.height)))
            .then(s.width.cmp(&t.width))
            .then_with(|| {
                ID_ORDER
                    .iter()
                    .map(|axis| natural(&(axis.get)(s), &(axis.get)(t)))
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            })
            .then(a.added_as_reference.cmp(&b.added_as_reference))
            .then_with(|| natural(&a.id, &b.id))
    });
    cases
}

/// One part of a row's name: the axis's part of the case id (frames and size together, as
/// `5x64x64`; the engine and the env variant by name), empty where the id has none (a
/// knob or lever at its default).
fn part(axis: &Axis, c: &CaseRecord) -> String {
    let s = &c.settings;
    if std::ptr::eq(axis, &FRAMES) || std::ptr::eq(axis, &SIZE) {
        return format!("{}x{}x{}", s.frames, s.width, s.height);
    }
    if std::ptr::eq(axis, &ENGINE) || std::ptr::eq(axis, &ENV) {
        return (axis.get)(s);
    }
    (axis.id)(s).trim_matches('-').to_string()
}

/// The rows' names: each case's id cut to the axes that vary among the report's cases.
#[derive(Debug, Default)]
pub struct ShortIds {
    names: BTreeMap<String, String>,
    /// What every case shares (engine, precision, clip, ...), in the id's order; empty when
    /// the names are the full ids.
    pub common: Vec<String>,
}

impl ShortIds {
    /// The names of `report`'s rows: full ids for a report of one case, or when cutting
    /// would make two rows alike; else the varying axes' values joined by `-`, and what
    /// follows a case's id beyond its settings' id (merge's `@host-TIME`) kept.
    pub fn of(report: &Report) -> ShortIds {
        let full = || ShortIds {
            names: report.cases.iter().map(|c| (c.id.clone(), c.id.clone())).collect(),
            common: Vec::new(),
        };
        if report.cases.len() < 2 {
            return full();
        }
        // Frames and size are one part: one axis entry for both.
        let axes: Vec<&Axis> = ID_ORDER.iter().copied().filter(|a| !std::ptr::eq(*a, &SIZE)).collect();
        let varies: Vec<bool> = axes
            .iter()
            .map(|a| {
                let first = part(a, &report.cases[0]);
                report.cases.iter().any(|c| part(a, c) != first)
            })
            .collect();
        let mut names = BTreeMap::new();
        for c in &report.cases {
            let Some(suffix) = c.id.strip_prefix(&c.settings.id()) else {
                return full(); // an id of another scheme: shown whole
            };
            let parts: Vec<String> = axes
                .iter()
                .zip(&varies)
                .filter(|(_, v)| **v)
                .map(|(a, _)| part(a, c))
                .filter(|p| !p.is_empty())
                .collect();
            let name = format!("{}{suffix}", parts.join("-"));
            if name.is_empty() {
                return full();
            }
            names.insert(c.id.clone(), name);
        }
        let distinct: std::collections::BTreeSet<&String> = names.values().collect();
        if distinct.len() != names.len() {
            return full();
        }
        let c0 = &report.cases[0];
        // What is set (an id part) and the engine; not the knobs and levers at their defaults.
        let common = axes
            .iter()
            .zip(&varies)
            .filter(|(_, v)| !**v)
            .map(|(a, _)| part(a, c0))
            .filter(|p| !p.is_empty())
            .collect();
        ShortIds { names, common }
    }

    /// The row name of the case `id` (the id itself when unknown).
    pub fn name<'a>(&'a self, id: &'a str) -> &'a str {
        self.names.get(id).map_or(id, String::as_str)
    }

    /// The line above a table that says what every row shares; `None` when rows show full ids.
    pub fn common_line(&self) -> Option<String> {
        (!self.common.is_empty()).then(|| {
            format!(
                "every case: {} (a row names what differs; the full case ids are in the report)",
                self.common.join(", ")
            )
        })
    }
}

/// The engines' cross-check under the terminal table: each Python engine's fp32 reference
/// against candle's twin (`quality.cross_engine`), its largest difference against the fp32
/// bound the tests hold it to (1e-4 x max(1, largest |value|)); empty when no case has one.
pub fn cross_checks(report: &Report, names: &ShortIds) -> String {
    let mut out = String::new();
    for c in sorted(report) {
        let Some(x) = c.quality.as_ref().and_then(|q| q.cross_engine.as_ref()) else {
            continue;
        };
        if out.is_empty() {
            out.push_str(&format!(
                "engines cross-checked (decoded video against {}'s, same settings and inputs):\n",
                x.reference_engine
            ));
        }
        let bound = 1e-4 * x.max_abs_reference.max(1.0);
        let verdict = if x.max_abs_error <= bound {
            "agree"
        } else {
            "DIFFER beyond the fp32 bound"
        };
        out.push_str(&format!(
            "  {} vs {}: max abs {:.2e} (fp32 bound {:.2e}), PSNR {} dB: {verdict}\n",
            crate::util::format::printable(names.name(&c.id)),
            crate::util::format::printable(names.name(&x.reference_id)),
            x.max_abs_error,
            bound,
            crate::util::format::psnr(x.psnr_db, 1, "inf"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_count_as_numbers() {
        assert_eq!(natural("chunk2", "chunk10"), Ordering::Less);
        assert_eq!(natural("tile256o64", "tile64o8"), Ordering::Greater);
        assert_eq!(natural("bf16", "fp32"), Ordering::Less);
        assert_eq!(natural("a", "a"), Ordering::Equal);
    }
}
