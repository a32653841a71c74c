//! The CI dashboard formats: Bencher Metric Format (BMF, `bencher run --adapter json`) and
//! github-action-benchmark's `customSmallerIsBetter`. Both list the `ok` cases that measured
//! something: per pass its median in seconds (BMF: with the fastest and slowest run as
//! lower and upper value; github-action-benchmark: with their half-spread as `range`), and
//! the worker's peak resident memory.
//!
//! Must not: change the report or judge it; every number is the report's own.
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::report::{CaseStatus, Report};

/// BMF measure names (Bencher creates a measure per name), units in the names.
pub const BMF_ENCODE: &str = "encode-median-s";
/// BMF decode measure.
pub const BMF_DECODE: &str = "decode-median-s";
/// BMF peak memory measure.
pub const BMF_PEAK: &str = "peak-rss-bytes";

/// `report` with every case named `ID@HOST` (its own machine's host name, `unknown-host`
/// without one): what `history` and `merge` export, whose cases come from several machines.
/// A series' name then depends on its own machine only, never on which other machines the
/// input holds (a new machine sorting first renamed every other series before).
pub fn with_machine_names(report: &Report) -> Report {
    let mut r = report.clone();
    let own = report.system.hostname.clone();
    for c in &mut r.cases {
        let host = c
            .system
            .as_ref()
            .and_then(|s| s.hostname.clone())
            .or_else(|| own.clone())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown-host".to_string());
        c.id = format!("{}@{host}", c.id);
    }
    r
}

/// `{case id: {measure: {value, lower_value, upper_value}}}`.
pub fn bmf(report: &Report) -> anyhow::Result<String> {
    let mut out = Map::new();
    for case in report.cases.iter().filter(|c| c.outcome.status == CaseStatus::Ok) {
        let mut measures = Map::new();
        for (name, pass) in [(BMF_ENCODE, &case.outcome.encode), (BMF_DECODE, &case.outcome.decode)] {
            if let Some(p) = pass {
                measures.insert(
                    name.into(),
                    json!({"value": p.median_s, "lower_value": p.min_s, "upper_value": p.max_s}),
                );
            }
        }
        if let Some(b) = case.outcome.peak_rss_bytes {
            measures.insert(BMF_PEAK.into(), json!({ "value": b }));
        }
        if !measures.is_empty() {
            out.insert(case.id.clone(), Value::Object(measures));
        }
    }
    Ok(serde_json::to_string_pretty(&Value::Object(out))? + "\n")
}

/// One entry of github-action-benchmark's custom JSON.
#[derive(Debug, Serialize)]
struct GabEntry {
    name: String,
    unit: &'static str,
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<String>,
}

/// `[{name, unit, value, range, extra}]`, smaller is better for every entry.
pub fn gab(report: &Report) -> anyhow::Result<String> {
    let mut out = Vec::new();
    for case in report.cases.iter().filter(|c| c.outcome.status == CaseStatus::Ok) {
        for (pass, stats) in [("encode", &case.outcome.encode), ("decode", &case.outcome.decode)] {
            if let Some(p) = stats {
                out.push(GabEntry {
                    name: format!("{} {pass} median", case.id),
                    unit: "s",
                    value: p.median_s,
                    range: Some(format!("± {:.6}", (p.max_s - p.min_s) / 2.0)),
                    extra: Some(format!(
                        "{} run(s), fastest {:.6} s, slowest {:.6} s",
                        p.samples_s.len(),
                        p.min_s,
                        p.max_s
                    )),
                });
            }
        }
        if let Some(b) = case.outcome.peak_rss_bytes {
            out.push(GabEntry {
                name: format!("{} peak RSS", case.id),
                unit: "MiB",
                value: (b as f64 / (1024.0 * 1024.0) * 10.0).round() / 10.0,
                range: None,
                extra: None,
            });
        }
    }
    Ok(serde_json::to_string_pretty(&out)? + "\n")
}
