//! The model of a series whose runs differ in their own spread (issue 66): each run's noise a
//! mixture of normals under the law of the runs' variances ([`crate::analysis::history::spread`]),
//! the run-to-run variance under that law, the law of the run levels' residuals where no run
//! has two samples, and a level that weighs its runs by their expected precisions.
//!
//! Must not: fit or judge (as [`super`]).
use super::{weighted_median, LawOf, Level, Model, LEVEL_ROUNDS, MIN_LAW, MIN_RUNS};
use crate::analysis::history::spread::{Law, Noise};

impl Model {
    /// Under a law of the within-run variances, the run-to-run variance that makes the
    /// successive differences of the run levels (those across none of the steps `right`)
    /// most likely, each difference's noise the two runs' mixtures convolved: a median of
    /// ratios, as without a law, is no estimate where some runs are ten times noisier than
    /// others (pairs with a noisy run, most of them, say nothing of a small variance).
    pub(super) fn tau_under_law(&self, right: &[usize]) -> f64 {
        let Some((law, LawOf::Samples)) = &self.law else {
            return self.tau2;
        };
        // Each run's within parts: (weight, variance of its median), the negligible dropped.
        let parts: Vec<Vec<(f64, f64)>> = (0..self.y.len())
            .map(|i| {
                law.given(self.own[i])
                    .into_iter()
                    .filter(|(w, _)| *w > 1e-3)
                    .map(|(w, v)| (w, self.scale[i] * v))
                    .collect()
            })
            .collect();
        let diffs: Vec<(f64, Vec<(f64, f64)>)> = (1..self.y.len())
            .filter(|i| right.binary_search(i).is_err())
            .map(|i| {
                let d = self.y[i] - self.y[i - 1];
                // The pairs of parts, pooled in bins of a fifth of a factor of ten in variance.
                let mut bins: std::collections::BTreeMap<i64, (f64, f64)> = std::collections::BTreeMap::new();
                for &(wa, va) in &parts[i] {
                    for &(wb, vb) in &parts[i - 1] {
                        let b = bins.entry((5.0 * (va + vb).log10()).floor() as i64).or_default();
                        *b = (b.0 + wa * wb, b.1 + wa * wb * (va + vb));
                    }
                }
                (d, bins.into_values().map(|(w, wv)| (w, wv / w)).collect())
            })
            .collect();
        if diffs.len() + 1 < MIN_RUNS {
            return self.tau2;
        }
        let neg_ll = |t: f64| -> f64 {
            diffs
                .iter()
                .map(|(d, pair)| {
                    let p: f64 = pair
                        .iter()
                        .map(|&(w, v)| {
                            let v = (2.0 * t + v).max(1e-16);
                            w * (-d * d / (2.0 * v)).exp() / v.sqrt()
                        })
                        .sum();
                    -p.max(1e-300).ln()
                })
                .sum()
        };
        // Over log t from 1e-8 (0.01%²) to the differences' mean square, then golden section;
        // zero where that is no worse.
        let top = diffs.iter().map(|(d, _)| d * d).sum::<f64>() / diffs.len() as f64;
        let (lo, hi) = (1e-8f64.ln(), top.max(2e-8).ln());
        const GRID: usize = 16;
        let xs: Vec<f64> = (0..=GRID).map(|i| lo + (hi - lo) * i as f64 / GRID as f64).collect();
        let best = xs
            .iter()
            .enumerate()
            .map(|(i, x)| (i, neg_ll(x.exp())))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(0, |b| b.0);
        let (mut a, mut b) = (xs[best.saturating_sub(1)], xs[(best + 1).min(GRID)]);
        let g = (5f64.sqrt() - 1.0) / 2.0;
        for _ in 0..20 {
            let (c, d) = (b - g * (b - a), a + g * (b - a));
            if neg_ll(c.exp()) <= neg_ll(d.exp()) {
                b = d;
            } else {
                a = c;
            }
        }
        let t = ((a + b) / 2.0).exp();
        if neg_ll(0.0) <= neg_ll(t) {
            0.0
        } else {
            t
        }
    }

