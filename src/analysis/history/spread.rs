//! How much runs differ in their own spread (issue 66): the law of the runs' variances that
//! a series shows, and each run's noise under it, a mixture of normals.
//!
//! A run's level varies by the run-to-run variation and by the error of its median over its
//! own samples, whose variance `s²` differs from run to run where runs have their own spread
//! (some quiet, some ten times noisier). With one or two samples a run cannot show it: one
//! sample shows nothing, two a variance of one degree of freedom. Each run's variance is
//! therefore borrowed from the series, as an empirical-Bayes prior: the law of the runs'
//! variances is estimated from all of them (a discrete law on a grid of variances, its
//! weights by maximum likelihood, the nonparametric estimate of Kiefer and Wolfowitz 1956, as
//! "variance adaptive shrinkage" does, Lu and Stephens 2016; limma's scaled inverse
//! chi-square prior is the parametric special case), and a run's own samples move it within
//! that law (its posterior). Its level's noise is then a mixture of normals, one per
//! variance the law holds, weighted by how likely the run's samples make it: heavy-tailed
//! where the law is wide, so one run far off, or two, is what the law expects of noisy runs,
//! not a step; a run whose samples agree is not trusted more than the law allows.
//!
//! - Where some runs have two samples or more, the law is of the within-run variances
//!   ([`Law::estimate`]); each run's noise adds the run-to-run variance.
//! - Where none has, nothing shows a run's own spread but how far off its segment it lies:
//!   the law is of the run levels' whole variance, estimated from their residuals about the
//!   fit's segments, one degree of freedom each ([`Law::of_residuals`]): Student's t laws
//!   averaged over their degrees of freedom, as likely as each makes the residuals, which a
//!   few dozen of them cannot pin down.
//!
//! A law of the within-run variances is used only where it makes the variances it was
//! estimated from markedly more likely than one pooled variance does ([`HETEROGENEOUS`]):
//! runs alike keep one normal each, and the fit its exact Gaussian form.
//!
//! Must not: fit segments or judge; numbers in, laws and noises out.
use crate::analysis::compare::welch::ln_gamma;

/// A run level's noise: a mixture of normals about zero, `(weight, variance)`, the weights
/// summing to 1 (one component: a normal).
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    pub parts: Vec<(f64, f64)>,
    /// Each part's `ln w - ln v / 2` and `1 / (2 v)`, for its density.
    terms: Vec<(f64, f64)>,
}

impl Noise {
    /// A normal of variance `v`.
    pub fn normal(v: f64) -> Noise {
        Noise::of(vec![(1.0, v.max(MIN_VARIANCE))])
    }

    /// A mixture of `parts`, those of negligible weight dropped.
    pub fn of(parts: Vec<(f64, f64)>) -> Noise {
        let mut parts: Vec<(f64, f64)> = parts.into_iter().filter(|(w, _)| *w > MIN_WEIGHT).collect();
        let total: f64 = parts.iter().map(|p| p.0).sum();
        for p in &mut parts {
            p.0 /= total;
        }
        let terms = parts.iter().map(|&(w, v)| (w.ln() - 0.5 * v.ln(), 0.5 / v)).collect();
        Noise { parts, terms }
    }

    /// Whether it is one normal.
    pub fn is_normal(&self) -> bool {
        self.parts.len() == 1
    }

    /// `-2 log` of its density at `e` (less `ln 2 pi`).
    pub fn cost(&self, e: f64) -> f64 {
        let e2 = e * e;
        if let [(a, b)] = self.terms[..] {
            return -2.0 * (a - e2 * b);
        }
        // Log-sum-exp over the parts.
        let top = self
            .terms
            .iter()
            .map(|(a, b)| a - e2 * b)
            .fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = self.terms.iter().map(|(a, b)| (a - e2 * b - top).exp()).sum();
        -2.0 * (top + sum.ln())
    }

    /// Its expected precision given a residual `e`: `E[1 / v | e]`, the weight of the run in
    /// a level (the EM weight of a scale mixture).
    pub fn precision_at(&self, e: f64) -> f64 {
        if let [(_, v)] = self.parts[..] {
            return 1.0 / v;
        }
        let post = self.posterior(e);
        post.iter().zip(&self.parts).map(|(p, (_, v))| p / v).sum()
    }

    /// The parts' weights given a residual `e`.
    fn posterior(&self, e: f64) -> Vec<f64> {
        let logs: Vec<f64> = self
            .parts
            .iter()
            .map(|&(w, v)| w.ln() - 0.5 * (e * e / v + v.ln()))
            .collect();
        let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let ws: Vec<f64> = logs.iter().map(|l| (l - top).exp()).collect();
        let total: f64 = ws.iter().sum();
        ws.iter().map(|w| w / total).collect()
    }

