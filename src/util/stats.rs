//! Statistics over timing samples: min/median/mean/stddev/max and MAD outliers.
//!
//! Outliers follow hyperfine's rule exactly (`src/outlier_detection.rs` there): a sample is an
//! outlier when its modified Z-score `|x - median| / MAD` exceeds `1.4826 * 10` (that is,
//! more than ten MAD-estimated standard deviations from the median); a MAD of zero is
//! replaced by `f64::EPSILON`.
//!
//! Must not: know about passes, cases or reports: plain samples in, numbers out.

/// Threshold on `|x - median| / MAD` above which a sample is an outlier (hyperfine's value).
pub const OUTLIER_THRESHOLD: f64 = 1.4826 * 10.0;

/// Summary of a non-empty sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Smallest value.
    pub min: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for a single value.
    pub stddev: f64,
    /// Largest value.
    pub max: f64,
    /// Number of outliers by [`count_outliers`].
    pub outliers: usize,
}

/// Summarize `xs`; `None` when empty.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let stddev = if xs.len() > 1 {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    Some(Summary {
        min: xs.iter().copied().fold(f64::INFINITY, f64::min),
        median: median(xs),
        mean,
        stddev,
        max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        outliers: count_outliers(xs),
    })
}

/// Median of `xs` (NaN-free input); 0 when empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[m - 1] + v[m]) / 2.0
    } else {
        v[m]
    }
}

/// `(x - median) / MAD` for every sample (MAD 0 replaced by `f64::EPSILON`).
pub fn modified_zscores(xs: &[f64]) -> Vec<f64> {
    let med = median(xs);
    let deviations: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    let mad = median(&deviations);
    let mad = if mad > 0.0 { mad } else { f64::EPSILON };
    xs.iter().map(|x| (x - med) / mad).collect()
}

/// Number of samples whose modified Z-score exceeds [`OUTLIER_THRESHOLD`] in magnitude.
pub fn count_outliers(xs: &[f64]) -> usize {
    modified_zscores(xs)
        .iter()
        .filter(|z| z.abs() > OUTLIER_THRESHOLD)
        .count()
}

/// `xs` less the samples [`count_outliers`] counts (a scheduling hiccup, a page-cache miss):
/// what `compare` and `history` test on, in the samples' order. Hyperfine's ten-MAD rule is
/// deliberately extreme, so only a sample far outside the others' spread is set aside; with
/// fewer than three samples nothing is (no median of the others to measure from).
pub fn without_outliers(xs: &[f64]) -> Vec<f64> {
    if xs.len() < 3 {
        return xs.to_vec();
    }
    xs.iter()
        .zip(modified_zscores(xs))
        .filter(|(_, z)| z.abs() <= OUTLIER_THRESHOLD)
        .map(|(x, _)| *x)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn summary_of_known_samples() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!(close(s.min, 2.0) && close(s.max, 9.0));
        assert!(close(s.mean, 5.0));
        assert!(close(s.median, 4.5));
        // sum of squared deviations 32, n - 1 = 7
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt()));
        assert_eq!(s.outliers, 0);
    }

    #[test]
    fn single_and_odd_samples() {
        let s = summarize(&[3.5]).unwrap();
        assert_eq!((s.min, s.median, s.mean, s.stddev, s.max), (3.5, 3.5, 3.5, 0.0, 3.5));
        assert!(close(summarize(&[3.0, 1.0, 2.0]).unwrap().median, 2.0));
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn outliers_are_set_aside_in_order() {
        assert_eq!(without_outliers(&[1.0, 1.5, 1.003]), [1.0, 1.003]);
        assert_eq!(without_outliers(&[1.0, 1.1, 0.9, 1.0, 1.2]), [1.0, 1.1, 0.9, 1.0, 1.2]);
        assert_eq!(without_outliers(&[1.0, 9.0]), [1.0, 9.0]);
    }

    #[test]
    fn outliers_follow_hyperfine() {
        assert_eq!(count_outliers(&[50.0]), 0);
        assert_eq!(count_outliers(&[1000.0, 0.0]), 0);
        assert_eq!(count_outliers(&[-0.2, 0.0, 0.2]), 0);
        assert_eq!(count_outliers(&[-0.2, 0.0, 0.2, 4.0]), 1);
        assert_eq!(count_outliers(&[0.5, 0.30, 0.29, 0.31, 0.30]), 1);
        // MAD of zero: every deviating sample is an outlier.
        assert_eq!(count_outliers(&[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 100.0]), 1);
        // 1.2 is 2 MADs out: not an outlier under hyperfine's 10-sigma rule.
        assert_eq!(count_outliers(&[1.0, 1.1, 0.9, 1.0, 1.2]), 0);
    }
}
