//! `compare` on crafted reports: exit codes 0/1/2 and what the output says.
use crate::util::reports::*;
use wan_vae_bench::report::CaseStatus;

/// Save baseline and current reports and run `compare` with `extra` arguments.
fn compare(base: &wan_vae_bench::report::Report, cur: &wan_vae_bench::report::Report, extra: &[&str]) -> Out {
    let dir = tempfile::tempdir().unwrap();
    let b = save(dir.path(), "baseline.json", base);
    let c = save(dir.path(), "current.json", cur);
    let mut args = vec!["compare".to_string(), b.display().to_string(), c.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    bench(&args)
}

fn one_case(enc: &[f64], dec: &[f64]) -> wan_vae_bench::report::Report {
    report("host-a", vec![case("fp32-64x64-f5", enc, dec)])
}

#[test]
fn identical_reports_exit_0() {
    let r = one_case(&steady(1.0), &steady(2.0));
    let out = compare(&r, &r, &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("no regression"), "{}", out.stdout);
}

#[test]
fn fifty_percent_slower_with_consistent_samples_exits_1() {
    let out = compare(
        &one_case(&steady(1.0), &steady(2.0)),
        &one_case(&steady(1.0), &steady(3.0)),
        &[],
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("1.50x slower"), "{}", out.stdout);
    assert!(out.stdout.contains("REGRESSION"), "{}", out.stdout);
}

#[test]
fn three_percent_slower_exits_0() {
    let out = compare(
        &one_case(&steady(1.0), &steady(2.0)),
        &one_case(&steady(1.03), &steady(2.06)),
        &[],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("1.03x slower"), "{}", out.stdout);
}

#[test]
fn noisy_overlapping_samples_ten_percent_apart_exit_0() {
    let base = [1.0, 1.4, 0.7, 1.3, 0.8];
    let cur = [1.1, 1.5, 0.75, 1.35, 0.9];
    let out = compare(&one_case(&base, &base), &one_case(&cur, &cur), &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("1.10x slower"), "{}", out.stdout);
    // Beyond the threshold but not significant: said so, never "no change" (issue 49).
    assert!(out.stdout.contains("slower, not significant"), "{}", out.stdout);
    assert!(!out.stdout.contains("no change"), "{}", out.stdout);
}

#[test]
fn a_consistent_slowdown_is_seen_through_one_hiccup_per_report() {
    // Issue 49, item 1: 3 timed runs a side, the current one 1.25x slower in every run but
    // one scheduling hiccup per report. On the raw samples Welch's p was 0.38 ("no change",
    // exit 0); the hiccups (hyperfine's outliers, which `run` counts) are set aside.
    let base = [1.000, 1.5, 1.003];
    let cur = [1.253, 3.4, 1.250];
    let dir = tempfile::tempdir().unwrap();
    let b = save(dir.path(), "baseline.json", &one_case(&base, &base));
    let c = save(dir.path(), "current.json", &one_case(&cur, &cur));
    let out = bench(&["compare", b.to_str().unwrap(), c.to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let decode = &v["cases"][0]["passes"][1];
    assert_eq!(decode["change"], "1.25x slower", "{decode}");
    assert_eq!(decode["verdict"], "slower", "{decode}");
    assert_eq!(
        (
            decode["baseline_outliers"].as_u64(),
            decode["current_outliers"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert!(decode["p_value"].as_f64().unwrap() < 0.05, "{decode}");
    // The raw samples' p is the 0.38: the hiccups are what hid it.
    let raw = wan_vae_bench::analysis::compare::welch::welch_t_test(&cur, &base).unwrap();
    assert!((raw.p_value - 0.38).abs() < 0.01, "{raw:?}");
    let out = compare(&one_case(&base, &base), &one_case(&cur, &cur), &[]);
    assert!(
        out.stdout.contains("REGRESSION") && out.stdout.contains("1 + 1 outlier(s) set aside"),
        "{}",
        out.stdout
    );
}

#[test]
fn significantly_faster_is_not_a_regression() {
    let out = compare(
        &one_case(&steady(1.0), &steady(2.0)),
        &one_case(&steady(0.5), &steady(2.0)),
        &[],
    );
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("2.00x faster") && out.stdout.contains("faster"),
        "{}",
        out.stdout
    );
}

#[test]
fn single_samples_use_the_no_overlap_rule() {
    let out = compare(&one_case(&[1.0], &[1.0]), &one_case(&[1.5], &[1.04]), &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("n<2"), "{}", out.stdout);
    let out = compare(&one_case(&[1.0], &[1.0]), &one_case(&[1.04], &[1.04]), &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(out.stdout.contains("insufficient samples"), "{}", out.stdout);
}

#[test]
fn truncated_or_missing_file_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let good = save(dir.path(), "good.json", &one_case(&steady(1.0), &steady(1.0)));
    let text = std::fs::read_to_string(&good).unwrap();
    let cut = dir.path().join("truncated.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let out = bench(&["compare".as_ref(), good.as_os_str(), cut.as_os_str()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("truncated.json"), "{}", out.stderr);
    let missing = dir.path().join("missing.json");
    let out = bench(&["compare".as_ref(), missing.as_os_str(), good.as_os_str()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("missing.json"), "{}", out.stderr);
}

#[test]
fn case_no_longer_ok_is_a_regression() {
    let base = report("h", vec![case("a", &steady(1.0), &steady(1.0))]);
    let cur = report("h", vec![failed_case("a", CaseStatus::Oom)]);
    let out = compare(&base, &cur, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("status ok -> oom"), "{}", out.stdout);
}

#[test]
fn psnr_drop_is_a_regression_and_noise_level_is_not() {
    let with_q = |dec: Option<f64>, lat: Option<f64>| {
        let mut c = case("bf16", &steady(1.0), &steady(1.0));
        c.quality = Some(quality("fp32", dec, lat));
        report("h", vec![case("fp32", &steady(1.0), &steady(1.0)), c])
    };
    let out = compare(&with_q(Some(40.0), Some(50.0)), &with_q(Some(38.5), Some(50.0)), &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("decoded PSNR dropped by 1.50 dB"), "{}", out.stdout);
    let out = compare(&with_q(Some(40.0), Some(50.0)), &with_q(Some(39.5), Some(50.0)), &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Identical (+inf) -> 140 dB is numerical noise (ceiling 100 dB); -> 60 dB is a drop.
    let out = compare(&with_q(None, None), &with_q(Some(140.0), None), &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let out = compare(&with_q(None, None), &with_q(Some(60.0), None), &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
}

#[test]
fn cases_in_one_report_only_are_listed() {
    let base = report(
        "h",
        vec![
            case("a", &steady(1.0), &steady(1.0)),
            case("gone", &steady(1.0), &steady(1.0)),
        ],
    );
    let cur = report(
        "h",
        vec![
            case("a", &steady(1.0), &steady(1.0)),
            case("new", &steady(1.0), &steady(1.0)),
        ],
    );
    let out = compare(&base, &cur, &[]);
    // A baseline case the current report lacks fails the gate (issue 30); a new one does not.
    assert_eq!(out.code, 1);
    assert!(
        out.stdout.contains("missing from the current report: gone"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("only in baseline: gone"), "{}", out.stdout);
    assert!(out.stdout.contains("only in current: new"), "{}", out.stdout);
}

#[test]
fn different_weights_or_schema_refused_unless_forced() {
    let base = one_case(&steady(1.0), &steady(1.0));
    let mut other = base.clone();
    other.model.params += 1;
    let out = compare(&base, &other, &[]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("different model weights"), "{}", out.stderr);
    let out = compare(&base, &other, &["--force"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("warning: different model weights"),
        "{}",
        out.stdout
    );

    let mut sha_a = base.clone();
    sha_a.model.sha256 = Some("aa".repeat(32));
    let mut sha_b = base.clone();
    sha_b.model.sha256 = Some("bb".repeat(32));
    assert_eq!(compare(&sha_a, &sha_b, &[]).code, 2);

    let mut newer = base.clone();
    newer.schema_version += 1;
    let out = compare(&base, &newer, &[]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("schema version"), "{}", out.stderr);
}

#[test]
fn json_and_markdown_outputs() {
    let base = one_case(&steady(1.0), &steady(2.0));
    let cur = one_case(&steady(1.0), &steady(3.0));
    let out = compare(&base, &cur, &["--json"]);
    assert_eq!(out.code, 1);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["regression"], true);
    let decode = &v["cases"][0]["passes"][1];
    assert_eq!(decode["pass"], "decode");
    assert_eq!(decode["verdict"], "slower");
    assert_eq!(decode["test"], "welch");
    assert!(decode["p_value"].as_f64().unwrap() < 0.05);
    assert_eq!(v["cases"][0]["passes"][0]["verdict"], "no-change");

    let out = compare(&base, &cur, &["--markdown"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("| case | pass |"), "{}", out.stdout);
    assert!(out.stdout.contains("**REGRESSION**"), "{}", out.stdout);
}

#[test]
fn threshold_is_configurable() {
    let base = one_case(&steady(1.0), &steady(1.0));
    let cur = one_case(&steady(1.08), &steady(1.0));
    assert_eq!(compare(&base, &cur, &[]).code, 1);
    assert_eq!(compare(&base, &cur, &["--threshold", "10%"]).code, 0);
    assert_eq!(compare(&base, &cur, &["--threshold", "abc"]).code, 2);
}

/// Issue 17, item 17: with fewer than two samples a speed-up and a slow-down of the same
/// size get the same verdict; the threshold is a fraction of the baseline time both ways.
#[test]
fn single_samples_judge_speed_ups_and_slow_downs_alike() {
    let verdict = |cur: f64| {
        let out = compare(
            &one_case(&[1.0], &[1.0]),
            &one_case(&[cur], &[1.0]),
            &["--threshold", "10", "--json"],
        );
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let pass = &v["cases"][0]["passes"][0];
        assert_eq!(pass["pass"], "encode");
        assert_eq!(pass["test"], "insufficient-samples");
        (pass["verdict"].as_str().unwrap().to_string(), out.code)
    };
    // Exactly 10% either way is not beyond the threshold.
    assert_eq!(verdict(0.9), ("no-change".to_string(), 0));
    assert_eq!(verdict(1.1), ("no-change".to_string(), 0));
    // 15% either way is.
    assert_eq!(verdict(0.85), ("faster".to_string(), 0));
    assert_eq!(verdict(1.15), ("slower".to_string(), 1));
}

/// Issue 30 item 8: `compare` fails closed. Huge timings (whose variance would overflow into
/// p = NaN), medians that contradict their samples and zero medians are unusable input; a
/// baseline case missing from the current report, or an interrupted current report, is a
/// regression; `merge` and `plot` refuse the timings `compare` refuses.
#[test]
fn compare_fails_closed() {
    let base = one_case(&steady(1.0), &steady(2.0));
    let huge = one_case(&steady(1e12), &steady(2.0));
    let out = compare(&base, &huge, &[]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("at most 10000000 s"), "{}", out.stderr);
    let mut lying = one_case(&steady(1.0), &steady(2.0));
    lying.cases[0].outcome.decode.as_mut().unwrap().median_s = 0.5;
    let out = compare(&base, &lying, &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("contradicts its samples"), "{}", out.stderr);
    let mut zero = one_case(&steady(1.0), &steady(2.0));
    zero.cases[0].outcome.decode.as_mut().unwrap().samples_s = vec![0.0, 0.0];
    zero.cases[0].outcome.decode.as_mut().unwrap().median_s = 0.0;
    assert_eq!(compare(&base, &zero, &[]).code, 2);
    // One case of two missing, the other unchanged: a regression.
    let two = report(
        "host-a",
        vec![
            case("a", &steady(1.0), &steady(2.0)),
            case("b", &steady(1.0), &steady(2.0)),
        ],
    );
    let one = report("host-a", vec![case("a", &steady(1.0), &steady(2.0))]);
    let out = compare(&two, &one, &[]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("1 baseline case(s) missing from the current report: b"),
        "{}",
        out.stdout
    );
    let mut interrupted = two.clone();
    interrupted.run.interrupted = Some("SIGINT after 2 of 3 cases".into());
    let out = compare(&two, &interrupted, &[]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("interrupted run"), "{}", out.stdout);
    // merge and plot: negative timings are refused as compare refuses them.
    let dir = tempfile::tempdir().unwrap();
    let neg = save(dir.path(), "neg.json", &one_case(&steady(-1.0), &steady(2.0)));
    let ok = save(dir.path(), "ok.json", &base);
    let merged = dir.path().join("m.json");
    let out = bench(&[
        "merge".as_ref(),
        ok.as_os_str(),
        neg.as_os_str(),
        "-o".as_ref(),
        merged.as_os_str(),
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let svg = dir.path().join("c.svg");
    let out = bench(&["plot".as_ref(), neg.as_os_str(), "-o".as_ref(), svg.as_os_str()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(!svg.exists() && !merged.exists());
}

/// Issue 30 item 8: `scripts/ci_regression.sh` fails closed on the run's own exit 1 (a
/// broken budget here), even when the timings compare well against the baseline.
#[test]
fn the_ci_script_counts_a_broken_budget_as_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ci.toml");
    std::fs::write(
        &cfg,
        "[run]\nwarmup = 0\nruns = 2\n[matrix]\nframes = [1]\nsize = [\"16x16\"]\nprecision = [\"fp32\"]\n\
         [[budgets.case]]\ndecode_median_s = 1e-9\n",
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_wan-vae-bench");
    let base = dir.path().join("base.json");
    let out = std::process::Command::new(bin)
        .args(["run", "--quiet", "--config"])
        .arg(&cfg)
        .arg("-o")
        .arg(&base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "the budget is broken");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ci_regression.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(&base)
        .env("WAN_VAE_BENCH", bin)
        .env("CI_CONFIG", &cfg)
        .env("CI_OUT_DIR", dir.path().join("out"))
        .env("COMPARE_ARGS", "--threshold 1000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("counted as a regression"), "{err}");
}

#[test]
fn a_threshold_that_reads_two_ways_is_refused_naming_both() {
    // Issue 49: `--threshold 0.05` was read as 0.05% (docs called it a fraction), a gate 100
    // times too tight, and the output said "threshold 0.1%" without a word.
    for cmd in [&["compare", "a.json", "b.json"][..], &["history", "a.json"][..]] {
        let out = wan_vae_bench_cmd(cmd, &["--threshold", "0.05"]);
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(
            e.contains("0.05 is ambiguous") && e.contains("0.05%") && e.contains("give 5 for 5%"),
            "{e}"
        );
    }
    assert_eq!(wan_vae_bench::analysis::compare::parse_percent("0.5%"), Ok(0.005));
    assert_eq!(wan_vae_bench::analysis::compare::parse_percent("5"), Ok(0.05));
    assert_eq!(wan_vae_bench::analysis::compare::parse_percent("0"), Ok(0.0));
}

fn wan_vae_bench_cmd(cmd: &[&str], extra: &[&str]) -> std::process::Output {
    crate::util::cli::bench().args(cmd).args(extra).output().unwrap()
}

/// Issue 57, item 6: on a machine whose GPUs are NVIDIA's only, `miopen_db` cannot act, so a
/// torch case's id no longer carries `-miopen_user`; reports written before (the H200 run
/// of 2026-11-26) are read under today's ids, so `compare` pairs an old report with a new
/// one and `history` keeps one series. On an AMD machine, or a machine without GPUs, an id
/// is left as it was written.
#[test]
fn older_nvidia_reports_are_read_under_todays_ids() {
    use wan_vae_bench::machine::system::GpuInfo;
    use wan_vae_bench::report::values::{Engine, MiopenDb, Switch};
    let real =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/gpu-2026-11-26-h200/call1/wan21/wan21.json");
    let raw = std::fs::read_to_string(&real).unwrap();
    assert!(
        raw.contains("-miopen_user\""),
        "the H200 report was written with the old ids"
    );
    let out = bench(&[
        "compare".to_string(),
        "--json".into(),
        real.display().to_string(),
        real.display().to_string(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("miopen_user"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("\"torch-fp32-chunk1-untiled-21x832x480-baseline-cudnn_on-bench_off\""),
        "{}",
        out.stdout
    );

    // An old report and a new one of the same torch case on an NVIDIA machine pair up.
    let torch = |miopen_db: MiopenDb, decode: f64| {
        let mut c = case("", &steady(1.0), &steady(decode));
        c.settings.engine = Engine::Torch;
        c.settings.knobs.cudnn = Switch::On;
        c.settings.knobs.cudnn_benchmark = Switch::Off;
        c.settings.knobs.miopen_db = miopen_db;
        c.id = c.settings.id();
        c
    };
    let on = |vendor: &str, c: wan_vae_bench::report::CaseRecord| {
        let mut r = report("gpu-host", vec![c]);
        r.system.gpus = vec![GpuInfo {
            vendor: vendor.into(),
            name: Some("a GPU".into()),
            ..Default::default()
        }];
        r
    };
    let old = on("nvidia", torch(MiopenDb::User, 1.0));
    assert!(
        old.cases[0].id.ends_with("-cudnn_on-bench_off-miopen_user"),
        "{}",
        old.cases[0].id
    );
    let new = on("nvidia", torch(MiopenDb::NotApplicable, 1.5));
    let out = compare(&old, &new, &[]);
    assert_eq!(
        out.code, 1,
        "the 1.5x slower decode is found: {}{}",
        out.stdout, out.stderr
    );
    assert!(
        out.stdout
            .contains("torch-fp32-chunk1-untiled-5x64x64-default-cudnn_on-bench_off"),
        "{}",
        out.stdout
    );
    let dir = tempfile::tempdir().unwrap();
    let mut later = new.clone();
    later.created_at = "2025-01-02T00:00:00Z".into();
    save(dir.path(), "old.json", &old);
    save(dir.path(), "new.json", &later);
    let json = tempfile::tempdir().unwrap().keep().join("history.json");
    let out = bench(&[
        "history".to_string(),
        dir.path().display().to_string(),
        "--export-json".into(),
        json.display().to_string(),
    ]);
    let h: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_dir_all(json.parent().unwrap()).unwrap();
    let series = h["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "one series per pass: {}", out.stdout);
    assert!(
        series.iter().all(|s| s["points"].as_array().unwrap().len() == 2),
        "both runs in each: {h}"
    );

    // On an AMD machine the knob acts: the id stays, and the two are different cases.
    let out = compare(
        &on("amd", torch(MiopenDb::User, 1.0)),
        &on("amd", torch(MiopenDb::NotApplicable, 1.5)),
        &[],
    );
    assert_eq!(out.code, 2, "no case in common: {}", out.stderr);
}
