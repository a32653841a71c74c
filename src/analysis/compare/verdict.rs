//! The comparison itself: per-case status, timing and quality verdicts, as serde records
//! (the `--json` output; every field is documented here).
//!
//! Timing rule, per pass (encode, decode), with `ratio = current median / baseline median`.
//! The threshold is a fraction of the baseline time, the same both ways: a pass is beyond
//! it when `ratio > 1 + threshold` (slower) or `ratio < 1 - threshold` (faster), so a 10%
//! slow-down and a 10% speed-up get the same verdict.
//! - both sides have ≥ 2 samples: Welch's t-test on the samples, each side's outliers
//!   (hyperfine's ten-MAD rule, the ones `run` counts and warns of) set aside first. A
//!   scheduling hiccup in each report would otherwise dominate both variances and hide a
//!   consistent slow-down: 3 runs a side, every run but the hiccup 1.25x slower, gave
//!   p = 0.38 on the raw samples (issue 49). The rule is extreme on purpose (at 3 samples,
//!   a sample 14.8 times further from the median than the nearest other one), so what is
//!   set aside is not the run's spread but a sample from another distribution; at least
//!   half of each side is always kept. `slower` (a regression) when beyond the threshold,
//!   p < alpha and the current mean is the larger; `faster` when beyond it, p < alpha and
//!   the current mean is the smaller; otherwise `no-change` (the text then says a change
//!   beyond the threshold is "not significant", never that there is none).
//! - either side has < 2 samples (`test: insufficient-samples`): `slower` only when every
//!   current sample exceeds every baseline sample by more than the threshold
//!   (`min(current) > max(baseline) · (1 + threshold)`), `faster` only when every current
//!   sample is below every baseline sample by more than the threshold
//!   (`max(current) < min(baseline) · (1 - threshold)`).
//!
//! Quality rule: PSNR values are clamped to `psnr_ceiling_db` (identical = +inf, so
//! clamped too) and a drop of more than `psnr_drop_db` is a regression.
//!
//! Must not: print or format text (that is [`super::render`]).
use std::collections::BTreeMap;

use serde::Serialize;

use super::welch::welch_t_test;
use crate::report::{CaseRecord, CaseStatus, ErrorStats, PassStats, Report};

/// Knobs of the comparison.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rules {
    /// Relative change a pass must exceed to be slower/faster, as a fraction (0.05 = 5%).
    pub threshold: f64,
    /// Significance level of Welch's t-test.
    pub alpha: f64,
    /// PSNR drop (dB) beyond which quality counts as a regression.
    pub psnr_drop_db: f64,
    /// PSNR (dB) above which differences are numerical noise; values are clamped to it.
    pub psnr_ceiling_db: f64,
}

/// The whole comparison (the `--json` document).
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Path of the baseline report.
    pub baseline: String,
    /// Path of the current report.
    pub current: String,
    /// The rules applied.
    pub rules: Rules,
    /// True when any case regressed (exit code 1).
    pub regression: bool,
    /// Number of cases with at least one regression.
    pub regressed_cases: usize,
    /// One record per case id present in both reports, in the current report's order.
    pub cases: Vec<CaseComparison>,
    /// Case ids only the baseline has.
    pub only_in_baseline: Vec<String>,
    /// Case ids only the current report has.
    pub only_in_current: Vec<String>,
    /// Incompatibilities overridden with `--force`, and other warnings.
    pub warnings: Vec<String>,
    /// Per case and pass profiled (`run --profile`) in both reports, the 5 layers whose time
    /// changed most (largest change first within each case and pass; the time outside any
    /// layer is a row too, and a row may show no change when few layers changed): pointers
    /// from one profiled pass each, never part of a verdict. Empty when no case was
    /// profiled in both.
    pub layer_changes: Vec<super::layers::LayerChange>,
}

