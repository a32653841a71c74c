//! Issue 67, item 5: two CI runners called `vm` with the same CPU model are two machines to
//! `history` and `merge` (told apart by the machine id, the board and the memory size), and
//! a report written before those facts were recorded still reads, as the machine it can
//! only be.
use crate::util::reports::*;
use wan_vae_bench::report::Report;

/// A report of host `vm` ("AMD EPYC"), machine id `id` (none: a report from before the
/// field), 24 GiB, written at `day`, its one case timed around `factor` seconds.
fn vm_report(id: Option<&str>, day: u32, factor: f64) -> Report {
    let mut r = report("vm", vec![case("fp32", &steady(factor), &steady(factor))]);
    r.system.cpu_model = Some("AMD EPYC".into());
    r.system.memory_total_bytes = Some(24 << 30);
    r.system.machine_id = id.map(str::to_string);
    r.system.board = id.map(|_| "QEMU Standard PC (Q35 + ICH9, 2009)".to_string());
    r.created_at = format!("2026-11-{day:02}T03:00:00Z");
    r
}

#[test]
fn history_keeps_two_runners_of_one_name_and_cpu_apart() {
    let dir = tempfile::tempdir().unwrap();
    // Runner A's nightly runs, then runner B's, twice as slow (another machine, not a step).
    for day in 1..=4 {
        save(
            dir.path(),
            &format!("a{day}.json"),
            &vm_report(Some("aaaa1111bbbb2222"), day, 1.0),
        );
    }
    for day in 5..=8 {
        save(
            dir.path(),
            &format!("b{day}.json"),
            &vm_report(Some("cccc3333dddd4444"), day, 2.0),
        );
    }
    let out = bench(&["history".as_ref(), dir.path().as_os_str()]);
    assert_eq!(
        out.code, 0,
        "one machine's slower runs taken for a step:\n{}{}",
        out.stdout, out.stderr
    );
    assert!(!out.stdout.contains("SLOWER"), "{}", out.stdout);
    for id in ["machine id aaaa1111", "machine id cccc3333"] {
        assert!(out.stdout.contains(id), "{id}:\n{}", out.stdout);
    }
    assert!(out.stdout.contains("2 machines"), "{}", out.stdout);

    // Reports from before the machine id (no such fields in the JSON) still read, and are
    // runner A's when only A can be theirs (the memory tells it from a 16 GiB B).
    let dir = tempfile::tempdir().unwrap();
    let mut old = vm_report(None, 1, 1.0);
    let text = serde_json::to_string(&old).unwrap();
    assert!(!text.contains("machine_id") && !text.contains("\"board\""), "{text}");
    for day in 1..=3 {
        old.created_at = format!("2026-11-{day:02}T03:00:00Z");
        save(dir.path(), &format!("old{day}.json"), &old);
    }
    for day in 4..=6 {
        save(
            dir.path(),
            &format!("new{day}.json"),
            &vm_report(Some("aaaa1111bbbb2222"), day, 1.0),
        );
    }
    let mut b = vm_report(Some("cccc3333dddd4444"), 7, 2.0);
    b.system.memory_total_bytes = Some(16 << 30);
    save(dir.path(), "b7.json", &b);
    let out = bench(&["history".as_ref(), dir.path().as_os_str()]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("2 machines"), "{}", out.stdout);
    // Runner A's series holds its six runs, the old three included.
    let a_line = out
        .stdout
        .lines()
        .find(|l| l.contains("24 GiB") && l.contains("decode"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(a_line.contains(" 6 "), "{a_line}");
}

#[test]
fn merge_says_two_runners_of_one_name_are_two_machines() {
    let dir = tempfile::tempdir().unwrap();
    let a = save(dir.path(), "a.json", &vm_report(Some("aaaa1111bbbb2222"), 1, 1.0));
    let b = save(dir.path(), "b.json", &vm_report(Some("cccc3333dddd4444"), 2, 2.0));
    let all = dir.path().join("all.json");
    let out = bench(&[
        "merge".as_ref(),
        a.as_os_str(),
        b.as_os_str(),
        "-o".as_ref(),
        all.as_os_str(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("timed on 2 machines") && out.stderr.contains("machine id cccc3333"),
        "{}",
        out.stderr
    );
}
