//! `compare` and a busy machine (issue 63, item 4): a slow-down is put down to load only as
//! far as a reference measured in the same busy run slowed too (the workload's default, and
//! for the default its A/A control); anything else stays a regression, with the load noted.
//! `history` follows the same rule for a busy newest run.
use crate::util::reports::*;
use wan_vae_bench::report::load::CaseLoad;
use wan_vae_bench::report::{CaseRecord, Report};

/// Samples around `m` (1% apart).
fn around(m: f64) -> Vec<f64> {
    [1.0, 1.01, 0.99, 1.005, 0.995].iter().map(|x| x * m).collect()
}

/// A case of the `baseline` variant (precision `fp32` is the workload's default; `bf16` is
/// another setting); `control` makes it the default's A/A control.
fn case_of(precision: &str, control: bool, decode_s: f64, busy: bool) -> CaseRecord {
    let mut c = case("x", &around(decode_s / 2.0), &around(decode_s));
    c.settings.env_variant = "baseline".into();
    c.settings.precision = precision.parse().unwrap();
    c.id = c.settings.id();
    if control {
        c.id.push_str("-control");
        c.added_as_control = true;
    }
    if busy {
        let mut load = CaseLoad {
            window_s: 10.0,
            cpus: 2,
            others_cpu_cores: 1.4,
            worker_cpu_cores: 1.0,
            loadavg_1m_max: 3.2,
            ..Default::default()
        };
        load.judge();
        c.outcome.load = Some(load);
    }
    c
}

/// The default, its control and a bf16 case, each `factor` times its baseline time.
fn run(factors: [f64; 3], busy: bool) -> Report {
    report(
        "host-a",
        vec![
            case_of("fp32", false, 2.0 * factors[0], busy),
            case_of("fp32", true, 2.0 * factors[1], busy),
            case_of("bf16", false, 1.0 * factors[2], busy),
        ],
    )
}

fn compare(base: &Report, cur: &Report) -> Out {
    let dir = tempfile::tempdir().unwrap();
    let b = save(dir.path(), "baseline.json", base);
    let c = save(dir.path(), "current.json", cur);
    bench(&["compare", &b.display().to_string(), &c.display().to_string()])
}

#[test]
fn both_runs_under_the_same_load_and_one_case_really_2x_slower_is_a_regression() {
    let out = compare(&run([1.0, 1.0, 1.0], true), &run([1.0, 1.0, 2.0], true));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("REGRESSION"), "{}", out.stdout);
    // The load is noted beside it, and why it does not explain the slow-down.
    assert!(
        out.stdout.contains("busy") && out.stdout.contains("not as much"),
        "{}",
        out.stdout
    );
}

#[test]
fn only_the_newer_run_busy_and_every_case_slowed_alike_is_load_not_a_regression() {
    let out = compare(&run([1.0, 1.0, 1.0], false), &run([1.6, 1.6, 1.6], true));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("the current run was busy"), "{all}");
    assert!(all.contains("rerun on a quiet machine"), "{all}");
    assert!(all.contains("put down to load"), "{all}");
    // The JSON says which passes were put down to load.
    let dir = tempfile::tempdir().unwrap();
    let b = save(dir.path(), "b.json", &run([1.0, 1.0, 1.0], false));
    let c = save(dir.path(), "c.json", &run([1.6, 1.6, 1.6], true));
    let json = bench(&["compare", &b.display().to_string(), &c.display().to_string(), "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    assert!(json.stdout.contains("\"explained_by_load\": true"), "{}", json.stdout);
}

#[test]
fn a_quiet_newer_run_slowed_alike_is_still_a_regression() {
    // Nothing was busy: a slow-down of every case is a regression (a driver, a library).
    let out = compare(&run([1.0, 1.0, 1.0], false), &run([1.6, 1.6, 1.6], false));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
}

#[test]
fn a_busy_run_without_a_reference_that_slowed_stays_a_regression() {
    // The default and its control held their time: the bf16 slow-down is not the load's.
    let out = compare(&run([1.0, 1.0, 1.0], false), &run([1.0, 1.0, 1.6], true));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("REGRESSION"), "{}", out.stdout);
}

/// `history` of five quiet nightly runs and a newest one (`newest`), dated a day apart.
fn history(newest: Report) -> Out {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (day, mut r) in (0..5).map(|_| run([1.0, 1.0, 1.0], false)).chain([newest]).enumerate() {
        r.created_at = format!("2026-11-{:02}T02:00:00Z", day + 10);
        paths.push(save(dir.path(), &format!("night-{day}.json"), &r).display().to_string());
    }
    let mut args = vec!["history"];
    args.extend(paths.iter().map(String::as_str));
    bench(&args)
}

#[test]
fn history_puts_a_busy_newest_run_that_slowed_with_its_reference_down_to_load() {
    let out = history(run([1.6, 1.6, 1.6], true));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("put down to load"), "{}", out.stdout);
    assert!(out.stdout.contains("LOAD: "), "{}", out.stdout);
    assert!(
        out.stdout.contains("busy: the newest run's report night-5.json"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("REGRESSION"), "{}", out.stdout);
}

#[test]
fn history_keeps_a_busy_newest_runs_slowdown_its_reference_did_not_share_a_regression() {
    let out = history(run([1.0, 1.0, 1.6], true));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("REGRESSION"), "{}", out.stdout);
    assert!(out.stdout.contains("a regression all the same"), "{}", out.stdout);
    // Quiet, the same slow-down of every case is a regression too (a driver, a library).
    let quiet = history(run([1.6, 1.6, 1.6], false));
    assert_eq!(quiet.code, 1, "{}{}", quiet.stdout, quiet.stderr);
}
