//! The verdict of one series: its newest segment against its best earlier one, the drift
//! within its newest segment, and whether a series of two runs splits.
//!
//! What is tested is what is consistent across runs, never a pool of raw samples where a
//! per-run hiccup could dominate:
//! - **Step** (newest segment against the best earlier one). Each run's median is one
//!   observation: when both segments have at least two runs, Welch's t-test on their run
//!   medians (`run-medians`). Samples of one run are not independent draws of the run-to-run
//!   variation (same process, same thermal state), so pooling them would both understate the
//!   noise between runs and let one hiccup per run swamp the variance: eight nightly runs,
//!   every run's median 49% slower from the fifth on, one sample of each run a hiccup, gave
//!   p = 0.38 on the pooled samples (issue 49). A segment of one run has no run-to-run
//!   spread to estimate, so then the test falls back to the within-run evidence: Welch's test
//!   on the two segments' samples, each run's outliers (hyperfine's ten-MAD rule, the ones
//!   `run` counts) set aside (`samples`); with fewer than two samples a side, a difference
//!   larger than both segments' mean absolute deviation (`spread`).
//! - **Short series** (fewer than [`SHORT_SERIES`] runs: a nightly job's first days). Two
//!   runs are split (asv splits two at almost any difference, 0.1% of the level being its
//!   noise floor; the fit alone never split fewer than three), and three or four are fitted;
//!   then each step must be carried by within-run evidence, or its neighbours are merged:
//!   at least [`MIN_SAMPLES`] samples each side after setting outliers aside, and Welch's
//!   test on them below `alpha`. With so few runs the fit's noise model (an AR(1) on two or
//!   three residuals) says nothing, and asv then splits flat noise.
//! - **Drift**. A slow-down in many small steps, none of which the fit can tell from noise,
//!   is a monotone trend inside the newest segment: the Mann-Kendall test (rank-based: one
//!   outlying run moves it by one rank) on the segment's run medians, at least
//!   [`MIN_DRIFT_RUNS`] of them, and the Theil-Sen slope (the median of the pairwise slopes)
//!   times the segment's length as its size, relative to the Theil-Sen line's start. A
//!   series is judged twice (step and drift), so the drift's test is held to `alpha / 2`
//!   (Bonferroni): the two together keep the series' false-alarm rate at `alpha`.
//!
//! A verdict is a regression when slower beyond the threshold and significant at `alpha`;
//! slower beyond the threshold but not significant is said in those words, never "ok".
//!
//! Must not: fit (that is [`super::steps`]) or format text (that is [`super::render`]).
use serde::Serialize;

use super::steps::Segment;
use super::Point;
use crate::analysis::compare::welch::welch_t_test;
use crate::util::stats::without_outliers;

/// Samples each side of a short series' step needs (outliers set aside).
pub const MIN_SAMPLES: usize = 3;

/// Series shorter than this need within-run evidence for each step.
pub const SHORT_SERIES: usize = 5;

/// Runs the newest segment needs before a drift is judged.
pub const MIN_DRIFT_RUNS: usize = 6;

/// How a step's significance was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// Welch's t-test on the two segments' run medians (both have two runs or more).
    RunMedians,
    /// Welch's t-test on the two segments' samples, each run's outliers set aside (a
    /// segment of one run).
    Samples,
    /// Too few samples for a test: a difference beyond both segments' mean absolute
    /// deviation.
    Spread,
}

/// A monotone trend within the newest segment.
#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    /// First point of the window (the newest segment's).
    pub first_point: usize,
    /// Last point of the window, inclusive.
    pub last_point: usize,
    /// The Theil-Sen line's change across the window, relative to its start (0.2 = 20%
    /// slower at the end than at the start).
    pub change: f64,
    /// The Mann-Kendall test's two-sided p-value on the window's run medians.
    pub p_value: f64,
    /// Slower beyond the threshold and p < alpha: a regression.
    pub regression: bool,
}

/// The step test's outcome.
pub struct StepTest {
    pub p_value: Option<f64>,
    pub significant: bool,
    pub test: Test,
}

/// The runs `points[s.start..s.end]`.
fn runs<'a>(points: &'a [Point], s: &Segment) -> &'a [Point] {
    &points[s.start..s.end]
}

/// Each run's samples less its outliers, pooled.
fn kept_samples(points: &[Point]) -> Vec<f64> {
    points.iter().flat_map(|p| without_outliers(&p.samples_s)).collect()
}

/// Is `newest` significantly different from `best` (module docs)?
pub fn step_test(newest: &Segment, best: &Segment, points: &[Point], alpha: f64) -> StepTest {
    let (a, b) = (runs(points, newest), runs(points, best));
    if a.len() >= 2 && b.len() >= 2 {
        let ma: Vec<f64> = a.iter().map(|p| p.median_s).collect();
        let mb: Vec<f64> = b.iter().map(|p| p.median_s).collect();
        if let Some(w) = welch_t_test(&ma, &mb) {
            return StepTest {
                p_value: Some(w.p_value),
                significant: w.p_value < alpha || w.p_value.is_nan(),
                test: Test::RunMedians,
            };
        }
    }
    match welch_t_test(&kept_samples(a), &kept_samples(b)) {
        Some(w) => StepTest {
            p_value: Some(w.p_value),
            significant: w.p_value < alpha || w.p_value.is_nan(),
            test: Test::Samples,
        },
        None => StepTest {
            p_value: None,
            significant: (newest.median - best.median).abs() > newest.l1_error.max(best.l1_error),
            test: Test::Spread,
        },
    }
}

