//! Change points in one series: asv's penalized piecewise-constant fit (`asv.step_detect`,
//! after Friedrich et al. 2008, "Complexity Penalized M-Estimation: Fast Computation").
//!
//! The fit minimizes `gamma * k + sum_i w_i |y_i - mu_segment(i)|` over the segmentations
//! into `k` segments (each segment's value its weighted median), by dynamic programming
//! over segments of at most [`MAX_PIECE`] points, then merging neighbours while that lowers
//! the cost and moving each boundary to its best place (asv's `solve_potts_approx`). The
//! penalty `gamma` is chosen as asv's `solve_potts_autogamma` does: the fit minimizing the
//! information criterion `beta * k + ln(sigma_0 + sigma_*(rho))`, `beta = 4 ln(n) / n`,
//! `sigma_*` the weighted L1 residual of AR(1) noise with the best `rho` in (-1, 1), and
//! `sigma_0` a floor (a tenth of the smallest step, or 0.1% of the level for one or two
//! segments), over a grid of `gamma` from `0.1/n` to 1 times the one-segment residual.
//!
//! The penalty grid stays (not asv's golden-section search over the same range): over 400
//! random series checked against asv 0.6.6 it found the true steps as often, with fewer
//! false ones, and the AR(1) coefficient is kept in `[-1, 1]` (asv's search may leave it: a
//! `rho` beyond 1 fits a missed step's residuals as noise, and asv then misses large steps
//! in long series that this fit finds).
//!
//! The weights: one over each run's standard error (its samples less their outliers), the
//! variance moderated toward the series' typical one as an empirical-Bayes prior of
//! [`PRIOR_DF`] degrees of freedom (as limma moderates gene-wise variances): `s² = (d0 s0² +
//! d s_run²) / (d0 + d)`, `d` = samples - 1, `s0²` the median of the runs' variances. Raw
//! `1 / SE` of two samples (`|a - b| / 2`, one degree of freedom) weighs a run whose two
//! samples happened to agree hundreds of times more than the others: in a long series of
//! 2-sample runs those runs made false steps (issue 49: 6 steps, 5 false, in 227 runs; asv
//! with the same raw weights does the same). Moderated, a run is weighed up at most
//! `sqrt((d0 + d) / d0)` times (1.1 with two samples) and a noisy run still counts less, so
//! one noisy run does not make a step. Weights are scaled so that their median is 1.
//!
//! Must not: know about reports; numbers in, segments out.
use std::collections::HashMap;

/// Longest segment the dynamic programme considers before merging (asv's 20).
pub const MAX_PIECE: usize = 20;

/// Degrees of freedom of the prior toward which each run's variance is moderated.
pub const PRIOR_DF: f64 = 4.0;

/// A segment of the fit: points `start..end` at level `median` (the weighted median).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// First point.
    pub start: usize,
    /// One past the last point.
    pub end: usize,
    /// The segment's level.
    pub median: f64,
    /// Its mean weighted absolute deviation from the level.
    pub l1_error: f64,
}

/// Relative weights (median 1) from each run's standard error and sample count (module
/// docs); a run with one sample, or a series without spreads, gets the prior's.
pub fn weights(runs: &[(Option<f64>, usize)]) -> Vec<f64> {
    // Each run's sample variance: SE² · n, with d = n - 1 degrees of freedom.
    let var: Vec<Option<(f64, f64)>> = runs
        .iter()
        .map(|&(se, n)| {
            se.filter(|s| s.is_finite() && *s >= 0.0 && n > 1)
                .map(|s| (s * s * n as f64, (n - 1) as f64))
        })
        .collect();
    let mut known: Vec<f64> = var.iter().flatten().map(|v| v.0).filter(|v| *v > 0.0).collect();
    if known.is_empty() {
        return vec![1.0; runs.len()];
    }
    known.sort_by(f64::total_cmp);
    let prior = crate::util::stats::median(&known);
    let raw: Vec<f64> = var
        .iter()
        .zip(runs)
        .map(|(v, &(_, n))| {
            let moderated = match v {
                Some((s2, d)) => (PRIOR_DF * prior + d * s2) / (PRIOR_DF + d),
                None => prior,
            };
            (n.max(1) as f64 / moderated).sqrt()
        })
        .collect();
    let mut sorted = raw.clone();
    sorted.sort_by(f64::total_cmp);
    let median = crate::util::stats::median(&sorted);
    raw.iter().map(|w| w / median).collect()
}

/// The segments of `y` (weights `w`) split at the exclusive right bounds `right` (the last
/// `y.len()`).
pub fn at(y: &[f64], w: &[f64], right: &[usize]) -> Vec<Segment> {
    segments(&mut Cost::new(y, w), right)
}

