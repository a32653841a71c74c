//! Change points in one series: asv's penalized piecewise-constant fit (`asv.step_detect`,
//! after Friedrich et al. 2008, "Complexity Penalized M-Estimation: Fast Computation"), in
//! the units of the series' noise model ([`super::model`]), with Huber's cost.
//!
//! The fit minimizes `gamma * k + sum_i rho(w_i (y_i - m_segment(i)))` over the
//! segmentations into `k` segments, by dynamic programming over segments of at most
//! [`MAX_PIECE`] points, then merging neighbours while that lowers the cost and moving each
//! boundary to its best place (asv's `solve_potts_approx`; here a segment may also merge
//! with both its neighbours at once, which a single run cut off where the programme had to
//! cut a long stretch needs).
//!
//! `y` is each run's level (the log of its median) and `w_i` one over its standard deviation
//! (its samples' and the run-to-run variation's), so `w_i (y_i - m)` is a standardized
//! residual. asv sums their absolute values (L1, each segment at its weighted median); here
//! `rho` is Huber's ([`HUBER`]: squares up to 2 standard deviations, a line beyond), each
//! segment at one Huber step from its weighted median. For normal run levels the squares are
//! the likelihood, and L1 counts a run far below a level as one just below it: on the seeded
//! histories of `tests/analysis/history_score.rs` (3,000 of the tuned mix) L1 located 88.9% of the
//! clear steps with 93 false ones, Huber 90.1% with 90. Beyond 2 standard deviations the
//! line keeps a run far off from pulling a level, and no run costs more than three quarters
//! of a step's penalty: runs far off between others (a hiccup, a reboot, two bad nights in a
//! row) pay for the two steps around them only when three or more agree to, however far off
//! each is. Uncapped, 120 random series of `tests/analysis/history_asv.rs` (a fifth of the runs
//! with a hiccup of 30% to 100%; single-sample runs take it whole) got 162 false steps, 24
//! capped. A level held by one run between two others is thus taken for a run far off; a
//! run far off at either end pays for no step either, and is judged on its own
//! ([`super::judge`]).
//!
//! The penalty of a step, [`penalty`], is `2 + 2 ln n` in those units: with the noise known,
//! it needs no search. asv chooses it by an information criterion over an AR(1) model of
//! the residuals instead; that criterion cannot tell steps from a random walk when the runs
//! vary more than their samples (an AR(1) coefficient of 1 fits a step's residuals as noise:
//! 41 runs, steps of +22% and +16% among 3-5% run-to-run noise, no step found). On flat
//! standard-normal series of 5 to 300 points this penalty puts a step in at most 0.3% of
//! them; on flat generated histories (the run-to-run variance estimated) in 1.2% of those of
//! 13 to 40 runs and 0.5% of those of 41 to 120.
//!
//! Must not: know about reports; numbers in, segments out.
use std::collections::HashMap;

/// Longest segment the dynamic programme considers before merging (asv's 20).
pub const MAX_PIECE: usize = 20;

/// A segment of the fit: points `start..end` at its level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// First point.
    pub start: usize,
    /// One past the last point.
    pub end: usize,
    /// The segment's level (the weighted median of its points).
    pub level: f64,
}

/// The penalty of one step, in the cost's units (half squared standard deviations of a
/// run's level), for `n` runs: `A + B ln n` (module docs).
pub fn penalty(n: usize) -> f64 {
    PENALTY.0 + PENALTY.1 * (n.max(2) as f64).ln()
}

/// `(A, B)` of [`penalty`].
pub const PENALTY: (f64, f64) = (2.0, 2.0);

/// The segments of `y` (weights `w`) split at the exclusive right bounds `right` (the last
/// `y.len()`).
pub fn at(y: &[f64], w: &[f64], right: &[usize]) -> Vec<Segment> {
    segments(&mut Cost::new(y, w, f64::INFINITY), right)
}

