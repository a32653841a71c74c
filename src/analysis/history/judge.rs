//! The segments and the verdict of one series: where its level changed, whether its newest
//! segment is slower than its best earlier one, and whether it drifts.
//!
//! - **Series of 5 runs or more** (the run-to-run variance is estimated, [`super::model`]).
//!   The fit ([`super::steps`]; on a grid of levels where runs' noises are mixtures, issue
//!   66, [`super::grid`]) is run in the model's units, `tau²` estimated again from the
//!   differences within its segments (where no run has two samples, the law of the run
//!   levels' residuals read off that fit), and the fit run again. A run at either end, when
//!   the fit kept it in a longer segment, is split off when it alone is off the rest of that
//!   segment at p < [`NEWEST_ALPHA`] (one test of one run, not a search over every place,
//!   which allows for the uncertainty of `tau²`: a newest run far off is what a nightly job
//!   must not miss, and one run alone must not fail it on a chance estimate; a first run far
//!   off is a step after a single run). The fit sets aside a newest run that would be a
//!   level of its own ([`super::steps`]): this test decides. Below [`SMALL`] runs, where
//!   a third of the differences may be steps and the first estimate of `tau²` with them,
//!   `compare`'s reading is weighed too (a step wherever neighbouring segments' samples
//!   differ beyond [`SHORT_STEP_FACTOR`] times the threshold, as in a short series): the one
//!   that makes the run levels more likely ([`super::model::Model::profile`]), less
//!   [`STEP_PENALTY`] `ln n` per step, is kept. Two or more steps in a row up to the newest
//!   segment, the same way and each within the threshold, that a line fits as well, are
//!   one drift (a slow-down of 0.5% a run is not nine steps of 2% at no update). A level
//!   held by one run whose samples cannot show its own spread (one or two samples, but
//!   for an earlier run where the series' runs share one spread, which the series shows: one;
//!   or samples on both sides of the level before it) is no level: the newest so split off, or one that
//!   `compare`'s reading makes between two others, joins the level before it ([`alone`];
//!   issue 66: one sample cannot tell a noisy run from a slower one).
//!
//!   The verdict: the newest segment's level against the best earlier one's (`run-levels`),
//!   Student's t on the difference of their inverse-variance weighted means, each run's
//!   variance its samples' plus the run-to-run one, the degrees of freedom those of the
//!   estimates (Welch-Satterthwaite): a segment of one run or two is judged against the
//!   run-to-run variation, never against its samples' spread alone (the machine on another
//!   day is not a regression), and with many runs a consistent slow-down is seen through a
//!   hiccup in each (its median moves little). The verdict says how many runs hold each
//!   level, and for a level of one run whether that was enough; a best earlier level of one
//!   run must show its spread (at least [`SPREAD_SAMPLES`] samples): the lowest of several
//!   levels is the one noise put lowest. A newest run beyond the threshold off the rest of
//!   its level, significantly (at `alpha`), whose samples cannot show its spread, is said to
//!   be off, rerun to tell (`newest_off`: not a step, not a regression, exit 0 but under
//!   `--fail-on-rerun`); one beyond the threshold but not significantly so is said too
//!   (`newest_run`): one run, not enough to tell, never "ok".
//! - **Short series** (2 to 4 runs: no run-to-run variance can be estimated from 1 to 3
//!   differences). Judged on the samples as `compare` judges two reports
//!   ([`crate::analysis::compare::verdict::timing_rule`]: Welch's test on the samples less their
//!   outliers, or with fewer than two samples a side, no overlap beyond the threshold). A
//!   step stays between two neighbouring segments only where that rule calls one slower or
//!   faster beyond [`SHORT_STEP_FACTOR`] times the threshold (the weakest merged first:
//!   the samples cannot see the run-to-run variation, a few percent on many machines, so a
//!   step elsewhere needs more than `compare`'s own margin: in the 2- to 4-run histories of
//!   3,000 of `tests/analysis/history_score.rs`'s tuned mix, 17 false steps, 32 at the
//!   threshold itself); the newest segment is judged against the best
//!   earlier one by the same rule; and the two newest runs are judged as `compare` would
//!   judge their reports (`last_two`): where it calls the newest slower, so does the
//!   history (a step is put before the newest run, so that the update is named).
//! - **Drift**. A slow-down in many small steps, none of which the fit can tell from
//!   noise, is a monotone trend inside the newest segment: the Mann-Kendall test (rank-based:
//!   one outlying run moves it by one rank) on the segment's run medians, at least
//!   [`MIN_DRIFT_RUNS`] of them, and the Theil-Sen slope times the segment's length as its
//!   size, relative to the Theil-Sen line's start ([`super::trend`], O(n log n)). A series
//!   is judged twice (step and drift), so the drift's test is held to `alpha / 2`
//!   (Bonferroni).
//!
//! A verdict is a regression when slower beyond the threshold and significant at `alpha`;
//! slower beyond the threshold but not significant is said in those words, never "ok".
//!
//! Must not: format text (that is [`super::render`]) or read reports.
use serde::Serialize;

