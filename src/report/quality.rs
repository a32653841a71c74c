//! Output quality: PSNR, max and mean absolute error between two tensors.
//!
//! Convention: values live in [-1, 1] (peak-to-peak 2), so PSNR = 10·log10(2² / MSE) dB.
//! Outputs with no differing value have infinite PSNR, recorded as `psnr_db: None, identical: true`.
//! Everything is accumulated in f64.
//!
//! Must not: read files or tensors: plain f32 slices in, statistics out.
use crate::report::ErrorStats;

/// Peak-to-peak range of the [-1, 1] signal.
const PEAK_TO_PEAK: f64 = 2.0;

/// Error of `other` against `reference` (same length required; panics otherwise, since a
/// shape mismatch is a bug of the caller, not a quality result).
///
/// Finite values that compare equal (including `+0.0` vs `-0.0`) contribute no error;
/// `identical` means no value differs. A NaN or infinity on either side is never equal to
/// anything (not even the same NaN or infinity on the other side): it counts as the full
/// range (2.0), so a broken output gets a low but finite PSNR, is never `identical`, and
/// every number stays valid JSON.
pub fn error_stats(reference: &[f32], other: &[f32]) -> ErrorStats {
    assert_eq!(
        reference.len(),
        other.len(),
        "error_stats: reference has {} values, other has {}",
        reference.len(),
        other.len()
    );
    let (mut max_abs, mut sum_abs, mut sum_sq) = (0.0f64, 0.0f64, 0.0f64);
    let mut identical = true;
    for (&r, &o) in reference.iter().zip(other) {
        if r == o && r.is_finite() {
            continue;
        }
        identical = false;
        let d = (r as f64 - o as f64).abs();
        let d = if d.is_finite() { d } else { PEAK_TO_PEAK };
        max_abs = max_abs.max(d);
        sum_abs += d;
        sum_sq += d * d;
    }
    if identical {
        return ErrorStats {
            psnr_db: None,
            max_abs: 0.0,
            mean_abs: 0.0,
            identical: true,
        };
    }
    let n = reference.len() as f64;
    let mse = sum_sq / n;
    ErrorStats {
        psnr_db: Some(10.0 * (PEAK_TO_PEAK * PEAK_TO_PEAK / mse).log10()),
        max_abs,
        mean_abs: sum_abs / n,
        identical: false,
    }
}

/// PSNR in dB of `other` against `reference` over the [-1, 1] range; `None` when no value
/// differs (infinite PSNR).
pub fn psnr_db(reference: &[f32], other: &[f32]) -> Option<f64> {
    error_stats(reference, other).psnr_db
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_outputs_have_infinite_psnr_and_zero_error() {
        let a = [0.5f32, -0.25, 1.0, -1.0, 0.0];
        let s = error_stats(&a, &a);
        assert_eq!(s.psnr_db, None);
        assert!(s.identical);
        assert_eq!(s.max_abs, 0.0);
        assert_eq!(s.mean_abs, 0.0);
        assert_eq!(psnr_db(&a, &a), None);
    }

    #[test]
    fn perturbed_output_matches_hand_computed_psnr() {
        // Four values, one off by 0.1: MSE = 0.01 / 4 = 0.0025,
        // PSNR = 10 log10(4 / 0.0025) = 10 log10(1600) = 32.0412 dB.
        let r = [0.0f32, 0.5, -0.5, 1.0];
        let o = [0.0f32, 0.5, -0.5, 0.9];
        let s = error_stats(&r, &o);
        let psnr = s.psnr_db.unwrap();
        assert!((psnr - 32.041_199_826_559_25).abs() < 1e-4, "{psnr}");
        assert!((s.max_abs - 0.1).abs() < 1e-6);
        assert!((s.mean_abs - 0.025).abs() < 1e-6);
        assert!(!s.identical);
    }

    #[test]
    fn uniform_offset_psnr() {
        // Every value off by 0.02: MSE = 4e-4, PSNR = 10 log10(1e4) = 40 dB.
        let r: Vec<f32> = (0..1000).map(|i| (i as f32 / 500.0) - 1.0).collect();
        let o: Vec<f32> = r.iter().map(|x| x + 0.02).collect();
        let s = error_stats(&r, &o);
        assert!((s.psnr_db.unwrap() - 40.0).abs() < 1e-3);
        assert!((s.mean_abs - 0.02).abs() < 1e-5);
    }

    #[test]
    fn nan_counts_as_full_range_error() {
        // One of two values is NaN: MSE = 4 / 2 = 2, PSNR = 10 log10(2) = 3.0103 dB.
        let s = error_stats(&[0.0, 1.0], &[0.0, f32::NAN]);
        assert!((s.psnr_db.unwrap() - 3.010_299_956_639_812).abs() < 1e-9);
        assert!(!s.identical);
        assert_eq!(s.max_abs, 2.0);
        assert!(serde_json::to_string(&s).unwrap().contains("3.01"));
    }

    #[test]
    fn signed_zero_is_not_a_difference() {
        let s = error_stats(&[0.0, 0.5], &[-0.0, 0.5]);
        assert!(s.identical);
        assert_eq!(s.psnr_db, None);
    }

    #[test]
    #[should_panic]
    fn length_mismatch_panics() {
        error_stats(&[0.0], &[0.0, 1.0]);
    }
}
