//! The run's schedule (issue 63, item 1): which case runs when, as **visits** (a case's
//! worker takes the case for a few timed runs). Two schedules:
//!
//! - `rounds` (the default): the cases of one workload (frames, size, passes) are timed in
//!   interleaved rounds, as Google Benchmark's random interleaving and asv's interleaved
//!   rounds do: each round visits every case of the workload once, in a fresh random order
//!   (seeded by the run's seed), for `--round-runs` timed runs (the first round also runs the
//!   warmups). What the machine does meanwhile (a browser, a build, a throttling clock)
//!   falls on every setting of a round alike, and the answer compares settings round by
//!   round. Each setting keeps a worker process of its own, alive side by side
//!   ([`lane`]: engine, env variant and, here, precision, so no worker rebuilds its model
//!   between visits).
//! - `blocks` (before issue 63): each case's runs one after another, in one visit; cases
//!   that share a worker are grouped ([`order_blocks`]).
//!
//! In both, an A/A control (`plan::control`: a second measurement of a workload's default)
//! runs in a worker of its own; in blocks it is put at the far end of the run from its
//! default, so drift between the two shows.
//!
//! Must not: run anything (the scheduler walks the visits) or decide verdicts.
use std::collections::BTreeMap;

use crate::plan::matrix::Case;
pub use crate::report::values::Schedule;

/// One visit: case `case` (an index into the run's cases) takes `runs` timed runs after
/// `warmup` warmups, in round `round` of its workload's `rounds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visit {
    pub case: usize,
    pub round: usize,
    pub rounds: usize,
    pub warmup: usize,
    pub runs: usize,
    /// Its case's last visit (it saves the outputs; the case is then complete).
    pub last: bool,
}

/// What sets a case's worker process apart beyond its engine and environment: the A/A
/// control always has a process of its own; in rounds each precision too (a worker keeps
/// one model, and visits alternate between the cases of a round).
pub fn lane(case: &Case, schedule: Schedule) -> String {
    let mut lane = String::new();
    if schedule == Schedule::Rounds {
        lane.push_str(case.settings.precision.name());
    }
    if case.added_as_control {
        lane.push_str("+control");
    }
    lane
}

/// The workload of a case: what the settings compared with each other share.
fn workload(c: &Case) -> (usize, usize, usize, &'static str) {
    let s = &c.settings;
    (s.frames, s.width, s.height, s.passes.name())
}