pub use super::drift::{Drift, MIN_DRIFT_RUNS};
use super::model::{LawOf, Model};
use super::steps::{self, Segment};
use super::Point;
use crate::analysis::compare::verdict::{timing_rule, Test as Rule, Verdict as Call};
use crate::util::stats::without_outliers;

/// Series shorter than this weigh `compare`'s steps too ([`weigh`]).
pub const SMALL: usize = 13;

/// What one more step costs in `-2 log L` when [`weigh`] weighs two readings.
pub const STEP_PENALTY: f64 = 5.0;

/// In a short series (and in `compare`'s reading of a series below [`SMALL`] runs),
/// neighbouring segments' samples must differ by this many times the threshold for a step
/// between them (module docs); the step before the newest run that `compare` calls slower is
/// kept at the threshold itself.
pub const SHORT_STEP_FACTOR: f64 = 1.5;

/// The threshold a step of a short series (or `compare`'s reading of a series below
/// [`SMALL`] runs) must clear: [`SHORT_STEP_FACTOR`] times `--threshold`, kept below the
/// point where nothing could be that much faster (a threshold of 2/3 or more).
fn short_step_threshold(threshold: f64) -> f64 {
    (threshold * SHORT_STEP_FACTOR).min(threshold + (1.0 - threshold) / 2.0)
}

/// Samples a run needs to show its own spread (and be a level of its own at either end).
pub const SPREAD_SAMPLES: usize = 3;

/// Samples an earlier run needs to show its spread where the series' runs share one spread
/// (no law of spreads): the series shows it, and two samples beyond a level are beyond it as
/// `compare`'s no-overlap rule reads them. Three, as where runs have their own spreads, cost
/// 19 located steps and 20 flagged regressions of 3,000 histories of
/// `tests/analysis/history_score.rs`'s tuned mix (whose runs share one spread).
pub const SHARED_SPREAD_SAMPLES: usize = 2;

/// The two-sided level at which the newest run alone is split off the rest of its segment.
pub const NEWEST_ALPHA: f64 = 0.001;

/// How a step's significance was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// Student's t on the two segments' levels, each run's variance its samples' plus the
    /// run-to-run variance (a series of [`super::model::MIN_RUNS`] runs or more).
    RunLevels,
    /// Welch's t-test on the two sides' samples less their outliers, as `compare`'s (a
    /// short series).
    Samples,
    /// Fewer than two samples a side: `compare`'s rule, every sample of one side beyond
    /// every sample of the other by more than the threshold.
    NoOverlap,
}

/// The two newest runs as `compare` judges two reports (a short series).
#[derive(Debug, Clone, Serialize)]
pub struct LastTwo {
    /// `newest / previous - 1` of their medians.
    pub slower: f64,
    /// Welch's two-sided p on their samples less outliers (null: fewer than two a side).
    pub p_value: Option<f64>,
    /// `samples` or `no-overlap`.
    pub test: Test,
    /// `compare` would call the newest slower: a regression.
    pub regression: bool,
}

/// The newest run off the rest of its segment beyond the threshold, not far enough to be a
/// level of its own (a series of 5 runs or more; p >= [`NEWEST_ALPHA`]).
#[derive(Debug, Clone, Serialize)]
pub struct NewestRun {
    /// `newest / rest - 1` of the levels.
    pub slower: f64,
    /// The two-sided p-value of the newest run against the rest of its segment, allowing
    /// for the run-to-run variation.
    pub p_value: f64,
}

