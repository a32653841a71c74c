//! Unit tests of the answer: a clear winner, a tie within noise, no case within the
//! floor, one case only, a default that ran out of memory, and ComfyUI's `apply`.
//!
//! Must not: be built outside `cargo test` (declared `#[cfg(test)]` in `super`) or run
//! anything: the reports are built in memory.
use super::*;
use crate::model::{Precision, Tiling};
use crate::report::settings::{CaseSettings, Knobs, BASELINE};
use crate::report::values::{Engine, MiopenDb, Passes, Switch};
use crate::report::{testing, BudgetCheck, ErrorStats, ModelInfo, Outcome, PassStats, Quality as Q};

fn settings(precision: Precision, tile: Option<(usize, usize)>, env: &str) -> CaseSettings {
    CaseSettings {
        engine: Engine::Candle,
        precision,
        chunk: 1,
        tiling: tile.map(|(t, o)| Tiling::new(t, o).unwrap()),
        frames: 5,
        width: 64,
        height: 64,
        env_variant: env.into(),
        knobs: Knobs::default(),
        passes: Passes::Decode,
        temporal_tile: None,
        layout: Default::default(),
        conv3d: Default::default(),
    }
}

/// An ok decode-only case with these decode samples and decoded PSNR (None: its own
/// reference).
fn case(s: CaseSettings, samples: &[f64], psnr: Option<f64>) -> CaseRecord {
    let id = s.id();
    let reference_id = s.reference().id();
    let quality = Q {
        decoded: psnr.map(|p| ErrorStats {
            psnr_db: Some(p),
            max_abs: 0.01,
            mean_abs: 0.001,
            identical: false,
        }),
        reference_id: if psnr.is_some() { reference_id } else { id.clone() },
        latent: None,
        roundtrip_psnr_db: None,
        cross_engine: None,
    };
    let outcome = Outcome {
        compute_dtype: Some("f32".into()),
        decode: Some(PassStats::from_samples(samples.to_vec(), vec![], 5, 10.0)),
        load_s: Some(0.1),
        peak_rss_bytes: Some(1 << 30),
        ..Outcome::new(
            CaseStatus::Ok,
            None,
            [("OMP_NUM_THREADS".to_string(), "2".to_string())].into(),
        )
    };
    let mut c = testing::case(s, outcome);
    c.quality = Some(quality);
    c
}

fn report(cases: Vec<CaseRecord>) -> Report {
    let model = ModelInfo {
        z_dim: 16,
        ..Default::default()
    };
    let mut r = testing::report(model, cases);
    r.run.device = "cpu".into();
    r
}

const BASE: [f64; 5] = [2.0, 2.1, 1.9, 2.05, 1.95];

fn only(r: &Report, floor: f64) -> Answer {
    let s = summarize(r, floor);
    assert_eq!(s.answers.len(), 1, "{s:?}");
    assert_eq!((s.bootstrap_seed, s.min_psnr_db), (bootstrap::SEED, floor));
    s.answers.into_iter().next().unwrap()
}

