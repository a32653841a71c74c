//! Budgets: the limits users set themselves ("17 frames at 320x320 must decode in under
//! 10 s"). The `[budgets]` table of a matrix file holds limits for every case, and each
//! `[[budgets.case]]` entry holds limits for the cases its filter matches (any axis:
//! `frames`, `size`, `precision`, `tile`, `temporal_tile`, `chunk`, `env`, `passes`; one
//! value or a list). After the run, [`check`] gives every `ok` case one
//! [`BudgetCheck`] per applicable limit; `run` exits 1 when one is broken.
//!
//! Must not: run anything or render the main table.
use serde::Deserialize;

use super::options;
use crate::error::UserError;
use crate::report::{BudgetCheck, BudgetVerdict, CaseRecord, CaseStatus};
use crate::settings::CaseSettings;

/// The limits one table or entry sets (each optional).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Median encode time, seconds (at most).
    pub encode_median_s: Option<f64>,
    /// Median decode time, seconds (at most).
    pub decode_median_s: Option<f64>,
    /// Peak resident memory of the worker, GB = 1e9 bytes (at most).
    pub peak_rss_gb: Option<f64>,
    /// Device memory in use at the end of the case, GB = 1e9 bytes (at most).
    pub device_memory_gb: Option<f64>,
    /// PSNR of the decoded video against the case's reference case, dB (at least).
    pub min_psnr_db: Option<f64>,
}

/// One value or a list (a filter key).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v],
            OneOrMany::Many(v) => v,
        }
    }
}

/// A `[[budgets.case]]` entry as written: filter keys and limits.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseEntry {
    frames: Option<OneOrMany<usize>>,
    size: Option<OneOrMany<String>>,
    precision: Option<OneOrMany<String>>,
    tile: Option<OneOrMany<String>>,
    temporal_tile: Option<OneOrMany<String>>,
    chunk: Option<OneOrMany<usize>>,
    env: Option<OneOrMany<String>>,
    passes: Option<OneOrMany<String>>,
    #[serde(flatten)]
    limits: Limits,
}

/// The `[budgets]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetsSection {
    #[serde(flatten)]
    limits: Limits,
    #[serde(default)]
    case: Vec<CaseEntry>,
}

/// Which cases an entry applies to: each given axis must match one of its values (the
/// canonical spellings of [`options`]); an empty filter matches every case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// `axis = value` pairs, canonical spelling; a case matches when, for every axis named,
    /// its value is one of those listed.
    pub axes: Vec<(String, Vec<String>)>,
}

impl Filter {
    /// Whether `s` matches.
    pub fn matches(&self, s: &CaseSettings) -> bool {
        self.axes.iter().all(|(axis, values)| {
            let v = axis_value(axis, s);
            values.contains(&v)
        })
    }

