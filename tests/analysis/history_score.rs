//! `history` scored against the truth of seeded histories (issue 56; the generator and the
//! definitions are [`crate::util::histories`]'s), on the mix it was tuned on and on three
//! held-out ones, and asv 0.6.6's `step_detect` scored on the same histories (with the
//! tool's weights, as `tests/analysis/history_asv.rs` runs it). `WAN_VAE_BENCH_SCORE_MISSES=1`
//! prints every miss.
//!
//! The bar (issue 56's "Done when"): at least 90% of clear steps located within one run, no
//! more false steps than at d0048e9 on the same histories, at least 95% of detectable
//! regressions flagged, and no false alarm on a flat history but where `compare` of its two
//! newest reports fails the gate too (which a history must then do as well). d0048e9's
//! false steps: 11 in the tuned mix's first 300 histories and 5 in the held-out mix's 300,
//! measured before any change; 35 in the tuned mix's first 1,000 and 4 in the second
//! held-out mix's 300, measured with d0048e9's fit and verdict when that mix was drawn up;
//! the third's, the same way, when it was scored.
//!
//! Where the bar is not met, it is asserted as measured (so that it gets no worse unseen)
//! and said here and in docs/ci.md. The first held-out mix cannot meet it at all:
//! `tests/analysis/history_oracle.rs` fits its histories exactly with the *true* noise
//! (which the tool must estimate), and no penalty locates 90% of their clear steps with no
//! more false steps than d0048e9 (41 in 3,000; d0048e9 located 57%): no penalized fit of
//! this kind meets it there. The tool, on the 1,000 of the tuned mix: 89.9% located (883 of
//! 982), 20 false steps (d0048e9: 35), 95.4% flagged; held-out: 83.8%, 9 false (5), 93.0%;
//! held-out 2: 91.6%, 10 (4), 96.4%; held-out 3 (drawn up before this design was kept,
//! scored once when it was settled, and again after a second reading's fixes, the same):
//! 90.2%, 10 (6), 97.3%. On 3,000 histories of each (`ten_times_as_many_histories_of_each_mix`),
//! where a count of false steps is no longer a matter of a few histories, the false-step
//! half holds on the tuned mix and the second and third held-out ones, located falls short
//! on the held-out ones (by 2.0, 0.8 and 0.4 points), and flagged holds everywhere.
//!
//! Issue 66 (written down before its held-out mix was scored): runs with their own spreads and
//! one or two samples, [`SPREAD`] (tuned on, seeds 5001-5010 of 300) and [`SPREAD_HELD_OUT`]
//! (drawn up with it, seeds 6001-6010 of 300, scored once the design is settled, never tuned
//! on). Scored on 3,000 histories of every mix: clear steps located, false steps, detectable
//! regressions flagged, false alarms (where `compare` of the two newest reports fails too,
//! counted apart), and how often the newest run alone is said to be off (rerun to tell);
//! against the oracle at the tool's penalty (`tests/analysis/history_oracle.rs`, told the true
//! noise, each run's own within-run noise where runs have their own) on the same histories.
//! The bar: no false alarm on any mix; false steps at most the oracle's plus 20 (2 per 300);
//! located within 4 points of the oracle's; and on the four earlier mixes no fewer steps
//! located than at a6a8830 (2661, 2998, 2589, 3178).
//!
//! Scored (`issue_66s_mixes_3000_of_each`, run by hand with `--ignored`; its first tenth
//! always), the bar is missed on both new mixes: located 4.9 and 4.1 points below the oracle,
//! 94 and 99 false steps against its 48 and 66, 3 and 3 false alarms (at 43d683d: 4.8 and
//! 4.1 points, 109 and 112, 3 and 4; the law of residuals is now averaged over its tails). On
//! the four earlier mixes a newest run of one or two samples alone off is now rerun to tell
//! (13 to 19 histories of 3,000 each): 2646, 2991, 2578 and 3162 located, 12 to 16 fewer
//! detectable regressions flagged. Asserted as measured.
use std::process::Command;