/// One case present in both reports.
#[derive(Debug, Clone, Serialize)]
pub struct CaseComparison {
    /// Case id.
    pub id: String,
    /// Status in the baseline.
    pub baseline_status: CaseStatus,
    /// Status in the current report.
    pub current_status: CaseStatus,
    /// True when the case was `ok` in the baseline and is not in the current report.
    pub status_regression: bool,
    /// Timing comparison of each pass both sides measured.
    pub passes: Vec<PassComparison>,
    /// Quality comparison of each output both sides measured.
    pub quality: Vec<QualityComparison>,
    /// True when the status, a pass or a quality value regressed.
    pub regression: bool,
    /// Human-readable notes: why it regressed, passes or quality measured on one side only.
    pub notes: Vec<String>,
}

/// Verdict of one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Significantly slower beyond the threshold: a regression.
    Slower,
    /// Significantly faster beyond the threshold.
    Faster,
    /// Within the threshold, or not significant.
    NoChange,
}

/// How significance was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// Welch's t-test on the samples.
    Welch,
    /// Fewer than two samples on a side: decided by the no-overlap rule.
    InsufficientSamples,
}

/// Timing comparison of one pass.
#[derive(Debug, Clone, Serialize)]
pub struct PassComparison {
    /// `encode` or `decode`.
    pub pass: String,
    /// Baseline median, seconds.
    pub baseline_median_s: f64,
    /// Current median, seconds.
    pub current_median_s: f64,
    /// `current_median_s / baseline_median_s` (> 1 is slower).
    pub ratio: f64,
    /// The ratio in words: `1.23x slower`, `1.10x faster`, `same`.
    pub change: String,
    /// Baseline sample count.
    pub baseline_samples: usize,
    /// Current sample count.
    pub current_samples: usize,
    /// How significance was decided.
    pub test: Test,
    /// Baseline samples set aside as outliers before the test (hyperfine's rule).
    pub baseline_outliers: usize,
    /// Current samples set aside as outliers before the test.
    pub current_outliers: usize,
    /// Two-sided Welch p-value, on the samples less their outliers (null for
    /// `insufficient-samples`).
    pub p_value: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// A `slower` pass put down to the machine's load: its case ran busy and its reference
    /// in the same run slowed as much ([`super::load`]); not a regression.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explained_by_load: bool,
}

/// Quality comparison of one output.
#[derive(Debug, Clone, Serialize)]
pub struct QualityComparison {
    /// `latent`, `decoded` or `roundtrip`.
    pub output: String,
    /// Baseline PSNR, dB (null: identical to the reference, +inf).
    pub baseline_psnr_db: Option<f64>,
    /// Current PSNR, dB (null: identical to the reference, +inf).
    pub current_psnr_db: Option<f64>,
    /// Drop after clamping both to the ceiling, dB (positive = worse).
    pub drop_db: f64,
    /// True when `drop_db > psnr_drop_db`.
    pub regression: bool,
}

