//! The answer of a run (issue "what to set"): from a finished [`Report`], per workload
//! (model, frames, size, passes) and engine, the default (what changing nothing gives),
//! the fastest case that stays right (`ok`, PSNR against its fp32 untiled reference at
//! least `--min-psnr`, no memory or PSNR budget broken), how much faster with a bootstrap
//! interval ([`bootstrap`]), a plain sentence, and how to apply it ([`apply`]). The result
//! is the report's `summary` ([`crate::report::Summary`]); the exporters print it.
//! Method and default floor: `docs/answer.md`.
//!
//! Nothing is recommended that the run did not measure: every case named is a record of
//! the report.
//!
//! Must not: run or measure anything, or render tables (`export` does).
use std::collections::BTreeMap;
use std::path::Path;

use crate::report::{Answer, AnswerCase, BudgetVerdict, CaseRecord, CaseStatus, Report, Summary, Verdict};

pub mod apply;
pub mod bootstrap;
pub mod levers;
pub mod trust;

/// Default quality floor, dB of PSNR over the [-1, 1] range: an RMS error of 1% of the
/// range (2.6 steps of 8-bit video), the usual "visually lossless" mark; bf16 decodes of
/// the real Wan 2.1 VAE score 47 to 53 dB (`docs/answer.md`).
pub const DEFAULT_MIN_PSNR_DB: f64 = 40.0;

/// The line `run` prints when its weights are synthetic (kept with the synthetic weights).
pub use crate::weights::synthetic::SYNTHETIC_NOTE;

/// Whether `report`'s quality numbers rest on synthetic weights (random values).
pub fn on_synthetic_weights(report: &Report) -> bool {
    report.model.is_synthetic()
}

/// Whether `c`'s quality is one that synthetic weights cannot tell: on them (`synthetic`), it
/// differs from its reference in spatial or temporal tiling or in chunk (seams, which random
/// weights make far larger), not in precision alone (judged as usual: `docs/answer.md`).
pub fn seams_unknown(synthetic: bool, c: &CaseRecord) -> bool {
    let (s, r) = (&c.settings, c.settings.reference());
    synthetic && (s.tiling != r.tiling || s.temporal_tile != r.temporal_tile || s.chunk != r.chunk)
}

/// The budgets whose breach disqualifies a case: memory, and the user's own PSNR floor.
const DISQUALIFYING_BUDGETS: [&str; 3] = ["peak_rss_gb", "device_memory_gb", "min_psnr_db"];

/// `--min-psnr DB` (clap value parser): a finite number of dB, at least 0.
pub fn min_psnr_flag(s: &str) -> Result<f64, crate::util::error::UserError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(crate::util::error::UserError::invalid(
            "--min-psnr",
            s,
            "a PSNR in dB, a number at least 0 (default 40)",
        )),
    }
}

/// Compute the answer of `report` and save the report with it at `output` (the one call
/// `run` makes after its budgets, before printing the table).
pub fn attach(report: &mut Report, output: &Path, min_psnr_db: Option<f64>) -> anyhow::Result<()> {
    report.summary = Some(summarize(report, min_psnr_db.unwrap_or(DEFAULT_MIN_PSNR_DB)));
    report.save_atomic(output)
}

/// The answer for every workload and engine of `report`, with the floor `min_psnr_db`.
pub fn summarize(report: &Report, min_psnr_db: f64) -> Summary {
    let mut groups: BTreeMap<(usize, usize, usize, &str, &str), Vec<&CaseRecord>> = BTreeMap::new();
    for c in &report.cases {
        let s = &c.settings;
        let key = (s.frames, s.width, s.height, s.passes.name(), s.engine.name());
        groups.entry(key).or_default().push(c);
    }
    let model = model_name(report);
    let answers = groups
        .into_values()
        .map(|cases| answer(report, &model, &cases, min_psnr_db))
        .collect();
    Summary {
        quality_on_synthetic_weights: on_synthetic_weights(report),
        min_psnr_db,
        confidence: bootstrap::CONFIDENCE,
        bootstrap_resamples: bootstrap::RESAMPLES,
        bootstrap_seed: bootstrap::SEED,
        answers,
    }
}

