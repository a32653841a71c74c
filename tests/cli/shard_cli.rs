//! `run --shard K/N` and `merge` of its parts (issue 41): the parts of a plan merge into
//! the report one unsharded run writes; a missing part and a foreign one are refused by
//! name. Workers fake their timings (`--fault-hooks`, `WAN_VAE_BENCH_FAULT=fake`).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::util::cli::*;

/// The plan: 2 precisions x 2 chunks x 2 frame counts at 16x16 (bf16 cases add fp32
/// references where the matrix lacks them).
const PLAN: &[&str] = &[
    "--precision",
    "bf16,fp32",
    "--chunk",
    "1,2",
    "--frames",
    "1,5",
    "--size",
    "16x16",
];

/// `run PLAN EXTRA` with fake timings, the report at `dir/name`.
fn fake(dir: &Path, name: &str, extra: &[&str]) -> (std::process::Output, PathBuf) {
    let report = dir.join(name);
    let out = bench()
        .env("WAN_VAE_BENCH_FAULT", "fake")
        .args(["run", "--fault-hooks", "-q", "--runs", "2", "--warmup", "0"])
        .args(PLAN)
        .args(extra)
        .arg("--output")
        .arg(&report)
        .output()
        .unwrap();
    (out, report)
}

fn merge(dir: &Path, inputs: &[&PathBuf]) -> (std::process::Output, PathBuf) {
    let out_path = dir.join("merged.json");
    let out = bench()
        .arg("merge")
        .args(inputs)
        .arg("-o")
        .arg(&out_path)
        .output()
        .unwrap();
    (out, out_path)
}

/// id -> (settings as JSON, reference id, added as reference).
fn case_set(path: &Path) -> BTreeMap<String, (String, Option<String>, bool)> {
    load(path)
        .cases
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                (
                    serde_json::to_string(&c.settings).unwrap(),
                    c.quality.as_ref().map(|q| q.reference_id.clone()),
                    c.added_as_reference,
                ),
            )
        })
        .collect()
}