    /// Its mean variance, `sum w v`.
    pub fn mean_var(&self) -> f64 {
        self.parts.iter().map(|(w, v)| w * v).sum()
    }

    /// The standard deviation it is told at: one over the square root of its mean precision
    /// (the narrowest scale a level of it must be resolved at).
    pub fn scale(&self) -> f64 {
        (1.0 / self.parts.iter().map(|(w, v)| w / v).sum::<f64>()).sqrt()
    }

    /// The two-sided probability of a deviation at least `d` from a level whose own
    /// variance is `extra`: Student's t of `df` degrees of freedom on each part (the
    /// run-to-run variance's uncertainty), weighted by the parts.
    pub fn two_sided_p(&self, d: f64, extra: f64, df: f64) -> f64 {
        let df = if df.is_finite() { df } else { 1e9 };
        self.parts
            .iter()
            .map(|&(w, v)| w * crate::analysis::compare::welch::student_t_two_sided_p(d / (v + extra).sqrt(), df))
            .sum()
    }

    /// The same noise with `v0` added to every part (the run-to-run variance, to a law of
    /// within-run variances scaled to the run's median).
    fn plus(parts: &[(f64, f64)], scale: f64, v0: f64) -> Noise {
        Noise::of(
            parts
                .iter()
                .map(|&(w, v)| (w, (v0 + scale * v).max(MIN_VARIANCE)))
                .collect(),
        )
    }
}

/// The least variance of a part (0.01%², a timer's resolution, as the fit's floor).
const MIN_VARIANCE: f64 = 1e-8;

/// Parts of a noise below this weight are dropped.
const MIN_WEIGHT: f64 = 1e-4;

/// How much more likely (`2 log` of the likelihood ratio) the estimated law must make the
/// variances than one pooled variance does before it is used: the law has as many free
/// weights as its grid, and variances alike fit it a little better by chance.
pub const HETEROGENEOUS: f64 = 6.0;

/// The degrees of freedom a t law of residuals is tried at.
const NU_GRID: [f64; 9] = [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0, 20.0, 40.0];

/// Points of the grid of precisions a t law is held on.
const T_POINTS: usize = 40;

/// How far (in standard errors) the log variances' variance must exceed what their chi-square
/// errors make it before a law is sought at all (a quick screen: seeking one costs EM rounds).
pub const MOMENTS_SD: f64 = 1.0;

/// Points of the grid of variances a law is estimated on, per factor of ten.
const GRID_PER_DECADE: f64 = 8.0;

/// Rounds of EM for a law's weights.
const EM_ROUNDS: usize = 300;

/// A discrete law of variances: `(weight, variance)`, weights summing to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Law {
    pub parts: Vec<(f64, f64)>,
}

/// A variance estimate: its value and degrees of freedom.
pub type Estimate = (f64, f64);