/// `wan2.1` / `wan2.2` from the latent channels, else `z_dim N`.
fn model_name(report: &Report) -> String {
    crate::model::ModelKind::ALL
        .into_iter()
        .find(|k| k.config().z_dim == report.model.z_dim)
        .map_or_else(|| format!("z_dim {}", report.model.z_dim), |k| k.name().to_string())
}

/// A case's quality against its fp32 untiled reference, as the answer judges it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Quality {
    /// It is its own reference.
    Reference,
    Identical,
    Psnr(f64),
    Unknown,
    /// Measured (its decoded PSNR, if any) on synthetic weights, where it says nothing about
    /// the user's VAE ([`seams_unknown`]): it does not gate.
    NotKnownOnSynthetic(Option<f64>),
}

impl Quality {
    fn of(c: &CaseRecord, synthetic: bool) -> Quality {
        let own = c.settings.reference() == c.settings;
        if !own && seams_unknown(synthetic, c) {
            let p = c
                .quality
                .as_ref()
                .and_then(|q| q.decoded.as_ref().or(q.latent.as_ref()));
            return Quality::NotKnownOnSynthetic(p.and_then(|e| e.psnr_db));
        }
        match &c.quality {
            _ if own => Quality::Reference,
            Some(q) if q.reference_id == c.id => Quality::Reference,
            Some(q) => {
                let e = if c.settings.passes.decodes() {
                    &q.decoded
                } else {
                    &q.latent
                };
                match e {
                    Some(e) if e.identical => Quality::Identical,
                    Some(e) => e.psnr_db.map_or(Quality::Identical, Quality::Psnr),
                    None => Quality::Unknown,
                }
            }
            None => Quality::Unknown,
        }
    }

    fn meets(self, floor: f64) -> bool {
        match self {
            Quality::Reference | Quality::Identical | Quality::NotKnownOnSynthetic(_) => true,
            Quality::Psnr(p) => p >= floor,
            Quality::Unknown => false,
        }
    }
}

/// Per run, the time of the case's timed passes together (encode + decode for `both`),
/// seconds; empty unless `ok`.
pub fn run_times(c: &CaseRecord) -> Vec<f64> {
    if c.outcome.status != CaseStatus::Ok {
        return Vec::new();
    }
    let parts: Vec<&Vec<f64>> = [&c.outcome.encode, &c.outcome.decode]
        .into_iter()
        .flatten()
        .map(|p| &p.samples_s)
        .filter(|s| !s.is_empty())
        .collect();
    let n = parts.iter().map(|s| s.len()).min().unwrap_or(0);
    (0..n).map(|i| parts.iter().map(|s| s[i]).sum()).collect()
}

/// Whether `c` is `ok`, timed, at or above the floor (or of a quality synthetic weights
/// cannot tell) and within its budgets.
fn qualifies(c: &CaseRecord, floor: f64, synthetic: bool) -> bool {
    let broken = c
        .budgets
        .iter()
        .any(|b| b.verdict == BudgetVerdict::Broken && DISQUALIFYING_BUDGETS.contains(&b.budget.as_str()));
    !run_times(c).is_empty() && Quality::of(c, synthetic).meets(floor) && !broken
}

/// The default of `cases` (one workload, one engine; never the A/A control): the rule of
/// [`crate::engine::defaults`].
fn baseline<'a>(cases: &[&'a CaseRecord]) -> Option<&'a CaseRecord> {
    let members: Vec<&'a CaseRecord> = cases.iter().copied().filter(|c| !c.added_as_control).collect();
    crate::engine::defaults::default_index(&members, |c| &c.settings).map(|i| members[i])
}

