//! Issue 17, the gaps an audit found in items 4 and 9: a signal after `run`'s set-up began
//! (scratch folder, the Python engines' clips) leaves the old report as it was, and one
//! while `merge` reads a blocking input leaves no lock; the tool's own variables that shape
//! a run are recorded and named.
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::cli::{bench, load, scratch, stderr};
use crate::util::procs::{fake_python, run_bounded, spawn_group, wait_exit};
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

/// One tiny candle case writing `dir/r.json`, with `env` set (and the tool's variables
/// removed otherwise).
fn tiny_run(dir: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = bench();
    cmd.args([
        "run",
        "--quiet",
        "--frames",
        "1",
        "--size",
        "16x16",
        "--precision",
        "fp32",
    ])
    .args(["--warmup", "0", "--runs", "1", "-o"])
    .arg(dir.join("r.json"))
    .env_remove("WAN_VAE_BENCH_CPU_ISA")
    .env_remove("WAN_VAE_BENCH_SYSFS_ROOT");
    cmd.envs(env.iter().copied());
    run_bounded(cmd, Duration::from_secs(120))
}

#[test]
fn the_tools_own_variables_that_shape_a_run_are_recorded_and_named() {
    let dir = scratch();
    let fake_root = dir.path().join("fake-root");
    std::fs::create_dir(&fake_root).unwrap();
    let root = fake_root.to_str().unwrap();
    let out = tiny_run(
        dir.path(),
        &[
            ("WAN_VAE_BENCH_CPU_ISA", "portable"),
            ("WAN_VAE_BENCH_SYSFS_ROOT", root),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("note: WAN_VAE_BENCH_CPU_ISA=portable caps the candle engine's CPU kernels at portable"),
        "{err}"
    );
    assert!(
        err.contains(&format!("note: WAN_VAE_BENCH_SYSFS_ROOT={root} replaces / ")),
        "{err}"
    );
    let text = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let overrides = &v["run"]["overrides"];
    assert_eq!(overrides["WAN_VAE_BENCH_CPU_ISA"], "portable", "{text}");
    assert_eq!(overrides["WAN_VAE_BENCH_SYSFS_ROOT"], root, "{text}");
    assert_eq!(load(&dir.path().join("r.json")).run.overrides.len(), 2);

    // Unset: nothing said, nothing recorded.
    let out = tiny_run(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("WAN_VAE_BENCH_"), "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
    assert!(!text.contains("overrides"), "{text}");

    // A value the kernels would ignore: refused up front, naming it.
    let before = std::fs::read(dir.path().join("r.json")).unwrap();
    let out = tiny_run(dir.path(), &[("WAN_VAE_BENCH_CPU_ISA", "sse9")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "invalid value \"sse9\" for WAN_VAE_BENCH_CPU_ISA (environment variable): portable, avx512 or \
             avx512-bf16; unset it to use the best the CPU has"
        ),
        "{err}"
    );
    assert_eq!(std::fs::read(dir.path().join("r.json")).unwrap(), before);
}
