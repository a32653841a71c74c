//! The noise model of one series (issue 56): a run's level (the log of its median) is its
//! segment's level, plus a run-to-run deviation of variance `tau²` (the machine on another
//! day: the same for every run of the series), plus the error of its median over its own
//! samples. So a run's level has variance `v_i = tau² + c(n_i) s_i² / n_i`:
//! - `s_i²` the variance of its samples less their outliers, relative to its median, moderated
//!   toward the series' typical one as an empirical-Bayes prior of [`PRIOR_DF`] degrees of
//!   freedom (as limma moderates gene-wise variances: `(d0 s0² + d s²) / (d0 + d)`, `s0²` the
//!   median of the runs' variances); raw, a run of two samples that happened to agree weighed
//!   hundreds of times more than the others (issue 49). A run of one sample gets the prior.
//! - `c(n) / n` the variance of the median of `n` normal samples over the samples'
//!   ([`MEDIAN_FACTOR`]).
//! - `tau²` estimated robustly, so that the steps themselves do not inflate it: from the
//!   successive differences of the run levels (`d_i = y_{i+1} - y_i`, variance `2 tau² +
//!   w_i + w_{i+1}`), the `tau²` at which the median of `|d_i| / sqrt(2 tau² + w_i +
//!   w_{i+1})` is that of `|N(0, 1)|` (0.6745); zero when the runs agree as their samples
//!   say. A step moves one difference, not the median. Once the fit has placed its steps,
//!   the differences across them are left out and `tau²` is estimated again.
//!
//! Runs that vary more than their samples (41 nightly runs of 10 samples within 1%, the runs
//! 3-5% apart) were weighed by their samples alone: the fit saw noise hundreds of standard
//! errors wide, and no step. With `tau²` in each run's variance the fit's weights and its
//! penalty, and the verdicts' tests, are in the units of what varies from run to run.
//!
//! Fewer than [`MIN_RUNS`] runs (or differences) estimate no `tau²`: those series are judged
//! on their samples, as `compare` judges two reports ([`super::judge`]).
//!
//! Runs of their own spread (issue 66: some quiet, some ten times noisier, one or two samples
//! each, which cannot show it) are not runs alike ([`mixed`]): where the runs' sample
//! variances show a law wider than one pooled variance, or (no run having two samples) the
//! run levels' residuals about the fit's segments do ([`super::spread`]), each run's noise is
//! a mixture of normals under that law (given its own samples, where it has two or more that
//! no outlier rule trimmed), `tau²` is the one that makes the successive differences most
//! likely under those mixtures, a level weighs its runs by their expected precision given
//! how far off they lie, and a test of one run is against its mixture's tails, each part a
//! Student's t of the degrees of freedom of `tau²`'s estimate. On issue 66's seeded mix of
//! such runs (`tests/analysis/history_score.rs`) that took the false steps of 3,000
//! histories from 287 to 109, and averaging the law of residuals over its tails
//! ([`super::spread::Law::of_residuals`]) to 94; the oracle told the law of the spreads, not
//! each run's, puts 67 (`tests/analysis/history_oracle.rs`).
//!
//! Must not: fit or judge; numbers in, variances out.
mod mixed;

use super::spread::{Estimate, Law, Noise};

/// Degrees of freedom of the prior toward which each run's variance is moderated.
pub const PRIOR_DF: f64 = 4.0;

/// Runs (and successive differences, less those across a step, plus one) a series needs
/// before its run-to-run variance is estimated.
pub const MIN_RUNS: usize = 5;

/// `n Var(median of n standard normal samples)` for n = 1..=10, from the order statistics'
/// densities by numerical integration (1 for the mean of two; pi/2 for many samples; an even
/// count's median is the mean of the two middle samples, hence the zigzag).
pub const MEDIAN_FACTOR: [f64; 10] = [1.0, 1.0, 1.346, 1.1928, 1.4342, 1.2885, 1.4731, 1.3455, 1.4949, 1.3834];

