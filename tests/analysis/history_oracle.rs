//! How far issue 56's bar can be reached at all. An oracle fit: the exact best segmentation
//! of each generated history's run levels (optimal partitioning, written here apart from
//! the tool's) given the **true** noise, the run-to-run and within-run variances the
//! generator drew (which the tool must estimate from the runs), at penalties `A + B ln n`
//! over a grid, scored as the tool is ([`crate::util::histories`]).
//!
//! On the held-out mix no penalty gives both halves of the bar at once, 90% of the clear
//! steps located and no more false steps than d0048e9 (41 in 3,000 histories): a false step
//! is mostly a true one put two runs off, or one of two found where noise splits a level,
//! and finding 90% takes a penalty that puts more than 41 of those. d0048e9 had few false
//! steps there because it found few steps (57% located). On the tuned mix both halves hold
//! (a control: the oracle is not merely weak).
use crate::util::histories::{generate, Generated, Law, Mix, Said, Score, HELD_OUT, SPREAD, TUNED};
use wan_vae_bench::analysis::history::model::MEDIAN_FACTOR;
use wan_vae_bench::util::stats::median;

/// d0048e9's false steps on the 3,000 histories of each mix (history_score's module docs).
const BEFORE_FALSE_3000: [usize; 2] = [93, 41];

/// The penalties tried, `(A, B)` of `A + B ln n` in `-2 log L` units (the tool's: `(4, 4)`).
const PENALTIES: [(f64, f64); 12] = [
    (0.0, 2.0),
    (2.0, 2.0),
    (4.0, 2.0),
    (0.0, 3.0),
    (2.0, 3.0),
    (4.0, 3.0),
    (0.0, 4.0),
    (2.0, 4.0),
    (4.0, 4.0),
    (8.0, 4.0),
    (0.0, 6.0),
    (4.0, 6.0),
];

/// Exact optimal partitioning of `y` (variances `v`) at `pen` per step, O(n²): the
/// exclusive right bounds.
pub(crate) fn optimal(y: &[f64], v: &[f64], pen: f64) -> Vec<usize> {
    let n = y.len();
    let mut sums = vec![(0.0, 0.0, 0.0); n + 1];
    for i in 0..n {
        let (a, b, c) = sums[i];
        sums[i + 1] = (a + 1.0 / v[i], b + y[i] / v[i], c + y[i] * y[i] / v[i]);
    }
    let cost = |l: usize, r: usize| {
        let (a, b, c) = (sums[r].0 - sums[l].0, sums[r].1 - sums[l].1, sums[r].2 - sums[l].2);
        (c - b * b / a).max(0.0)
    };
    let mut best = vec![-pen; n + 1];
    let mut left = vec![0; n + 1];
    for r in 1..=n {
        best[r] = f64::INFINITY;
        for l in 0..r {
            let c = best[l] + pen + cost(l, r);
            if c < best[r] {
                best[r] = c;
                left[r] = l;
            }
        }
    }
    let mut right = vec![n];
    while let Some(&r) = right.last().filter(|r| left[**r] > 0) {
        right.push(left[r]);
    }
    right.reverse();
    right
}

/// The run levels of `g` in the order `history` reads them, and their true variances.
fn levels(g: &Generated) -> (Vec<f64>, Vec<f64>) {
    let order = g.order();
    let y: Vec<f64> = order.iter().map(|&i| median(&g.runs[i]).ln()).collect();
    let v: Vec<f64> = order
        .iter()
        .map(|&i| {
            let k = g.runs[i].len();
            g.between.powi(2) + g.withins[i].powi(2) * MEDIAN_FACTOR[k - 1] / k as f64
        })
        .collect();
    (y, v)
}

/// The penalized cost of segmenting `y` (variances `v`) at `right` (exclusive right bounds),
/// `pen` per step: each segment's weighted squared misfit about its weighted mean.
fn penalized(y: &[f64], v: &[f64], right: &[usize], pen: f64) -> f64 {
    let mut l = 0;
    let mut c = pen * (right.len() - 1) as f64;
    for &r in right {
        let w: f64 = (l..r).map(|i| 1.0 / v[i]).sum();
        let m = (l..r).map(|i| y[i] / v[i]).sum::<f64>() / w;
        c += (l..r).map(|i| (y[i] - m).powi(2) / v[i]).sum::<f64>();
        l = r;
    }
    c
}

