//! A monotone trend in one series, in O(n log n) time and O(n) memory (issue 58, item 5):
//! the Theil-Sen line (the median of the `n (n - 1) / 2` pairwise slopes, found without
//! keeping them) and the Mann-Kendall test (its statistic `S` by counting inversions with
//! a merge sort, as Knight computes Kendall's tau, ties corrected).
//!
//! Slope selection: the slopes `(y_j - y_i) / (j - i)`, `i < j`, at most `s` are the pairs
//! whose order is inverted by `u = y - s x` (`y_j - s j <= y_i - s i`), so a merge sort of
//! `u` counts them in O(n log n). The median slope is bracketed by bisecting `(lo, hi]` on
//! the total order of `f64` values (at most 64 halvings, in practice about 25 for 20,000
//! runs) until the bracket holds at most `n` slopes; those are then listed by the same
//! merge (the pairs one order inverts and the other does not) and the median is selected
//! among them. The answer is the median of all pairwise slopes, not an approximation and
//! not a window: 10,000 runs kept 50 million slopes (400 MB) before, O(n) now.
//!
//! Must not: know about runs or reports: numbers in, numbers out.

/// The Theil-Sen line of `y` against its index: `(slope, value at index 0)`, the slope the
/// median of the pairwise slopes (the mean of the two middle ones for an even count) and
/// the intercept the median of `y_i - slope * i`.
pub fn theil_sen(y: &[f64]) -> (f64, f64) {
    let n = y.len();
    if n < 2 {
        return (0.0, y.first().copied().unwrap_or(0.0));
    }
    let pairs = n * (n - 1) / 2;
    let slope = if pairs % 2 == 1 {
        nth_slope(y, pairs / 2)
    } else {
        (nth_slope(y, pairs / 2 - 1) + nth_slope(y, pairs / 2)) / 2.0
    };
    let mut rest: Vec<f64> = y.iter().enumerate().map(|(i, v)| v - slope * i as f64).collect();
    (slope, median_in_place(&mut rest))
}

/// The `k`-th smallest (0-based) pairwise slope of `y`, `k < n (n - 1) / 2` (module docs).
pub fn nth_slope(y: &[f64], k: usize) -> f64 {
    let n = y.len();
    // Every slope lies within ±(max - min) (the index steps are at least 1): none is at
    // most lo, all are at most hi.
    let (min, max) = y
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
    let span = (max - min).abs() + 1.0;
    let (mut lo, mut hi) = (-span, span);
    let (mut below, mut upto) = (0usize, n * (n - 1) / 2);
    let mut scratch = Scratch::new(n);
    // Invariant: below = count(lo) <= k < upto = count(hi).
    while upto - below > n.max(64) {
        let mid = midpoint(lo, hi);
        if mid <= lo || mid >= hi {
            // Adjacent values: every slope inside equals hi (many tied slopes).
            return hi;
        }
        let c = scratch.count(y, mid);
        if k < c {
            (hi, upto) = (mid, c);
        } else {
            (lo, below) = (mid, c);
        }
    }
    let mut inside = scratch.list(y, lo, hi);
    if inside.is_empty() {
        return hi; // rounding put the pairs on the bracket's edge
    }
    let rank = (k - below).min(inside.len() - 1);
    *inside.select_nth_unstable_by(rank, f64::total_cmp).1
}

/// The middle of `lo` and `hi` in the order of `f64` values (halving how many values lie
/// between, not the distance: at most 64 halvings to adjacent values).
fn midpoint(lo: f64, hi: f64) -> f64 {
    // The bits of a float, as a signed integer ordered as the floats are (-0 and +0 as 0).
    let key = |x: f64| {
        let b = x.to_bits() as i64;
        if b < 0 {
            i64::MIN as i128 - b as i128
        } else {
            b as i128
        }
    };
    let k = (key(lo) + key(hi)).div_euclid(2);
    if k < 0 {
        f64::from_bits((i64::MIN as i128 - k) as i64 as u64)
    } else {
        f64::from_bits(k as u64)
    }
}

