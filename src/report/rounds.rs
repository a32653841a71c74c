//! A case's place in a run of interleaved rounds (issue 63, item 1): the record
//! `cases[].outcome.rounds` ([`CaseRounds`]): which round each timed run was taken in, so
//! that two cases of one workload are compared round by round (what the machine did during
//! a round fell on both), and how many rounds were planned and done (an interrupted run
//! keeps the runs of the rounds it finished).
//!
//! Must not: plan rounds (`run::rounds` does) or judge (`analysis::answer::bootstrap` reads
//! the rounds to pair the runs).
use serde::{Deserialize, Serialize};

/// The rounds of one case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CaseRounds {
    /// Rounds planned for the case (its workload's rounds).
    pub planned: usize,
    /// Rounds in which the case was visited and ended `ok`.
    pub done: usize,
    /// For each timed run, in order (the index of `samples_s` of both passes), the round it
    /// was taken in, from 0.
    pub of_run: Vec<usize>,
}

impl CaseRounds {
    /// Whether the case was visited in every round planned.
    pub fn complete(&self) -> bool {
        self.done >= self.planned
    }
}

/// The runs of two cases paired by round: for each round both were timed in, the runs of
/// each (`times` are a case's run times in order, `rounds` its record). `None` when either
/// case has no round record or the records do not match their times (a report edited by
/// hand, or from blocks): the caller then compares the runs as independent samples.
pub fn paired<'a>(
    a: (&'a [f64], Option<&CaseRounds>),
    b: (&'a [f64], Option<&CaseRounds>),
) -> Option<Vec<(Vec<f64>, Vec<f64>)>> {
    let (ra, rb) = (a.1?, b.1?);
    if ra.of_run.len() != a.0.len() || rb.of_run.len() != b.0.len() {
        return None;
    }
    let rounds: std::collections::BTreeSet<usize> = ra.of_run.iter().copied().collect();
    let out: Vec<(Vec<f64>, Vec<f64>)> = rounds
        .into_iter()
        .filter_map(|r| {
            let pick = |times: &[f64], of: &[usize]| -> Vec<f64> {
                times
                    .iter()
                    .zip(of)
                    .filter(|(_, x)| **x == r)
                    .map(|(t, _)| *t)
                    .collect()
            };
            let (x, y) = (pick(a.0, &ra.of_run), pick(b.0, &rb.of_run));
            (!x.is_empty() && !y.is_empty()).then_some((x, y))
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_pair_by_round_and_mismatched_records_do_not() {
        let a = CaseRounds {
            planned: 3,
            done: 3,
            of_run: vec![0, 1, 2],
        };
        let b = CaseRounds {
            planned: 3,
            done: 2,
            of_run: vec![0, 0, 2, 2],
        };
        let (ta, tb) = ([1.0, 2.0, 3.0], [10.0, 11.0, 30.0, 31.0]);
        let p = paired((&ta, Some(&a)), (&tb, Some(&b))).unwrap();
        assert_eq!(p, vec![(vec![1.0], vec![10.0, 11.0]), (vec![3.0], vec![30.0, 31.0])]);
        assert!(paired((&ta[..2], Some(&a)), (&tb, Some(&b))).is_none());
        assert!(paired((&ta, None), (&tb, Some(&b))).is_none());
        assert!(!b.complete() && a.complete());
    }
}