/// The visits of `cases` (already in run order) under `schedule`: `warmup` and `runs` per
/// case, `round_runs` timed runs per visit in rounds; `seed` shuffles each round (none: the
/// cases' order, every round).
pub fn visits(
    cases: &[Case],
    schedule: Schedule,
    warmup: usize,
    runs: usize,
    round_runs: usize,
    seed: Option<u64>,
) -> Vec<Visit> {
    if schedule == Schedule::Blocks {
        return (0..cases.len())
            .map(|case| Visit {
                case,
                round: 0,
                rounds: 1,
                warmup,
                runs,
                last: true,
            })
            .collect();
    }
    let per = round_runs.max(1);
    let rounds = runs.div_ceil(per).max(1);
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index: BTreeMap<_, usize> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let g = *index.entry(workload(c)).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    let mut out = Vec::new();
    for (g, members) in groups.iter().enumerate() {
        for round in 0..rounds {
            let mut order = members.clone();
            if let Some(seed) = seed {
                // A fresh order per round, reproducible from the run's seed.
                let mix = seed ^ ((g as u64 + 1) << 32) ^ (round as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                crate::util::shuffle::shuffle(&mut order, mix);
            }
            for case in order {
                out.push(Visit {
                    case,
                    round,
                    rounds,
                    warmup: if round == 0 { warmup } else { 0 },
                    runs: per.min(runs.saturating_sub(round * per)),
                    last: round + 1 == rounds,
                });
            }
        }
    }
    out
}

/// The blocks order: cases that share a worker next to each other (groups in the order of
/// their first case, one precision after another inside a group, so a worker builds each
/// model once), then each A/A control moved to the end of the run farther from its default.
pub fn order_blocks(cases: &mut Vec<Case>) {
    let key =
        |c: &Case| super::pool::worker_key(c.settings.engine, &c.env_vars, &c.env_unset, &lane(c, Schedule::Blocks));
    let model = |c: &Case| format!("{}{:?}", key(c), c.settings.precision);
    let (mut first, mut first_model) = (BTreeMap::new(), BTreeMap::new());
    for (i, c) in cases.iter().enumerate() {
        first.entry(key(c)).or_insert(i);
        first_model.entry(model(c)).or_insert(i);
    }
    cases.sort_by_key(|c| (first[&key(c)], first_model[&model(c)]));
    let controls: Vec<Case> = cases.iter().filter(|c| c.added_as_control).cloned().collect();
    cases.retain(|c| !c.added_as_control);
    for control in controls {
        let default = control
            .id
            .strip_suffix(crate::plan::control::SUFFIX)
            .unwrap_or(&control.id);
        let at = cases.iter().position(|c| c.id == default).unwrap_or(0);
        if at * 2 < cases.len() {
            cases.push(control);
        } else {
            cases.insert(0, control);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::settings::CaseSettings;

    fn case(frames: usize, precision: &str) -> Case {
        let mut s = CaseSettings::defaults();
        s.frames = frames;
        s.precision = precision.parse().unwrap();
        Case::new(s, BTreeMap::new())
    }

    #[test]
    fn rounds_visit_every_case_of_a_workload_once_per_round_in_a_fresh_order() {
        let cases = vec![case(5, "fp32"), case(5, "bf16"), case(9, "fp32"), case(5, "fp16")];
        let v = visits(&cases, Schedule::Rounds, 1, 5, 2, Some(7));
        // Workload 5 frames (cases 0, 1, 3): 3 rounds of 2, 2 and 1 runs; then workload 9.
        assert_eq!(v.len(), 4 * 3);
        let first: Vec<&Visit> = v.iter().take(9).collect();
        for (r, round) in first.chunks(3).enumerate() {
            let mut ids: Vec<usize> = round.iter().map(|x| x.case).collect();
            ids.sort();
            assert_eq!(ids, [0, 1, 3]);
            assert!(round
                .iter()
                .all(|x| x.round == r && x.rounds == 3 && x.runs == [2, 2, 1][r]));
            assert!(round
                .iter()
                .all(|x| x.warmup == usize::from(r == 0) && x.last == (r == 2)));
        }
        assert!(v[9..].iter().all(|x| x.case == 2));
        // Every case gets its runs; the orders differ between rounds for some seed.
        let total: usize = v.iter().filter(|x| x.case == 1).map(|x| x.runs).sum();
        assert_eq!(total, 5);
        let orders: std::collections::BTreeSet<Vec<usize>> = (0..20)
            .flat_map(|seed| {
                visits(&cases, Schedule::Rounds, 1, 5, 2, Some(seed))
                    .chunks(3)
                    .take(3)
                    .map(|r| r.iter().map(|x| x.case).collect())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(orders.len() > 3, "{orders:?}");
        assert_eq!(v, visits(&cases, Schedule::Rounds, 1, 5, 2, Some(7)), "reproducible");
    }

    #[test]
    fn blocks_are_one_visit_per_case_and_controls_go_far_from_their_default() {
        let cases = vec![case(5, "fp32"), case(5, "bf16")];
        let v = visits(&cases, Schedule::Blocks, 2, 3, 1, Some(1));
        assert_eq!(
            v.iter().map(|x| (x.case, x.runs, x.warmup, x.last)).collect::<Vec<_>>(),
            [(0, 3, 2, true), (1, 3, 2, true)]
        );
        let mut with = cases.clone();
        crate::plan::control::add_controls(&mut with);
        assert_eq!(with.iter().filter(|c| c.added_as_control).count(), 1);
        order_blocks(&mut with);
        let default = with.iter().position(|c| c.id == cases[0].id).unwrap();
        let control = with.iter().position(|c| c.added_as_control).unwrap();
        assert_eq!(
            default.abs_diff(control),
            with.len() - 1,
            "{:?}",
            with.iter().map(|c| &c.id).collect::<Vec<_>>()
        );
        assert_ne!(
            lane(&with[control], Schedule::Blocks),
            lane(&with[default], Schedule::Blocks)
        );
    }
}