/// The buffers of the merge sorts, allocated once: `(sort key, y, index)`.
struct Scratch {
    items: Vec<(f64, f64, usize)>,
    tmp: Vec<(f64, f64, usize)>,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch {
            items: Vec::with_capacity(n),
            tmp: vec![(0.0, 0.0, 0); n],
        }
    }

    /// How many pairwise slopes are at most `s`: pairs `i < j` with `u_j <= u_i`.
    fn count(&mut self, y: &[f64], s: f64) -> usize {
        self.items.clear();
        self.items
            .extend(y.iter().enumerate().map(|(i, v)| (v - s * i as f64, *v, i)));
        merge_sort(&mut self.items, &mut self.tmp, None)
    }

    /// The slopes in `(lo, hi]`. In `lo`'s order of `u` (a tie, a slope equal to lo, puts
    /// the later point first), a pair whose slope exceeds lo has its earlier point first;
    /// one whose slope is at most lo has it second, and then `hi`'s `u` keeps that order
    /// (its slope is below hi). So the pairs `hi`'s `u` puts out of `lo`'s order are those
    /// with `lo < slope <= hi`.
    fn list(&mut self, y: &[f64], lo: f64, hi: f64) -> Vec<f64> {
        let mut order: Vec<(f64, usize)> = y.iter().enumerate().map(|(i, v)| (v - lo * i as f64, i)).collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        self.items.clear();
        self.items
            .extend(order.iter().map(|&(_, i)| (y[i] - hi * i as f64, y[i], i)));
        let mut out = Vec::new();
        merge_sort(&mut self.items, &mut self.tmp, Some(&mut out));
        out
    }
}

/// A stable merge sort of `items` by their key, ascending; returns how many pairs it puts
/// out of their input order or ties (an item at most an earlier one), and lists their
/// slopes (`(y_b - y_a) / (b - a)`, `a` the smaller index) into `list` when given.
fn merge_sort(
    items: &mut [(f64, f64, usize)],
    tmp: &mut [(f64, f64, usize)],
    mut list: Option<&mut Vec<f64>>,
) -> usize {
    let n = items.len();
    let mut count = 0usize;
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut t) = (start, mid, start);
            while i < mid && j < end {
                if items[i].0 < items[j].0 {
                    tmp[t] = items[i];
                    i += 1;
                } else {
                    // items[j] is at most every one of items[i..mid], all before it.
                    count += mid - i;
                    if let Some(out) = list.as_deref_mut() {
                        let b = items[j];
                        out.extend(items[i..mid].iter().map(|a| {
                            let (first, second) = if a.2 < b.2 { (a, &b) } else { (&b, a) };
                            (second.1 - first.1) / (second.2 - first.2) as f64
                        }));
                    }
                    tmp[t] = items[j];
                    j += 1;
                }
                t += 1;
            }
            let rest = mid - i;
            tmp[t..t + rest].copy_from_slice(&items[i..mid]);
            t += rest;
            tmp[t..end].copy_from_slice(&items[j..end]);
            items[start..end].copy_from_slice(&tmp[start..end]);
            start = end;
        }
        width *= 2;
    }
    count
}