use crate::history_oracle::oracle;
use crate::need;
use crate::util::histories::{
    generate, Generated, Mix, Said, Score, HELD_OUT, HELD_OUT_2, HELD_OUT_3, SPREAD, SPREAD_HELD_OUT, TUNED,
};
use crate::util::reports::pass;
use wan_vae_bench::analysis::compare::verdict::{compare_pass, Rules, Verdict as Call};
use wan_vae_bench::analysis::history::{analyse, Series};

/// Histories of each held-out mix scored (about 300 clear steps), and of the tuned mix (its
/// first 300 those scored before any change).
const COUNT: usize = 300;
const TUNED_COUNT: usize = 1000;
const TUNED_SEED: u64 = 5656;
const HELD_OUT_SEED: u64 = 0x5eed_0f56;
const HELD_OUT_2_SEED: u64 = 0x0b5e_7e57_0056;
const HELD_OUT_3_SEED: u64 = 0x00c0_ffee_0056;

/// False steps at d0048e9 on the same histories (the tuned and first held-out mixes measured
/// before any change; the second and third held-out mixes with d0048e9's fit and verdict
/// when each was drawn up, or scored).
const BEFORE_FALSE: [usize; 4] = [35, 5, 4, 6];

fn tool(g: &Generated) -> Series {
    let (paths, reports) = g.reports();
    let h = analyse(&paths, &reports, 0.05, 0.05);
    h.series.into_iter().find(|s| s.pass == "decode").unwrap()
}

/// Whether `compare` of the two newest runs (as reports) fails the gate.
fn compare_fails(g: &Generated) -> bool {
    let (_, reports) = g.reports();
    let n = reports.len();
    if n < 2 {
        return false;
    }
    let decode = |i: usize| reports[i].cases[0].outcome.decode.clone().unwrap();
    let rules = Rules {
        threshold: 0.05,
        alpha: 0.05,
        psnr_drop_db: 1.0,
        psnr_ceiling_db: 100.0,
    };
    compare_pass("decode", &decode(n - 2), &decode(n - 1), &rules).verdict == Call::Slower
}

fn said(s: &Series, g: &Generated) -> Said {
    Said {
        steps: s.steps.iter().map(|st| st.point).collect(),
        regression: s.verdict.regressed(),
        fails: s.verdict.fails(),
        compare: compare_fails(g),
        rerun: s.verdict.rerun(0.05),
    }
}

fn score(gens: &[Generated], who: &str, said: impl Fn(usize, &Generated) -> Said) -> Score {
    let mut score = Score::default();
    let mut misses = Vec::new();
    for (i, g) in gens.iter().enumerate() {
        score.add(g, &said(i, g), &mut misses);
    }
    if std::env::var_os("WAN_VAE_BENCH_SCORE_MISSES").is_some() {
        for m in &misses {
            eprintln!("{who}: {m}");
        }
    }
    eprintln!("{}", score.table(who));
    score
}

fn tool_score(mix: &Mix, seed: u64, count: usize, who: &str) -> Score {
    let gens = generate(mix, seed, count);
    score(&gens, who, |_, g| said(&tool(g), g))
}

/// At least `percent`% of the clear steps located.
fn located(s: &Score, percent: usize) {
    assert!(
        s.located * 100 >= s.clear * percent,
        "located {} of {}: {s:?}",
        s.located,
        s.clear
    );
}

/// At least `percent`% of the detectable regressions flagged.
fn flagged(s: &Score, percent: usize) {
    assert!(
        s.flagged * 100 >= s.detectable * percent,
        "flagged {} of {}: {s:?}",
        s.flagged,
        s.detectable
    );
}