fn cite(c: &CaseRecord, synthetic: bool) -> AnswerCase {
    let times = run_times(c);
    let (quality, psnr_db) = match Quality::of(c, synthetic) {
        Quality::NotKnownOnSynthetic(p) => ("not_known_on_synthetic_weights", p),
        Quality::Reference => ("reference", None),
        Quality::Identical => ("identical", None),
        Quality::Psnr(p) => ("psnr", Some(p)),
        Quality::Unknown => ("unknown", None),
    };
    AnswerCase {
        id: c.id.clone(),
        status: c.outcome.status,
        median_s: (!times.is_empty()).then(|| crate::util::stats::median(&times)),
        runs: times.len(),
        quality: quality.to_string(),
        psnr_db,
        peak_rss_bytes: c.outcome.peak_rss_bytes,
        device_peak_reserved_bytes: c.outcome.device_peak_reserved_bytes,
        error: match c.outcome.status {
            CaseStatus::Ok => None,
            _ => c.outcome.error_line().map(str::to_string),
        },
    }
}

/// The answer for one workload on one engine.
fn answer(report: &Report, model: &str, cases: &[&CaseRecord], floor: f64) -> Answer {
    let s = &cases[0].settings;
    let synthetic = on_synthetic_weights(report);
    let base = baseline(cases);
    let mut advice = trust::Advice::default();
    let qualified: Vec<&CaseRecord> = cases
        .iter()
        .copied()
        .filter(|c| !c.added_as_control && qualifies(c, floor, synthetic))
        .collect();
    // What may be advised: a setting that can act (`trust::Advice`).
    let candidates: Vec<&CaseRecord> = qualified
        .iter()
        .copied()
        .filter(|c| advice.eligible(report, c, base))
        .collect();
    let members = cases.iter().filter(|c| !c.added_as_control).count();
    let is_base = |c: &CaseRecord| base.is_some_and(|b| b.id == c.id);
    // The fastest by its time relative to the default, paired by round where the cases were
    // timed in rounds (what the load did to each round cancels); else by its median.
    let timed_base = base.filter(|b| !run_times(b).is_empty());
    let fastest = candidates.iter().copied().min_by(|a, b| {
        let m = |c: &CaseRecord| match timed_base {
            Some(d) if d.id != c.id => 1.0 / trust::ratio(d, c).ratio,
            Some(_) => 1.0,
            None => crate::util::stats::median(&run_times(c)),
        };
        m(a).total_cmp(&m(b))
            .then(is_base(b).cmp(&is_base(a)))
            .then(a.id.cmp(&b.id))
    });
    let mut a = Answer {
        model: model.to_string(),
        engine: s.engine.name().to_string(),
        frames: s.frames,
        width_px: s.width,
        height_px: s.height,
        passes: s.passes.name().to_string(),
        verdict: Verdict::NoneQualified,
        sentence: String::new(),
        cases: members,
        cases_qualified: qualified.len(),
        baseline: base.map(|b| cite(b, synthetic)),
        baseline_qualified: base.is_some_and(|b| qualifies(b, floor, synthetic)),
        fastest: fastest.map(|f| cite(f, synthetic)),
        rerun_with_weights: fastest
            .filter(|f| seams_unknown(synthetic, f))
            .map(|_| rerun_command(&report.run.command)),
        speedup_ratio: None,
        speedup_ratio_low: None,
        speedup_ratio_high: None,
        apply: None,
        interval_method: None,
        drift: base.and_then(|b| trust::drift(b, cases)),
        not_advised: std::mem::take(&mut advice.not_advised),
        busy_cases: crate::report::load::busy_cases(cases.iter().copied())
            .into_iter()
            .map(String::from)
            .collect(),
    };
    let throttled: Vec<&CaseRecord> = cases
        .iter()
        .copied()
        .filter(|c| c.outcome.status == CaseStatus::Ok && c.outcome.throttled())
        .collect();
    // One machine's cases only: a merged report's parts may come from several runners.
    let machines = crate::machine::identity::distinct_machines(
        cases
            .iter()
            .filter(|c| c.outcome.status == CaseStatus::Ok)
            .map(|c| c.system.as_ref().unwrap_or(&report.system)),
    );
    if machines.len() > 1 {
        a.verdict = Verdict::Machines;
        a.fastest = None;
        a.rerun_with_weights = None;
        a.sentence = format!(
            "Its cases were timed on {} different machines ({}): their times do not compare, so no winner is \
             called. Compare the cases of one machine, or run them all on one.",
            machines.len(),
            machines.join("; ")
        );
        return a;
    }
    // Nor across variables the shells of merged parts set differently (`merge --force`).
    let differ = crate::report::env::differences(cases.iter().map(|c| (*c, c.run.as_ref().unwrap_or(&report.run))));
    if !differ.is_empty() {
        let names: Vec<String> = differ.iter().map(|d| d.text()).collect();
        a.verdict = Verdict::Environments;
        a.fastest = None;
        a.rerun_with_weights = None;
        a.sentence = format!(
            "Its cases ran with different values of {}, which no env variant of the run set (parts run from \
             differently set shells): their times do not compare, so no winner is called. Run them alike, or \
             make the variable an env variant.",
            crate::util::format::bounded(&names, ", ", 4)
        );
        return a;
    }
    if !throttled.is_empty() {
        a.verdict = Verdict::Throttled;
        a.fastest = None;
        a.rerun_with_weights = None;
        a.sentence = throttled_sentence(&throttled, cases.len());
        return a;
    }
    a.verdict = match (members, fastest, base) {
        (1, _, _) => Verdict::OneCase,
        (_, None, _) => Verdict::NoneQualified,
        (_, Some(f), Some(b)) if f.id == b.id => Verdict::BaselineFastest,
        (_, Some(f), Some(b)) if b.outcome.status == CaseStatus::Ok => ratio_verdict(&mut a, b, f),
        _ => Verdict::NoBaseline,
    };
    let recommend = match a.verdict {
        Verdict::Faster | Verdict::Slower | Verdict::TooFewRuns | Verdict::NoBaseline => true,
        Verdict::WithinNoise | Verdict::WithinDrift => !a.baseline_qualified,
        _ => false,
    };
    if let Some(f) = fastest.filter(|_| recommend) {
        let mut apply = apply::apply(report, f, base);
        // What cannot act is measured, never advised.
        for (var, why) in &a.not_advised {
            if apply.env_set.remove(var).is_some() || apply.env_unset.contains(var) {
                apply.env_unset.retain(|v| v != var);
                apply.env_not_advised.insert(var.clone(), why.clone());
            }
        }
        a.apply = Some(apply);
    }
    a.sentence = sentence(&a, floor);
    a.sentence.push_str(&trust_notes(&a));
    if let Some(cmd) = &a.rerun_with_weights {
        a.sentence.push_str(&format!(
            " Its quality is not known on synthetic weights: rerun with --weights FILE (your VAE): {cmd}"
        ));
    }
    a
}