/// The p-value of Welch's test between two neighbouring segments' samples (outliers set
/// aside), `None` below [`MIN_SAMPLES`] a side.
fn evidence(points: &[Point], l: usize, m: usize, r: usize) -> Option<f64> {
    let (a, b) = (kept_samples(&points[l..m]), kept_samples(&points[m..r]));
    if a.len() < MIN_SAMPLES || b.len() < MIN_SAMPLES {
        return None;
    }
    welch_t_test(&a, &b).map(|w| w.p_value)
}

/// A short series' candidate steps (exclusive right bounds, the last `points.len()`) less
/// those within-run evidence does not carry (module docs): the least supported merged first,
/// until every step left has p < `alpha`.
pub fn evidenced(mut right: Vec<usize>, points: &[Point], alpha: f64) -> Vec<usize> {
    while right.len() > 1 {
        let mut weakest: Option<(f64, usize)> = None;
        for j in 0..right.len() - 1 {
            let l = if j == 0 { 0 } else { right[j - 1] };
            let p = evidence(points, l, right[j], right[j + 1]).unwrap_or(f64::INFINITY);
            if p >= alpha && weakest.is_none_or(|(q, _)| p > q) {
                weakest = Some((p, j));
            }
        }
        match weakest {
            Some((_, j)) => {
                right.remove(j);
            }
            None => break,
        }
    }
    right
}

/// The drift of the newest segment (module docs), `None` below [`MIN_DRIFT_RUNS`] runs.
pub fn drift(newest: &Segment, points: &[Point], threshold: f64, alpha: f64) -> Option<Drift> {
    let y: Vec<f64> = runs(points, newest).iter().map(|p| p.median_s).collect();
    if y.len() < MIN_DRIFT_RUNS {
        return None;
    }
    let (slope, start) = theil_sen(&y);
    let change = if start > 0.0 {
        slope * (y.len() - 1) as f64 / start
    } else {
        0.0
    };
    let p_value = mann_kendall_p(&y);
    Some(Drift {
        first_point: newest.start,
        last_point: newest.end - 1,
        change,
        p_value,
        regression: change > threshold && p_value < alpha / 2.0,
    })
}

/// The Theil-Sen line of `y` against its index: `(slope, value at index 0)`, the slope the
/// median of the pairwise slopes and the intercept the median of `y_i - slope * i`.
pub fn theil_sen(y: &[f64]) -> (f64, f64) {
    let n = y.len();
    let mut slopes = Vec::with_capacity(n * (n.saturating_sub(1)) / 2);
    for i in 0..n {
        for j in i + 1..n {
            slopes.push((y[j] - y[i]) / (j - i) as f64);
        }
    }
    if slopes.is_empty() {
        return (0.0, y.first().copied().unwrap_or(0.0));
    }
    let slope = median_in_place(&mut slopes);
    let mut rest: Vec<f64> = y.iter().enumerate().map(|(i, v)| v - slope * i as f64).collect();
    (slope, median_in_place(&mut rest))
}

/// The median, by selection (O(n), not a sort: the drift's pairwise slopes are many).
fn median_in_place(v: &mut [f64]) -> f64 {
    let m = v.len() / 2;
    let (_, hi, _) = v.select_nth_unstable_by(m, f64::total_cmp);
    let hi = *hi;
    if v.len() % 2 == 1 {
        hi
    } else {
        let lo = v[..m].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo + hi) / 2.0
    }
}

/// The two-sided p-value of the Mann-Kendall trend test: `S = sum sign(y_j - y_i)` over
/// `i < j`, its variance corrected for ties, the normal approximation with a continuity
/// correction.
pub fn mann_kendall_p(y: &[f64]) -> f64 {
    let n = y.len();
    if n < 3 {
        return 1.0;
    }
    let mut s: i64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            s += match y[j].total_cmp(&y[i]) {
                std::cmp::Ordering::Greater => 1,
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
            };
        }
    }
    let mut sorted = y.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut k = 0;
    while k < n {
        let mut e = k + 1;
        while e < n && sorted[e] == sorted[k] {
            e += 1;
        }
        let t = (e - k) as f64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
        k = e;
    }
    let nf = n as f64;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    if var <= 0.0 || s == 0 {
        return 1.0;
    }
    let z = (s.abs() as f64 - 1.0) / var.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// The complementary error function (Numerical Recipes' `erfcc`, relative error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mann_kendall_matches_its_formula() {
        // [1, 2, 3, 4, 5, 6]: S 15, variance 6 * 5 * 17 / 18, p = erfc(14 / sqrt(2 var)).
        let p = mann_kendall_p(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert!((p - 0.008_534).abs() < 1e-4, "{p}");
        // A tie: [1, 2, 2, 3, 4]: S 9, variance (300 - 18) / 18 (tie-corrected), p 0.04326.
        let p = mann_kendall_p(&[1.0, 2.0, 2.0, 3.0, 4.0]);
        assert!((p - 0.043_263).abs() < 1e-4, "{p}");
        assert_eq!(mann_kendall_p(&[1.0, 1.0, 1.0, 1.0]), 1.0);
    }

    #[test]
    fn theil_sen_ignores_one_outlying_run() {
        let mut y: Vec<f64> = (0..10).map(|i| 1.0 + 0.01 * i as f64).collect();
        y[4] = 5.0;
        let (slope, start) = theil_sen(&y);
        assert!(
            (slope - 0.01).abs() < 1e-12 && (start - 1.0).abs() < 1e-12,
            "{slope} {start}"
        );
    }

    #[test]
    fn erfc_is_close() {
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122),
            (1.0, 0.157_299_207),
            (-1.0, 1.842_700_793),
            (2.5, 0.000_406_952),
        ] {
            assert!(
                (erfc(x) - want).abs() < 2e-7 * want.max(1e-3) * 10.0,
                "{x}: {}",
                erfc(x)
            );
        }
    }
}