/// The newest run alone off the rest of its level, beyond the threshold and significantly
/// (at `--alpha`, under the runs' noise), where its samples cannot show its own spread: one
/// or two samples, or samples on both sides of that level (issue 66). Not a step and not a
/// regression: rerun to tell (`history --fail-on-rerun` fails on it where it is slower).
#[derive(Debug, Clone, Serialize)]
pub struct NewestOff {
    /// The run (an index into the series' points).
    pub point: usize,
    /// `newest / rest - 1` of the levels.
    pub slower: f64,
    /// The two-sided p-value of the newest run against the rest of its level, under the
    /// runs' noise.
    pub p_value: f64,
    /// Its samples (less their outliers).
    pub samples: usize,
}

/// Whether the newest segment is slower than the best earlier one, and whether it drifts.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Verdict {
    /// Slower than the best earlier segment by more than the threshold and significant.
    pub regression: bool,
    /// The newest segment's level, seconds.
    pub newest_s: f64,
    /// How many runs hold the newest level.
    pub newest_runs: usize,
    /// The best earlier segment's level, seconds (null with one segment).
    pub best_earlier_s: Option<f64>,
    /// How many runs hold the best earlier level.
    pub best_earlier_runs: Option<usize>,
    /// `newest_s / best_earlier_s - 1`.
    pub slower: Option<f64>,
    /// The two-sided p-value of the test named by `test`.
    pub p_value: Option<f64>,
    /// How significance was decided ([`Test`]; null with one segment).
    pub test: Option<Test>,
    /// The difference is significant at `--alpha` (false with one segment).
    pub significant: bool,
    /// The run-to-run standard deviation the test allowed for, relative (0.03: runs vary by
    /// 3% beyond what their samples say); null for a short series.
    pub run_to_run: Option<f64>,
    /// The two newest runs as `compare` judges them (a short series only).
    pub last_two: Option<LastTwo>,
    /// The newest run beyond the threshold above the rest of its segment, but not far
    /// enough off to be a level of its own: one run, not enough to tell.
    pub newest_run: Option<NewestRun>,
    /// The newest run alone far off the rest of its level, its samples unable to show its
    /// spread: rerun to tell ([`NewestOff`]).
    pub newest_off: Option<NewestOff>,
    /// The trend within the newest segment (null below [`MIN_DRIFT_RUNS`] runs);
    /// `drift.regression`: slower beyond the threshold and significant.
    pub drift: Option<Drift>,
    /// The newest run's case ran on a busy machine (`outcome.load`; [`super::load`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub newest_busy: bool,
    /// Its slow-down put down to load, its reference slowed alike: no regression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<super::load::PutDownToLoad>,
}

impl Verdict {
    /// Slower now: the newest segment, or the newest run as `compare` judges it.
    pub fn regressed(&self) -> bool {
        (self.regression || self.last_two.as_ref().is_some_and(|l| l.regression)) && self.load.is_none()
    }

    /// A step, the two newest runs or a drift make this series a regression (exit 1).
    pub fn fails(&self) -> bool {
        self.regressed() || self.drift.as_ref().is_some_and(|d| d.regression)
    }

    /// The newest run alone is off, slower beyond `threshold`, and cannot tell whether it is
    /// a noisy run or a slower one: rerun to tell (exit 0, or 1 under `--fail-on-rerun`).
    pub fn rerun(&self, threshold: f64) -> bool {
        !self.fails() && self.newest_off.as_ref().is_some_and(|o| o.slower > threshold)
    }
}

/// A series fitted and judged.
pub struct Judged {
    /// Its segments, levels in seconds.
    pub segments: Vec<Segment>,
    /// Each run's weight in the fit (median 1).
    pub weights: Vec<f64>,
    pub verdict: Verdict,
}