#[test]
fn the_parts_of_a_plan_merge_into_the_unsharded_run_and_a_missing_or_foreign_part_is_refused() {
    let dir = scratch();
    let (out, whole) = fake(dir.path(), "whole.json", &["--seed", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut parts = Vec::new();
    for k in 1..=3 {
        // Each part shuffled with its own seed: the split does not depend on it.
        let seed = (10 + k).to_string();
        let (out, p) = fake(
            dir.path(),
            &format!("part{k}.json"),
            &["--shard", &format!("{k}/3"), "--seed", &seed],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let r = load(&p);
        let s = r.run.shard.as_ref().expect("run.shard recorded");
        assert_eq!((s.index, s.count, s.planned_cases), (k, 3, load(&whole).cases.len()));
        assert_eq!(s.shard_cases, r.cases.len());
        parts.push(p);
    }
    let fps: std::collections::BTreeSet<String> = parts
        .iter()
        .map(|p| load(p).run.shard.unwrap().plan_fingerprint)
        .collect();
    assert_eq!(fps.len(), 1, "one plan, one fingerprint: {fps:?}");

    let (out, merged) = merge(dir.path(), &parts.iter().collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(case_set(&merged), case_set(&whole));
    let m = load(&merged);
    assert!(m.run.shard.is_none());
    assert!(
        !m.run.command.iter().any(|w| w.contains("shard")),
        "{:?}",
        m.run.command
    );
    assert!(m.cases.iter().all(|c| c.run.is_none() && c.system.is_none()));
    assert!(
        m.summary.is_some(),
        "the answer over every case, as the unsharded run has"
    );

    // A missing part is named.
    let (out, _) = merge(dir.path(), &[&parts[0], &parts[2]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("part(s) 2/3") && stderr(&out).contains("missing"),
        "{}",
        stderr(&out)
    );
    // A part given twice is named.
    let (out, _) = merge(dir.path(), &[&parts[0], &parts[1], &parts[1], &parts[2]]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("given twice"), "{}", stderr(&out));
    // A part of another plan (another frame count) is refused by its file name.
    let (out, foreign) = fake(dir.path(), "foreign.json", &["--shard", "2/3", "--frames", "9"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (out, _) = merge(dir.path(), &[&parts[0], &foreign, &parts[2]]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("foreign.json") && err.contains("foreign shard"), "{err}");
    // So is an unsharded report beside parts.
    let (out, _) = merge(dir.path(), &[&parts[0], &parts[1], &parts[2], &whole]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("whole.json, an unsharded report"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn list_shows_the_cases_of_one_part_and_the_parts_cover_the_plan() {
    let list = |extra: &[&str]| -> Vec<String> {
        let out = bench().args(["run", "--list"]).args(PLAN).args(extra).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        // The rows: after the header, up to the totals (the forecast's lines follow).
        text.lines()
            .skip(1)
            .take_while(|l| !l.contains("case(s)"))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    let whole = list(&[]);
    for n in [2, 4, 20] {
        let mut union = Vec::new();
        for k in 1..=n {
            union.extend(list(&["--shard", &format!("{k}/{n}")]));
        }
        union.sort();
        let mut want = whole.clone();
        want.sort();
        assert_eq!(union, want, "N={n}");
    }
    let out = bench()
        .args(["run", "--list", "--shard", "1/2"])
        .args(PLAN)
        .output()
        .unwrap();
    assert!(stdout(&out).contains("shard 1/2 of plan "), "{}", stdout(&out));
    let out = bench().args(["run", "--list", "--shard", "3/2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("1 <= K <= N"), "{}", stderr(&out));
}

#[test]
fn a_part_that_is_not_whole_is_refused_and_with_force_kept_on_record() {
    // Issue 48: a part stopped after some of its cases merged into what looked like a
    // complete, uninterrupted run, and a part edited to carry another part's case merged.
    let dir = scratch();
    let (o1, p1) = fake(dir.path(), "p1.json", &["--shard", "1/2"]);
    let (o2, p2) = fake(dir.path(), "p2.json", &["--shard", "2/2"]);
    assert!(
        o1.status.success() && o2.status.success(),
        "{}{}",
        stderr(&o1),
        stderr(&o2)
    );
    let whole = std::fs::read_to_string(&p1).unwrap();

    // Part 1 interrupted after its first case (as `run` records a signal).
    let mut r = load(&p1);
    let planned = r.run.shard.as_ref().unwrap().shard_cases;
    r.cases.truncate(1);
    r.run.interrupted = Some(format!("SIGTERM after 1 of {planned} cases"));
    std::fs::write(&p1, serde_json::to_string(&r).unwrap()).unwrap();
    let (out, merged) = merge(dir.path(), &[&p1, &p2]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("part 1/2") && e.contains("was interrupted (SIGTERM after 1 of"),
        "{e}"
    );
    assert!(!merged.exists());
    let forced = bench()
        .arg("merge")
        .args([&p2, &p1])
        .arg("-o")
        .arg(&merged)
        .arg("--force")
        .output()
        .unwrap();
    assert!(forced.status.success(), "{}", stderr(&forced));
    let m = load(&merged);
    assert!(
        m.run.interrupted.as_deref().is_some_and(|i| i.contains("part 1/2")),
        "{:?}",
        m.run.interrupted
    );

    // Part 1 whole again, but carrying one of part 2's cases.
    std::fs::write(&p1, &whole).unwrap();
    let mut r = load(&p1);
    r.cases.push(load(&p2).cases[0].clone());
    std::fs::write(&p1, serde_json::to_string(&r).unwrap()).unwrap();
    let (out, _) = merge(dir.path(), &[&p1, &p2]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("is in part 1/2") && e.contains("and in part 2/2"), "{e}");
}

#[test]
fn parts_run_with_other_settings_than_the_fingerprint_covers_are_refused() {
    // Issue 48: parts with another --torch-precision (or --input) merged, the merged report
    // claiming the first part's settings for every case.
    let dir = scratch();
    let (o1, p1) = fake(dir.path(), "p1.json", &["--shard", "1/2"]);
    let (o2, p2) = fake(dir.path(), "p2.json", &["--shard", "2/2"]);
    assert!(
        o1.status.success() && o2.status.success(),
        "{}{}",
        stderr(&o1),
        stderr(&o2)
    );
    let mut r = load(&p2);
    r.run.torch_precision = Some("cast".into());
    std::fs::write(&p2, serde_json::to_string(&r).unwrap()).unwrap();
    let (out, merged) = merge(dir.path(), &[&p1, &p2]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--torch-precision is default in") && e.contains("but cast in"),
        "{e}"
    );
    assert!(!merged.exists());
}

#[test]
fn parts_run_from_differently_set_shells_are_refused_or_merged_without_a_winner() {
    // Issue 58, item 10: parts run with RAYON_NUM_THREADS 1 and 2 (recorded in each case's
    // env) merged without a word, and the answer compared across them. Two env variants of
    // one workload: each variant's cases are a unit, one per part, and the answer's group
    // spans both parts. The variant's own variable (MIOPEN_FIND_MODE) is no difference.
    let dir = scratch();
    let cfg = write(
        dir.path(),
        "m.toml",
        "[matrix]\nprecision = [\"fp32\"]\nframes = [1]\nsize = [\"16x16\"]\nenv = [\"baseline\", \"fast\"]\n\
         [env.fast]\nMIOPEN_FIND_MODE = \"2\"\n",
    );
    let part = |k: usize, threads: &str| {
        let p = dir.path().join(format!("p{k}.json"));
        let out = bench()
            .env("WAN_VAE_BENCH_FAULT", "fake")
            .env("RAYON_NUM_THREADS", threads)
            .env_remove("MIOPEN_FIND_MODE")
            .args([
                "run",
                "--fault-hooks",
                "-q",
                "--runs",
                "2",
                "--warmup",
                "0",
                "--control",
                "off",
                "--config",
            ])
            .arg(&cfg)
            .args(["--shard", &format!("{k}/2"), "-o"])
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(load(&p).cases.len(), 1, "one unit per part");
        p
    };
    let (p1, p2) = (part(1, "1"), part(2, "2"));
    let (out, merged) = merge(dir.path(), &[&p1, &p2]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("env RAYON_NUM_THREADS is 1 in part 1/2 (") && e.contains("but 2 in part 2/2 ("),
        "{e}"
    );
    assert!(
        e.contains("p1.json") && e.contains("p2.json") && !e.contains("MIOPEN_FIND_MODE"),
        "{e}"
    );
    assert!(!merged.exists());
    // With --force: merged, said, each case keeps its value, and no winner is called.
    let forced = bench()
        .arg("merge")
        .args([&p1, &p2])
        .arg("-o")
        .arg(&merged)
        .arg("--force")
        .output()
        .unwrap();
    let e = stderr(&forced);
    assert!(forced.status.success(), "{e}");
    assert!(e.contains("warning: parts run with different environments"), "{e}");
    let m = load(&merged);
    let threads: Vec<&str> = m
        .cases
        .iter()
        .map(|c| c.outcome.env["RAYON_NUM_THREADS"].as_str())
        .collect();
    assert_eq!(threads.len(), 2);
    assert_ne!(threads[0], threads[1]);
    let answers = &m.summary.as_ref().unwrap().answers;
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].verdict.name(), "environments", "{}", answers[0].sentence);
    assert!(answers[0].fastest.is_none());
    assert!(
        answers[0].sentence.contains("RAYON_NUM_THREADS (1; 2)"),
        "{}",
        answers[0].sentence
    );
    // Parts run alike merge as before, with a winner called or not on the times alone.
    let (p1, p2) = (part(1, "2"), part(2, "2"));
    let (out, merged) = merge(dir.path(), &[&p1, &p2]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let verdict = load(&merged).summary.unwrap().answers[0].verdict;
    assert_ne!(verdict.name(), "environments");
}

#[test]
fn a_part_that_holds_every_planned_case_is_complete_and_messages_stay_short() {
    // Issue 58, item 13: `--shard 1/100000` printed every missing part on one 1.4 MB line,
    // though the parts given held every planned case.
    let dir = scratch();
    let (o1, p1) = fake(dir.path(), "p1.json", &["--shard", "1/100000"]);
    let (o2, p2) = fake(dir.path(), "p2.json", &["--shard", "2/100000"]);
    assert!(
        o1.status.success() && o2.status.success(),
        "{}{}",
        stderr(&o1),
        stderr(&o2)
    );
    // Part 1 alone lacks part 2's cases: refused in a short line naming the missing parts.
    let (out, merged) = merge(dir.path(), &[&p1]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}", &e[..e.len().min(2000)]);
    assert!(e.len() < 1000, "{} bytes", e.len());
    assert!(e.contains("part(s) 2/100000 to 100000/100000 of plan"), "{e}");
    assert!(!merged.exists());
    // Parts 1 and 2 hold every planned case: complete, as the unsharded run.
    let (out, merged) = merge(dir.path(), &[&p2, &p1]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{}", &e[..e.len().min(2000)]);
    assert!(e.len() < 1000, "{} bytes", e.len());
    let m = load(&merged);
    assert!(m.run.shard.is_none() && m.summary.is_some());
    assert_eq!(m.cases.len(), load(&p1).cases.len() + load(&p2).cases.len());
}