/// A mix's score as measured: at least `located_percent`% located and `flagged_percent`%
/// flagged, at most `false_steps` false steps (d0048e9's `before` said on failure), and no
/// false alarm.
fn as_measured(s: &Score, located_percent: usize, flagged_percent: usize, false_steps: usize, before: usize) {
    located(s, located_percent);
    flagged(s, flagged_percent);
    assert!(s.false_steps <= false_steps, "{s:?} (d0048e9: {before})");
    assert_eq!(s.false_alarms, 0, "{s:?}");
}

#[test]
fn tool_on_the_tuned_mix() {
    let s = tool_score(&TUNED, TUNED_SEED, TUNED_COUNT, "tool, tuned mix");
    // 883 of 982 clear steps located (89.9%, the bar 90%), 20 false steps (d0048e9: 35),
    // 436 of 457 detectable regressions flagged (95.4%), no false alarm; since issue 66 (a
    // newest run of one or two samples alone off is rerun to tell, not a regression): 878,
    // 19, 432 (94.5%); since the law of residuals is averaged over its tails: 877, 18, 430
    // (94.1%).
    as_measured(&s, 89, 94, 20, BEFORE_FALSE[0]);
}

#[test]
fn tool_on_the_held_out_mixes() {
    // As measured (module docs): 279 of 333 located (83.8%), 9 false steps (d0048e9: 5),
    // 133 of 143 flagged (93.0%); 271 of 296 (91.6%), 10 (4), 135 of 140 (96.4%), since
    // issue 66 133 of 140 (95.0%).
    let s = tool_score(&HELD_OUT, HELD_OUT_SEED, COUNT, "tool, held-out mix");
    as_measured(&s, 83, 93, 9, BEFORE_FALSE[1]);
    let s = tool_score(&HELD_OUT_2, HELD_OUT_2_SEED, COUNT, "tool, held-out mix 2");
    as_measured(&s, 91, 95, 10, BEFORE_FALSE[2]);
}

#[test]
fn tool_on_the_third_held_out_mix() {
    // Drawn up before this design was kept, scored when it was settled and again after a
    // second reading's fixes (the same): 312 of 346 located (90.2%), 10 false steps
    // (d0048e9: 6; afcddc9, the design before: 300 of 346 with 6), 143 of 147 flagged
    // (97.3%), no false alarm.
    let s = tool_score(&HELD_OUT_3, HELD_OUT_3_SEED, COUNT, "tool, held-out mix 3");
    as_measured(&s, 90, 96, 10, BEFORE_FALSE[3]);
}

#[test]
fn a_short_history_never_says_less_than_compare_of_its_last_two_reports() {
    // Issue 56: three nightly reports, the third 2x slower, were `ok` while `compare` of the
    // last two said REGRESSION. Every short history of three mixes: where compare fails the
    // gate, so does history.
    let mut checked = 0;
    for (mix, seed) in [(&TUNED, 56), (&HELD_OUT, 57), (&HELD_OUT_2, 58)] {
        for g in generate(mix, seed, 600).iter().filter(|g| g.runs.len() <= 4) {
            if compare_fails(g) {
                checked += 1;
                let s = tool(g);
                assert!(
                    s.verdict.fails(),
                    "{}: compare fails, history says {:?}",
                    g.name,
                    s.verdict
                );
                let last = s.points.len() - 1;
                assert!(s.steps.iter().any(|st| st.point == last), "{}: {:?}", g.name, s.steps);
            }
        }
    }
    assert!(checked >= 20, "{checked}");
    // And a single sample each, 30% apart: compare's no-overlap rule.
    let reports: Vec<_> = [vec![1.0], vec![1.3]]
        .iter()
        .map(|s| {
            let mut c = crate::util::reports::case("c", &[1.0], s);
            c.outcome.decode = Some(pass(s));
            crate::util::reports::report("box", vec![c])
        })
        .collect();
    let h = analyse(
        &[std::path::PathBuf::from("a"), std::path::PathBuf::from("b")],
        &reports,
        0.05,
        0.05,
    );
    assert!(h.series.iter().any(|s| s.pass == "decode" && s.verdict.fails()));
}

