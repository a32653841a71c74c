//! Case order: shuffled with a recorded seed (the default, so slow drift of the machine does
//! not line up with one axis of the matrix), or as written in the matrix.
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::error::UserError;

/// How cases are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Random permutation from a seed recorded in the report.
    Shuffled,
    /// Matrix order: the last axis (env) varies fastest.
    AsWritten,
}

impl Order {
    /// `shuffled` or `as-written`.
    pub fn parse(what: &str, s: &str) -> Result<Order, UserError> {
        match s.trim() {
            "shuffled" | "shuffle" | "random" => Ok(Order::Shuffled),
            "as-written" | "as_written" | "written" => Ok(Order::AsWritten),
            _ => Err(UserError::invalid(what, s, "`shuffled` or `as-written`")),
        }
    }
    /// Name recorded in the report.
    pub fn name(self) -> &'static str {
        match self {
            Order::Shuffled => "shuffled",
            Order::AsWritten => "as-written",
        }
    }
}

/// Order `items`; returns the seed used (`None` when not shuffled). A `None` seed draws one.
pub fn schedule<T>(items: &mut [T], order: Order, seed: Option<u64>) -> Option<u64> {
    match order {
        Order::AsWritten => None,
        Order::Shuffled => {
            // Drawn seeds stay below 2^53 so that JSON readers using doubles keep them exact.
            let seed = seed.unwrap_or_else(|| rand::thread_rng().gen::<u64>() >> 11);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            items.shuffle(&mut rng);
            Some(seed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_order() {
        let mut a: Vec<u32> = (0..20).collect();
        let mut b = a.clone();
        assert_eq!(schedule(&mut a, Order::Shuffled, Some(7)), Some(7));
        schedule(&mut b, Order::Shuffled, Some(7));
        assert_eq!(a, b);
        assert_ne!(a, (0..20).collect::<Vec<_>>());
        let mut c: Vec<u32> = (0..20).collect();
        assert_eq!(schedule(&mut c, Order::AsWritten, Some(7)), None);
        assert_eq!(c, (0..20).collect::<Vec<_>>());
    }
}