#[test]
fn a_clear_winner_is_named_with_its_interval_and_env() {
    let base = case(settings(Precision::Fp32, None, BASELINE), &BASE, None);
    let mut fast = case(
        settings(Precision::Bf16, Some((32, 16)), "fast"),
        &[1.0, 1.05, 0.95, 1.02, 0.98],
        Some(47.3),
    );
    fast.outcome.env.insert("MIOPEN_FIND_MODE".into(), "2".into());
    fast.outcome.env.insert("RAYON_NUM_THREADS".into(), "1".into());
    // Faster still, but below the floor: never recommended.
    let bad = case(settings(Precision::Fp16, None, BASELINE), &[0.5; 5], Some(30.0));
    let mut fp32_fast = case(settings(Precision::Fp32, None, "fast"), &BASE, None);
    // As a run records it: the variant's variable in each of its cases.
    fp32_fast.outcome.env.insert("MIOPEN_FIND_MODE".into(), "2".into());
    let mut r = report(vec![bad, base, fast, fp32_fast]);
    r.run.env_variants = [
        (BASELINE.to_string(), vec![]),
        (
            "fast".to_string(),
            vec!["MIOPEN_FIND_MODE".into(), "RAYON_NUM_THREADS".into()],
        ),
    ]
    .into();
    let a = only(&r, 40.0);
    assert_eq!((a.verdict, a.cases, a.cases_qualified), (Verdict::Faster, 4, 3));
    assert_eq!(a.model, "wan2.1");
    assert_eq!(
        a.fastest.as_ref().unwrap().id,
        "bf16-chunk1-tile32o16-5x64x64-fast-decode"
    );
    assert_eq!(
        a.baseline.as_ref().unwrap().id,
        "fp32-chunk1-untiled-5x64x64-baseline-decode"
    );
    let r = a.speedup_ratio.unwrap();
    assert!((r - 2.0).abs() < 1e-12, "{r}");
    let (lo, hi) = (a.speedup_ratio_low.unwrap(), a.speedup_ratio_high.unwrap());
    assert!(1.0 < lo && lo <= r && r <= hi, "{lo} {r} {hi}");
    let apply = a.apply.as_ref().unwrap();
    // Only what the variant changed and can act: MIOpen is never loaded by candle on the
    // CPU, so its variable is measured, not advised (issue 63).
    assert_eq!(
        apply.env_set,
        [("RAYON_NUM_THREADS".to_string(), "1".to_string())].into()
    );
    assert!(
        apply.env_not_advised["MIOPEN_FIND_MODE"].contains("MIOpen"),
        "{apply:?}"
    );
    assert!(a.not_advised.contains_key("MIOPEN_FIND_MODE"), "{:?}", a.not_advised);
    assert!(a.sentence.contains("Not advised: MIOPEN_FIND_MODE"), "{}", a.sentence);
    assert!(
        apply.steps[0].contains("--precision bf16 --tile 32:16"),
        "{:?}",
        apply.steps
    );
    assert!(
        a.sentence.contains("2.00x") && a.sentence.contains("faster"),
        "{}",
        a.sentence
    );
    // The same report gives the same answer (seeded bootstrap).
    assert_eq!(summarize(&report(vec![]), 40.0).answers, vec![]);
}

#[test]
fn a_tie_within_noise_keeps_the_default() {
    let base = case(settings(Precision::Fp32, None, BASELINE), &[1.0, 1.2, 0.9, 1.1], None);
    let other = case(
        settings(Precision::Bf16, None, BASELINE),
        &[1.05, 0.95, 1.15, 0.97],
        Some(50.0),
    );
    let a = only(&report(vec![base, other]), 40.0);
    assert_eq!(a.verdict, Verdict::WithinNoise, "{a:?}");
    assert!(a.speedup_ratio_low.unwrap() < 1.0 && a.speedup_ratio_high.unwrap() > 1.0);
    assert!(
        a.sentence.contains("within noise") && a.sentence.contains("Keep the default"),
        "{}",
        a.sentence
    );
    assert_eq!(a.apply, None);
}

#[test]
fn no_case_within_the_floor_or_budget_recommends_nothing() {
    // The default is not in the run (only bf16 and fp16), neither reaches 45 dB.
    let a = case(settings(Precision::Bf16, None, BASELINE), &[1.0, 1.1], Some(44.0));
    let b = case(settings(Precision::Fp16, None, BASELINE), &[0.9, 1.0], Some(41.0));
    let ans = only(&report(vec![a.clone(), b.clone()]), 45.0);
    assert_eq!((ans.verdict, ans.cases_qualified), (Verdict::NoneQualified, 0));
    assert_eq!((ans.fastest.as_ref(), ans.apply.as_ref()), (None, None));
    assert!(ans.sentence.contains("nothing to recommend"), "{}", ans.sentence);
    // At 40 dB the fp16 case qualifies; without a default there is no ratio.
    let ans = only(&report(vec![a.clone(), b.clone()]), 40.0);
    assert_eq!(ans.verdict, Verdict::NoBaseline);
    assert_eq!(ans.speedup_ratio, None);
    assert!(ans.apply.is_some());
    // A broken memory budget disqualifies a case.
    let mut b = b;
    b.budgets = vec![BudgetCheck {
        budget: "peak_rss_gb".into(),
        scope: "all cases".into(),
        limit: 0.5,
        value: Some(1.07),
        verdict: BudgetVerdict::Broken,
    }];
    let ans = only(&report(vec![a, b]), 40.0);
    assert_eq!(ans.fastest.unwrap().id, "bf16-chunk1-untiled-5x64x64-baseline-decode");
}