/// asv's steps and `detect_regressions` verdict (5%) on each `(y, w)`.
fn asv(series: &[(Vec<f64>, Vec<f64>)]) -> Result<Vec<(Vec<usize>, bool)>, crate::util::cli::Missing> {
    let py = crate::util::cli::python()?;
    let probe = Command::new(&py)
        .args(["-c", "import asv; print(asv.__version__)"])
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&probe.stdout).trim().to_string();
    if version != "0.6.6" {
        return Err(crate::util::cli::Missing(format!(
            "asv 0.6.6 is not installed in {} (found {version:?}; scripts/test.sh installs it)",
            py.display()
        )));
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("series.json");
    std::fs::write(&input, serde_json::to_string(series).unwrap()).unwrap();
    let code = r#"
import json, sys
from asv.step_detect import detect_steps, detect_regressions
out = []
for y, w in json.load(open(sys.argv[1])):
    steps = detect_steps(y, w)
    latest, best, pos = detect_regressions(steps, threshold=0.05)
    out.append([[s[0] for s in steps[1:]], pos is not None])
print(json.dumps(out))
"#;
    let out = Command::new(&py).args(["-c", code]).arg(&input).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}

fn asv_score(mix: &Mix, seed: u64, who: &str) -> Result<(Score, Score), crate::util::cli::Missing> {
    let gens = generate(mix, seed, COUNT);
    let tools: Vec<Series> = gens.iter().map(tool).collect();
    let input: Vec<(Vec<f64>, Vec<f64>)> = tools
        .iter()
        .map(|s| {
            (
                s.points.iter().map(|p| p.median_s).collect(),
                s.points.iter().map(|p| p.weight).collect(),
            )
        })
        .collect();
    let asvs = asv(&input)?;
    let tool = score(&gens, &format!("tool, {who}"), |i, g| said(&tools[i], g));
    let asv = score(&gens, &format!("asv 0.6.6, {who}"), |i, g| Said {
        steps: asvs[i].0.clone(),
        regression: asvs[i].1,
        fails: asvs[i].1,
        compare: compare_fails(g),
        rerun: false,
    });
    Ok((tool, asv))
}

#[test]
fn asv_on_the_same_histories() {
    // asv with the tool's weights (each run's level's standard deviation, run-to-run
    // variation included) locates fewer steps and flags fewer regressions on every mix.
    for (mix, seed, who) in [
        (&TUNED, TUNED_SEED, "tuned mix"),
        (&HELD_OUT, HELD_OUT_SEED, "held-out mix"),
        (&HELD_OUT_2, HELD_OUT_2_SEED, "held-out mix 2"),
        (&HELD_OUT_3, HELD_OUT_3_SEED, "held-out mix 3"),
    ] {
        let (tool, asv) = need!(asv_score(mix, seed, who));
        assert!(tool.located > asv.located, "{tool:?}\n{asv:?}");
        assert!(tool.flagged > asv.flagged, "{tool:?}\n{asv:?}");
        assert!(tool.false_steps <= asv.false_steps, "{tool:?}\n{asv:?}");
    }
}