/// Fit and judge `points` (module docs).
pub fn series(points: &[Point], threshold: f64, alpha: f64) -> Judged {
    let kept: Vec<Vec<f64>> = points.iter().map(|p| without_outliers(&p.samples_s)).collect();
    let runs: Vec<(f64, &[f64])> = points.iter().zip(&kept).map(|(p, k)| (p.median_s, &k[..])).collect();
    let trimmed: Vec<bool> = points
        .iter()
        .zip(&kept)
        .map(|(p, k)| k.len() < p.samples_s.len())
        .collect();
    let mut model = Model::trimmed(&runs, &trimmed);
    let (right, mut last_two) = if !model.estimated() {
        short_steps(points, &kept, threshold, alpha)
    } else {
        let right = weigh(&mut model, points, &kept, threshold, alpha);
        let right = staircase(right, &model, threshold);
        (alone(right, &mut model, &kept), None)
    };
    let w = model.weights();
    // Each segment at its level: its runs' weighted mean (runs far off set aside), seconds.
    let segs: Vec<Segment> = right
        .iter()
        .scan(0, |start, &end| {
            let s = Segment {
                start: *start,
                end,
                level: model.level(*start, end).mean.exp(),
            };
            *start = end;
            Some(s)
        })
        .collect();
    let mut verdict = match model.estimated() {
        true => long_verdict(&segs, &model, &kept, threshold, alpha),
        false => short_verdict(&segs, points, &kept, threshold, alpha),
    };
    if let Some(l) = last_two.take() {
        verdict.last_two = Some(l);
    }
    if let Some(newest) = segs.last() {
        verdict.drift = super::drift::of(newest, points, threshold, alpha);
    }
    let mut sorted = w.clone();
    sorted.sort_by(f64::total_cmp);
    let mid = crate::util::stats::median(&sorted);
    let weights = w.iter().map(|x| if mid > 0.0 { x / mid } else { 1.0 }).collect();
    Judged {
        segments: segs,
        weights,
        verdict,
    }
}

/// The model's steps: fit, `tau²` again from the differences within its segments, fit
/// again, and a run at either end split off when it alone is far off the rest of its
/// segment (module docs).
fn long_steps(model: &mut Model) -> Vec<usize> {
    let n = model.y.len();
    let pen = steps::penalty(n);
    let right = fit(model, pen);
    model.refine(&right);
    model.residual_law(&right);
    let mut right = fit(model, pen);
    model.refine(&right);
    if model.law.as_ref().is_some_and(|l| l.1 == LawOf::Residuals) {
        // The law of the run levels was read off a fit without it: read it off this one, and
        // fit again.
        model.residual_law(&right);
        right = fit(model, pen);
    }
    let mut split = false;
    // The newest run, then the first (each against the rest of its segment).
    let newest_start = right.len().checked_sub(2).map_or(0, |i| right[i]);
    if n - newest_start >= 2 && far_off(model, n - 1, newest_start..n - 1) {
        right.insert(right.len() - 1, n - 1);
        split = true;
    }
    if right[0] >= 2 && far_off(model, 0, 1..right[0]) {
        right.insert(0, 1);
        split = true;
    }
    if split {
        model.refine(&right);
    }
    right
}

/// The fit of the model's run levels at `pen` per step: exact on their normal noise, or on
/// a grid of levels where some run's noise is a mixture ([`super::grid`]).
fn fit(model: &Model, pen: f64) -> Vec<usize> {
    match model.mixed() {
        true => super::grid::detect(&model.y, &model.noises(), pen),
        false => steps::detect(&model.y, &model.weights(), pen),
    }
}

/// Is run `i` alone off the level of runs `rest` at p < [`NEWEST_ALPHA`]?
fn far_off(model: &Model, i: usize, rest: std::ops::Range<usize>) -> bool {
    let (p, _) = model.test(&model.level(i, i + 1), &model.level(rest.start, rest.end));
    p < NEWEST_ALPHA
}

/// A run whose samples show its own spread: at least `need` of them (two at the least), all
/// beyond `level` (seconds) on the side it lies.
fn shows_spread(samples: &[f64], level: f64, need: usize) -> bool {
    let (lo, hi) = samples
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    samples.len() >= need.max(2) && (lo > level || hi < level)
}

/// Samples an earlier run needs to show its spread in this series: [`SPREAD_SAMPLES`] where
/// its runs have their own spreads (a law of them, [`super::spread`]), [`SHARED_SPREAD_SAMPLES`]
/// where they share one, which the series shows. The newest run always needs
/// [`SPREAD_SAMPLES`] (issue 66: one or two samples of the newest run are rerun to tell).
fn spread_samples(model: &Model) -> usize {
    match model.mixed() {
        true => SPREAD_SAMPLES,
        false => SHARED_SPREAD_SAMPLES,
    }
}