/// Compare two loaded reports.
pub fn compare(baseline: &Report, current: &Report, rules: Rules) -> Comparison {
    let base: BTreeMap<&str, &CaseRecord> = baseline.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let cur_ids: std::collections::BTreeSet<&str> = current.cases.iter().map(|c| c.id.as_str()).collect();
    let cases: Vec<CaseComparison> = current
        .cases
        .iter()
        .filter_map(|c| base.get(c.id.as_str()).map(|b| compare_case(b, c, &rules)))
        .collect();
    let only_in_baseline = baseline
        .cases
        .iter()
        .filter(|c| !cur_ids.contains(c.id.as_str()))
        .map(|c| c.id.clone())
        .collect();
    let only_in_current = current
        .cases
        .iter()
        .filter(|c| !base.contains_key(c.id.as_str()))
        .map(|c| c.id.clone())
        .collect();
    let regressed_cases = cases.iter().filter(|c| c.regression).count();
    // A gate fails closed: a baseline case the current report lacks (an interrupted or
    // smaller run) is a regression, and so is an interrupted current report.
    let mut warnings = Vec::new();
    let missing: Vec<&String> = only_in_baseline_ids(baseline, &cur_ids);
    if !missing.is_empty() {
        warnings.push(format!(
            "regression: {} baseline case(s) missing from the current report: {}",
            missing.len(),
            missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(why) = &current.run.interrupted {
        warnings.push(format!(
            "regression: the current report is of an interrupted run ({why})"
        ));
    }
    Comparison {
        baseline: String::new(),
        current: String::new(),
        rules,
        regression: regressed_cases > 0 || !warnings.is_empty(),
        regressed_cases,
        cases,
        only_in_baseline,
        only_in_current,
        warnings,
        layer_changes: super::layers::changes(baseline, current),
    }
}

/// The ids of `baseline`'s cases that are not in `current_ids`.
fn only_in_baseline_ids<'a>(baseline: &'a Report, current_ids: &std::collections::BTreeSet<&str>) -> Vec<&'a String> {
    baseline
        .cases
        .iter()
        .filter(|c| !current_ids.contains(c.id.as_str()))
        .map(|c| &c.id)
        .collect()
}

fn compare_case(b: &CaseRecord, c: &CaseRecord, rules: &Rules) -> CaseComparison {
    let mut notes = Vec::new();
    let status_regression = b.outcome.status == CaseStatus::Ok && c.outcome.status != CaseStatus::Ok;
    if status_regression {
        let why = c.outcome.error_line().unwrap_or("no error message");
        notes.push(format!("status ok -> {}: {why}", c.outcome.status.name()));
    } else if b.outcome.status != CaseStatus::Ok && c.outcome.status == CaseStatus::Ok {
        notes.push(format!("fixed: was {} in the baseline", b.outcome.status.name()));
    } else if b.outcome.status != CaseStatus::Ok {
        notes.push(format!(
            "not ok in either report ({} -> {})",
            b.outcome.status.name(),
            c.outcome.status.name()
        ));
    }
    let mut passes = Vec::new();
    for (name, bp, cp) in [
        ("encode", &b.outcome.encode, &c.outcome.encode),
        ("decode", &b.outcome.decode, &c.outcome.decode),
    ] {
        match (bp, cp) {
            (Some(bp), Some(cp)) => passes.push(compare_pass(name, bp, cp, rules)),
            (Some(_), None) if !status_regression => notes.push(format!("{name}: measured in the baseline only")),
            (None, Some(_)) => notes.push(format!("{name}: measured in the current report only")),
            _ => {}
        }
    }
    let quality = compare_quality(b, c, rules);
    let slow: Vec<&str> = passes
        .iter()
        .filter(|p| p.verdict == Verdict::Slower)
        .map(|p| p.pass.as_str())
        .collect();
    if !slow.is_empty() {
        notes.push(format!("slower: {}", slow.join(", ")));
    }
    for q in quality.iter().filter(|q| q.regression) {
        notes.push(format!("{} PSNR dropped by {:.2} dB", q.output, q.drop_db));
    }
    let regression = status_regression || !slow.is_empty() || quality.iter().any(|q| q.regression);
    CaseComparison {
        id: c.id.clone(),
        baseline_status: b.outcome.status,
        current_status: c.outcome.status,
        status_regression,
        passes,
        quality,
        regression,
        notes,
    }
}

/// Timing samples of a pass; the median alone when no samples were recorded.
fn samples(p: &PassStats) -> Vec<f64> {
    if p.samples_s.is_empty() {
        vec![p.median_s]
    } else {
        p.samples_s.clone()
    }
}

/// Apply the timing rule (module docs) to one pass.
pub fn compare_pass(name: &str, b: &PassStats, c: &PassStats, rules: &Rules) -> PassComparison {
    let (bs, cs) = (samples(b), samples(c));
    let (bk, ck) = (
        crate::util::stats::without_outliers(&bs),
        crate::util::stats::without_outliers(&cs),
    );
    let (test, p_value, verdict) =
        timing_rule(&bs, &bk, b.median_s, &cs, &ck, c.median_s, rules.threshold, rules.alpha);
    let ratio = c.median_s / b.median_s;
    PassComparison {
        pass: name.to_string(),
        baseline_median_s: b.median_s,
        current_median_s: c.median_s,
        ratio,
        change: change_words(ratio),
        baseline_samples: bs.len(),
        current_samples: cs.len(),
        baseline_outliers: bs.len() - bk.len(),
        current_outliers: cs.len() - ck.len(),
        test,
        p_value,
        verdict,
        explained_by_load: false,
    }
}

/// The timing rule (module docs) on a baseline's samples (`bs`, and `bk` less their
/// outliers) and median against a current one's: how it was decided, Welch's p and the
/// verdict. `compare` applies it to each pass of two reports; `history` to a short series'
/// segments and to its two newest runs, so that it never says less than `compare` would.
#[allow(clippy::too_many_arguments)]
pub fn timing_rule(
    bs: &[f64],
    bk: &[f64],
    b_median: f64,
    cs: &[f64],
    ck: &[f64],
    c_median: f64,
    threshold: f64,
    alpha: f64,
) -> (Test, Option<f64>, Verdict) {
    let ratio = c_median / b_median;
    let (upper, lower) = (1.0 + threshold, 1.0 - threshold);
    let slower_beyond = ratio > upper;
    let faster_beyond = ratio < lower;
    match welch_t_test(ck, bk) {
        Some(w) => {
            // A p that is not a number (the variance overflowed) cannot clear a case: fail closed.
            let significant = w.p_value < alpha || w.p_value.is_nan();
            let verdict = if slower_beyond && significant && w.t > 0.0 {
                Verdict::Slower
            } else if faster_beyond && significant && w.t < 0.0 {
                Verdict::Faster
            } else {
                Verdict::NoChange
            };
            (Test::Welch, Some(w.p_value), verdict)
        }
        None => {
            let (bmin, bmax) = min_max(bs);
            let (cmin, cmax) = min_max(cs);
            let verdict = if slower_beyond && cmin > bmax * upper {
                Verdict::Slower
            } else if faster_beyond && cmax < bmin * lower {
                Verdict::Faster
            } else {
                Verdict::NoChange
            };
            (Test::InsufficientSamples, None, verdict)
        }
    }
}

fn min_max(x: &[f64]) -> (f64, f64) {
    x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
        (lo.min(v), hi.max(v))
    })
}