/// The oracle's steps (in the order `history` reads the runs, as the tool's) and its
/// verdict: the newest segment's level against the best earlier one's, more than 5% and
/// z > 1.96 on the true variances (each run's own within-run noise, where its history's
/// runs have their own: issue 66).
pub(crate) fn oracle(g: &Generated, (a, b): (f64, f64)) -> Said {
    let (y, v) = levels(g);
    let n = y.len();
    let right = optimal(&y, &v, a + b * (n as f64).ln());
    let level = |l: usize, r: usize| {
        let w: f64 = (l..r).map(|i| 1.0 / v[i]).sum();
        ((l..r).map(|i| y[i] / v[i]).sum::<f64>() / w, 1.0 / w)
    };
    let starts: Vec<usize> = std::iter::once(0)
        .chain(right[..right.len() - 1].iter().copied())
        .collect();
    let newest = level(*starts.last().unwrap(), n);
    let best = starts
        .windows(2)
        .map(|w| level(w[0], w[1]))
        .min_by(|p, q| p.0.total_cmp(&q.0));
    let regression =
        best.is_some_and(|(m, var)| newest.0 - m > 1.05f64.ln() && (newest.0 - m) / (newest.1 + var).sqrt() > 1.96);
    Said {
        steps: right[..right.len() - 1].to_vec(),
        regression,
        fails: regression,
        ..Said::default()
    }
}

/// The oracle's score at each penalty on 3,000 histories of `mix` (seeds `base + 1..=10`,
/// as `history_score::ten_times_as_many_histories_of_each_mix`).
fn frontier(mix: &Mix, base: u64, who: &str) -> Vec<((f64, f64), Score)> {
    let gens: Vec<Generated> = (1..=10).flat_map(|s| generate(mix, base + s, 300)).collect();
    PENALTIES
        .iter()
        .map(|&p| {
            let mut s = Score::default();
            for g in &gens {
                s.add(g, &oracle(g, p), &mut Vec::new());
            }
            eprintln!(
                "oracle at {} + {} ln n, {who}: located {} of {} ({:.1}%), false steps {}, flagged {} of {}",
                p.0,
                p.1,
                s.located,
                s.clear,
                100.0 * s.located as f64 / s.clear as f64,
                s.false_steps,
                s.flagged,
                s.detectable
            );
            (p, s)
        })
        .collect()
}

fn meets(s: &Score, before_false: usize) -> bool {
    s.located * 10 >= s.clear * 9 && s.false_steps <= before_false
}

#[test]
fn with_the_true_noise_the_bar_is_out_of_reach_on_the_held_out_mix_and_in_reach_on_the_tuned() {
    let held_out = frontier(&HELD_OUT, 2000, "held-out mix");
    for (p, s) in &held_out {
        assert!(
            !meets(s, BEFORE_FALSE_3000[1]),
            "at {p:?} the oracle meets the bar on the held-out mix: {s:?}"
        );
    }
    // The oracle finds more than 90% at some penalty, and has few false steps at another:
    // not both.
    assert!(held_out.iter().any(|(_, s)| s.located * 10 >= s.clear * 9));
    assert!(held_out.iter().any(|(_, s)| s.false_steps <= BEFORE_FALSE_3000[1]));
    let tuned = frontier(&TUNED, 1000, "tuned mix");
    assert!(
        tuned.iter().any(|(_, s)| meets(s, BEFORE_FALSE_3000[0])),
        "the oracle misses the bar on the tuned mix too"
    );
    // At the tool's penalty, 4 + 4 ln n, what the tool would do knowing the noise (the
    // tool's own docs cite it): 2722 of 2951 located (92.2%), 45 false steps.
    let (_, at_tools) = tuned.iter().find(|(p, _)| *p == (4.0, 4.0)).unwrap();
    assert!(
        at_tools.located * 100 >= at_tools.clear * 92 && at_tools.false_steps <= 45,
        "{at_tools:?}"
    );
}