#[test]
fn one_case_only_says_so() {
    let base = case(settings(Precision::Fp32, None, BASELINE), &BASE, None);
    let a = only(&report(vec![base]), 40.0);
    assert_eq!(a.verdict, Verdict::OneCase);
    assert_eq!((a.speedup_ratio, a.apply.as_ref()), (None, None));
    assert!(a.sentence.contains("Only one case"), "{}", a.sentence);
}

#[test]
fn an_out_of_memory_default_and_single_runs_are_said() {
    let mut base = case(settings(Precision::Fp32, None, BASELINE), &BASE, None);
    base.outcome.status = CaseStatus::Oom;
    let tiled = case(
        settings(Precision::Fp32, Some((32, 16)), BASELINE),
        &[1.5, 1.6],
        Some(60.0),
    );
    let a = only(&report(vec![base.clone(), tiled.clone()]), 40.0);
    assert_eq!(a.verdict, Verdict::NoBaseline);
    assert!(a.sentence.contains("ended `oom`"), "{}", a.sentence);
    // One run each: a ratio, no interval.
    let base = case(settings(Precision::Fp32, None, BASELINE), &[2.0], None);
    let tiled = case(settings(Precision::Fp32, Some((32, 16)), BASELINE), &[1.0], Some(60.0));
    let a = only(&report(vec![base, tiled]), 40.0);
    assert_eq!(
        (a.verdict, a.speedup_ratio, a.speedup_ratio_low),
        (Verdict::TooFewRuns, Some(2.0), None)
    );
    assert!(a.sentence.contains("--runs"), "{}", a.sentence);
}

#[test]
fn workloads_and_engines_get_one_answer_each() {
    let base = case(settings(Precision::Fp32, None, BASELINE), &BASE, None);
    let mut torch = base.clone();
    torch.settings = crate::engine::spec(Engine::Torch).run_as(&base.settings, "cpu");
    torch.id = torch.settings.id();
    let mut big = base.clone();
    big.settings.width = 128;
    big.id = big.settings.id();
    let s = summarize(&report(vec![torch, big, base]), 40.0);
    let keys: Vec<(usize, &str)> = s.answers.iter().map(|a| (a.width_px, a.engine.as_str())).collect();
    assert_eq!(keys, vec![(64, "candle"), (64, "torch"), (128, "candle")]);
}

#[test]
fn the_rerun_command_replaces_the_weights_and_quotes_words() {
    let words: Vec<String> = [
        "wan-vae-bench",
        "run",
        "--weights",
        "/my dir/v.safetensors",
        "-o",
        "a b.json",
        "--weights=x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(
        super::rerun_command(&words),
        "wan-vae-bench run -o 'a b.json' --weights FILE"
    );
    assert_eq!(super::rerun_command(&[]), "wan-vae-bench run --weights FILE");
}

#[test]
fn python_apply_names_dtype_tiling_and_knobs() {
    let mut s = settings(Precision::Bf16, Some((256, 64)), "ff");
    s.engine = Engine::Diffusers;
    s.knobs = Knobs {
        cudnn: Switch::Off,
        cudnn_benchmark: Switch::On,
        miopen_db: MiopenDb::Fresh,
        tf32: Switch::On,
    };
    let mut c = case(s, &[1.0], Some(50.0));
    c.outcome.env.insert("MIOPEN_USER_DB_PATH".into(), "/tmp/x".into());
    let r = report(vec![c.clone()]);
    let a = apply::apply(&r, &c, None);
    assert_eq!(a.engine, "diffusers");
    // The fresh database's scratch path is the knob's, not a variable to export.
    assert!(!a.env_set.contains_key("MIOPEN_USER_DB_PATH"), "{:?}", a.env_set);
    let all = a.steps.join("\n");
    for needle in [
        "torch.bfloat16",
        "enable_tiling(tile_sample_min_height=256",
        "tile_sample_stride_width=192",
        "cudnn.enabled = False",
        "cudnn.benchmark = True",
        "empty MIOpen database",
        "cudnn.conv.fp32_precision = \"tf32\"",
        "cuda.matmul.fp32_precision = \"tf32\"",
    ] {
        assert!(all.contains(needle), "{needle}: {all}");
    }
}

#[test]
fn min_psnr_flag_checks_its_value() {
    assert_eq!(min_psnr_flag("35.5").unwrap(), 35.5);
    for bad in ["-1", "nan", "inf", "db"] {
        let e = min_psnr_flag(bad).unwrap_err().to_string();
        assert!(e.contains("--min-psnr") && e.contains(bad), "{e}");
    }
}