/// The two-sided p-value of the Mann-Kendall trend test: `S = sum sign(y_j - y_i)` over
/// `i < j` (by counting the pairs `y_j <= y_i` with a merge sort: `S = N - 2 D + T`, `N`
/// the pairs, `D` those counted, `T` the tied ones), its variance corrected for ties, the
/// normal approximation with a continuity correction.
pub fn mann_kendall_p(y: &[f64]) -> f64 {
    let n = y.len();
    if n < 3 {
        return 1.0;
    }
    let mut items: Vec<(f64, f64, usize)> = y.iter().enumerate().map(|(i, v)| (*v, *v, i)).collect();
    let mut tmp = vec![(0.0, 0.0, 0); n];
    let d = merge_sort(&mut items, &mut tmp, None) as i64;
    // items is now sorted by value: the tie groups.
    let (mut tied_pairs, mut ties) = (0i64, 0.0);
    let mut k = 0;
    while k < n {
        let mut e = k + 1;
        while e < n && items[e].0 == items[k].0 {
            e += 1;
        }
        let t = (e - k) as f64;
        tied_pairs += ((e - k) * (e - k - 1) / 2) as i64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
        k = e;
    }
    let pairs = (n * (n - 1) / 2) as i64;
    let s = pairs - 2 * d + tied_pairs;
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

/// The median, by selection.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The quadratic definitions, to check against.
    fn brute_slopes(y: &[f64]) -> Vec<f64> {
        let mut s = Vec::new();
        for i in 0..y.len() {
            for j in i + 1..y.len() {
                s.push((y[j] - y[i]) / (j - i) as f64);
            }
        }
        s.sort_by(f64::total_cmp);
        s
    }

    fn brute_s(y: &[f64]) -> i64 {
        let mut s = 0;
        for i in 0..y.len() {
            for j in i + 1..y.len() {
                s += (y[j] - y[i]).signum() as i64 * i64::from(y[j] != y[i]);
            }
        }
        s
    }

    /// Deterministic noise in [-1, 1].
    fn noise(i: usize) -> f64 {
        let x = (i as u64 + 11).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    #[test]
    fn every_rank_is_the_brute_force_one_with_and_without_ties() {
        let series: Vec<Vec<f64>> = vec![
            (0..300).map(|i| 1.0 + 0.001 * i as f64 + 0.05 * noise(i)).collect(),
            (0..257).map(|i| (10.0 * noise(i)).round()).collect(), // many tied values and slopes
            (0..200).map(|i| if i < 120 { 1.0 } else { 1.3 }).collect(), // a step: tied slopes 0
            vec![5.0; 100],
            (0..150).map(|i| -(i as f64) * 1e-7 + 1e-9 * noise(i)).collect(),
            vec![1.0, 2.0],
        ];
        for y in &series {
            let want = brute_slopes(y);
            for k in [0, 1, want.len() / 3, want.len() / 2, want.len() - 1]
                .into_iter()
                .filter(|k| *k < want.len())
            {
                assert_eq!(nth_slope(y, k), want[k], "n {} rank {k}", y.len());
            }
            let m = want.len() / 2;
            let median = if want.len() % 2 == 1 {
                want[m]
            } else {
                (want[m - 1] + want[m]) / 2.0
            };
            assert_eq!(theil_sen(y).0, median);
        }
    }

    #[test]
    fn mann_kendall_s_is_the_brute_force_one() {
        for y in [
            (0..300).map(|i| 0.01 * i as f64 + noise(i)).collect::<Vec<f64>>(),
            (0..101).map(|i| (3.0 * noise(i)).round()).collect(),
        ] {
            // p from S through the same variance: equal p means equal |S|.
            let s = brute_s(&y);
            let n = y.len() as f64;
            let mut sorted = y.clone();
            sorted.sort_by(f64::total_cmp);
            let mut ties = 0.0;
            let mut k = 0;
            while k < sorted.len() {
                let e = k + sorted[k..].iter().take_while(|v| **v == sorted[k]).count();
                let t = (e - k) as f64;
                ties += t * (t - 1.0) * (2.0 * t + 5.0);
                k = e;
            }
            let var = (n * (n - 1.0) * (2.0 * n + 5.0) - ties) / 18.0;
            let want = erfc((s.abs() as f64 - 1.0) / var.sqrt() / std::f64::consts::SQRT_2).min(1.0);
            assert_eq!(mann_kendall_p(&y), want, "S {s}");
        }
    }

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
    fn twenty_thousand_runs_in_linear_memory() {
        // 200 million pairwise slopes: 1.6 GB kept; the bracket lists at most n of them.
        let y: Vec<f64> = (0..20_000).map(|i| 1.0 + 1e-5 * i as f64 + 0.01 * noise(i)).collect();
        let (slope, _) = theil_sen(&y);
        assert!((slope - 1e-5).abs() < 1e-6, "{slope}");
        assert!(mann_kendall_p(&y) < 1e-10);
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