#[test]
fn the_oracle_fit_is_exact() {
    // Every segmentation of short series, tried: the least penalized cost is the fit's.
    let mut rng = crate::util::histories::Rng(56);
    for _ in 0..300 {
        let n = rng.int(1, 9);
        let y: Vec<f64> = (0..n)
            .map(|i| rng.gauss() + if i % 4 < 2 { 1.5 } else { 0.0 })
            .collect();
        let v: Vec<f64> = (0..n).map(|_| rng.range(0.1, 2.0)).collect();
        let pen = rng.range(0.5, 6.0);
        let total = |right: &[usize]| penalized(&y, &v, right, pen);
        let least = (0..1u32 << (n - 1))
            .map(|mask| {
                let mut right: Vec<usize> = (1..n).filter(|r| mask & (1 << (r - 1)) != 0).collect();
                right.push(n);
                total(&right)
            })
            .fold(f64::INFINITY, f64::min);
        let fit = total(&optimal(&y, &v, pen));
        assert!((fit - least).abs() < 1e-9 * (1.0 + least.abs()), "{fit} vs {least}");
    }
}

/// The oracle told the law of the runs' own spreads but not each run's (issue 66): each run's
/// level a mixture of normals over the law (a run of two samples or more weighing the law's
/// variances by how likely its samples make them), fitted exactly on a grid of levels at a
/// tenth of the narrowest run's standard deviation (the functional recursion of optimal
/// partitioning, `Q(m) <- min(Q(m), F + pen) + cost(y - m)`). Where a history's runs share
/// one within-run noise, the same fit as [`oracle`]'s.
pub(crate) fn told_the_law(g: &Generated, pen: (f64, f64)) -> Said {
    let (y, parts) = law_parts(g, 1.0);
    fit_parts(&y, &parts, pen)
}

/// Each run's log median and `(samples, relative sample variance)`, in the order `history`
/// reads them.
pub(crate) fn runs_read(g: &Generated) -> (Vec<f64>, Vec<(usize, f64)>) {
    let order = g.order();
    let y = order.iter().map(|&i| median(&g.runs[i]).ln()).collect();
    let info = order
        .iter()
        .map(|&i| {
            let s = &g.runs[i];
            let count = s.len();
            let (m, mean) = (median(s), s.iter().sum::<f64>() / count as f64);
            let s2 = match count {
                1 => 0.0,
                _ => s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (count - 1) as f64 / (m * m),
            };
            (count, s2)
        })
        .collect();
    (y, info)
}

/// A law of within-run standard deviations, `(weight, sd)`, log-uniform over `(lo, hi)` at
/// `points` points (weights 1: [`run_parts`] scales them).
pub(crate) fn log_uniform(lo: f64, hi: f64, points: usize) -> Vec<(f64, f64)> {
    (0..points)
        .map(|q| {
            (
                1.0,
                (lo.ln() + (hi.ln() - lo.ln()) * (q as f64 + 0.5) / points as f64).exp(),
            )
        })
        .collect()
}

/// The true law of `g`'s runs' within-run noise, or its one noise.
fn law_of(g: &Generated) -> Vec<(f64, f64)> {
    match g.law {
        None => vec![(1.0, g.within)],
        Some(Law::LogUniform(lo, hi)) => log_uniform(lo, hi, 24),
        Some(Law::TwoClass { quiet, factor, noisy }) => vec![(1.0 - noisy, quiet), (noisy, quiet * factor)],
    }
}

/// One run's level density, `(weight, variance)` parts: `tau2` plus each law's variance
/// (times `k`) over the run's samples, weighed by the law and by how likely the run's own
/// samples (`(count, s2)`) make it.
pub(crate) fn run_parts((count, s2): (usize, f64), law: &[(f64, f64)], k: f64, tau2: f64) -> Vec<(f64, f64)> {
    let factor = MEDIAN_FACTOR[count - 1] / count as f64;
    let d = (count - 1) as f64;
    let mut w: Vec<(f64, f64)> = law
        .iter()
        .map(|&(p, sd)| {
            let v = k * sd * sd;
            (p.ln() - 0.5 * d * (v.ln() + s2 / v), tau2 + factor * v)
        })
        .collect();
    let top = w.iter().map(|x| x.0).fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = w.iter().map(|x| (x.0 - top).exp()).sum();
    for x in &mut w {
        x.0 = (x.0 - top).exp() / total;
    }
    w
}

