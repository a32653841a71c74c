//! Two reports compared (the `compare` command's logic): per-case timing ratios, Welch's
//! t-test, quality drops, what differs between the machines.
//!
//! The command (`crate::cli::compare`) exits 0: no regression; 1: a regression (slower pass, PSNR drop, or a case no longer ok);
//! 2: unusable input (unreadable or invalid report, incompatible reports without `--force`,
//! no case in common, a duplicate case id, a negative or non-finite timing, different
//! machines under `--strict-system`; without it those are a warning).
//! The decision rules are documented in [`verdict`]; what a busy run changes, in [`load`].
//!
//! Must not: change the reports it reads; rendering is [`render`]'s, deciding [`verdict`]'s.
pub mod compat;
pub mod layers;
pub mod load;
pub mod render;
pub mod verdict;
pub mod welch;

use crate::report::Report;

/// Parse `5`, `5%` or `2.5 %` (a percentage) as a fraction (0.05, 0.025). A bare number
/// between 0 and 1 is refused: `0.05` reads as 0.05% here, but as a fraction it would be 5%,
/// and a gate set 100 times too tight fails on noise; `0.5%`, with its sign, is taken.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let signed = t.ends_with('%');
    let v: f64 = t
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|e| format!("expected a percentage such as 5 or 5%: {e}"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err("the threshold must be a non-negative percentage".into());
    }
    if !signed && v > 0.0 && v < 1.0 {
        return Err(format!(
            "{t} is ambiguous: as a percentage it is {v}%, as a fraction {}%; the threshold is a percentage: \
             give {} for {}%, or {t}% for {v}%",
            v * 100.0,
            v * 100.0,
            v * 100.0
        ));
    }
    Ok(v / 100.0)
}

/// How the machines of the compared pairs differ: the reports' own, and each pair's where a
/// merged report keeps a case's machine (`cases[].system`, parts run on several runners),
/// each difference once with how many pairs it concerns.
pub fn machine_differences<'a>(baseline: &'a Report, current: &'a Report) -> Vec<String> {
    let mut found: Vec<(String, Vec<&'a str>)> = Vec::new();
    let mut add = |m: String, id: Option<&'a str>| match found.iter_mut().find(|(x, _)| *x == m) {
        Some((_, ids)) => ids.extend(id),
        None => found.push((m, id.into_iter().collect())),
    };
    for m in compat::system_differences(&baseline.system, &current.system) {
        add(m, None);
    }
    let current_of: std::collections::HashMap<&str, &crate::report::CaseRecord> =
        current.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    for b in &baseline.cases {
        let Some(c) = current_of.get(b.id.as_str()) else {
            continue;
        };
        if b.system.is_none() && c.system.is_none() {
            continue; // the reports' own machines, compared above
        }
        let (x, y) = (
            b.system.as_ref().unwrap_or(&baseline.system),
            c.system.as_ref().unwrap_or(&current.system),
        );
        for m in compat::system_differences(x, y) {
            add(m, Some(b.id.as_str()));
        }
    }
    found
        .into_iter()
        .map(|(m, ids)| match ids.first() {
            None => m,
            Some(first) => format!("{m} ({} compared pair(s) of a merged report, e.g. {first})", ids.len()),
        })
        .collect()
}