/// The segments of `y` (weights `w`, same length), in order; one segment for fewer than 3
/// points.
pub fn detect(y: &[f64], w: &[f64]) -> Vec<Segment> {
    let n = y.len();
    if n == 0 {
        return Vec::new();
    }
    let mut cost = Cost::new(y, w);
    if n < 3 {
        return segments(&mut cost, &[n]);
    }
    let beta = 4.0 * (n as f64).ln() / n as f64;
    let gamma_0 = match cost.get(0, n - 1).1 {
        d if d > 0.0 => d,
        _ => 1.0,
    };
    let (lo, hi) = ((0.1 / n as f64).ln(), 0.0);
    const GRID: usize = 16;
    let mut best: Option<(f64, Vec<usize>)> = None;
    // From the largest penalty down: on a tie the fewer segments win.
    for i in 0..GRID {
        let x = hi - (hi - lo) * i as f64 / (GRID - 1) as f64;
        let right = approx(&mut cost, gamma_0 * x.exp());
        let values: Vec<f64> = bounds(&right).map(|(l, r)| cost.get(l, r - 1).0).collect();
        let rho = golden(|rho| sigma_star(y, w, &right, &values, rho), -1.0, 1.0, 30);
        let s = sigma_star(y, w, &right, &values, rho);
        let sigma_0 = if values.len() > 2 {
            0.1 * values
                .windows(2)
                .map(|v| (v[1] - v[0]).abs())
                .fold(f64::INFINITY, f64::min)
        } else {
            0.001 * values.iter().map(|v| v.abs()).fold(f64::INFINITY, f64::min)
        }
        .max(1e-300);
        let obj = beta * right.len() as f64 + (sigma_0 + s).ln();
        if best.as_ref().is_none_or(|(b, _)| obj < *b) {
            best = Some((obj, right));
        }
    }
    let right = best.map(|(_, r)| r).unwrap_or_else(|| vec![n]);
    segments(&mut cost, &right)
}

/// `(start, end)` of each segment given the exclusive right bounds.
fn bounds(right: &[usize]) -> impl Iterator<Item = (usize, usize)> + '_ {
    right.iter().scan(0, |l, &r| {
        let b = (*l, r);
        *l = r;
        Some(b)
    })
}

fn segments(cost: &mut Cost, right: &[usize]) -> Vec<Segment> {
    bounds(right)
        .map(|(l, r)| {
            let (median, dist) = cost.get(l, r - 1);
            Segment {
                start: l,
                end: r,
                median,
                l1_error: dist / (r - l) as f64,
            }
        })
        .collect()
}

/// `|E_0| w_0 + sum_j |E_j - rho E_{j-1}| w_j`, `E` the residuals of the fit.
fn sigma_star(y: &[f64], w: &[f64], right: &[usize], values: &[f64], rho: f64) -> f64 {
    let mut prev = 0.0;
    let mut s = 0.0;
    for ((l, r), v) in bounds(right).zip(values) {
        for i in l..r {
            let e = y[i] - v;
            s += (e - rho * prev).abs() * w[i];
            prev = e;
        }
    }
    s
}

/// The minimum of `f` on `[a, b]` by golden-section search (`iters` steps).
fn golden(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64, iters: usize) -> f64 {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..iters {
        if fc <= fd {
            (b, d, fd) = (d, c, fc);
            c = b - g * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + g * (b - a);
            fd = f(d);
        }
    }
    if fc <= fd {
        c
    } else {
        d
    }
}

/// asv's `solve_potts_approx`: the exact fit over segments of at most [`MAX_PIECE`]
/// points, neighbours merged while the cost falls, boundaries moved to their best place.
fn approx(cost: &mut Cost, gamma: f64) -> Vec<usize> {
    let n = cost.y.len();
    // best[r]: the cost of the best fit of points 0..r; left[r]: where its last segment starts.
    let mut best = vec![0.0; n + 1];
    let mut left = vec![0; n + 1];
    for r in 1..=n {
        best[r] = f64::INFINITY;
        for l in r.saturating_sub(MAX_PIECE)..r {
            let b = best[l] + gamma + cost.get(l, r - 1).1;
            if b <= best[r] {
                best[r] = b;
                left[r] = l;
            }
        }
    }
    let mut right = Vec::new();
    let mut r = n;
    while r > 0 {
        right.push(r);
        r = left[r];
    }
    right.reverse();
    // Merge the neighbours whose merge lowers the cost most, until none does.
    loop {
        let mut best_change = 0.0;
        let mut at = None;
        let mut l = 0;
        for j in 1..right.len() {
            // As asv: the first local best merge is taken (linear, not quadratic, passes).
            if at.is_some_and(|a| a + 2 < j) {
                break;
            }
            let change = cost.get(l, right[j] - 1).1
                - (cost.get(l, right[j - 1] - 1).1 + cost.get(right[j - 1], right[j] - 1).1 + gamma);
            if change <= best_change {
                best_change = change;
                at = Some(j - 1);
            }
            l = right[j - 1];
        }
        match at {
            Some(j) => {
                right.remove(j);
            }
            None => break,
        }
    }
    // Each boundary to its best place between its neighbours.
    let mut l = 0;
    for j in 1..right.len() {
        let (lo, hi) = (l + 1, right[j] - 1);
        let mut best_at = right[j - 1];
        let mut best_cost = cost.get(l, best_at - 1).1 + cost.get(best_at, right[j] - 1).1;
        let from = lo.max(right[j - 1].saturating_sub(MAX_PIECE));
        let to = hi.min(right[j - 1] + MAX_PIECE);
        for b in from..=to {
            let c = cost.get(l, b - 1).1 + cost.get(b, right[j] - 1).1;
            if c < best_cost {
                best_cost = c;
                best_at = b;
            }
        }
        right[j - 1] = best_at;
        l = best_at;
    }
    right
}

