//! Issue 17, the gaps an audit found in item 4: a signal after `run`'s set-up began (scratch
//! folder, the Python engines' clips) leaves the old report as it was, and one while `merge`
//! reads a blocking input leaves no lock.
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::cli::{bench, scratch};
use crate::util::procs::{fake_python, spawn_group, wait_exit};
use crate::util::reports::{case, report, save};

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(60), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

#[test]
fn a_signal_before_the_first_case_finishes_leaves_the_old_report_as_it_was() {
    let dir = scratch();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let old = save(
        dir.path(),
        "r.json",
        &report("old", vec![case("old-case", &[1.0], &[1.0])]),
    );
    let before = std::fs::read(&old).unwrap();
    let lock = dir.path().join("r.json.lock");
    // The worker never ends; the clip the parent writes for it (5 frames at 2048x2048,
    // 240 MiB) keeps set-up busy for a while once the scratch folder exists.
    let py = fake_python(dir.path(), "sleep 300");
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut child = spawn_group(
            bench()
                .args([
                    "run",
                    "--quiet",
                    "--engine",
                    "torch",
                    "--frames",
                    "5",
                    "--size",
                    "2048x2048",
                ])
                .args(["--warmup", "0", "--runs", "1", "--python", py.to_str().unwrap(), "-o"])
                .arg(&old)
                .env("TMPDIR", &tmp)
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        wait_for("the scratch folder", || !entries(&tmp).is_empty());
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_exit(&mut child, Duration::from_secs(60));
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(128 + sig), "{err}");
        assert_eq!(
            std::fs::read(&old).unwrap(),
            before,
            "the old report was replaced: {err}"
        );
        assert!(
            err.contains("before any case finished") && err.contains("r.json was left as it was"),
            "{err}"
        );
        assert!(!lock.exists(), "lock left behind");
        assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch left behind");
    }
}

#[test]
fn a_signal_while_merge_reads_its_inputs_leaves_no_lock() {
    let dir = scratch();
    let good = save(dir.path(), "a.json", &report("a", vec![case("x", &[1.0], &[1.0])]));
    let fifo = dir.path().join("b.json");
    mkfifo(&fifo);
    let out = dir.path().join("all.json");
    let lock = dir.path().join("all.json.lock");
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let mut child = spawn_group(
            bench()
                .arg("merge")
                .args([&good, &fifo])
                .arg("-o")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        // Opening the FIFO blocks (no writer) with the lock held.
        wait_for("the lock", || lock.exists());
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_exit(&mut child, Duration::from_secs(30));
        assert_eq!(status.code(), Some(128 + sig), "{status:?}");
        assert!(!lock.exists(), "the lock was left behind after signal {sig}");
        assert!(!out.exists());
    }
}