/// A mixture's density at `e` (less `sqrt(2 pi)`).
pub(crate) fn density(parts: &[(f64, f64)], e: f64) -> f64 {
    parts
        .iter()
        .map(|&(w, v)| w * (-e * e / (2.0 * v)).exp() / v.sqrt())
        .sum()
}

/// Each run's residual about the mean of the others of its segment (bounded by `steps`),
/// scaled so that its variance is the run's (a segment of one run tells nothing).
pub(crate) fn residuals(y: &[f64], steps: &[usize]) -> Vec<(usize, f64)> {
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(steps.iter().copied())
        .chain([y.len()])
        .collect();
    let mut out = Vec::new();
    for w in bounds.windows(2).filter(|w| w[1] - w[0] >= 2) {
        let m = (w[1] - w[0]) as f64;
        let sum: f64 = y[w[0]..w[1]].iter().sum();
        out.extend((w[0]..w[1]).map(|i| (i, (y[i] - (sum - y[i]) / (m - 1.0)) * ((m - 1.0) / m).sqrt())));
    }
    out
}

/// The log likelihood of a noise, `law` at scale `k` plus `tau2`: of the `residuals` under
/// each run's parts, and of the runs' own sample spreads (a `(k v)`-scaled chi-square of
/// `count - 1` degrees of freedom each, under the law's mixture).
pub(crate) fn noise_loglik(
    info: &[(usize, f64)],
    law: &[(f64, f64)],
    k: f64,
    tau2: f64,
    residuals: &[(usize, f64)],
) -> f64 {
    let mut total: f64 = residuals
        .iter()
        .map(|&(i, e)| density(&run_parts(info[i], law, k, tau2), e).max(1e-300).ln())
        .sum();
    let mass: f64 = law.iter().map(|p| p.0).sum();
    for &(count, s2) in info.iter().filter(|x| x.0 >= 2) {
        let d = (count - 1) as f64;
        let p: f64 = law
            .iter()
            .map(|&(w, sd)| {
                let v = k * sd * sd;
                w / mass * (-0.5 * d * (v.ln() + s2 / v)).exp()
            })
            .sum();
        total += p.max(1e-300).ln();
    }
    total
}

/// Each run's level (in the order `history` reads them) and its density's `(weight,
/// variance)` parts under the true law, every variance (run-to-run and within-run) times `k`.
fn law_parts(g: &Generated, k: f64) -> (Vec<f64>, Vec<Vec<(f64, f64)>>) {
    let (y, info) = runs_read(g);
    let law = law_of(g);
    let tau2 = k * g.between * g.between;
    let parts = info.iter().map(|&r| run_parts(r, &law, k, tau2)).collect();
    (y, parts)
}

/// The exact fit on a grid of levels of runs `y` whose densities are mixtures `parts`.
pub(crate) fn fit_parts(y: &[f64], parts: &[Vec<(f64, f64)>], (a, b): (f64, f64)) -> Said {
    let n = y.len();
    let cost = |i: usize, m: f64| -> f64 { -2.0 * density(&parts[i], y[i] - m).max(1e-300).ln() };
    let (lo, hi) = y
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
    let narrowest = parts
        .iter()
        .flat_map(|p| p.iter().map(|x| x.1.sqrt()))
        .fold(f64::INFINITY, f64::min);
    let m = (((hi - lo) / (0.1 * narrowest)).ceil() as usize + 1).clamp(2, 20_000);
    let levels: Vec<f64> = (0..m).map(|j| lo + (hi - lo) * j as f64 / (m - 1) as f64).collect();
    let pen = a + b * (n as f64).ln();
    let (mut q, mut start) = (vec![0.0; m], vec![0usize; m]);
    let mut last = vec![0usize; n + 1];
    let mut best = 0.0;
    for t in 0..n {
        let fresh = best + pen;
        let mut low = (f64::INFINITY, 0);
        for (j, &level) in levels.iter().enumerate() {
            if t > 0 && fresh < q[j] {
                q[j] = fresh;
                start[j] = t;
            }
            q[j] += cost(t, level);
            if q[j] < low.0 {
                low = (q[j], j);
            }
        }
        best = low.0;
        last[t + 1] = start[low.1];
    }
    let mut steps = Vec::new();
    let mut r = n;
    while r > 0 {
        r = last[r];
        if r > 0 {
            steps.push(r);
        }
    }
    steps.reverse();
    Said {
        steps,
        ..Said::default()
    }
}