/// The refusal when cases of a workload ran throttled: which, why, and what to do.
fn throttled_sentence(throttled: &[&CaseRecord], total: usize) -> String {
    let first = throttled[0];
    let why = first
        .outcome
        .telemetry
        .as_ref()
        .and_then(|t| t.throttle_why.clone())
        .unwrap_or_default();
    format!(
        "{} of {total} case(s) ran throttled (e.g. {}: {why}): their times measure the cooling, not the settings, \
         so no winner is called from this run. Cap the clock (on Strix Halo, a lower shader clock), add --cooldown \
         SECONDS or --wait-temp C, or on the CPU run fewer threads, then run again.",
        throttled.len(),
        first.id
    )
}

/// The run's command with `--weights FILE` instead of any weights it gave (`FILE` for the
/// user to fill in): what tells the quality of a case synthetic weights cannot judge.
fn rerun_command(command: &[String]) -> String {
    let default = ["wan-vae-bench".to_string(), "run".to_string()];
    let words = if command.is_empty() { &default[..] } else { command };
    let mut out: Vec<String> = Vec::new();
    let mut skip = false;
    for w in words {
        if std::mem::take(&mut skip) {
            continue;
        }
        match w.as_str() {
            "--weights" => skip = true,
            w if w.starts_with("--weights=") => {}
            w => out.push(crate::util::format::shell_word(w)),
        }
    }
    format!("{} --weights FILE", out.join(" "))
}