/// Rounds of EM for a level under a law.
const LEVEL_ROUNDS: usize = 8;

/// A run this many standard deviations off its segment is set aside by [`Model::refine`].
pub const CUT: f64 = 3.0;

/// `E[Z² | |Z| < CUT]` for a standard normal `Z`.
const TRUNCATED_SQUARE: f64 = 0.973_336_924_662_541_5;

/// The median of `|N(0, 1)|`.
const MAD_NORMAL: f64 = 0.674_489_750_196_081_7;

/// The model of one series.
#[derive(Debug, Clone)]
pub struct Model {
    /// Each run's level: the log of its median.
    pub y: Vec<f64>,
    /// The variance of each run's level from its own samples, `c(n) s² / n` (log units);
    /// all zero when no run has two samples (then `tau2` holds it all).
    pub within: Vec<f64>,
    /// Degrees of freedom of each `within` (its moderated variance's).
    within_df: Vec<f64>,
    /// The run-to-run variance (log units: 0.03² is 3%).
    pub tau2: f64,
    /// The degrees of freedom of `tau2`'s estimate (0: not estimated).
    pub df: f64,
    /// Each run's own estimate of its within-run variance, relative to its median, and its
    /// degrees of freedom (none with one sample).
    own: Vec<Option<Estimate>>,
    /// The variance of each run's median over its samples' variance, `c(n) / n`.
    scale: Vec<f64>,
    /// The law of the runs' variances where they differ ([`super::spread`]): of the within-run
    /// variances, or of the run levels' whole variance.
    pub law: Option<(Law, LawOf)>,
}

/// What a [`Model::law`] is the law of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LawOf {
    /// The runs' within-run variances (relative to their medians), from their samples.
    Samples,
    /// The run levels' whole variance, from their residuals about the fit's segments (no run
    /// has two samples).
    Residuals,
}

/// Runs (or residuals) a law of variances needs.
pub const MIN_LAW: usize = 8;

/// `n Var(median) / Var(sample)` for `n` samples.
fn median_factor(n: usize) -> f64 {
    MEDIAN_FACTOR
        .get(n.max(1) - 1)
        .copied()
        .unwrap_or(std::f64::consts::FRAC_PI_2)
}

impl Model {
    /// The model of runs given as `(median, samples less their outliers)`, oldest first;
    /// `tau2` estimated from all successive differences.
    pub fn new(runs: &[(f64, &[f64])]) -> Model {
        Model::trimmed(runs, &vec![false; runs.len()])
    }

    /// [`Model::new`], where `trimmed` says which runs had samples set aside as outliers: their
    /// variance, of what is left, is no clean estimate of their spread (a few samples that
    /// happened to agree, the others set aside), and tells the law of the runs' spreads
    /// nothing; under a law they take the law's own.
    pub fn trimmed(runs: &[(f64, &[f64])], trimmed: &[bool]) -> Model {
        let y: Vec<f64> = runs.iter().map(|(m, _)| m.ln()).collect();
        // Each run's relative sample variance and its degrees of freedom.
        let var: Vec<Option<(f64, f64)>> = runs
            .iter()
            .map(|(m, s)| {
                (s.len() > 1 && *m > 0.0).then(|| {
                    let n = s.len() as f64;
                    let mean = s.iter().sum::<f64>() / n;
                    let v = s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
                    (v / (m * m), n - 1.0)
                })
            })
            .collect();
        let mut known: Vec<f64> = var.iter().flatten().map(|v| v.0).filter(|v| *v > 0.0).collect();
        known.sort_by(f64::total_cmp);
        let (within, within_df) = if known.is_empty() {
            (vec![0.0; runs.len()], vec![f64::INFINITY; runs.len()])
        } else {
            let prior = crate::util::stats::median(&known);
            var.iter()
                .zip(runs)
                .map(|(v, (_, s))| {
                    let (s2, d) = match v {
                        Some((s2, d)) => ((PRIOR_DF * prior + d * s2) / (PRIOR_DF + d), PRIOR_DF + d),
                        None => (prior, PRIOR_DF),
                    };
                    let n = s.len().max(1);
                    (median_factor(n) * s2 / n as f64, d)
                })
                .unzip()
        };
        let own: Vec<Option<Estimate>> = var
            .iter()
            .zip(trimmed)
            .map(|(v, t)| v.filter(|v| v.0 > 0.0 && !t))
            .collect();
        let scale: Vec<f64> = runs
            .iter()
            .map(|(_, s)| median_factor(s.len().max(1)) / s.len().max(1) as f64)
            .collect();
        let own_estimates: Vec<Estimate> = own.iter().flatten().copied().collect();
        let law = Law::estimate(&own_estimates, MIN_LAW).map(|l| (l, LawOf::Samples));
        // Under a law, a run's own part is its posterior mean under the law.
        let within = match &law {
            Some((l, _)) => own
                .iter()
                .zip(&scale)
                .map(|(o, c)| c * l.given(*o).iter().map(|(w, v)| w * v).sum::<f64>())
                .collect(),
            None => within,
        };
        let mut model = Model {
            y,
            within,
            within_df,
            tau2: 0.0,
            df: 0.0,
            own,
            scale,
            law,
        };
        model.estimate();
        model
    }

