//! What `history` reads before it fits anything (issue 64): a report whose `created_at` a
//! wrong clock put in the future is refused, or skipped on request, so that it can never stay
//! the newest run and hide tonight's slowdown; an impossible date is always refused; a merged
//! report beside its parts is not a second copy of their measurements; and runs that do not
//! differ make no step.
use crate::history_cli::{folder, history, run, series};
use crate::util::reports::{pass, save};
use wan_vae_bench::report::shard::ShardRecord;
use wan_vae_bench::report::Report;

/// Ten ordinary nightly runs, one run whose clock said 2099 (its timings ordinary), then
/// tonight's run, twice as slow (issue 64, item 3).
fn wrong_clock() -> Vec<Report> {
    let mut reports: Vec<Report> = (0..10).map(|i| run("box", i, 1.0, "6.4.1")).collect();
    let mut future = run("box", 10, 1.0, "6.4.1");
    future.created_at = "2099-06-01T03:00:00Z".into();
    reports.push(future);
    reports.push(run("box", 11, 2.0, "6.4.1"));
    reports
}

#[test]
fn a_report_dated_in_the_future_is_refused_and_cannot_hide_tonights_slowdown() {
    // At a6a8830 the 2099 report was the newest run of every later history: tonight's 2x
    // slowdown fell between older runs, was set aside as a hiccup, and `history` said ok,
    // exit 0.
    let dir = folder(&wrong_clock());
    let (out, _) = history(dir.path(), &[]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    // The folder saves the reports in reverse: the 2099 one is r02.json.
    assert!(
        out.stderr.contains("r02.json") && out.stderr.contains("2099-06-01T03:00:00Z"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--skip-future-dates"), "{}", out.stderr);
    // Skipped on request: tonight's run is the newest, and it is twice as slow.
    let (out, v) = history(dir.path(), &["--skip-future-dates"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("SLOWER +100."), "{}", out.stdout);
    assert!(out.stdout.contains("r02.json"), "{}", out.stdout);
    assert_eq!(series(&v, "decode")[0]["points"].as_array().unwrap().len(), 11, "{v}");
    assert_eq!(
        v["set_aside"][0]["path"].as_str().map(|p| p.ends_with("r02.json")),
        Some(true),
        "{v}"
    );
    // Without the report, the same.
    std::fs::remove_file(dir.path().join("r02.json")).unwrap();
    let (out, _) = history(dir.path(), &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    // A clock a few minutes ahead is no wrong clock: half an hour after now is read.
    let soon = (time::OffsetDateTime::now_utc() + time::Duration::minutes(30))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let mut r = run("box", 12, 2.0, "6.4.1");
    r.created_at = soon;
    save(dir.path(), "r99.json", &r);
    let (out, v) = history(dir.path(), &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(series(&v, "decode")[0]["points"].as_array().unwrap().len(), 12, "{v}");
}

#[test]
fn an_impossible_date_is_refused_even_when_future_dates_are_skipped() {
    for (bad, why) in [
        ("2026-02-31T03:00:00Z", "February"),
        ("2026-02-29T03:00:00Z", "February"),
        ("2026-04-31T03:00:00Z", "April"),
        ("2026-11-01T03:00:00-99:99", "offset"),
        ("2026-11-01T03:00:00+24:00", "offset"),
    ] {
        let mut reports: Vec<Report> = (0..3).map(|i| run("box", i, 1.0, "6.4.1")).collect();
        reports[1].created_at = bad.into();
        let dir = folder(&reports);
        for extra in [&[][..], &["--skip-future-dates"][..]] {
            let (out, _) = history(dir.path(), extra);
            assert_eq!(out.code, 2, "{bad}: {}\n{}", out.stdout, out.stderr);
            assert!(
                out.stderr.contains("r02.json") && out.stderr.contains(bad) && out.stderr.contains(why),
                "{bad}: {}",
                out.stderr
            );
        }
    }
    // February 29th of a leap year is a date.
    let mut reports: Vec<Report> = (0..3).map(|i| run("box", i, 1.0, "6.4.1")).collect();
    reports[0].created_at = "2024-02-29T03:00:00+05:30".into();
    let (out, _) = history(folder(&reports).path(), &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}

#[test]
fn runs_that_do_not_differ_make_no_step() {
    // Issue 64, item 5: identical runs (every variance zero) gave "step -0.0% at run 2" and
    // named the update at run 2 as its cause.
    for (runs, k) in [(20, 5), (30, 1), (8, 3), (4, 2)] {
        let reports: Vec<Report> = (0..runs)
            .map(|i| {
                let mut r = run("box", i, 1.0, if i == 0 { "6.4.1" } else { "7.0.0" });
                r.cases[0].outcome.decode = Some(pass(&vec![0.0357; k]));
                r.cases[0].outcome.encode = Some(pass(&vec![0.1; k]));
                r
            })
            .collect();
        let dir = folder(&reports);
        let (out, v) = history(dir.path(), &[]);
        assert_eq!(out.code, 0, "{runs} x {k}: {}\n{}", out.stdout, out.stderr);
        for s in v["series"].as_array().unwrap() {
            assert_eq!(s["steps"].as_array().unwrap().len(), 0, "{runs} x {k}: {s}");
        }
        assert!(!out.stdout.contains("step "), "{runs} x {k}: {}", out.stdout);
    }
}

/// Part `index` of 2 of one plan, holding case `id`.
fn part(index: usize, id: &str, i: usize, decode: f64) -> Report {
    let mut r = run("box", i, decode, "6.4.1");
    r.cases[0].id = id.into();
    r.run.shard = Some(ShardRecord {
        index,
        count: 2,
        planned_cases: 2,
        shard_cases: 1,
        plan_fingerprint: "0123456789abcdef".into(),
    });
    r
}

#[test]
fn a_merged_report_beside_its_parts_counts_each_measurement_once() {
    // Issue 64: a folder holding shard parts and their merged report counted each
    // measurement twice (the merge copies the parts' cases as they are).
    let dir = tempfile::tempdir().unwrap();
    for night in 0..6 {
        let (a, b) = (part(1, "a", night * 2, 1.0), part(2, "b", night * 2 + 1, 1.0));
        let (merged, _) = wan_vae_bench::analysis::merge::merge_parts(vec![a.clone(), b.clone()]);
        save(dir.path(), &format!("n{night}-part1.json"), &a);
        save(dir.path(), &format!("n{night}-part2.json"), &b);
        // The last night's merge only: the others were merged and their parts kept.
        if night == 5 {
            save(dir.path(), "n5-all.json", &merged);
        }
    }
    let (out, v) = history(dir.path(), &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    for s in series(&v, "decode") {
        assert_eq!(s["points"].as_array().unwrap().len(), 6, "{s}");
    }
    assert!(
        out.stdout.contains("n5-all.json") && out.stdout.contains("n5-part1.json"),
        "{}",
        out.stdout
    );
    assert_eq!(v["set_aside"].as_array().map(Vec::len), Some(1), "{v}");
    // A merged report whose parts are not there is read as any report.
    std::fs::remove_file(dir.path().join("n5-part1.json")).unwrap();
    std::fs::remove_file(dir.path().join("n5-part2.json")).unwrap();
    let (out, v) = history(dir.path(), &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    for s in series(&v, "decode") {
        assert_eq!(s["points"].as_array().unwrap().len(), 6, "{s}");
    }
    assert_eq!(v["set_aside"].as_array().map(Vec::len), Some(0), "{v}");
}
