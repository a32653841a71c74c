//! Verdicts that survive a busy machine (issue 63): a deterministic simulation of a sweep of
//! identical settings (a variable nothing reads, three values next to the default) under a
//! load that changes while the run goes on. The schedule is the tool's own
//! (`run::rounds::visits`, with the A/A control `plan::control` adds), the answer the tool's
//! own (`analysis::answer::summarize`); only the clock and the machine are simulated: each
//! run takes its true time ([`PASS_S`], the small CPU decode) times the load at that
//! moment, with 1% noise.
//!
//! With interleaved rounds no identical setting is ever called faster, under a load that
//! steps down after the first case or switches on and off every few seconds (40 seeds); in
//! the order of blocks before issue 63 (no control, one block per case) the same step makes
//! one of them "faster", which is what the issue saw and what this test must be able to see.
use std::collections::BTreeMap;

use wan_vae_bench::analysis::answer::summarize;
use wan_vae_bench::plan::matrix::Case;
use wan_vae_bench::report::rounds::CaseRounds;
use wan_vae_bench::report::settings::CaseSettings;
use wan_vae_bench::report::values::{Passes, Schedule};
use wan_vae_bench::report::{CaseRecord, CaseStatus, ModelInfo, Outcome, PassStats, Report, RunSettings, Verdict};
use wan_vae_bench::run::rounds::visits;

/// A run's time on a quiet machine, seconds (the 5-frame 64x64 decodes took 0.1 to
/// 0.23 s).
const PASS_S: f64 = 0.2;

/// SplitMix64, for the noise and the load's switching.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn gauss(&mut self) -> f64 {
        let (u, v) = (self.next().max(1e-12), self.next());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// How much slower the machine makes a run at time `t` (1: quiet).
enum Load {
    /// Busy (`factor`) until `until` seconds, quiet after: someone's build ended.
    StepDown { factor: f64, until: f64 },
    /// On and off: busy stretches and quiet ones of 1 to 8 s each, drawn from a seed.
    OnOff { factor: f64, switches: Vec<f64> },
}

impl Load {
    fn on_off(factor: f64, seed: u64) -> Load {
        let mut rng = Rng(seed);
        let mut t = 0.0;
        let switches = (0..200)
            .map(|_| {
                t += 1.0 + 7.0 * rng.next();
                t
            })
            .collect();
        Load::OnOff { factor, switches }
    }

    fn at(&self, t: f64) -> f64 {
        match self {
            Load::StepDown { factor, until } => {
                if t < *until {
                    *factor
                } else {
                    1.0
                }
            }
            Load::OnOff { factor, switches } => {
                let n = switches.iter().take_while(|s| **s <= t).count();
                if n % 2 == 1 {
                    *factor
                } else {
                    1.0
                }
            }
        }
    }
}

/// The sweep: the default and three values of a variable no library reads, all the same
/// setting, 5 frames decoded on the CPU by candle.
fn sweep(control: bool) -> Vec<Case> {
    let mut s = CaseSettings::defaults();
    s.passes = Passes::Decode;
    let mut cases = vec![Case::new(s.clone(), BTreeMap::new())];
    for v in ["1", "2", "3"] {
        let mut t = s.clone();
        t.env_variant = format!("UNREAD_VARIABLE={v}");
        let vars = BTreeMap::from([("UNREAD_VARIABLE".to_string(), v.to_string())]);
        cases.push(Case::new(t, vars));
    }
    if control {
        wan_vae_bench::plan::control::add_controls(&mut cases);
    }
    cases
}