    /// `tau2` from the successive differences of the run levels (module docs), for the
    /// first fit.
    fn estimate(&mut self) {
        let pairs = self.differences(&[]);
        self.df = 0.0;
        self.tau2 = 0.0;
        if pairs.len() + 1 < MIN_RUNS {
            return;
        }
        // A median of m absolute differences is worth 37% of a variance from m values (its
        // efficiency at the normal).
        self.df = 0.37 * pairs.len() as f64;
        self.tau2 = median_estimate(&pairs);
        if matches!(self.law, Some((_, LawOf::Samples))) {
            self.tau2 = self.tau_under_law(&[]);
            self.df = 2.0 / 3.0 * pairs.len() as f64;
        }
    }

    /// `|d_i|` and `w_i + w_{i+1}` of each successive difference that crosses none of the
    /// steps `right` (the segments' exclusive right bounds, sorted).
    fn differences(&self, right: &[usize]) -> Vec<(f64, f64)> {
        (1..self.y.len())
            .filter(|i| right.binary_search(i).is_err())
            .map(|i| ((self.y[i] - self.y[i - 1]).abs(), self.within[i] + self.within[i - 1]))
            .collect()
    }

    /// `tau2` again, once the fit has placed its steps (`right`: the segments' exclusive
    /// right bounds), from the successive differences within segments: first by their
    /// median (as for the first fit, now without the steps), then, a difference more than
    /// [`CUT`] standard deviations wide under that set aside (a run far off, or a step the
    /// fit did not place), the `t` at which the mean of `d_i² / (2 t + w_i + w_{i+1})` is
    /// that of a normal's square truncated at [`CUT`]. A mean of squares, not a median: its
    /// degrees of freedom are two thirds of the differences kept (the efficiency of
    /// successive differences), not 37%; and a step the fit missed moves one difference,
    /// where residuals about the segments' levels would all move. Kept as it is with fewer
    /// than [`MIN_RUNS`] differences.
    pub fn refine(&mut self, right: &[usize]) {
        if !self.estimated() {
            return;
        }
        let pairs = self.differences(right);
        if pairs.len() < MIN_RUNS {
            return;
        }
        let pilot = median_estimate(&pairs);
        let kept: Vec<(f64, f64)> = pairs
            .into_iter()
            .filter(|(d, w)| d * d / (2.0 * pilot + w).max(1e-300) <= CUT * CUT)
            .collect();
        if kept.len() < MIN_RUNS {
            return;
        }
        let target = kept.len() as f64 * TRUNCATED_SQUARE;
        let sum = |t: f64| -> f64 { kept.iter().map(|(d, w)| d * d / (2.0 * t + w).max(1e-300)).sum() };
        self.tau2 = if sum(0.0) <= target {
            0.0
        } else {
            // The sum falls as t grows: find where it is below target, then bisect.
            let mut hi = 1e-6;
            while sum(hi) > target && hi < 1e6 {
                hi *= 4.0;
            }
            bisect(0.0, hi, |t| sum(t) > target)
        };
        self.df = 2.0 / 3.0 * kept.len() as f64;
        if matches!(self.law, Some((_, LawOf::Samples))) {
            self.tau2 = self.tau_under_law(right);
        }
    }