/// The exclusive right bounds of the segments of `y` (weights `w`, same length) at penalty
/// `gamma`, in order; one segment for fewer than 2 points.
pub fn detect(y: &[f64], w: &[f64], gamma: f64) -> Vec<usize> {
    let n = y.len();
    if n < 2 {
        return vec![n];
    }
    approx(&mut Cost::new(y, w, 0.75 * gamma), gamma)
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
        .map(|(l, r)| Segment {
            start: l,
            end: r,
            level: cost.get(l, r - 1).0,
        })
        .collect()
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
        if let Some(j) = at {
            right.remove(j);
            continue;
        }
        // A segment whose two boundaries pay only together (one run far off where the
        // dynamic programme had to cut a long stretch): both go when that lowers the cost.
        let mut best: (f64, Option<usize>) = (0.0, None);
        let mut l = 0;
        for j in 1..right.len().saturating_sub(1) {
            let (a, b, c) = (right[j - 1], right[j], right[j + 1]);
            let change = cost.get(l, c - 1).1
                - (cost.get(l, a - 1).1 + cost.get(a, b - 1).1 + cost.get(b, c - 1).1 + 2.0 * gamma);
            if change < best.0 {
                best = (change, Some(j));
            }
            l = a;
        }
        match best.1 {
            Some(j) => {
                right.remove(j);
                right.remove(j - 1);
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

/// The weighted median of `y[l..=r]` and its [`huber_cost`], memoized: short
/// intervals (what the dynamic programme and the boundary moves ask for, again and again)
/// in a dense table, longer ones in a map.
struct Cost<'a> {
    y: &'a [f64],
    w: &'a [f64],
    /// The most one point may cost ([`huber_cost`]).
    cap: f64,
    short: Vec<Option<(f64, f64)>>,
    long: HashMap<(usize, usize), (f64, f64)>,
}

/// Widths kept in the dense table.
const SHORT: usize = 2 * MAX_PIECE + 2;

impl<'a> Cost<'a> {
    fn new(y: &'a [f64], w: &'a [f64], cap: f64) -> Cost<'a> {
        Cost {
            y,
            w,
            cap,
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
        let dist = huber_cost(y, w, mu, self.cap);
        match slot {
            Some(i) => self.short[i] = Some((mu, dist)),
            None => {
                self.long.insert((l, r), (mu, dist));
            }
        }
        (mu, dist)
    }
}

/// `sum min(rho(w_i (y_i - m)), cap)`, Huber's `rho` ([`HUBER`]), `m` one Huber step from
/// the weighted median `mu`: the weighted mean of the points, each beyond [`HUBER`] standard
/// deviations of `mu` down-weighted to count as that far.
fn huber_cost(y: &[f64], w: &[f64], mu: f64, cap: f64) -> f64 {
    let (mut sw, mut swy) = (0.0, 0.0);
    for (y, w) in y.iter().zip(w) {
        let z = (w * (y - mu)).abs();
        let k = w * w * if z <= HUBER { 1.0 } else { HUBER / z };
        sw += k;
        swy += k * y;
    }
    let m = if sw > 0.0 { swy / sw } else { mu };
    y.iter()
        .zip(w)
        .map(|(y, w)| {
            let z = (w * (y - m)).abs();
            if z <= HUBER {
                z * z / 2.0
            } else {
                (HUBER * z - HUBER * HUBER / 2.0).min(cap)
            }
        })
        .sum()
}

/// Where the cost turns from squares to a line, standard deviations.
pub const HUBER: f64 = 2.0;

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

    /// Deterministic noise in [-1, 1] (standard deviation 1 / sqrt(3)).
    fn noise(i: usize) -> f64 {
        let x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// Weights of points whose noise is `amplitude * noise`.
    fn weights(n: usize, amplitude: f64) -> Vec<f64> {
        vec![3f64.sqrt() / amplitude; n]
    }

    #[test]
    fn a_clean_step_is_found_where_it_is() {
        let y: Vec<f64> = (0..12)
            .map(|i| if i < 7 { 1.0 } else { 1.25 } + 0.01 * noise(i))
            .collect();
        let right = detect(&y, &weights(12, 0.01), penalty(12));
        assert_eq!(right, [7, 12]);
        let s = at(&y, &weights(12, 0.01), &right);
        assert!((s[1].level / s[0].level - 1.25).abs() < 0.03, "{s:?}");
    }

    #[test]
    fn flat_noise_is_one_segment() {
        for n in [5, 12, 40, 300, 3000] {
            let y: Vec<f64> = (0..n).map(|i| 1.0 + 0.03 * noise(i)).collect();
            assert_eq!(detect(&y, &weights(n, 0.03), penalty(n)), [n], "n={n}");
        }
    }

    #[test]
    fn one_run_far_off_in_the_middle_is_no_step_however_far() {
        // Two steps (in and out) cost twice the penalty; one run costs at most one and a half.
        for sd in [8.0, 50.0, 1e6] {
            let mut y: Vec<f64> = (0..40).map(|i| 1.0 + 0.01 * noise(i)).collect();
            y[20] = 1.0 + sd * 0.01 / 3f64.sqrt();
            assert_eq!(detect(&y, &weights(40, 0.01), penalty(40)), [40], "{sd}");
        }
        // At the end one run does not pay for one step either (the verdict tests a newest
        // run far off on its own: super::judge); two runs do.
        let mut y: Vec<f64> = (0..40).map(|i| 1.0 + 0.01 * noise(i)).collect();
        y[39] = 1.5;
        assert_eq!(detect(&y, &weights(40, 0.01), penalty(40)), [40]);
        y[38] = 1.5;
        assert_eq!(detect(&y, &weights(40, 0.01), penalty(40)), [38, 40]);
    }

    #[test]
    fn weighted_median_splits_evenly_between_the_middle_values() {
        assert_eq!(weighted_median(&[3.0, 1.0, 2.0], &[1.0, 1.0, 1.0]), 2.0);
        assert_eq!(weighted_median(&[1.0, 2.0], &[1.0, 1.0]), 1.5);
        assert_eq!(weighted_median(&[1.0, 2.0, 10.0], &[1.0, 1.0, 5.0]), 10.0);
    }
}
