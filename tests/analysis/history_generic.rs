//! Where issue 66's gap lies, one step further than `history_score::where_the_gap_to_issue_66s_bar_lies`:
//! a noise estimate that knows nothing of the generator, **given the true steps**, meets
//! the bar, and the same estimate made about its own fit's steps misses it by as much as
//! the tool does. What is missing is not the law of the spreads but an estimate of the noise
//! that does not lean on the segments it is meant to find.
//!
//! The estimate: each run's level is a normal of variance `t2 + k s² f(n)` (`f(n)` a
//! median's factor over its `n` samples) with `s` drawn from one fixed, generic law,
//! log-uniform over 0.03% to 30% (a thousandfold range, ten times the spread mix's own and
//! not its shape: no generator knowledge), a run of two samples or more weighing that law by
//! how likely its samples make each `s`. The run-to-run variance `t2` and the law's scale `k`
//! are the most likely on a grid (41 x 18), from each run's residual about the mean of the
//! others of its segment and from the runs' own sample spreads; then the exact fit under those
//! mixtures at the tool's penalty (`history_oracle::fit_parts`). Its segments are either
//! the true ones, or its own: a fit under a normal of the successive differences' median
//! absolute difference, then estimate and fit twice.
use crate::history_oracle::{fit_parts, log_uniform, noise_loglik, optimal, residuals, run_parts, runs_read};
use crate::util::histories::{generate, Generated, Said, Score, SPREAD};

/// The generic law's range of within-run standard deviations, and its points.
const LAW: (f64, f64, usize) = (0.0003, 0.3, 24);

/// Each run's density under `law` at scale `k` plus `t2`.
fn parts(info: &[(usize, f64)], law: &[(f64, f64)], k: f64, t2: f64) -> Vec<Vec<(f64, f64)>> {
    info.iter().map(|&r| run_parts(r, law, k, t2)).collect()
}

/// The most likely `(k, t2)` about the segments that `steps` bound.
fn estimate(y: &[f64], info: &[(usize, f64)], law: &[(f64, f64)], steps: &[usize]) -> (f64, f64) {
    let res = residuals(y, steps);
    let t2s: Vec<f64> = std::iter::once(0.0)
        .chain((0..=16).map(|j| 10f64.powf(-7.0 + 4.5 * j as f64 / 16.0)))
        .collect();
    let mut best = (f64::NEG_INFINITY, 1.0, 0.0);
    for k in (0..=40).map(|j| 10f64.powf(-3.0 + 5.0 * j as f64 / 40.0)) {
        for &t2 in &t2s {
            let total = noise_loglik(info, law, k, t2, &res);
            if total > best.0 {
                best = (total, k, t2);
            }
        }
    }
    (best.1, best.2)
}

/// The generic estimate's steps: its noise estimated about the true segments, or about its
/// own fit's (module docs).
fn generic(g: &Generated, given_the_truth: bool) -> Said {
    let (y, info) = runs_read(g);
    let n = y.len();
    let law = log_uniform(LAW.0, LAW.1, LAW.2);
    let fit = |steps: &[usize]| {
        let (k, t2) = estimate(&y, &info, &law, steps);
        fit_parts(&y, &parts(&info, &law, k, t2), (4.0, 4.0)).steps
    };
    if given_the_truth {
        return Said {
            steps: fit(&g.steps),
            ..Said::default()
        };
    }
    let mut d: Vec<f64> = y.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    d.sort_by(f64::total_cmp);
    let sd = d.get(d.len() / 2).map_or(0.0, |m| m * 1.4826 / 2f64.sqrt());
    let right = optimal(&y, &vec![(sd * sd).max(1e-8); n], 4.0 + 4.0 * (n as f64).ln());
    let mut steps = right[..right.len() - 1].to_vec();
    for _ in 0..2 {
        steps = fit(&steps);
    }
    Said {
        steps,
        ..Said::default()
    }
}

#[test]
#[ignore = "issue 66's gap, the noise estimate given the true steps or its own, 3,000 histories twice: about 6 minutes on 2 cores, run by hand with --ignored"]
fn a_generic_noise_estimate_meets_issue_66s_bar_given_the_true_steps_and_misses_it_given_its_own() {
    // The 3,000 histories of the spread mix (seeds 5001-5010, as history_score's), short
    // (up to 12 runs) and long. As measured (located, false steps):
    //
    // | | short: 1014 histories, 288 clear steps | long: 1986, 1918 | all: 2206 |
    // | --- | ---: | ---: | ---: |
    // | generic law, estimated about the true segments | 258, 3 | 1794, 58 | 2052, 61 |
    // | generic law, estimated about its own fit's | 221, 27 | 1772, 64 | 1993, 91 |
    //
    // The bar (the oracle told each run's noise: 2128 located, 48 false steps): located at
    // least 2040, at most 68 false steps. Given the true segments the generic estimate meets
    // both halves; about its own fit's it misses both, by about as much as the tool (2021, 94).
    let gens: Vec<Generated> = (1..=10).flat_map(|s| generate(&SPREAD, 5000 + s, 300)).collect();
    let mut got = Vec::new();
    for truth in [true, false] {
        let mut s = [Score::default(), Score::default()];
        for g in &gens {
            s[usize::from(g.runs.len() > 12)].add(g, &generic(g, truth), &mut Vec::new());
        }
        eprintln!(
            "generic law, {}: short {} of {} located, {} false steps; long {} of {}, {}",
            if truth {
                "given the true steps"
            } else {
                "about its own fit"
            },
            s[0].located,
            s[0].clear,
            s[0].false_steps,
            s[1].located,
            s[1].clear,
            s[1].false_steps
        );
        got.push([(s[0].located, s[0].false_steps), (s[1].located, s[1].false_steps)]);
    }
    // The whole table printed first, then checked.
    assert_eq!(got, [[(258, 3), (1794, 58)], [(221, 27), (1772, 64)]]);
}