impl Law {
    /// The law of variance estimates `obs` (`(x, d)`: `d x / v` is chi-square of `d` degrees
    /// of freedom about the true `v`), when it is markedly wider than one pooled variance
    /// ([`HETEROGENEOUS`]); `None` when the estimates are alike, or too few (under
    /// `min_count` usable).
    pub fn estimate(obs: &[Estimate], min_count: usize) -> Option<Law> {
        let obs: Vec<Estimate> = obs.iter().copied().filter(|(x, d)| *x > 0.0 && *d > 0.0).collect();
        if obs.len() < min_count.max(2) {
            return None;
        }
        // limma's moments first (Smyth 2004): where the log variances vary no more than their
        // chi-square errors make them, the variances are alike, and no law is sought.
        let e: Vec<f64> = obs
            .iter()
            .map(|(x, d)| x.ln() - digamma(d / 2.0) + (d / 2.0).ln())
            .collect();
        let mean_e = e.iter().sum::<f64>() / e.len() as f64;
        let var_e = e.iter().map(|v| (v - mean_e).powi(2)).sum::<f64>() / (e.len() - 1) as f64;
        let chance = obs.iter().map(|(_, d)| trigamma(d / 2.0)).sum::<f64>() / obs.len() as f64;
        // The spread of that variance estimate itself, from the fourth moment.
        let m4 = e.iter().map(|v| (v - mean_e).powi(4)).sum::<f64>() / e.len() as f64;
        let sd = ((m4 - var_e * var_e).max(0.0) / e.len() as f64).sqrt();
        if var_e <= chance + MOMENTS_SD * sd {
            return None;
        }
        let pooled = obs.iter().map(|(x, d)| x * d).sum::<f64>() / obs.iter().map(|(_, d)| d).sum::<f64>();
        let loglik = |v: f64, (x, d): Estimate| -0.5 * d * (v.ln() + x / v);
        let pooled_ll: f64 = obs.iter().map(|o| loglik(pooled, *o)).sum();
        // The grid: from well below the smallest estimate to above the largest (an estimate of
        // one degree of freedom is often far below its variance, rarely far above).
        let (lo, hi) = obs
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), (x, _)| (a.min(*x), b.max(*x)));
        let (lo, hi) = ((lo.max(pooled * 1e-6)).ln(), (hi * 2.0).ln());
        let points = (((hi - lo) / std::f64::consts::LN_10 * GRID_PER_DECADE).ceil() as usize).clamp(2, 64);
        let grid: Vec<f64> = (0..points)
            .map(|j| (lo + (hi - lo) * j as f64 / (points - 1) as f64).exp())
            .collect();
        // Each estimate's log likelihood at each grid point, less its largest.
        let rows: Vec<Vec<f64>> = obs
            .iter()
            .map(|o| {
                let l: Vec<f64> = grid.iter().map(|v| loglik(*v, *o)).collect();
                let top = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                l.iter().map(|x| (x - top).exp()).collect()
            })
            .collect();
        let tops: f64 = obs
            .iter()
            .map(|o| grid.iter().map(|v| loglik(*v, *o)).fold(f64::NEG_INFINITY, f64::max))
            .sum();
        let mut w = vec![1.0 / points as f64; points];
        let mut ll = f64::NEG_INFINITY;
        for _ in 0..EM_ROUNDS {
            let mut next = vec![0.0; points];
            let mut total = 0.0;
            for row in &rows {
                let p: f64 = row.iter().zip(&w).map(|(l, w)| l * w).sum();
                total += p.max(1e-300).ln();
                for ((n, l), w) in next.iter_mut().zip(row).zip(&w) {
                    *n += l * w / p.max(1e-300);
                }
            }
            let count = rows.len() as f64;
            w = next.iter().map(|n| n / count).collect();
            let done = total - ll < 1e-9 * total.abs().max(1.0);
            ll = total;
            if done {
                break;
            }
        }
        if 2.0 * (ll + tops - pooled_ll) <= HETEROGENEOUS {
            return None;
        }
        let parts: Vec<(f64, f64)> = w.into_iter().zip(grid).filter(|(w, _)| *w > 1e-6).collect();
        let total: f64 = parts.iter().map(|p| p.0).sum();
        Some(Law {
            parts: parts.into_iter().map(|(w, v)| (w / total, v)).collect(),
        })
    }

    /// Student's t of `nu` degrees of freedom and scale `scale2` as a law of variances: the
    /// scale over a Gamma(nu / 2, nu / 2) precision, on a grid of [`T_POINTS`] precisions
    /// evenly spaced in log (each weighted by its density there).
    pub fn t(nu: f64, scale2: f64) -> Law {
        let (lo, hi) = (1e-4f64.ln(), 30f64.ln());
        let points: Vec<(f64, f64)> = (0..T_POINTS)
            .map(|j| {
                let l = (lo + (hi - lo) * (j as f64 + 0.5) / T_POINTS as f64).exp();
                // The density of log precision: lambda f(lambda).
                let w = (nu / 2.0 * l.ln() - nu / 2.0 * l).exp();
                (w, scale2 / l)
            })
            .collect();
        Law::normalized(points)
    }

    /// The law of `parts` `(weight, variance)`, the weights scaled to sum to 1, then those
    /// below [`MIN_WEIGHT`] dropped.
    fn normalized(parts: Vec<(f64, f64)>) -> Law {
        let total: f64 = parts.iter().map(|p| p.0).sum();
        Law {
            parts: parts
                .into_iter()
                .map(|(w, v)| (w / total, v))
                .filter(|(w, _)| *w > MIN_WEIGHT)
                .collect(),
        }
    }

    /// The law of residuals `z` (each of the variance of its run's level): Student's t at each
    /// degrees of freedom of [`NU_GRID`] (40: nearly a normal), its scale by maximum
    /// likelihood, the laws averaged with weights in proportion to how likely each makes the
    /// residuals ([`Law::averaged`]); `None` where they are too few (under `min_count`) or
    /// all zero. A t of two parameters, not the grid of [`Law::estimate`]: a few dozen
    /// residuals of one degree of freedom each tell its tails, not a law's shape; and not
    /// the one most likely t either: twenty residuals cannot tell 2 degrees of freedom from
    /// 40, and a law taken as normal where one or two noisy runs happened to come close
    /// made their steps (issue 66: 109 false steps on its spread mix, 94 averaged).
    pub fn of_residuals(z: &[f64], min_count: usize) -> Option<Law> {
        let n = z.len();
        if n < min_count.max(2) {
            return None;
        }
        let n_f = n as f64;
        let normal_s2 = z.iter().map(|x| x * x).sum::<f64>() / n_f;
        if normal_s2 <= 0.0 {
            return None;
        }
        let fits: Vec<(f64, Law)> = NU_GRID
            .iter()
            .map(|&nu| {
                // The t's scale by EM (its fixed point), from the normal's.
                let mut s2 = normal_s2;
                for _ in 0..200 {
                    let next = z.iter().map(|x| x * x * (nu + 1.0) / (nu + x * x / s2)).sum::<f64>() / n_f;
                    let done = (next / s2 - 1.0).abs() < 1e-10;
                    s2 = next.max(1e-300);
                    if done {
                        break;
                    }
                }
                let ll = n_f
                    * (ln_gamma((nu + 1.0) / 2.0) - ln_gamma(nu / 2.0) - 0.5 * (nu * std::f64::consts::PI * s2).ln())
                    - (nu + 1.0) / 2.0 * z.iter().map(|x| (x * x / (nu * s2)).ln_1p()).sum::<f64>();
                (ll, Law::t(nu, s2))
            })
            .collect();
        Some(Law::averaged(&fits))
    }

    /// Laws `(log likelihood, law)` averaged, each weighted by its likelihood relative to the
    /// others' (Bayesian model averaging, each at its most likely scale, a uniform prior over
    /// them): their parts pooled, those of negligible weight ([`MIN_WEIGHT`]) dropped.
    pub fn averaged(fits: &[(f64, Law)]) -> Law {
        let top = fits.iter().map(|f| f.0).fold(f64::NEG_INFINITY, f64::max);
        let parts: Vec<(f64, f64)> = fits
            .iter()
            .flat_map(|(ll, law)| {
                let w = (ll - top).exp();
                law.parts.iter().map(move |&(p, v)| (w * p, v))
            })
            .collect();
        Law::normalized(parts)
    }

    /// The law given one more estimate `(x, d)` of the variance drawn from it (a run's own
    /// samples); the law itself without one.
    pub fn given(&self, own: Option<Estimate>) -> Vec<(f64, f64)> {
        let Some((x, d)) = own.filter(|(x, d)| *x > 0.0 && *d > 0.0) else {
            return self.parts.clone();
        };
        let logs: Vec<f64> = self
            .parts
            .iter()
            .map(|&(w, v)| w.ln() - 0.5 * d * (v.ln() + x / v))
            .collect();
        let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let ws: Vec<f64> = logs.iter().map(|l| (l - top).exp()).collect();
        let total: f64 = ws.iter().sum();
        ws.iter()
            .zip(&self.parts)
            .map(|(w, (_, v))| (w / total, *v))
            .filter(|(w, _)| *w > 1e-9)
            .collect()
    }

    /// A run's noise: the law of within-run variances given its own samples' estimate, each
    /// scaled by `scale` (the variance of its median over the samples' variance) plus the
    /// run-to-run variance `tau2`.
    pub fn within_noise(&self, own: Option<Estimate>, scale: f64, tau2: f64) -> Noise {
        Noise::plus(&self.given(own), scale, tau2)
    }

    /// A run's noise under a law of the run levels' whole variance.
    pub fn level_noise(&self) -> Noise {
        Noise::plus(&self.parts, 1.0, 0.0)
    }

    /// Its mean, `sum w v`.
    pub fn mean(&self) -> f64 {
        self.parts.iter().map(|(w, v)| w * v).sum()
    }
}