    /// Whether `tau2` was estimated (enough runs).
    pub fn estimated(&self) -> bool {
        self.df > 0.0
    }

    /// The variance of run `i`'s level (under a law, the square of its noise's scale).
    pub fn var(&self, i: usize) -> f64 {
        match &self.law {
            None => self.tau2 + self.within[i],
            Some(_) => self.noise(i).scale().powi(2),
        }
    }

    /// Each run's weight in the fit: one over its level's standard deviation.
    pub fn weights(&self) -> Vec<f64> {
        (0..self.y.len()).map(|i| 1.0 / self.var(i).sqrt().max(1e-12)).collect()
    }

    /// The level of runs `l..r`: the inverse-variance weighted mean of their levels, a run
    /// more than [`CUT`] standard deviations off their weighted median set aside, with its
    /// variance split into its parts (for the degrees of freedom of a test).
    pub fn level(&self, l: usize, r: usize) -> Level {
        if self.law.is_some() {
            return self.mixed_level(l, r);
        }
        let inv: Vec<f64> = (l..r).map(|i| 1.0 / self.var(i).max(1e-300)).collect();
        let sd: Vec<f64> = inv.iter().map(|w| w.sqrt()).collect();
        let center = weighted_median(&self.y[l..r], &sd);
        let kept: Vec<(usize, f64)> = (l..r)
            .zip(inv)
            .filter(|(i, w)| (self.y[*i] - center).abs() * w.sqrt() <= CUT)
            .collect();
        let kept = if kept.is_empty() {
            (l..r).map(|i| (i, 1.0 / self.var(i).max(1e-300))).collect()
        } else {
            kept
        };
        let total: f64 = kept.iter().map(|k| k.1).sum();
        let mean = kept.iter().map(|(i, w)| w * self.y[*i]).sum::<f64>() / total;
        let c: Vec<f64> = kept.iter().map(|k| k.1 / total).collect();
        let tau_part = self.tau2 * c.iter().map(|c| c * c).sum::<f64>();
        let within_parts: Vec<(f64, f64)> = kept
            .iter()
            .zip(&c)
            .map(|((i, _), c)| (c * c * self.within[*i], self.within_df[*i]))
            .collect();
        Level {
            mean,
            runs: r - l,
            noise: Noise::normal(tau_part + within_parts.iter().map(|p| p.0).sum::<f64>()),
            tau_part,
            within_parts,
        }
    }

    /// `-2 log L` of the run levels for segments `right` (exclusive right bounds) at
    /// run-to-run variance `t`, each segment at its inverse-variance weighted mean.
    fn deviance(&self, right: &[usize], t: f64) -> f64 {
        let mut total = 0.0;
        let mut l = 0;
        for &r in right {
            let v: Vec<f64> = (l..r).map(|i| (t + self.within[i]).max(1e-300)).collect();
            let all: f64 = v.iter().map(|v| 1.0 / v).sum();
            let mean = (l..r).zip(&v).map(|(i, v)| self.y[i] / v).sum::<f64>() / all;
            total += (l..r)
                .zip(&v)
                .map(|(i, v)| v.ln() + (self.y[i] - mean).powi(2) / v)
                .sum::<f64>();
            l = r;
        }
        total
    }

