//! The seeded case order, owned here so that a `shuffle_seed` recorded in a report gives the
//! same order with every future version of this tool's dependencies: the SplitMix64
//! generator, unbiased bounded draws, and a Fisher-Yates shuffle. Fresh seeds (and other
//! unpredictable numbers, such as the length of the environment padding) come from the
//! standard library's randomly keyed hasher.
//!
//! Must not: know about cases, reports or what is being ordered.
use std::hash::{BuildHasher, Hasher};

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014; the constants of Vigna's `splitmix64.c`): a 64-bit state advanced by the
/// golden-ratio increment, each output a mix of the state. Small, fast, and fully defined
/// here, so a seed means the same sequence forever.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw from `0..n` (`n > 0`): Lemire's multiply-and-shift with rejection
    /// ("Fast random integer generation in an interval", 2019), without bias.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }
}

/// Seeded noise for the crate's unit tests (the history model's series and laws).
#[cfg(test)]
impl SplitMix64 {
    /// A uniform draw from `[0, 1)`: the top 53 bits of the next output.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal draw (Box-Muller, one of its pair).
    pub fn gauss(&mut self) -> f64 {
        let (u, v) = (self.unit().max(1e-300), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Shuffle `items` in place by the seed: Fisher-Yates (Durstenfeld's form), from the last
/// position down, swapping position `i` with a uniform draw from `0..=i` of [`SplitMix64`].
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut rng = SplitMix64::new(seed);
    for i in (1..items.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// An unpredictable 64-bit number: the standard library's hasher with its per-process random
/// keys (fresh for every call), over the time and the pid. Not for cryptography.
pub fn fresh_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.finish()
}

/// A fresh seed below 2^53, so JSON readers that hold numbers as doubles keep it exact.
pub fn fresh_seed() -> u64 {
    fresh_u64() >> 11
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_outputs() {
        // splitmix64.c seeded with 1234567 (the published test vector).
        let mut r = SplitMix64::new(1234567);
        let first: Vec<u64> = (0..5).map(|_| r.next_u64()).collect();
        assert_eq!(
            first,
            [
                6457827717110365317,
                3203168211198807973,
                9817491932198370423,
                4593380528125082431,
                16408922859458223821
            ]
        );
    }

    #[test]
    fn a_seed_pins_the_order() {
        // Computed independently (a Python transcription of this algorithm); a change here
        // breaks every recorded `shuffle_seed`.
        let mut items: Vec<u32> = (0..10).collect();
        shuffle(&mut items, 42);
        assert_eq!(items, [8, 3, 6, 5, 4, 0, 9, 2, 1, 7]);
        let mut again: Vec<u32> = (0..10).collect();
        shuffle(&mut again, 0);
        assert_eq!(again, [4, 9, 2, 5, 1, 7, 6, 0, 3, 8]);
        let mut one = [7];
        shuffle(&mut one, 42);
        assert_eq!(one, [7]);
        shuffle::<u8>(&mut [], 42);
    }

    #[test]
    fn draws_stay_in_range_and_cover_it() {
        let mut r = SplitMix64::new(9);
        let mut seen = [0usize; 3];
        for _ in 0..3000 {
            seen[r.below(3) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
        assert_eq!(r.below(1), 0);
        assert!(fresh_seed() < 1 << 53);
        assert_ne!(fresh_u64(), fresh_u64());
    }
}