/// The digamma function (its recurrence up to 10, then the asymptotic series: within 1e-13).
pub fn digamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    acc + x.ln() - 0.5 / x - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f * (1.0 / 240.0 - f / 132.0))))
}

/// The trigamma function (its recurrence up to 10, then the asymptotic series: within 1e-13).
pub fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    acc + 1.0 / x
        + f / 2.0
        + f / x * (1.0 / 6.0 - f * (1.0 / 30.0 - f * (1.0 / 42.0 - f * (1.0 / 30.0 - f * 5.0 / 66.0))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded normal noise (SplitMix64 and Box-Muller).
    type Rng = crate::util::shuffle::SplitMix64;

    /// The sample variance of `k` normal draws of variance `v`: an estimate of `k - 1`
    /// degrees of freedom.
    fn estimate(rng: &mut Rng, v: f64, k: usize) -> Estimate {
        let s: Vec<f64> = (0..k).map(|_| v.sqrt() * rng.gauss()).collect();
        let m = s.iter().sum::<f64>() / k as f64;
        (
            s.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1) as f64,
            (k - 1) as f64,
        )
    }

    #[test]
    fn alike_runs_have_no_law_and_runs_of_their_own_spread_one_that_says_which_is_which() {
        let mut rng = Rng::new(66);
        // Sixty runs of two samples alike: one pooled variance.
        let alike: Vec<Estimate> = (0..60).map(|_| estimate(&mut rng, 1e-4, 2)).collect();
        assert_eq!(Law::estimate(&alike, 5), None);
        // Quiet runs (0.2%) and one in four ten times noisier (2%).
        let vs: Vec<f64> = (0..80).map(|i| if i % 4 == 0 { 4e-4 } else { 4e-6 }).collect();
        let mixed: Vec<Estimate> = vs.iter().map(|v| estimate(&mut rng, *v, 2)).collect();
        let law = Law::estimate(&mixed, 5).expect("a law");
        let noisy: f64 = law.parts.iter().filter(|(_, v)| *v > 4e-5).map(|p| p.0).sum();
        assert!((0.1..0.45).contains(&noisy), "{law:?}");
        // A run whose two samples are 3% apart is a noisy one; one whose agree, a quiet one,
        // mostly: never trusted beyond the law.
        let far = Noise::plus(&law.given(Some((4.5e-4, 1.0))), 1.0, 0.0);
        let near = Noise::plus(&law.given(Some((1e-8, 1.0))), 1.0, 0.0);
        assert!(far.mean_var() > 1e-4, "{far:?}");
        assert!(near.mean_var() < 4e-5 && near.mean_var() > 2e-6, "{near:?}");
    }

    #[test]
    fn digamma_and_trigamma_match_their_known_values() {
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + euler).abs() < 1e-12);
        assert!((digamma(0.5) + euler + 2.0 * 2f64.ln()).abs() < 1e-12);
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((trigamma(1.0) - pi2 / 6.0).abs() < 1e-12);
        assert!((trigamma(0.5) - pi2 / 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_law_of_residuals_keeps_tails_that_few_residuals_cannot_rule_out() {
        // Twenty residuals drawn from a normal: the one most likely t is as
        // good as a normal, yet twenty cannot rule out heavier tails, which the averaged law
        // keeps (issue 66); two thousand can.
        let quantiles = |n: usize| -> Vec<f64> {
            let mut rng = Rng::new(7);
            let mut z: Vec<f64> = (0..n).map(|_| rng.gauss()).collect();
            z.sort_by(f64::total_cmp);
            z
        };
        let normal_p = Noise::normal(1.0).two_sided_p(4.0, 0.0, f64::INFINITY);
        let few = Law::of_residuals(&quantiles(20), 8).expect("a law").level_noise();
        let p_few = few.two_sided_p(4.0 * few.mean_var().sqrt(), 0.0, f64::INFINITY);
        assert!(p_few > 10.0 * normal_p, "{p_few} vs {normal_p}");
        let many = Law::of_residuals(&quantiles(2000), 8).expect("a law").level_noise();
        let p_many = many.two_sided_p(4.0 * many.mean_var().sqrt(), 0.0, f64::INFINITY);
        assert!(p_many < p_few / 3.0, "{p_many} vs {p_few}");
        // Too few residuals make no law; a law's weights sum to one.
        assert_eq!(Law::of_residuals(&quantiles(5), 8), None);
        let total: f64 = few.parts.iter().map(|p| p.0).sum();
        assert!((total - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_mixture_is_heavy_tailed_and_a_normal_is_not() {
        let normal = Noise::normal(1.0);
        let p = normal.two_sided_p(1.96, 0.0, f64::INFINITY);
        assert!((p - 0.05).abs() < 1e-3, "{p}");
        assert!((normal.cost(2.0) - 4.0).abs() < 1e-12);
        // Nine quiet runs in ten and one a hundred times the variance: four quiet standard
        // deviations off is no surprise.
        let mixed = Noise::of(vec![(0.9, 1.0), (0.1, 100.0)]);
        assert!(mixed.two_sided_p(4.0, 0.0, f64::INFINITY) > 0.05);
        assert!(mixed.precision_at(0.0) > 0.8 && mixed.precision_at(10.0) < 0.02);
        assert!(mixed.cost(10.0) < normal.cost(10.0) - 50.0);
    }
}