/// Time the sweep on the simulated machine, as `schedule` orders the visits (`runs` a case,
/// 1 warmup, 1 run a visit in rounds); the report the run would write.
fn simulate(schedule: Schedule, control: bool, load: &Load, seed: u64, runs: usize) -> Report {
    let cases = sweep(control);
    let mut rng = Rng(seed ^ 0xD1B5_4A32_D192_ED03);
    let mut t = 0.0;
    let (mut samples, mut of_run): (Vec<Vec<f64>>, Vec<Vec<usize>>) =
        (vec![Vec::new(); cases.len()], vec![Vec::new(); cases.len()]);
    for v in visits(&cases, schedule, 1, runs, 1, Some(seed)) {
        t += 0.01; // the visit's own overhead
        for i in 0..v.warmup + v.runs {
            let took = PASS_S * load.at(t) * (1.0 + 0.01 * rng.gauss());
            t += took;
            if i >= v.warmup {
                samples[v.case].push(took);
                of_run[v.case].push(v.round);
            }
        }
    }
    let records: Vec<CaseRecord> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| CaseRecord {
            id: c.id.clone(),
            added_as_reference: false,
            added_as_control: c.added_as_control,
            settings: c.settings.clone(),
            frames_used: Some(5),
            outcome: Outcome {
                decode: Some(PassStats::from_samples(samples[i].clone(), vec![1.0], 5, 1.0)),
                rounds: (schedule == Schedule::Rounds).then(|| CaseRounds {
                    planned: runs,
                    done: runs,
                    of_run: of_run[i].clone(),
                }),
                ..Outcome::new(CaseStatus::Ok, None, c.env_vars.clone())
            },
            quality: None,
            profile: None,
            system: None,
            budgets: Vec::new(),
            run: None,
        })
        .collect();
    Report {
        schema_version: wan_vae_bench::report::SCHEMA_VERSION,
        tool: Default::default(),
        created_at: String::new(),
        system: Default::default(),
        model: ModelInfo {
            source: "synthetic".into(),
            z_dim: 16,
            ..Default::default()
        },
        run: RunSettings {
            device: "cpu".into(),
            ..Default::default()
        },
        cases: records,
        engines: Default::default(),
        summary: None,
    }
}

/// The answer's verdict of the one workload.
fn verdict(r: &Report) -> (Verdict, String) {
    let s = summarize(r, 40.0);
    assert_eq!(s.answers.len(), 1, "{:?}", s.answers);
    (s.answers[0].verdict, s.answers[0].sentence.clone())
}

#[test]
fn identical_settings_are_never_faster_in_rounds_and_are_in_blocks() {
    // The build ends after the default's block (6 passes): in blocks, every later value reads
    // 1.5x faster.
    let step = Load::StepDown {
        factor: 1.5,
        until: 6.5 * PASS_S,
    };
    let (v, sentence) = verdict(&simulate(Schedule::Blocks, false, &step, 3, 5));
    assert_eq!(
        v,
        Verdict::Faster,
        "the order of blocks must show the false verdict: {sentence}"
    );
    assert!(sentence.contains("UNREAD_VARIABLE"), "{sentence}");
    for seed in 0..40 {
        for load in [&step, &Load::on_off(1.5, seed), &Load::on_off(3.0, seed + 100)] {
            let r = simulate(Schedule::Rounds, true, load, seed, 5);
            let (v, sentence) = verdict(&r);
            assert!(
                !matches!(v, Verdict::Faster | Verdict::Slower),
                "seed {seed}: identical settings called {v:?} in rounds: {sentence}"
            );
        }
    }
}

#[test]
fn a_real_difference_is_still_found_in_rounds_under_load() {
    // The same sweep with one value really 1.3x faster: found through the on/off load, with
    // rounds enough (5 are not: the load switches inside rounds, and the answer then says
    // "within noise", never "faster" for the wrong case).
    for seed in 0..10 {
        let mut r = simulate(Schedule::Rounds, true, &Load::on_off(1.5, seed), seed, 15);
        let fast = r
            .cases
            .iter_mut()
            .find(|c| c.settings.env_variant == "UNREAD_VARIABLE=2")
            .unwrap();
        let d = fast.outcome.decode.as_mut().unwrap();
        *d = PassStats::from_samples(d.samples_s.iter().map(|x| x / 1.3).collect(), vec![1.0], 5, 1.0);
        let (v, sentence) = verdict(&r);
        assert_eq!(v, Verdict::Faster, "seed {seed}: {sentence}");
        assert!(sentence.contains("UNREAD_VARIABLE=2"), "{sentence}");
    }
}