#[test]
fn ten_times_as_many_histories_of_each_mix() {
    // The same scores on 3,000 histories of each mix (seeds 1001-1010, 2001-2010, 3001-3010,
    // 4001-4010 of 300 each), where a count of false steps is no longer a matter of a few
    // histories. d0048e9 on the same histories (its fit and verdict, measured when the
    // second held-out mix was drawn up, and the third scored): clear steps, located, false,
    // flagged: 2951, 1824, 93, 1091 of 1352; 3408, 1950, 41, 1225 of 1506; 2904, 1791, 101,
    // 1090 of 1290; 3545, 2233, 80, 1301 of 1528. afcddc9 (the design before): 2642 (89.5%),
    // 89, 1298; 2959 (86.8%), 78, 1429; 2571 (88.5%), 97, 1237; 3156 (89.0%), 66, 1475.
    // Now, asserted below: 2661 (90.2%), 79, 1304 (96.4%); 2998 (88.0%), 75, 1438 (95.5%);
    // 2589 (89.2%), 85, 1235 (95.7%); 3178 (89.6%), 78, 1477 (96.7%). False alarms: 1, 1,
    // 6, 0 (and 8, 0, 3, 2 where compare of the two newest reports fails too): short
    // series judged on their samples, a few series whose run-to-run variation was estimated
    // low, and drifts at alpha / 2. Since issue 66 (a newest run of one or two samples alone
    // off is rerun to tell, 20, 17, 16 and 13 histories): 2647 (89.7%), 79, 1292 (95.6%);
    // 2994 (87.9%), 74, 1428 (94.8%); 2583 (88.9%), 84, 1228 (95.2%); 3162 (89.2%), 73,
    // 1473 (96.4%); false alarms 1, 1, 4, 0 (+8, 0, 3, 2). Since the law of residuals is
    // averaged over its tails: 2646, 78; 2991, 74; 2578, 84; 3162, 70; flagged and false
    // alarms the same.
    // (mix, seed base, who, located %, false steps, flagged %)
    let expected = [
        (&TUNED, 1000, "tuned", 89, 79, 95),
        (&HELD_OUT, 2000, "held-out", 87, 75, 94),
        (&HELD_OUT_2, 3000, "held-out 2", 88, 85, 95),
        (&HELD_OUT_3, 4000, "held-out 3", 89, 78, 96),
    ];
    let scores: Vec<Score> = expected
        .iter()
        .map(|(mix, base, who, ..)| {
            let mut s = Score::default();
            for seed in 1..=10 {
                for g in generate(mix, base + seed, 300) {
                    s.add(&g, &said(&tool(&g), &g), &mut Vec::new());
                }
            }
            eprintln!("{}", s.table(&format!("tool, 3,000 of the {who} mix")));
            s
        })
        .collect();
    for ((_, _, who, at_least, false_steps, flag), s) in expected.iter().zip(&scores) {
        located(s, *at_least);
        flagged(s, *flag);
        assert!(s.false_steps <= *false_steps, "{who}: {s:?}");
    }
}

/// The tool and the oracle at the tool's penalty (`4 + 4 ln n`, told the true noise, each
/// run's own within-run noise) on `seeds` of 300 histories of `mix` (seeds `base + s`),
/// each score printed.
fn spread_scores(mix: &Mix, base: u64, seeds: u64, who: &str) -> (Score, Score) {
    let (mut tool_s, mut oracle_s) = (Score::default(), Score::default());
    let (mut misses, mut none) = (Vec::new(), Vec::new());
    for seed in 1..=seeds {
        for g in generate(mix, base + seed, 300) {
            tool_s.add(&g, &said(&tool(&g), &g), &mut misses);
            oracle_s.add(&g, &oracle(&g, (4.0, 4.0)), &mut none);
        }
    }
    if std::env::var_os("WAN_VAE_BENCH_SCORE_MISSES").is_some() {
        for m in &misses {
            eprintln!("tool, {who}: {m}");
        }
    }
    let n = tool_s.histories;
    eprintln!("{}", tool_s.table(&format!("tool, {n} of the {who} mix")));
    eprintln!(
        "{}",
        oracle_s.table(&format!("oracle at 4 + 4 ln n, {n} of the {who} mix"))
    );
    (tool_s, oracle_s)
}

