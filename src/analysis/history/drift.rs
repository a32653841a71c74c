//! A drift within a series' newest segment: the Theil-Sen line's change across it and the
//! Mann-Kendall test on its run medians ([`super::trend`]); a regression when slower beyond
//! the threshold at `alpha / 2` ([`super::judge`] says when it is judged).
//!
//! Must not: fit steps or judge levels (`judge`, `steps`).
use serde::Serialize;

use super::steps::Segment;
use super::{trend, Point};

/// Runs the newest segment needs before a drift is judged.
pub const MIN_DRIFT_RUNS: usize = 6;

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
    /// Slower beyond the threshold and p < alpha / 2: a regression.
    pub regression: bool,
}

/// The drift of the newest segment (`judge`'s module docs), `None` below [`MIN_DRIFT_RUNS`]
/// runs.
pub fn of(newest: &Segment, points: &[Point], threshold: f64, alpha: f64) -> Option<Drift> {
    let y: Vec<f64> = points[newest.start..newest.end].iter().map(|p| p.median_s).collect();
    if y.len() < MIN_DRIFT_RUNS {
        return None;
    }
    let (slope, start) = trend::theil_sen(&y);
    let change = if start > 0.0 {
        slope * (y.len() - 1) as f64 / start
    } else {
        0.0
    };
    let p_value = trend::mann_kendall_p(&y);
    Some(Drift {
        first_point: newest.start,
        last_point: newest.end - 1,
        change,
        p_value,
        regression: change > threshold && p_value < alpha / 2.0,
    })
}