/// Ratio and interval of the default's time over the fastest's, and what they say: faster
/// (or slower) only when the interval clears both 1 and the A/A control's drift.
fn ratio_verdict(a: &mut Answer, base: &CaseRecord, fastest: &CaseRecord) -> Verdict {
    let r = trust::ratio(base, fastest);
    a.speedup_ratio = Some(r.ratio);
    let (iv, method) = (r.interval, r.method);
    let floor = a.drift.as_ref().map_or(1.0, |d| d.floor_ratio);
    match iv {
        None => Verdict::TooFewRuns,
        Some((lo, hi)) => {
            (a.speedup_ratio_low, a.speedup_ratio_high) = (Some(lo), Some(hi));
            a.interval_method = Some(method.to_string());
            if lo > floor {
                Verdict::Faster
            } else if hi < 1.0 / floor {
                Verdict::Slower
            } else if lo > 1.0 || hi < 1.0 {
                Verdict::WithinDrift
            } else {
                Verdict::WithinNoise
            }
        }
    }
}

/// What the answer adds about the machine and the variables it did not advise.
fn trust_notes(a: &Answer) -> String {
    let mut out = String::new();
    if let Some(d) = &a.drift {
        if a.verdict == Verdict::WithinDrift {
            out.push_str(&format!(
                " Two measurements of the default itself (its A/A control {}) differed by up to {:.2}x in this run: \
                 the machine's drift; no setting is called faster or slower by less.",
                d.control_id, d.floor_ratio
            ));
        }
    }
    if !a.not_advised.is_empty() {
        let named: Vec<String> = a.not_advised.iter().map(|(v, why)| format!("{v} ({why})")).collect();
        out.push_str(&format!(
            " Not advised: {}.",
            crate::util::format::bounded(&named, "; ", 4)
        ));
    }
    if !a.busy_cases.is_empty() {
        out.push_str(&format!(
            " {} of {} case(s) ran on a busy machine (other processes or steal time: `outcome.load`); rerun on a \
             quiet machine before trusting small differences.",
            a.busy_cases.len(),
            a.cases + usize::from(a.drift.is_some())
        ));
    }
    out
}

/// `1.84x (95% interval 1.70x to 1.98x)`.
fn ratio_text(a: &Answer) -> String {
    let r = a.speedup_ratio.unwrap_or(f64::NAN);
    match (a.speedup_ratio_low, a.speedup_ratio_high) {
        (Some(lo), Some(hi)) if a.interval_method.as_deref() == Some("rounds") => format!(
            "{r:.2}x (95% interval {lo:.2}x to {hi:.2}x, bootstrap of {} and {} runs paired by round)",
            a.baseline.as_ref().map_or(0, |b| b.runs),
            a.fastest.as_ref().map_or(0, |f| f.runs)
        ),
        (Some(lo), Some(hi)) => format!(
            "{r:.2}x (95% interval {lo:.2}x to {hi:.2}x, bootstrap of {} and {} runs)",
            a.baseline.as_ref().map_or(0, |b| b.runs),
            a.fastest.as_ref().map_or(0, |f| f.runs)
        ),
        _ => format!("{r:.2}x"),
    }
}