    /// The profile of segments `right`: the least `-2 log L` over the run-to-run variance,
    /// and the variance that gives it; `None` when the segments leave no run to estimate it
    /// from (every segment one run).
    pub fn profile(&self, right: &[usize]) -> Option<(f64, f64)> {
        if right.len() >= self.y.len() {
            return None;
        }
        let (min, max) = self
            .y
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        // A grid over log t from 1e-8 (0.01%²) to the squared range, then golden section
        // between the best point's neighbours.
        let (lo, hi) = (1e-8f64.ln(), ((max - min).powi(2)).max(1e-6).ln());
        const GRID: usize = 48;
        let at = |x: f64| self.deviance(right, x.exp());
        let xs: Vec<f64> = (0..=GRID).map(|i| lo + (hi - lo) * i as f64 / GRID as f64).collect();
        let (best, _) = xs
            .iter()
            .enumerate()
            .map(|(i, x)| (i, at(*x)))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let (mut a, mut b) = (xs[best.saturating_sub(1)], xs[(best + 1).min(GRID)]);
        let g = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..40 {
            let (c, d) = (b - g * (b - a), a + g * (b - a));
            if at(c) <= at(d) {
                b = d;
            } else {
                a = c;
            }
        }
        let x = (a + b) / 2.0;
        let zero = self.deviance(right, 0.0);
        Some(if zero.is_finite() && zero <= at(x) {
            (zero, 0.0)
        } else {
            (at(x), x.exp())
        })
    }

    /// Take the run-to-run variance that segments `right` make most likely ([`Self::profile`]),
    /// with their residual degrees of freedom (runs less segments).
    pub fn settle(&mut self, right: &[usize]) {
        if let Some((_, t)) = self.profile(right) {
            self.tau2 = t;
            self.df = (self.y.len() - right.len()) as f64;
        }
    }

    /// The two-sided p-value of `a`'s level against `b`'s (Student's t on the difference,
    /// Welch-Satterthwaite degrees of freedom over `tau2`'s and each run's own), and the t.
    pub fn test(&self, a: &Level, b: &Level) -> (f64, f64) {
        let tau = a.tau_part + b.tau_part;
        let parts = a.within_parts.iter().chain(&b.within_parts);
        // No difference is told below a timer's resolution, the fit's floor of a run's
        // variance: runs that do not differ at all (every variance zero) differ in the last
        // bits of their weighted means, which is no step (issue 64).
        let var = (tau + parts.clone().map(|p| p.0).sum::<f64>()).max(super::steps::MIN_VARIANCE);
        let denom = tau * tau / self.df.max(1.0) + parts.map(|(v, d)| v * v / d).sum::<f64>();
        let df = if denom > 0.0 { var * var / denom } else { f64::INFINITY };
        let d = a.mean - b.mean;
        let t = d / var.sqrt();
        // Each level's noise (one run's under a law: a mixture, heavy-tailed), convolved.
        let p: f64 = match (a.noise.is_normal(), b.noise.is_normal()) {
            (true, true) => Noise::normal(var).two_sided_p(d, 0.0, df),
            (false, true) => a.noise.two_sided_p(d, b.noise.mean_var(), df),
            (true, false) => b.noise.two_sided_p(d, a.noise.mean_var(), df),
            (false, false) => a
                .noise
                .parts
                .iter()
                .map(|&(w, v)| w * b.noise.two_sided_p(d, v, df))
                .sum(),
        };
        (p, t)
    }
}

/// A segment's level by [`Model::level`].
#[derive(Debug, Clone)]
pub struct Level {
    /// The weighted mean of its runs' levels (log units).
    pub mean: f64,
    /// How many runs hold it.
    pub runs: usize,
    /// `tau2`'s part of its variance.
    pub tau_part: f64,
    /// Each run's own part and its degrees of freedom.
    pub within_parts: Vec<(f64, f64)>,
    /// How the level varies: a normal, or for one run under a law its mixture.
    pub noise: Noise,
}

impl Level {
    /// Its variance.
    pub fn var(&self) -> f64 {
        self.tau_part + self.within_parts.iter().map(|p| p.0).sum::<f64>()
    }
}

