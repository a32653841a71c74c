//! The uncertainty of a speed-up: a percentile bootstrap of the ratio of two medians, with
//! its own seeded generator (SplitMix64), so the same samples always give the same
//! interval, whatever version of `rand` the project uses.
//!
//! Method (`docs/answer.md`): draw [`RESAMPLES`] times, independently for each side, as
//! many runs as it has, with replacement; compute median(baseline) / median(candidate) of
//! each draw; the interval is the 2.5th and 97.5th percentiles of those ratios (the 51st
//! smallest and the 51st largest of 2000). Two cases timed in interleaved rounds are
//! compared **round by round** instead ([`paired_ratio`], [`paired_ratio_interval`]): each
//! round's ratio of the two sides' medians, their median the estimate, and the rounds'
//! ratios resampled (as many as they shared, with replacement), so what the machine did
//! during a round cancels within it, and the interval reflects the spread between rounds.
//!
//! Must not: read reports or decide verdicts (the caller does).

/// Draws per interval.
pub const RESAMPLES: usize = 2000;
/// Seed of every interval's generator (recorded in the report's `summary`).
pub const SEED: u64 = 0x5EED_A45E;
/// Coverage of the interval.
pub const CONFIDENCE: f64 = 0.95;

/// SplitMix64 (Steele, Lea and Flood 2014): 64-bit state, one add and a mix per draw.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index below `n` (multiply-shift: no modulo bias worth the name for small `n`).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// The interval of `median(numerator) / median(denominator)`, or `None` when either side
/// has fewer than 2 samples (one run has no spread to resample).
pub fn ratio_interval(numerator: &[f64], denominator: &[f64]) -> Option<(f64, f64)> {
    if numerator.len() < 2 || denominator.len() < 2 {
        return None;
    }
    let mut rng = SplitMix64(SEED);
    let mut draw = |xs: &[f64]| -> f64 {
        let pick: Vec<f64> = (0..xs.len()).map(|_| xs[rng.below(xs.len())]).collect();
        crate::util::stats::median(&pick)
    };
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let n = draw(numerator);
            n / draw(denominator)
        })
        .filter(|r| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (((1.0 - CONFIDENCE) / 2.0) * ratios.len() as f64).floor() as usize;
    Some((ratios[tail], ratios[ratios.len() - 1 - tail]))
}

/// Each round's ratio of the two sides' medians (`rounds`: each round's runs of the two sides).
fn round_ratios(rounds: &[(Vec<f64>, Vec<f64>)]) -> Vec<f64> {
    rounds
        .iter()
        .map(|(a, b)| crate::util::stats::median(a) / crate::util::stats::median(b))
        .filter(|r| r.is_finite())
        .collect()
}

/// The paired estimate of a ratio for runs paired by round: the median of the rounds' own
/// ratios (what the machine did during a round cancels within it); `None` without a round.
pub fn paired_ratio(rounds: &[(Vec<f64>, Vec<f64>)]) -> Option<f64> {
    let r = round_ratios(rounds);
    (!r.is_empty()).then(|| crate::util::stats::median(&r))
}

/// The interval of [`paired_ratio`], drawn by round: each draw takes as many rounds' ratios
/// as there are, with replacement, and keeps their median; `None` with fewer than 2 rounds
/// (one round has no spread between rounds).
pub fn paired_ratio_interval(rounds: &[(Vec<f64>, Vec<f64>)]) -> Option<(f64, f64)> {
    let per = round_ratios(rounds);
    if per.len() < 2 {
        return None;
    }
    let mut rng = SplitMix64(SEED);
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let pick: Vec<f64> = (0..per.len()).map(|_| per[rng.below(per.len())]).collect();
            crate::util::stats::median(&pick)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let tail = (((1.0 - CONFIDENCE) / 2.0) * ratios.len() as f64).floor() as usize;
    Some((ratios[tail], ratios[ratios.len() - 1 - tail]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_is_deterministic_and_brackets_the_ratio() {
        let base = [2.0, 2.1, 1.9, 2.05, 1.95];
        let fast = [1.0, 1.05, 0.95, 1.02, 0.98];
        let a = ratio_interval(&base, &fast).unwrap();
        assert_eq!(a, ratio_interval(&base, &fast).unwrap());
        assert!(a.0 > 1.7 && a.0 <= 2.0 && a.1 >= 2.0 && a.1 < 2.3, "{a:?}");
        // Overlapping samples give an interval that contains 1.
        let b = ratio_interval(&[1.0, 1.2, 0.9, 1.1], &[1.05, 0.95, 1.15, 1.0]).unwrap();
        assert!(b.0 < 1.0 && b.1 > 1.0, "{b:?}");
        assert_eq!(ratio_interval(&[1.0], &fast), None);
    }

    #[test]
    fn rounds_carry_their_load_to_both_sides() {
        // Load moves each round's level by up to 2x; within a round the two sides are 1:1.
        let levels = [1.0, 2.0, 1.3, 1.8, 1.1];
        let rounds: Vec<(Vec<f64>, Vec<f64>)> = levels.iter().map(|l| (vec![*l], vec![*l * 1.001])).collect();
        let (lo, hi) = paired_ratio_interval(&rounds).unwrap();
        assert!(lo > 0.99 && hi < 1.0, "{lo} {hi}");
        // The same runs taken as independent samples spread over the load.
        let (a, b): (Vec<f64>, Vec<f64>) = rounds.iter().map(|(x, y)| (x[0], y[0])).unzip();
        let (ilo, ihi) = ratio_interval(&a, &b).unwrap();
        assert!(ilo < 0.8 && ihi > 1.2, "{ilo} {ihi}");
        assert_eq!(paired_ratio_interval(&rounds[..1]), None);
    }

    #[test]
    fn generator_is_splitmix64() {
        // First outputs of SplitMix64 seeded with 0 (the reference implementation's).
        let mut g = SplitMix64(0);
        assert_eq!(g.next(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next(), 0x6E78_9E6A_A1B9_65F4);
    }
}