    /// Run `i`'s noise: a normal of its variance, or under a law a mixture.
    pub fn noise(&self, i: usize) -> Noise {
        match &self.law {
            None => Noise::normal(self.tau2 + self.within[i]),
            Some((l, LawOf::Samples)) => l.within_noise(self.own[i], self.scale[i], self.tau2),
            Some((l, LawOf::Residuals)) => l.level_noise(),
        }
    }

    /// Every run's noise.
    pub fn noises(&self) -> Vec<Noise> {
        (0..self.y.len()).map(|i| self.noise(i)).collect()
    }

    /// Whether some run's noise is a mixture (the fit must take [`super::grid`]'s form).
    pub fn mixed(&self) -> bool {
        self.law.is_some()
    }

    /// Where no run has two samples, the law of the run levels' whole variance that their
    /// residuals about segments `right` show (each run against the others of its segment,
    /// weighed by their noise; segments of one run tell nothing), or none where they are
    /// alike ([`super::spread`]).
    pub fn residual_law(&mut self, right: &[usize]) {
        if self.own.iter().any(Option::is_some) || !self.estimated() {
            return;
        }
        let noise = self.noises();
        let mut obs = Vec::new();
        let mut l = 0;
        for &r in right {
            if r - l >= 2 {
                let m = self.level(l, r).mean;
                let w: Vec<f64> = (l..r).map(|i| noise[i].precision_at(self.y[i] - m)).collect();
                let (sw, swy) = (l..r)
                    .zip(&w)
                    .fold((0.0, 0.0), |(a, b), (i, w)| (a + w, b + w * self.y[i]));
                for (i, wi) in (l..r).zip(&w) {
                    let others = sw - wi;
                    if others > 0.0 {
                        let e = self.y[i] - (swy - wi * self.y[i]) / others;
                        // `e` varies by the run's variance and its segment's others' mean's.
                        obs.push(e * (others / sw).sqrt());
                    }
                }
            }
            l = r;
        }
        self.law = Law::of_residuals(&obs, MIN_LAW).map(|l| (l, LawOf::Residuals));
    }

    /// [`Self::level`] under a law: each run weighed by its expected precision given how far
    /// off the level it lies (the EM of a scale mixture, from the weighted median); one run's
    /// level varies as its noise does.
    pub(super) fn mixed_level(&self, l: usize, r: usize) -> Level {
        let noise: Vec<Noise> = (l..r).map(|i| self.noise(i)).collect();
        if r - l == 1 {
            let n = noise.into_iter().next().expect("one run");
            let tau_part = self.tau2.min(n.mean_var());
            return Level {
                mean: self.y[l],
                runs: 1,
                within_parts: vec![(n.mean_var() - tau_part, f64::INFINITY)],
                tau_part,
                noise: n,
            };
        }
        let sd: Vec<f64> = noise.iter().map(|n| 1.0 / n.scale()).collect();
        let mut mean = weighted_median(&self.y[l..r], &sd);
        let mut w: Vec<f64> = Vec::new();
        for _ in 0..LEVEL_ROUNDS {
            w = (l..r)
                .zip(&noise)
                .map(|(i, n)| n.precision_at(self.y[i] - mean))
                .collect();
            mean = (l..r).zip(&w).map(|(i, w)| w * self.y[i]).sum::<f64>() / w.iter().sum::<f64>();
        }
        let total: f64 = w.iter().sum();
        let var = 1.0 / total;
        let tau_part = (self.tau2 * w.iter().map(|w| (w / total).powi(2)).sum::<f64>()).min(var);
        Level {
            mean,
            runs: r - l,
            noise: Noise::normal(var),
            tau_part,
            within_parts: vec![(var - tau_part, f64::INFINITY)],
        }
    }
}
