//! Output quality: PSNR, max and mean absolute error between two tensors.
use crate::report::ErrorStats;

/// Error of `other` against `reference` (PSNR over the [-1,1] range: 10*log10(4/MSE)).
pub fn error_stats(reference: &[f32], other: &[f32]) -> ErrorStats {
    assert_eq!(reference.len(), other.len(), "error_stats: length mismatch");
    let (mut max_abs, mut sum_abs, mut sum_sq) = (0f64, 0f64, 0f64);
    for (&a, &b) in reference.iter().zip(other) {
        let d = (a as f64 - b as f64).abs();
        max_abs = max_abs.max(d);
        sum_abs += d;
        sum_sq += d * d;
    }
    let n = reference.len().max(1) as f64;
    let mse = sum_sq / n;
    let identical = reference.iter().zip(other).all(|(a, b)| a.to_bits() == b.to_bits());
    ErrorStats {
        psnr_db: if mse > 0.0 {
            Some(10.0 * (4.0 / mse).log10())
        } else {
            None
        },
        max_abs,
        mean_abs: sum_abs / n,
        identical,
    }
}