/// A level held by one run whose samples cannot show its own spread (one or two of them, or
/// samples on both sides of the level before it, [`shows_spread`]) is no level: one sample
/// cannot tell a noisy run from a slower one (issue 66). The newest run split off
/// ([`long_steps`]), or a run `compare`'s reading of a short series makes a level between two
/// others, is merged into the level before it; where a middle one stood between two levels
/// that the fit's penalty does not tell apart, those two are one. (A first run split off
/// pays for its step: a step after a single run.) The verdict then says whether the newest
/// run is off the rest of its level ([`long_verdict`]).
fn alone(mut right: Vec<usize>, model: &mut Model, kept: &[Vec<f64>]) -> Vec<usize> {
    let n = model.y.len();
    let pen = steps::penalty(n);
    let mut merged = false;
    loop {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(right[..right.len() - 1].iter().copied())
            .collect();
        let lone = (1..right.len()).find(|&j| {
            let i = starts[j];
            let need = match right[j] == n {
                true => SPREAD_SAMPLES,
                false => spread_samples(model),
            };
            right[j] - i == 1 && !shows_spread(&kept[i], model.level(starts[j - 1], i).mean.exp(), need)
        });
        let Some(j) = lone else { break };
        merged = true;
        right.remove(j - 1);
        if j < right.len() {
            // Are the level before it and the one after one level?
            let (a, b, c) = (starts[j - 1], right[j - 1], right[j]);
            let (_, t) = model.test(&model.level(a, b), &model.level(b, c));
            if t * t < pen {
                right.remove(j - 1);
            }
        }
    }
    if merged {
        model.refine(&right);
    }
    right
}

/// The model's steps ([`long_steps`]), and for a series of fewer than [`SMALL`] runs
/// `compare`'s too (a step wherever neighbouring segments' samples differ beyond
/// [`SHORT_STEP_FACTOR`] times the threshold, [`short_steps`]): the reading that makes the
/// run levels more likely, [`STEP_PENALTY`] `ln n` per step, is kept (module docs).
fn weigh(model: &mut Model, points: &[Point], kept: &[Vec<f64>], threshold: f64, alpha: f64) -> Vec<usize> {
    let n = points.len();
    let base = model.clone();
    let fitted = long_steps(model);
    if n >= SMALL {
        return fitted;
    }
    let (samples, _) = short_steps(points, kept, threshold, alpha);
    if samples == fitted {
        return fitted;
    }
    let cost = |right: &[usize]| {
        base.profile(right).map_or(f64::INFINITY, |(d, _)| {
            d + STEP_PENALTY * (n as f64).ln() * (right.len() - 1) as f64
        })
    };
    if cost(&samples) < cost(&fitted) {
        *model = base;
        model.settle(&samples);
        samples
    } else {
        fitted
    }
}