/// Issue 66's bar, said (printed): no false alarm (those where `compare` of the two newest
/// reports fails too counted apart), false steps at most the oracle's plus 2 per 300
/// histories, located within 4 points of the oracle's. The tool misses it (module docs), so
/// what is asserted is the score as measured, `(false alarms, false steps, located)` at
/// worst, so that it gets no worse unseen.
fn issue_66((tool_s, oracle_s): &(Score, Score), who: &str, (alarms, false_steps, located): (usize, usize, usize)) {
    let allowed = oracle_s.false_steps + 2 * tool_s.histories.div_ceil(300);
    let gap = 100.0 * (oracle_s.located as f64 - tool_s.located as f64) / tool_s.clear as f64;
    eprintln!(
        "issue 66's bar, {who}: false alarms {} (bar 0); false steps {} (bar {allowed}); located {:.1} points \
         below the oracle (bar 4): {}",
        tool_s.false_alarms,
        tool_s.false_steps,
        gap,
        match tool_s.false_alarms == 0 && tool_s.false_steps <= allowed && gap <= 4.0 {
            true => "met",
            false => "missed",
        }
    );
    assert!(tool_s.false_alarms <= alarms, "{who}: {tool_s:?}");
    assert!(tool_s.false_steps <= false_steps, "{who}: {tool_s:?}\n{oracle_s:?}");
    assert!(tool_s.located >= located, "{who}: {tool_s:?}\n{oracle_s:?}");
}

#[test]
fn issue_66s_mixes_the_first_300_of_each() {
    // Runs of their own spread and one or two samples: the first tenth of the 3,000 of
    // `issue_66s_mixes_3000_of_each` (seeds 5001 and 6001), always run. As measured: spread,
    // 196 of 219 located (the oracle 211), 11 false steps (the oracle 3), 1 false alarm;
    // held-out, 194 of 210 (204), 12 (9), 1 (and 1 where compare fails too).
    let tuned = spread_scores(&SPREAD, 5000, 1, "spread");
    let held_out = spread_scores(&SPREAD_HELD_OUT, 6000, 1, "spread held-out");
    issue_66(&tuned, "spread", (1, 11, 196));
    issue_66(&held_out, "spread held-out", (1, 12, 194));
}

#[test]
#[ignore = "issue 66's 3,000 histories of each spread mix, about 45 s on 2 busy cores: run by hand with --ignored"]
fn issue_66s_mixes_3000_of_each() {
    // Issue 66's "Done when": 3,000 histories of each (seeds 5001-5010 and 6001-6010 of 300).
    // As measured (docs/ci.md): spread, 2021 of 2206 located (the oracle 2128: 4.9 points
    // below), 94 false steps (the oracle 48), 3 false alarms (+6); held-out, scored once
    // each design was settled, 2183 of 2384 (2280: 4.1 points), 99 (66), 3 (+8). At 43d683d,
    // before the law of residuals was averaged over its tails: 2023, 109, 3; 2183, 112, 4.
    // The bar is missed on both.
    let tuned = spread_scores(&SPREAD, 5000, 10, "spread");
    let held_out = spread_scores(&SPREAD_HELD_OUT, 6000, 10, "spread held-out");
    issue_66(&tuned, "spread", (3, 94, 2021));
    issue_66(&held_out, "spread held-out", (3, 99, 2183));
}

/// The tool's own noise estimate made *given the true steps* (its model's run-to-run
/// variance and law of spreads read off the true segments, as `history` reads them off its
/// fit), then its fit: what the tool's estimator can do at best, with no step misread.
fn estimated_given_the_truth(g: &Generated) -> Said {
    use wan_vae_bench::analysis::history::{grid, model::Model, steps};
    let order = g.order();
    let runs: Vec<(f64, Vec<f64>)> = order
        .iter()
        .map(|&i| (wan_vae_bench::util::stats::median(&g.runs[i]), g.runs[i].clone()))
        .collect();
    let r: Vec<(f64, &[f64])> = runs.iter().map(|(m, s)| (*m, &s[..])).collect();
    let mut model = Model::new(&r);
    let n = r.len();
    let right: Vec<usize> = g.steps.iter().copied().chain([n]).collect();
    model.refine(&right);
    model.residual_law(&right);
    model.refine(&right);
    let pen = steps::penalty(n);
    let found = match model.mixed() {
        true => grid::detect(&model.y, &model.noises(), pen),
        false => steps::detect(&model.y, &model.weights(), pen),
    };
    Said {
        steps: found[..found.len() - 1].to_vec(),
        ..Said::default()
    }
}