/// The weighted median of `y[l..=r]` and its weighted L1 distance, memoized: short
/// intervals (what the dynamic programme and the boundary moves ask for, again and again)
/// in a dense table, longer ones in a map.
struct Cost<'a> {
    y: &'a [f64],
    w: &'a [f64],
    short: Vec<Option<(f64, f64)>>,
    long: HashMap<(usize, usize), (f64, f64)>,
}

/// Widths kept in the dense table.
const SHORT: usize = 2 * MAX_PIECE + 2;

impl<'a> Cost<'a> {
    fn new(y: &'a [f64], w: &'a [f64]) -> Cost<'a> {
        Cost {
            y,
            w,
            short: vec![None; y.len() * SHORT],
            long: HashMap::new(),
        }
    }

    fn get(&mut self, l: usize, r: usize) -> (f64, f64) {
        let slot = (r - l < SHORT).then(|| l * SHORT + (r - l));
        let hit = match slot {
            Some(i) => self.short[i],
            None => self.long.get(&(l, r)).copied(),
        };
        if let Some(v) = hit {
            return v;
        }
        let (y, w) = (&self.y[l..=r], &self.w[l..=r]);
        let mu = weighted_median(y, w);
        let dist = y.iter().zip(w).map(|(y, w)| w * (y - mu).abs()).sum();
        match slot {
            Some(i) => self.short[i] = Some((mu, dist)),
            None => {
                self.long.insert((l, r), (mu, dist));
            }
        }
        (mu, dist)
    }
}

/// The weighted median (the mean of the two middle values when the weight splits evenly).
pub fn weighted_median(y: &[f64], w: &[f64]) -> f64 {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [-1, 1].
    fn noise(i: usize) -> f64 {
        let x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    #[test]
    fn a_clean_step_is_found_where_it_is() {
        let y: Vec<f64> = (0..12)
            .map(|i| if i < 7 { 1.0 } else { 1.25 } + 0.01 * noise(i))
            .collect();
        let s = detect(&y, &vec![1.0; y.len()]);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[1].start, 7);
        assert!((s[1].median / s[0].median - 1.25).abs() < 0.03);
    }

    #[test]
    fn flat_noise_is_one_segment() {
        for n in [5, 12, 40, 300] {
            let y: Vec<f64> = (0..n).map(|i| 1.0 + 0.03 * noise(i)).collect();
            let s = detect(&y, &vec![1.0; n]);
            assert_eq!(s.len(), 1, "n={n}: {s:?}");
        }
    }

    #[test]
    fn one_noisy_run_does_not_make_a_step_when_weighted_by_its_spread() {
        let mut y: Vec<f64> = (0..10).map(|i| 1.0 + 0.005 * noise(i)).collect();
        y[5] = 1.6;
        let mut runs = vec![(Some(0.005), 5); 10];
        runs[5] = (Some(0.5), 5);
        let s = detect(&y, &weights(&runs));
        assert_eq!(s.len(), 1, "{s:?}");
    }

    #[test]
    fn a_run_whose_two_samples_agree_is_not_weighed_up_a_hundredfold() {
        // Issue 49: raw 1/SE of two samples gave such a run 150 times the median weight.
        let mut runs: Vec<(Option<f64>, usize)> = (0..20).map(|i| (Some(0.01 + 0.001 * i as f64), 2)).collect();
        runs[3] = (Some(0.0001), 2);
        let w = weights(&runs);
        assert!(w[3] < (5.0f64 / 4.0).sqrt() * 1.1, "{w:?}");
        // A noisy run still counts less.
        runs[4] = (Some(1.0), 2);
        assert!(weights(&runs)[4] < 0.1);
        // No spreads at all: equal weights.
        assert_eq!(weights(&[(None, 1), (None, 1)]), [1.0, 1.0]);
    }

    #[test]
    fn weighted_median_splits_evenly_between_the_middle_values() {
        assert_eq!(weighted_median(&[3.0, 1.0, 2.0], &[1.0, 1.0, 1.0]), 2.0);
        assert_eq!(weighted_median(&[1.0, 2.0], &[1.0, 1.0]), 1.5);
        assert_eq!(weighted_median(&[1.0, 2.0, 10.0], &[1.0, 1.0, 5.0]), 10.0);
    }
}