/// The `t` at which the median of `|d| / sqrt(2 t + w)` over `pairs` (`(|d|, w)`) is that
/// of `|N(0, 1)|`; 0 when it is below that at 0.
fn median_estimate(pairs: &[(f64, f64)]) -> f64 {
    // The median falls as t grows: bisect for MAD_NORMAL.
    let at = |t: f64| {
        let mut z: Vec<f64> = pairs
            .iter()
            .map(|(d, w)| d / (2.0 * t + w).max(1e-300).sqrt())
            .collect();
        median(&mut z)
    };
    let mut d: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let scale = median(&mut d) / MAD_NORMAL;
    if scale == 0.0 || at(0.0) <= MAD_NORMAL {
        return 0.0;
    }
    // At scale² / 2 the median is at most MAD_NORMAL (each ratio is at most d / scale).
    bisect(0.0, scale * scale / 2.0, |t| at(t) > MAD_NORMAL)
}

/// The point where `above` turns false on `[lo, hi]` (it is true at lo, false at hi), by
/// bisection to double precision.
fn bisect(mut lo: f64, mut hi: f64, above: impl Fn(f64) -> bool) -> f64 {
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if above(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The weighted median (the mean of the two middle values when the weight splits evenly).
fn weighted_median(y: &[f64], w: &[f64]) -> f64 {
    let mut items: Vec<(f64, f64)> = y.iter().copied().zip(w.iter().copied()).collect();
    items.sort_by(|a, b| a.0.total_cmp(&b.0));
    let half = w.iter().sum::<f64>() / 2.0;
    let mut acc = 0.0;
    for (i, (v, wv)) in items.iter().enumerate() {
        acc += wv;
        if acc > half {
            return *v;
        }
        if acc == half {
            return items.get(i + 1).map_or(*v, |n| (v + n.0) / 2.0);
        }
    }
    items.last().map_or(0.0, |x| x.0)
}

/// The median, by selection (the mean of the two middle values for an even count).
fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let m = v.len() / 2;
    let odd = v.len() % 2 == 1;
    let (lo, hi, _) = v.select_nth_unstable_by(m, f64::total_cmp);
    if odd {
        *hi
    } else {
        (lo.iter().copied().fold(f64::NEG_INFINITY, f64::max) + *hi) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded normal noise (SplitMix64 and Box-Muller).
    type Rng = crate::util::shuffle::SplitMix64;

    /// `levels.len()` runs of `k` samples: each run off its level by `between`, each
    /// sample off its run by `within` (relative standard deviations).
    fn series(levels: &[f64], k: usize, between: f64, within: f64, seed: u64) -> Vec<(f64, Vec<f64>)> {
        let mut rng = Rng::new(seed);
        levels
            .iter()
            .map(|l| {
                let run = l * (1.0 + between * rng.gauss());
                let s: Vec<f64> = (0..k).map(|_| run * (1.0 + within * rng.gauss())).collect();
                (crate::util::stats::median(&s), s)
            })
            .collect()
    }

    fn model(runs: &[(f64, Vec<f64>)]) -> Model {
        let r: Vec<(f64, &[f64])> = runs.iter().map(|(m, s)| (*m, &s[..])).collect();
        Model::new(&r)
    }

    #[test]
    fn runs_that_vary_more_than_their_samples_get_a_run_to_run_variance() {
        // Issue 56: 41 nightly runs of 10 samples within 1%, the runs 3-5% apart, and two
        // steps: the steps do not inflate the estimate, the samples' spread is not taken for it.
        let levels: Vec<f64> = (0..41)
            .map(|i| match i {
                0..16 => 40.0,
                16..22 => 49.0,
                _ => 57.0,
            })
            .collect();
        let m = model(&series(&levels, 10, 0.04, 0.003, 56));
        let tau = m.tau2.sqrt();
        assert!((0.025..0.06).contains(&tau), "{tau}");
        let mut again = m.clone();
        again.refine(&[16, 22, 41]);
        assert!((0.025..0.055).contains(&again.tau2.sqrt()), "{}", again.tau2.sqrt());
        assert!(again.df > m.df, "{} {}", again.df, m.df);
    }

    #[test]
    fn runs_that_agree_as_their_samples_say_have_none() {
        let levels = vec![1.0; 30];
        let m = model(&series(&levels, 5, 0.0, 0.02, 7));
        // Within-run noise alone: the estimate is small beside a run median's own 1.1%
        // (5 samples of 2%), which the samples already account for.
        assert!(m.tau2.sqrt() < 0.008, "{}", m.tau2.sqrt());
        assert!(m.estimated());
        // Four runs estimate nothing: judged on their samples.
        assert!(!model(&series(&levels[..4], 5, 0.0, 0.02, 7)).estimated());
    }

    #[test]
    fn a_run_whose_two_samples_agree_is_not_weighed_up_a_hundredfold() {
        // Issue 49: raw 1/SE of two samples gave such a run 150 times the median weight.
        let mut runs: Vec<(f64, Vec<f64>)> = (0..20)
            .map(|i| (1.0, vec![1.0 - 0.01 - 0.001 * i as f64, 1.0 + 0.01 + 0.001 * i as f64]))
            .collect();
        runs[3].1 = vec![0.9999, 1.0001];
        let m = model(&runs);
        let w = m.weights();
        let mut sorted = w.clone();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted[10];
        assert!(w[3] / mid < 1.25, "{w:?}");
        // A noisy run still counts less.
        runs[4].1 = vec![0.5, 1.5];
        let w = model(&runs).weights();
        assert!(w[4] / mid < 0.2, "{w:?}");
    }

    #[test]
    fn the_median_factor_is_the_variance_of_a_median() {
        let mut rng = Rng::new(3);
        for n in [3usize, 4, 5, 10] {
            let draws = 200_000;
            let var: f64 = (0..draws)
                .map(|_| {
                    let s: Vec<f64> = (0..n).map(|_| rng.gauss()).collect();
                    crate::util::stats::median(&s).powi(2)
                })
                .sum::<f64>()
                / draws as f64;
            let factor = var * n as f64;
            assert!((factor / MEDIAN_FACTOR[n - 1] - 1.0).abs() < 0.02, "n {n}: {factor}");
        }
    }

    #[test]
    fn a_level_sets_a_run_far_off_aside_and_a_test_allows_for_the_run_to_run_variance() {
        let levels = vec![1.0; 24];
        let mut runs = series(&levels, 5, 0.02, 0.002, 11);
        runs[5].0 *= 1.5;
        for s in &mut runs[5].1 {
            *s *= 1.5;
        }
        let m = model(&runs);
        let level = m.level(0, 12);
        assert!(level.mean.abs() < 0.02, "{level:?}");
        // The second half of 12 runs 1% and 10% slower, the runs varying by 2%: 10% is
        // significant, 1% is not, though each run's samples (0.2%) would call it so.
        let shifted = |f: f64| -> Model {
            let r: Vec<(f64, Vec<f64>)> = runs
                .iter()
                .enumerate()
                .map(|(i, (md, s))| {
                    let f = if i >= 12 { f } else { 1.0 };
                    (md * f, s.iter().map(|x| x * f).collect())
                })
                .collect();
            model(&r)
        };
        let m = shifted(1.01);
        let (p, t) = m.test(&m.level(12, 24), &m.level(0, 12));
        assert!(p > 0.05, "{p} {t}");
        let m = shifted(1.1);
        let (p, t) = m.test(&m.level(12, 24), &m.level(0, 12));
        assert!(p < 1e-4 && t > 0.0, "{p} {t}");
    }

    #[test]
    fn weighted_median_splits_evenly_between_the_middle_values() {
        assert_eq!(weighted_median(&[3.0, 1.0, 2.0], &[1.0, 1.0, 1.0]), 2.0);
        assert_eq!(weighted_median(&[1.0, 2.0], &[1.0, 1.0]), 1.5);
        assert_eq!(weighted_median(&[1.0, 2.0, 10.0], &[1.0, 1.0, 5.0]), 10.0);
    }
}