#[test]
#[ignore = "issue 66's gap taken apart on 3,000 histories, about 2 minutes: run by hand with --ignored"]
fn where_the_gap_to_issue_66s_bar_lies() {
    // The 3,000 histories of the spread mix, short (up to 12 runs) and long, scored for the
    // tool, the oracle (told each run's noise), the oracle told the law of the spreads and
    // the run-to-run variance (not each run's), the oracle told only their shape (the scale
    // estimated from the series about its true steps, `told_the_shape`), and the tool's own
    // estimator given the true steps. As measured (located, false steps):
    //
    // | | short: 1014 histories, 288 clear steps | long: 1986, 1918 |
    // | --- | ---: | ---: |
    // | tool | 242, 27 | 1779, 67 |
    // | tool's estimate given the true steps | 214, 18 | 1794, 64 |
    // | oracle told the shape, scale estimated | 270, 1 | 1806, 57 |
    // | oracle told the law | 273, 7 | 1813, 60 |
    // | oracle told each run's noise | 279, 3 | 1849, 45 |
    //
    // The scale of the noise is no loss (told the shape, a fit estimates it from the series
    // as well as being told it); the tool's estimate given the true steps locates hardly
    // more than given its own. (Not the shape, though: `history_generic` shows a generic law,
    // estimated about the true segments, meeting the bar, and about its own fit's, missing it
    // as the tool does: what is missing is a noise estimate that does not lean on the
    // segments it is meant to find.) (Before the law of residuals was averaged over its tails: tool 242, 28 and
    // 1781, 81; given the true steps 213, 28 and 1794, 74.)
    use crate::history_oracle::{told_the_law, told_the_shape};
    type Who = fn(&Generated) -> Said;
    let who: [(&str, Who); 5] = [
        ("tool", |g| said(&tool(g), g)),
        ("tool's estimate given the true steps", estimated_given_the_truth),
        ("oracle told the shape", |g| told_the_shape(g, (4.0, 4.0))),
        ("oracle told the law", |g| told_the_law(g, (4.0, 4.0))),
        ("oracle told each run's noise", |g| oracle(g, (4.0, 4.0))),
    ];
    let gens: Vec<Generated> = (1..=10).flat_map(|s| generate(&SPREAD, 5000 + s, 300)).collect();
    let mut scores = vec![[Score::default(), Score::default()]; who.len()];
    for g in &gens {
        let long = usize::from(g.runs.len() > 12);
        for ((_, f), s) in who.iter().zip(&mut scores) {
            s[long].add(g, &f(g), &mut Vec::new());
        }
    }
    let measured: [[(usize, usize); 2]; 5] = [
        [(242, 27), (1779, 67)],
        [(214, 18), (1794, 64)],
        [(270, 1), (1806, 57)],
        [(273, 7), (1813, 60)],
        [(279, 3), (1849, 45)],
    ];
    let mut got = Vec::new();
    for ((name, _), s) in who.iter().zip(&scores) {
        for (part, s) in ["short", "long"].iter().zip(s) {
            eprintln!(
                "{name}, {part}: {} histories, located {} of {}, false steps {}",
                s.histories, s.located, s.clear, s.false_steps
            );
        }
        got.push([(s[0].located, s[0].false_steps), (s[1].located, s[1].false_steps)]);
    }
    // The whole table printed first, then checked.
    assert_eq!(got, measured);
}