/// `0.123 s`, or `-`.
fn time_of(c: &AnswerCase) -> String {
    c.median_s.map_or("-".into(), crate::util::format::seconds)
}

/// `PSNR 47.3 dB`, `identical outputs` or `the fp32 untiled reference`.
fn quality_text(c: &AnswerCase) -> String {
    match (c.quality.as_str(), c.psnr_db) {
        ("psnr", Some(p)) => format!("PSNR {p:.1} dB"),
        ("identical", _) => "outputs identical to its reference".into(),
        ("reference", _) => "itself the fp32 untiled reference".into(),
        ("not_known_on_synthetic_weights", p) => format!(
            "quality not known on synthetic weights{}",
            p.map(|p| format!(": PSNR {p:.1} dB on random weights"))
                .unwrap_or_default()
        ),
        _ => "quality unknown".into(),
    }
}

/// The conclusion in one plain sentence.
fn sentence(a: &Answer, floor: f64) -> String {
    let why_base = if a.baseline_qualified {
        String::new()
    } else {
        " (the default itself is below the floor or breaks a budget)".to_string()
    };
    let (Some(f), base) = (&a.fastest, &a.baseline) else {
        return match a.verdict {
            Verdict::OneCase => format!(
                "Only one case ({}) ran for this workload: nothing to compare; add precisions, tilings or env variants.",
                a.baseline.as_ref().or(a.fastest.as_ref()).map_or("?", |c| c.id.as_str())
            ),
            _ => format!(
                "No case of {} is ok with PSNR >= {floor} dB within the memory budgets: nothing to recommend.",
                a.cases
            ),
        };
    };
    let fastest = format!("{} ({}, {})", f.id, time_of(f), quality_text(f));
    match (a.verdict, base) {
        (Verdict::OneCase, _) => format!("Only one case ({}) ran for this workload: nothing to compare.", f.id),
        (Verdict::BaselineFastest, _) => format!("The default {fastest} is the fastest setting that stays right: keep it."),
        (Verdict::Faster, Some(b)) => format!(
            "{fastest} is {} faster than the default {} ({}){why_base}.",
            ratio_text(a),
            b.id,
            time_of(b)
        ),
        (Verdict::Slower, Some(b)) => format!(
            "{fastest} is the fastest setting that stays right; it is slower than the default {} ({}), ratio {}{why_base}.",
            b.id,
            time_of(b),
            ratio_text(a)
        ),
        (Verdict::WithinNoise, Some(b)) if a.baseline_qualified => format!(
            "No setting is reliably faster than the default {} ({}): the fastest that stays right, {fastest}, is {}, within noise. Keep the default.",
            b.id,
            time_of(b),
            ratio_text(a)
        ),
        (Verdict::WithinDrift, Some(b)) if a.baseline_qualified => format!(
            "No setting is reliably faster than the default {} ({}): the fastest that stays right, {fastest}, is {}, \
             within the machine's drift. Keep the default.",
            b.id,
            time_of(b),
            ratio_text(a)
        ),
        (Verdict::WithinNoise | Verdict::WithinDrift, Some(b)) => format!(
            "{fastest} is as fast as the default {} ({}) within noise, ratio {}{why_base}: use it.",
            b.id,
            time_of(b),
            ratio_text(a)
        ),
        (Verdict::TooFewRuns, Some(b)) => format!(
            "{fastest} is {} faster than the default {} ({}), but with one run the noise is unknown: rerun with --runs 3 or more.",
            ratio_text(a),
            b.id,
            time_of(b)
        ),
        (_, Some(b)) => format!(
            "The default {} ended `{}`{}: the fastest setting that stays right is {fastest}; no ratio.",
            b.id,
            b.status,
            b.error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default()
        ),
        (_, None) => format!(
            "The default (the engine's default precision, untiled, chunk 1, env `baseline`, default knobs) was not in the run: the fastest setting that stays right is {fastest}; no ratio."
        ),
    }
}

#[cfg(test)]
mod tests;