/// `1.23x slower`, `1.10x faster`, or `same` when both round to 1.00.
pub fn change_words(ratio: f64) -> String {
    if !ratio.is_finite() || ratio <= 0.0 {
        return "n/a".to_string();
    }
    if ratio >= 1.0 {
        let s = format!("{ratio:.2}");
        if s == "1.00" {
            "same".into()
        } else {
            format!("{s}x slower")
        }
    } else {
        let s = format!("{:.2}", 1.0 / ratio);
        if s == "1.00" {
            "same".into()
        } else {
            format!("{s}x faster")
        }
    }
}

fn compare_quality(b: &CaseRecord, c: &CaseRecord, rules: &Rules) -> Vec<QualityComparison> {
    let (Some(bq), Some(cq)) = (&b.quality, &c.quality) else {
        return Vec::new();
    };
    let psnr = |e: &Option<ErrorStats>| e.as_ref().map(|e| e.psnr_db);
    let pairs = [
        ("latent", psnr(&bq.latent), psnr(&cq.latent)),
        ("decoded", psnr(&bq.decoded), psnr(&cq.decoded)),
        (
            "roundtrip",
            bq.roundtrip_psnr_db.map(Some),
            cq.roundtrip_psnr_db.map(Some),
        ),
    ];
    pairs
        .into_iter()
        .filter_map(|(output, bv, cv)| {
            let (bv, cv) = (bv?, cv?);
            let clamp = |v: Option<f64>| v.unwrap_or(f64::INFINITY).min(rules.psnr_ceiling_db);
            let drop_db = clamp(bv) - clamp(cv);
            Some(QualityComparison {
                output: output.to_string(),
                baseline_psnr_db: bv,
                current_psnr_db: cv,
                drop_db,
                regression: drop_db > rules.psnr_drop_db,
            })
        })
        .collect()
}