/// The newest steps as one drift where they are a staircase: two or more steps in a row up
/// to the newest segment, all the same way and each within the threshold, that a line
/// through their runs fits as well (its misfit, `sum (y - line)² / v`, plus one step's
/// penalty, at most the steps' misfit plus theirs). A slow-down of 0.5% a run over 40 runs
/// was fitted as nine steps of 2% at no update; it is a drift ([`drift`]).
fn staircase(mut right: Vec<usize>, model: &Model, threshold: f64) -> Vec<usize> {
    let n = model.y.len();
    let level = |l: usize, r: usize| model.level(l, r).mean;
    // Walk back over the steps before the newest segment while they go the same way and
    // stay within the threshold.
    let mut first = right.len() - 1; // index in `right` of the newest segment's end
    let mut way = 0.0;
    while first >= 1 {
        let (a, b, c) = (
            if first >= 2 { right[first - 2] } else { 0 },
            right[first - 1],
            right[first],
        );
        let step = level(b, c) - level(a, b);
        if step.abs() > threshold.ln_1p() || (way != 0.0 && step.signum() != way) {
            break;
        }
        way = step.signum();
        first -= 1;
    }
    let steps = right.len() - 1 - first;
    if steps < 2 {
        return right;
    }
    let start = if first == 0 { 0 } else { right[first - 1] };
    let v: Vec<f64> = (start..n).map(|i| model.var(i).max(1e-300)).collect();
    // The stairs' misfit: each run against its segment's level.
    let mut stairs = 0.0;
    let mut l = start;
    for &r in &right[first..] {
        let m = level(l, r);
        stairs += (l..r).map(|i| (model.y[i] - m).powi(2) / v[i - start]).sum::<f64>();
        l = r;
    }
    // The line's: weighted least squares against the run index.
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for i in start..n {
        let (w, x, y) = (1.0 / v[i - start], i as f64, model.y[i]);
        (sw, sx, sy, sxx, sxy) = (sw + w, sx + w * x, sy + w * y, sxx + w * x * x, sxy + w * x * y);
    }
    let slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx).max(1e-300);
    let at0 = (sy - slope * sx) / sw;
    let line: f64 = (start..n)
        .map(|i| (model.y[i] - at0 - slope * i as f64).powi(2) / v[i - start])
        .sum();
    // The fit's penalty and the misfits are both in squared standard deviations.
    let gamma = steps::penalty(n);
    if line + gamma <= stairs + gamma * steps as f64 {
        right.drain(first..right.len() - 1);
    }
    right
}

/// `compare`'s rule between the samples of runs `a` (baseline) and `b` (current).
fn rule(
    points: &[Point],
    kept: &[Vec<f64>],
    a: std::ops::Range<usize>,
    b: std::ops::Range<usize>,
    threshold: f64,
    alpha: f64,
) -> (Rule, Option<f64>, Call, f64) {
    let side = |r: std::ops::Range<usize>| -> (Vec<f64>, Vec<f64>, f64) {
        let all: Vec<f64> = points[r.clone()].iter().flat_map(sample_or_median).collect();
        let kept: Vec<f64> = r.clone().flat_map(|i| kept[i].clone()).collect();
        let medians: Vec<f64> = points[r].iter().map(|p| p.median_s).collect();
        (all, kept, crate::util::stats::median(&medians))
    };
    let (a_all, a_kept, a_median) = side(a);
    let (b_all, b_kept, b_median) = side(b);
    let (test, p, call) = timing_rule(&a_all, &a_kept, a_median, &b_all, &b_kept, b_median, threshold, alpha);
    (test, p, call, b_median / a_median - 1.0)
}

/// A run's samples, or its median when it recorded none.
fn sample_or_median(p: &Point) -> Vec<f64> {
    if p.samples_s.is_empty() {
        vec![p.median_s]
    } else {
        p.samples_s.clone()
    }
}

fn test_of(rule: Rule) -> Test {
    match rule {
        Rule::Welch => Test::Samples,
        Rule::InsufficientSamples => Test::NoOverlap,
    }
}

/// A short series' steps: every boundary, less those `compare`'s rule does not call a
/// change (the weakest merged first); then a step before the newest run where `compare`
/// calls it slower than the one before (module docs).
fn short_steps(points: &[Point], kept: &[Vec<f64>], threshold: f64, alpha: f64) -> (Vec<usize>, Option<LastTwo>) {
    let n = points.len();
    let mut right: Vec<usize> = (1..=n).collect();
    while right.len() > 1 {
        // The boundary the rule calls no change with the largest p (no test: 1) goes first.
        let mut weakest: Option<(f64, usize)> = None;
        for j in 0..right.len() - 1 {
            let l = if j == 0 { 0 } else { right[j - 1] };
            let (_, p, call, _) = rule(
                points,
                kept,
                l..right[j],
                right[j]..right[j + 1],
                short_step_threshold(threshold),
                alpha,
            );
            let weak = p.unwrap_or(1.0);
            if call == Call::NoChange && weakest.is_none_or(|(q, _)| weak > q) {
                weakest = Some((weak, j));
            }
        }
        match weakest {
            Some((_, j)) => {
                right.remove(j);
            }
            None => break,
        }
    }
    if n < 2 {
        return (right, None);
    }
    let (test, p_value, call, slower) = rule(points, kept, n - 2..n - 1, n - 1..n, threshold, alpha);
    let regression = call == Call::Slower;
    if regression && !right.contains(&(n - 1)) {
        right.insert(right.len() - 1, n - 1);
    }
    let last = LastTwo {
        slower,
        p_value,
        test: test_of(test),
        regression,
    };
    (right, Some(last))
}

