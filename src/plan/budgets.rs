//! Budgets: the limits users set themselves ("17 frames at 320x320 must decode in under
//! 10 s"). The `[budgets]` table of a matrix file holds limits for every case, and each
//! `[[budgets.case]]` entry holds limits for the cases its filter matches: any axis of
//! `axes::AXES` (`engine`, `frames`, `size`, `cudnn`, ...), one value or a list, each
//! matched against the value the case recorded (`n/a` included, for knobs that did not
//! act). After the run, [`check`] gives every `ok` case one [`BudgetCheck`] per applicable
//! limit; `run` exits 1 when one is broken.
//!
//! Must not: run anything or render the main table.
use serde::Deserialize;

use crate::plan::axes::{self, Axis, AXES};
use crate::report::settings::CaseSettings;
use crate::report::{BudgetCheck, BudgetVerdict, CaseRecord, CaseStatus};
use crate::util::error::UserError;

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

/// The keys of [`Limits`], in the order messages list them.
const LIMIT_KEYS: [&str; 5] = [
    "encode_median_s",
    "decode_median_s",
    "peak_rss_gb",
    "device_memory_gb",
    "min_psnr_db",
];

/// The `[budgets]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetsSection {
    #[serde(flatten)]
    limits: Limits,
    /// The `[[budgets.case]]` entries: axis filters and limits.
    #[serde(default)]
    case: Vec<toml::Table>,
}

/// Which cases an entry applies to: each axis named must match one of its values; an
/// empty filter matches every case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Axes in [`AXES`] order, each with the values (canonical spelling) a case may record.
    pub axes: Vec<(&'static Axis, Vec<String>)>,
}

impl Filter {
    /// Whether `s` matches.
    pub fn matches(&self, s: &CaseSettings) -> bool {
        self.axes.iter().all(|(axis, values)| values.contains(&(axis.get)(s)))
    }

