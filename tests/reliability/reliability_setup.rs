//! Issue 17, the gaps an audit found in items 3, 4 and 9: a signal after `run`'s set-up
//! began (scratch folder, the Python engines' clips) leaves the old report as it was, and
//! one while `merge` reads a blocking input leaves no lock; the tool's own variables that
//! shape a run are recorded and named; `validate --engine torch` runs the Python worker in
//! its own process group, bounded in time, with nothing it started left behind.
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::cli::{bench, entries, fixture, load, scratch, stderr};
use crate::util::procs::{alive, fake_python, kill_tree, run_bounded, signal_and_wait, spawn_group, wait_exit};
use crate::util::reports::{case, report, save};

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(60), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
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
        let status = signal_and_wait(&mut child, sig, Duration::from_secs(60));
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
        let status = signal_and_wait(&mut child, sig, Duration::from_secs(30));
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

/// `validate --engine torch` with the fake interpreter `py` (and `extra` flags).
fn validate_with(py: &Path, extra: &[&str]) -> Command {
    let mut cmd = bench();
    cmd.args(["validate", "--engine", "torch", "--python", py.to_str().unwrap()])
        .arg("--weights")
        .arg(fixture("wan21_tiny.weights.pth"))
        .arg("--cases")
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .args(extra);
    cmd
}

/// Shell lines that write a passing verdict where `validate` asks (`--verdict FILE`).
/// (`fake_python` puts that file's path in `$v`.)
const PASSING_VERDICT: &str =
    "echo '{\"pass\": true, \"cases\": [{\"case\": \"c\", \"outputs\": [{\"pass\": true}]}]}' > \"$v\"";

/// Issue 30 item 2: a verdict comes from what the worker wrote, checked against its exit code.
#[test]
fn validate_needs_the_workers_own_verdict() {
    let dir = scratch();
    for py in ["/bin/true", "/bin/false"] {
        let out = run_bounded(validate_with(Path::new(py), &[]), Duration::from_secs(60));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{py}: {err}");
        assert!(
            err.contains(&format!("the Python worker ({py}) exited with code"))
                && err.contains("without writing its verdict"),
            "{py}: {err}"
        );
    }
    // A verdict of `pass` with exit 1 (or the reverse) is no verdict.
    let py = fake_python(dir.path(), &format!("{PASSING_VERDICT}\nexit 1"));
    let out = run_bounded(validate_with(&py, &[]), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("does not match the verdict it wrote"),
        "{}",
        stderr(&out)
    );
    let py = fake_python(dir.path(), &format!("{PASSING_VERDICT}\nexit 0"));
    let out = run_bounded(validate_with(&py, &[]), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

fn pid_in(file: &Path) -> i32 {
    std::fs::read_to_string(file).unwrap().trim().parse().unwrap()
}

#[test]
fn validate_leaves_no_background_child_and_bounds_the_python_worker() {
    let dir = scratch();
    let pidfile = dir.path().join("bg.pid");
    // A worker that says its verdict and leaves a child holding stdout and stderr open.
    let body = format!(
        "sleep 300 &\necho $! > '{}'\n{PASSING_VERDICT}\necho 'all outputs within tolerance'\nexit 0",
        pidfile.display()
    );
    let py = fake_python(dir.path(), &body);
    let t = Instant::now();
    let out = run_bounded(validate_with(&py, &[]), Duration::from_secs(60));
    let pid = pid_in(&pidfile);
    let left = alive(pid);
    if left {
        // SAFETY: plain kill(2) of the child our fake interpreter started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("all outputs within tolerance"));
    assert!(!left, "the Python worker's background child outlived validate");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());

    // A worker that never ends: killed with its group at --timeout, exit 2 naming it.
    let body = format!("sleep 300 &\necho $! > '{}'\nwait", pidfile.display());
    let py = fake_python(dir.path(), &body);
    let out = run_bounded(validate_with(&py, &["--timeout", "1"]), Duration::from_secs(60));
    let err = stderr(&out);
    let pid = pid_in(&pidfile);
    let left = alive(pid);
    if left {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("engine torch: the Python worker (") && err.contains("did not finish within --timeout 1.000 s"),
        "{err}"
    );
    assert!(!left, "the timed-out worker's child is still running");
    let out = run_bounded(validate_with(&py, &["--timeout", "0"]), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--timeout"), "{}", stderr(&out));
}

#[test]
fn validate_python_temp_folder_is_removed_after_a_signal() {
    let dir = scratch();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let started = dir.path().join("started");
    let py = fake_python(dir.path(), &format!("touch '{}'\nsleep 300", started.display()));
    let mut child = spawn_group(
        validate_with(&py, &[])
            .env("TMPDIR", &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_for("the Python worker", || started.exists());
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_exit(&mut child, Duration::from_secs(30));
    kill_tree(child.id() as i32);
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_eq!(entries(&tmp), Vec::<String>::new(), "temp folder left behind");
}