/// The newest segment and the best (lowest) earlier one.
/// The best earlier level: among the earlier segments that can hold one (`holds`), the
/// lowest.
fn newest_and_best(segs: &[Segment], holds: impl Fn(&Segment) -> bool) -> Option<(&Segment, &Segment)> {
    let (newest, earlier) = segs.split_last()?;
    let best = earlier
        .iter()
        .filter(|s| holds(s))
        .min_by(|a, b| a.level.total_cmp(&b.level))?;
    Some((newest, best))
}

/// Whether a segment can be the best earlier level a regression is judged against: the
/// lowest of several levels is the one noise put lowest, and one run, whose samples cannot
/// show the machine's day (a short series: no run-to-run variation is known) or its own
/// spread (fewer than `need` samples), is no level to hold the newest against (issue 66).
fn holds_a_level(s: &Segment, kept: &[Vec<f64>], need: usize) -> bool {
    s.end - s.start >= 2 || kept[s.start].len() >= need
}

fn base(segs: &[Segment]) -> Verdict {
    let newest = segs.last();
    Verdict {
        newest_s: newest.map_or(0.0, |s| s.level),
        newest_runs: newest.map_or(0, |s| s.end - s.start),
        ..Verdict::default()
    }
}

/// A long series' verdict: `run-levels` (module docs).
fn long_verdict(segs: &[Segment], model: &Model, kept: &[Vec<f64>], threshold: f64, alpha: f64) -> Verdict {
    let mut v = base(segs);
    v.run_to_run = Some(model.tau2.sqrt());
    if let Some(newest) = segs.last().filter(|s| s.end - s.start >= 2) {
        let last = newest.end - 1;
        let (run, rest) = (model.level(last, newest.end), model.level(newest.start, last));
        let slower = (run.mean - rest.mean).exp() - 1.0;
        if slower.abs() > threshold {
            let (p_value, _) = model.test(&run, &rest);
            if p_value < alpha && !shows_spread(&kept[last], rest.mean.exp(), SPREAD_SAMPLES) {
                v.newest_off = Some(NewestOff {
                    point: last,
                    slower,
                    p_value,
                    samples: kept[last].len(),
                });
            } else if slower > threshold {
                v.newest_run = Some(NewestRun { slower, p_value });
            }
        }
    }
    let need = spread_samples(model);
    let Some((newest, best)) = newest_and_best(segs, |s| holds_a_level(s, kept, need)) else {
        return v;
    };
    let (p, t) = model.test(
        &model.level(newest.start, newest.end),
        &model.level(best.start, best.end),
    );
    let slower = newest.level / best.level - 1.0;
    v.best_earlier_s = Some(best.level);
    v.best_earlier_runs = Some(best.end - best.start);
    v.slower = Some(slower);
    v.p_value = Some(p);
    v.test = Some(Test::RunLevels);
    v.significant = p < alpha || p.is_nan();
    v.regression = slower > threshold && v.significant && t > 0.0;
    v
}

/// A short series' verdict: `compare`'s rule on the segments' samples (module docs).
fn short_verdict(segs: &[Segment], points: &[Point], kept: &[Vec<f64>], threshold: f64, alpha: f64) -> Verdict {
    let mut v = base(segs);
    let Some((newest, best)) = newest_and_best(segs, |s| holds_a_level(s, kept, SPREAD_SAMPLES)) else {
        return v;
    };
    let (test, p, call, _) = rule(
        points,
        kept,
        best.start..best.end,
        newest.start..newest.end,
        threshold,
        alpha,
    );
    v.best_earlier_s = Some(best.level);
    v.best_earlier_runs = Some(best.end - best.start);
    v.slower = Some(newest.level / best.level - 1.0);
    v.p_value = p;
    v.test = Some(test_of(test));
    v.significant = call != Call::NoChange || p.is_some_and(|p| p < alpha);
    v.regression = call == Call::Slower;
    v
}