    /// `frames = 17, size = 320x320`.
    pub fn describe(&self) -> String {
        self.axes
            .iter()
            .map(|(a, v)| format!("{a} = {}", v.join("|")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The canonical spelling of a case's value on `axis`.
fn axis_value(axis: &str, s: &CaseSettings) -> String {
    match axis {
        "frames" => s.frames.to_string(),
        "size" => format!("{}x{}", s.width, s.height),
        "precision" => s.precision.name().to_string(),
        "tile" => options::tile_name(s.tiling),
        "temporal_tile" => options::temporal_tile_name(s.temporal_tile),
        "chunk" => s.chunk.to_string(),
        "env" => s.env_variant.clone(),
        "passes" => s.passes.name().to_string(),
        _ => String::new(),
    }
}

/// The budgets of a run: limits for every case, and limits for matching cases.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    /// Limits of the `[budgets]` table itself (every case).
    pub global: Limits,
    /// `[[budgets.case]]` entries in file order.
    pub cases: Vec<(Filter, Limits)>,
}

impl Budgets {
    /// Whether any limit is set.
    pub fn is_empty(&self) -> bool {
        self.global == Limits::default() && self.cases.is_empty()
    }
}

impl BudgetsSection {
    /// Check the values (positive, finite; filters parse as the matrix axes do).
    pub fn into_budgets(self) -> anyhow::Result<Budgets> {
        check_limits("budgets", &self.limits)?;
        let mut cases = Vec::new();
        for (i, e) in self.case.into_iter().enumerate() {
            let what = format!("budgets.case[{i}]");
            check_limits(&what, &e.limits)?;
            if e.limits == Limits::default() {
                return Err(UserError::Other(format!(
                    "{what} sets no limit: give encode_median_s, decode_median_s, peak_rss_gb, \
                     device_memory_gb or min_psnr_db"
                ))
                .into());
            }
            let mut axes = Vec::new();
            let key = |a: &str| format!("{what}.{a}");
            if let Some(v) = e.frames {
                axes.push(("frames".into(), v.into_vec().iter().map(|f| f.to_string()).collect()));
            }
            let mut strings =
                |axis: &str, v: Option<OneOrMany<String>>, canon: &dyn Fn(&str) -> anyhow::Result<String>| {
                    if let Some(v) = v {
                        let vals = v
                            .into_vec()
                            .iter()
                            .map(|x| canon(x))
                            .collect::<anyhow::Result<Vec<_>>>()?;
                        axes.push((axis.to_string(), vals));
                    }
                    anyhow::Ok(())
                };
            strings("size", e.size, &|x| {
                let (w, h) = options::parse_size(&key("size"), x)?;
                Ok(format!("{w}x{h}"))
            })?;
            strings("precision", e.precision, &|x| {
                Ok(options::parse_precision(&key("precision"), x)?.name().to_string())
            })?;
            strings("tile", e.tile, &|x| {
                Ok(options::tile_name(options::parse_tile(&key("tile"), x)?))
            })?;
            strings("temporal_tile", e.temporal_tile, &|x| {
                Ok(options::temporal_tile_name(options::parse_temporal_tile(
                    &key("temporal_tile"),
                    x,
                )?))
            })?;
            strings("env", e.env, &|x| Ok(x.to_string()))?;
            strings("passes", e.passes, &|x| {
                Ok(options::parse_passes(&key("passes"), x)?.name().to_string())
            })?;
            if let Some(v) = e.chunk {
                axes.push(("chunk".into(), v.into_vec().iter().map(|c| c.to_string()).collect()));
            }
            cases.push((Filter { axes }, e.limits));
        }
        Ok(Budgets {
            global: self.limits,
            cases,
        })
    }
}

fn check_limits(what: &str, l: &Limits) -> anyhow::Result<()> {
    for (name, v) in [
        ("encode_median_s", l.encode_median_s),
        ("decode_median_s", l.decode_median_s),
        ("peak_rss_gb", l.peak_rss_gb),
        ("device_memory_gb", l.device_memory_gb),
    ] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(UserError::invalid(format!("{what}.{name}"), v.to_string(), "a positive number").into());
        }
    }
    if let Some(v) = l.min_psnr_db.filter(|v| !v.is_finite()) {
        return Err(UserError::invalid(format!("{what}.min_psnr_db"), v.to_string(), "a number of dB").into());
    }
    Ok(())
}

/// Every limit that applies to `rec` (global first, then matching entries in file order),
/// checked against what the case measured; empty for cases that are not `ok`.
pub fn check(budgets: &Budgets, rec: &CaseRecord) -> Vec<BudgetCheck> {
    if rec.outcome.status != CaseStatus::Ok {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut add = |l: &Limits, scope: &str| {
        let gb = |b: Option<u64>| b.map(|b| b as f64 / 1e9);
        let at_most = [
            (
                "encode_median_s",
                l.encode_median_s,
                rec.outcome.encode.as_ref().map(|p| p.median_s),
            ),
            (
                "decode_median_s",
                l.decode_median_s,
                rec.outcome.decode.as_ref().map(|p| p.median_s),
            ),
            ("peak_rss_gb", l.peak_rss_gb, gb(rec.outcome.peak_rss_bytes)),
            (
                "device_memory_gb",
                l.device_memory_gb,
                gb(rec.outcome.device_memory_bytes),
            ),
        ];
        for (name, limit, value) in at_most {
            let Some(limit) = limit else { continue };
            let verdict = match value {
                None => BudgetVerdict::Unmeasured,
                Some(v) if v <= limit => BudgetVerdict::Ok,
                Some(_) => BudgetVerdict::Broken,
            };
            out.push(BudgetCheck {
                budget: name.to_string(),
                scope: scope.to_string(),
                limit,
                value,
                verdict,
            });
        }
        if let Some(limit) = l.min_psnr_db {
            // A case compared with its reference has `quality.decoded`; a null PSNR there
            // means identical outputs (infinite PSNR). The reference itself is unmeasured.
            let decoded = rec
                .quality
                .as_ref()
                .filter(|q| q.reference_id != rec.id)
                .and_then(|q| q.decoded.as_ref());
            let (value, verdict) = match decoded {
                None => (None, BudgetVerdict::Unmeasured),
                Some(e) => match e.psnr_db {
                    None => (None, BudgetVerdict::Ok),
                    Some(p) if p >= limit => (Some(p), BudgetVerdict::Ok),
                    Some(p) => (Some(p), BudgetVerdict::Broken),
                },
            };
            out.push(BudgetCheck {
                budget: "min_psnr_db".to_string(),
                scope: scope.to_string(),
                limit,
                value,
                verdict,
            });
        }
    };
    add(&budgets.global, "all cases");
    for (filter, limits) in &budgets.cases {
        if filter.matches(&rec.settings) {
            add(limits, &filter.describe());
        }
    }
    out
}

/// One line per check of every case that has any: `id  budget value vs limit  verdict`.
pub fn render(cases: &[CaseRecord]) -> String {
    let mut s = String::new();
    for c in cases.iter().filter(|c| !c.budgets.is_empty()) {
        for b in &c.budgets {
            let value = match (b.value, b.budget.as_str(), b.verdict) {
                (Some(v), _, _) => format!("{v:.3}"),
                // A null PSNR that passed means identical outputs.
                (None, "min_psnr_db", BudgetVerdict::Ok) => "inf".into(),
                (None, _, _) => "-".into(),
            };
            let op = if b.budget == "min_psnr_db" { ">=" } else { "<=" };
            s.push_str(&format!(
                "  {:<9} {}  {} {value} (limit {op} {}, {})\n",
                b.verdict.name(),
                c.id,
                b.budget,
                b.limit,
                b.scope
            ));
        }
    }
    if s.is_empty() {
        s
    } else {
        format!("budgets:\n{s}")
    }
}

/// The broken budgets of `ok` cases, one line each (the run's summary).
pub fn broken(cases: &[CaseRecord]) -> Vec<String> {
    cases
        .iter()
        .filter(|c| c.outcome.status == CaseStatus::Ok)
        .flat_map(|c| {
            c.budgets
                .iter()
                .filter(|b| b.verdict == BudgetVerdict::Broken)
                .map(move |b| {
                    let v = b.value.map(|v| format!("{v:.3}")).unwrap_or_default();
                    let op = if b.budget == "min_psnr_db" { "<" } else { ">" };
                    format!("{}: {} {v} {op} {} ({})", c.id, b.budget, b.limit, b.scope)
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budgets(toml_text: &str) -> Budgets {
        crate::bench::config::parse(toml_text).unwrap().budgets
    }

    fn record(frames: usize, decode_s: f64, rss: u64) -> CaseRecord {
        let mut r: CaseRecord = serde_json::from_value(serde_json::json!({
            "id": format!("fp32-chunk1-untiled-{frames}x320x320-baseline-decode"), "precision": "fp32",
            "compute_dtype": "f32", "chunk": 1, "tile_px": null, "overlap_px": null, "frames": frames,
            "width": 320, "height": 320, "env_variant": "baseline", "passes": "decode", "env": {},
            "status": "ok", "error": null, "encode": null, "decode": null, "load_s": 1.0,
            "peak_rss_bytes": rss, "device_memory_bytes": null, "quality": null
        }))
        .unwrap();
        r.outcome.decode = Some(crate::report::PassStats::from_samples(
            vec![decode_s],
            vec![],
            frames,
            1.0,
        ));
        r
    }

    #[test]
    fn filters_pick_cases_and_verdicts_follow_values() {
        let b = budgets(
            "[budgets]\npeak_rss_gb = 50\n[[budgets.case]]\nframes = 17\nsize = \"320x320\"\ndecode_median_s = 10",
        );
        let fast = check(&b, &record(17, 4.0, 2_000_000_000));
        assert_eq!(fast.len(), 2);
        assert!(fast.iter().all(|c| c.verdict == BudgetVerdict::Ok), "{fast:?}");
        assert_eq!(fast[1].scope, "frames = 17, size = 320x320");
        let slow = check(&b, &record(17, 12.5, 60_000_000_000));
        assert!(slow.iter().all(|c| c.verdict == BudgetVerdict::Broken), "{slow:?}");
        let mut rec = record(17, 12.5, 1);
        rec.budgets = slow;
        let lines = broken(&[rec]);
        assert_eq!(lines.len(), 2);
        assert!(lines[1].contains("decode_median_s 12.500 > 10"), "{lines:?}");
        // Another frame count: only the global limit applies.
        assert_eq!(check(&b, &record(5, 99.0, 1)).len(), 1);
        // No encode measured: that budget is unmeasured, never broken.
        let e = check(&budgets("[budgets]\nencode_median_s = 1"), &record(5, 1.0, 1));
        assert_eq!(e[0].verdict, BudgetVerdict::Unmeasured);
    }

    #[test]
    fn bad_budgets_name_the_key() {
        let err = |t: &str| format!("{:#}", crate::bench::config::parse(t).unwrap_err());
        assert!(err("[budgets]\ndecode_median_s = -1").contains("budgets.decode_median_s"));
        assert!(err("[[budgets.case]]\nsize = \"321x320\"\ndecode_median_s = 1").contains("321x320"));
        assert!(err("[[budgets.case]]\nframes = 17").contains("sets no limit"));
        assert!(
            budgets("[[budgets.case]]\nframes = [5, 17]\npasses = \"decode\"\nmin_psnr_db = 30").cases[0]
                .0
                .matches(&record(5, 1.0, 1).settings)
        );
    }
}