/// Located and false steps of `said` over `gens`.
fn steps_score(gens: &[Generated], said: impl Fn(&Generated) -> Said) -> Score {
    let mut s = Score::default();
    for g in gens {
        s.add(g, &said(g), &mut Vec::new());
    }
    s
}

#[test]
fn told_the_law_of_the_runs_spreads_the_oracle_meets_issue_66s_bar_on_the_spread_mix() {
    // Issue 66's bar on the mix of runs with their own spreads (3,000 histories, seeds 5001-
    // 5010, as history_score's): false steps at most the oracle's (told each run's own
    // spread) plus 20, located within 4 points of it. The oracle told only the law of the
    // spreads, as a tool that knew how its runs vary but not which run is noisy, meets it:
    // what is left to a tool is to estimate that law from its own series.
    let gens: Vec<Generated> = (1..=10).flat_map(|s| generate(&SPREAD, 5000 + s, 300)).collect();
    let told = steps_score(&gens, |g| oracle(g, (4.0, 4.0)));
    let law = steps_score(&gens, |g| told_the_law(g, (4.0, 4.0)));
    eprintln!("oracle at 4 + 4 ln n, spread mix: {}", told.table("each run's spread"));
    eprintln!(
        "oracle at 4 + 4 ln n, spread mix: {}",
        law.table("the law of the spreads")
    );
    assert!(law.false_steps <= told.false_steps + 20, "{law:?}\n{told:?}");
    assert!(
        law.located * 100 >= told.located * 100 - told.clear * 4,
        "{law:?}\n{told:?}"
    );
    // Where runs share one noise it is the oracle's fit but for its grid of levels (a tenth
    // of the narrowest run's standard deviation apart): where the two differ, they are a tie
    // within what the grid can tell, each run's misfit off by at most 0.05² of its variance.
    let tuned: Vec<Generated> = generate(&TUNED, 1001, 300);
    let mut differ = 0;
    for g in &tuned {
        let (grid, exact) = (told_the_law(g, (4.0, 4.0)).steps, oracle(g, (4.0, 4.0)).steps);
        if grid != exact {
            differ += 1;
            let (y, v) = levels(g);
            let n = y.len();
            let pen = 4.0 + 4.0 * (n as f64).ln();
            let bounds = |steps: &[usize]| steps.iter().copied().chain([n]).collect::<Vec<usize>>();
            let (c_grid, c_exact) = (
                penalized(&y, &v, &bounds(&grid), pen),
                penalized(&y, &v, &bounds(&exact), pen),
            );
            assert!(
                c_exact <= c_grid + 1e-9 && c_grid - c_exact <= 0.0025 * n as f64 + 1e-9,
                "{}: {grid:?} ({c_grid}) vs {exact:?} ({c_exact})",
                g.name
            );
        }
    }
    assert!(differ <= 3, "{differ} of 300 differ");
}

/// The oracle told the *shape* of the noise (the law of the runs' spreads and the run-to-run
/// variance, each relative to the others) and the true steps, but not its scale: that
/// estimated by maximum likelihood from the runs (their levels about their true segments'
/// means, and two samples' spread, under the law's mixture), as a tool must estimate it from
/// the series itself. It knows more than any tool (the steps, the shape); what it misses, an
/// estimate of the noise from the series misses.
pub(crate) fn told_the_shape(g: &Generated, pen: (f64, f64)) -> Said {
    // The true segments, by position in the order read (ties may read a run or two early).
    let (y, info) = runs_read(g);
    let (law, res) = (law_of(g), residuals(&y, &g.steps));
    let between2 = g.between * g.between;
    let k = (0..=80)
        .map(|j| (10f64).powf(-2.0 + 4.0 * j as f64 / 80.0))
        .map(|k| (k, noise_loglik(&info, &law, k, k * between2, &res)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(1.0, |b| b.0);
    let (y, parts) = law_parts(g, k);
    fit_parts(&y, &parts, pen)
}