    /// `frames = 17, size = 320x320`.
    pub fn describe(&self) -> String {
        self.axes
            .iter()
            .map(|(a, v)| format!("{} = {}", a.key, v.join("|")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The text of one TOML value written for an axis (a string, a whole number or a
/// boolean), as the axis parsers read it; the matrix file's lists use it too.
pub fn value_text(what: &str, v: &toml::Value) -> Result<String, UserError> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(UserError::invalid(
            what,
            other.to_string(),
            "a string, a whole number or a boolean",
        )),
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

    /// With a limit on peak resident memory (`peak_rss_gb`) and shared workers: every case in
    /// a process of its own (`isolate` becomes `case`), so that no verdict on memory (nor the
    /// answer's memory filter) depends on the case order; the note that says so.
    pub fn isolate_for_peak_rss(&self, isolate: &mut crate::report::values::Isolate) -> Option<String> {
        let limited = self.global.peak_rss_gb.is_some() || self.cases.iter().any(|(_, l)| l.peak_rss_gb.is_some());
        (limited && *isolate == crate::report::values::Isolate::Worker).then(|| {
            *isolate = crate::report::values::Isolate::Case;
            "note: a peak_rss_gb budget is set, so every case runs in a process of its own (--isolate case): \
             its peak memory then cannot depend on what ran before it"
                .to_string()
        })
    }
}

impl BudgetsSection {
    /// Check the values (limits positive and finite; filters parse as the matrix axes do).
    pub fn into_budgets(self) -> anyhow::Result<Budgets> {
        check_limits("budgets", &self.limits)?;
        let cases = self
            .case
            .into_iter()
            .enumerate()
            .map(|(i, entry)| case_entry(&format!("budgets.case[{i}]"), entry))
            .collect::<anyhow::Result<_>>()?;
        Ok(Budgets {
            global: self.limits,
            cases,
        })
    }
}

/// One `[[budgets.case]]` entry (`what` names it): its axis keys make the filter, the rest
/// must be limits, at least one.
fn case_entry(what: &str, entry: toml::Table) -> anyhow::Result<(Filter, Limits)> {
    let mut filter = Filter::default();
    let mut limits = toml::Table::new();
    for (key, value) in entry {
        let Some(axis) = axes::axis(&key) else {
            if !LIMIT_KEYS.contains(&key.as_str()) {
                return Err(UserError::invalid(
                    format!("{what} key"),
                    key,
                    format!("an axis ({}) or a limit ({})", axes::keys(), LIMIT_KEYS.join(", ")),
                )
                .into());
            }
            limits.insert(key, value);
            continue;
        };
        let key = format!("{what}.{key}");
        let list = match value {
            toml::Value::Array(list) if list.is_empty() => {
                return Err(UserError::Other(format!("{key} is empty: give at least one value")).into())
            }
            toml::Value::Array(list) => list,
            one => vec![one],
        };
        let values = list
            .iter()
            .map(|v| axis.canonical_recorded(&key, &value_text(&key, v)?))
            .collect::<Result<_, _>>()?;
        filter.axes.push((axis, values));
    }
    filter.axes.sort_by_key(|(axis, _)| AXES.iter().position(|a| a == axis));
    let limits: Limits = toml::Value::Table(limits)
        .try_into()
        .map_err(|e| UserError::Other(format!("{what}: {e}")))?;
    check_limits(what, &limits)?;
    if limits == Limits::default() {
        return Err(UserError::Other(format!("{what} sets no limit: give one of {}", LIMIT_KEYS.join(", "))).into());
    }
    Ok((filter, limits))
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
                "  {:<9} {}{}  {} {value} (limit {op} {}, {})\n",
                b.verdict.name(),
                c.id,
                if c.added_as_reference {
                    " (added)"
                } else if c.added_as_control {
                    " (A/A control)"
                } else {
                    ""
                },
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

/// The broken budgets of the user's `ok` cases, one line each (the run's summary and exit
/// code). An added reference's broken budget shows in [`render`] and keeps the answer from
/// naming it, but is not the user's case: it does not fail the run; nor does an A/A control's
/// (its default's own verdict counts).
pub fn broken(cases: &[CaseRecord]) -> Vec<String> {
    cases
        .iter()
        .filter(|c| c.outcome.status == CaseStatus::Ok && !c.added_as_reference && !c.added_as_control)
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

    /// The budgets of a matrix file's text (its `[budgets]` tables only).
    fn parse(toml_text: &str) -> anyhow::Result<Budgets> {
        #[derive(Deserialize)]
        struct File {
            budgets: BudgetsSection,
        }
        let file: File = toml::from_str(toml_text)?;
        file.budgets.into_budgets()
    }

    fn budgets(toml_text: &str) -> Budgets {
        parse(toml_text).unwrap()
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
        let err = |t: &str| format!("{:#}", parse(t).unwrap_err());
        assert!(err("[budgets]\ndecode_median_s = -1").contains("budgets.decode_median_s"));
        assert!(err("[[budgets.case]]\nsize = \"321x320\"\ndecode_median_s = 1").contains("321x320"));
        assert!(err("[[budgets.case]]\nframes = 17").contains("sets no limit"));
        assert!(
            budgets("[[budgets.case]]\nframes = [5, 17]\npasses = \"decode\"\nmin_psnr_db = 30").cases[0]
                .0
                .matches(&record(5, 1.0, 1).settings)
        );
    }

    #[test]
    fn every_axis_filters_on_what_the_case_recorded() {
        use crate::report::values::{Engine, MiopenDb, Switch};
        let candle = record(17, 1.0, 1);
        let mut torch = record(17, 1.0, 1);
        torch.settings.engine = Engine::Torch;
        torch.settings.knobs = crate::report::settings::Knobs {
            cudnn: Switch::Off,
            cudnn_benchmark: Switch::On,
            miopen_db: MiopenDb::Fresh,
            tf32: Switch::Off,
        };
        torch.settings.temporal_tile = Some(crate::model::TemporalTiling::COMFYUI_DEFAULT);
        // (filter, matches torch, matches candle)
        let filters = [
            ("engine = \"torch\"", true, false),
            ("engine = [\"candle\", \"diffusers\"]", false, true),
            ("frames = [5, 17]", true, true),
            ("size = \"320*320\"", true, true),
            ("precision = \"BF16\"", false, false),
            ("tile = \"none\"", true, true),
            ("temporal_tile = \"64:8\"", true, false),
            ("chunk = 2", false, false),
            ("env = \"baseline\"", true, true),
            ("passes = \"decode\"", true, true),
            ("passes = \"both\"", false, false),
            ("cudnn = \"off\"", true, false),
            ("cudnn = \"n/a\"", false, true),
            ("cudnn_benchmark = true", true, false),
            ("miopen_db = \"fresh\"", true, false),
            ("miopen_db = [\"user\", \"n/a\"]", false, true),
            ("tf32 = \"off\"", true, false),
            ("tf32 = [\"on\", \"n/a\"]", false, true),
            ("layout = \"ncdhw\"", true, true),
            ("layout = \"channels_last_3d\"", false, false),
            ("conv3d = \"native\"", true, true),
            ("conv3d = [\"split\"]", false, false),
        ];
        let mut named = std::collections::BTreeSet::new();
        for (filter, on_torch, on_candle) in filters {
            let b = budgets(&format!("[[budgets.case]]\n{filter}\ndecode_median_s = 10"));
            let f = &b.cases[0].0;
            named.insert(f.axes[0].0.key);
            assert_eq!(
                (f.matches(&torch.settings), f.matches(&candle.settings)),
                (on_torch, on_candle),
                "{filter}"
            );
            assert_eq!(check(&b, &torch).len(), usize::from(on_torch), "{filter}");
        }
        assert_eq!(named.len(), AXES.len(), "a filter on every axis");
        let b = budgets("[[budgets.case]]\nmiopen_db = \"fresh\"\nengine = \"torch\"\nmin_psnr_db = 1");
        assert_eq!(b.cases[0].0.describe(), "engine = torch, miopen_db = fresh");
    }

    #[test]
    fn bad_filters_name_the_key_and_what_is_valid() {
        let err = |t: &str| {
            format!(
                "{:#}",
                parse(&format!("[[budgets.case]]\n{t}\ndecode_median_s = 1")).unwrap_err()
            )
        };
        let e = err("cudnn = \"maybe\"");
        assert!(e.contains("budgets.case[0].cudnn") && e.contains("on or off"), "{e}");
        let e = err("enginez = \"torch\"");
        assert!(
            e.contains("enginez") && e.contains("engine, frames") && e.contains("min_psnr_db"),
            "{e}"
        );
        assert!(err("frames = []").contains("budgets.case[0].frames is empty"));
        assert!(err("passes = \"n/a\"").contains("encode, decode or both"));
        assert!(err("peak_rss_gb = -1").contains("budgets.case[0].peak_rss_gb"));
    }
}
