//! Issue 10, "destroys or loses data": output paths that are not regular files or may not
//! be written, the output lock, the scratch folder (random, 0700, removed on SIGINT, stale
//! folders of dead runs removed).
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::cli::fixture;
use crate::util::cli::{bench, entries, scratch, stderr, write};

/// The smallest real run: one fake-free case of 8x8, one frame.
const TINY: &[&str] = &[
    "--frames",
    "1",
    "--size",
    "8x8",
    "--runs",
    "1",
    "--warmup",
    "0",
    "--precision",
    "fp32",
    "--quiet",
];

/// `run TINY ARGS` with the scratch folder under `tmp`.
fn run_in(tmp: &Path, args: &[&str]) -> Output {
    bench()
        .arg("run")
        .args(TINY)
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .unwrap()
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

#[test]
fn run_refuses_a_special_file_before_the_first_case() {
    let dir = scratch();
    let fifo = dir.path().join("fifo.json");
    mkfifo(&fifo);
    let out = run_in(dir.path(), &["-o", fifo.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("fifo.json") && err.contains("not a regular file"), "{err}");
    assert!(is_fifo(&fifo), "the FIFO was replaced");
    assert!(!err.contains("ok "), "a case ran first: {err}");
}

#[test]
fn merge_validate_and_plot_refuse_special_files() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let out = run_in(dir.path(), &["-o", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let fifo = dir.path().join("merged.json");
    mkfifo(&fifo);
    let out = bench()
        .args(["merge", report.to_str().unwrap(), "-o", fifo.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(is_fifo(&fifo) && stderr(&out).contains("merged.json"));
    let out = bench()
        .args(["validate", "--weights"])
        .arg(fixture("wan21_tiny.weights.safetensors"))
        .arg("--cases")
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .arg("--save-outputs")
        .arg(&fifo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(is_fifo(&fifo), "validate replaced the FIFO");
    // /dev/null is a device: plot must not write into it (nor, as root, replace it).
    let out = bench()
        .args(["plot", report.to_str().unwrap(), "-o", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("/dev/null"), "{}", stderr(&out));
    let out = run_in(
        dir.path(),
        &["-o", report.to_str().unwrap(), "--export-svg", "/dev/null"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_read_only_report_is_refused_or_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let report = write(dir.path(), "r.json", "{}");
    std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = run_in(dir.path(), &["-o", report.to_str().unwrap()]);
    let mode = std::fs::metadata(&report).unwrap().permissions().mode() & 0o777;
    match out.status.code() {
        // A user who may not write it: refused, untouched.
        Some(2) => assert_eq!(std::fs::read_to_string(&report).unwrap(), "{}"),
        // Root may write it: written, and the mode stays.
        Some(0) => assert_eq!(mode, 0o444, "the report's mode changed"),
        other => panic!("exit {other:?}: {}", stderr(&out)),
    }
    assert_eq!(mode, 0o444);
}

/// A config whose one case hangs until killed.
fn hanging_config(dir: &Path) -> PathBuf {
    write(
        dir,
        "hang.toml",
        "[run]\nwarmup = 0\nruns = 1\ntimeout_s = 120\n[matrix]\nframes = [1]\nsize = [\"8x8\"]\nenv = [\"h\"]\n\
         [env.h]\nWAN_VAE_BENCH_FAULT = \"hang\"\n",
    )
}

/// A `run` of [`hanging_config`] writing `dir/r.json`, its scratch in `dir/tmp`, started and
/// waited for until it holds its lock and has made its scratch folder.
struct HangingRun {
    child: Child,
    report: PathBuf,
    lock: PathBuf,
    tmp: PathBuf,
}

fn start_hanging_run(dir: &Path) -> HangingRun {
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let report = dir.join("r.json");
    let config = hanging_config(dir);
    let child = bench()
        .args([
            "run",
            "--fault-hooks",
            "--config",
            config.to_str().unwrap(),
            "--quiet",
            "-o",
        ])
        .arg(&report)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = dir.join("r.json.lock");
    wait_for("the lock", || lock.exists());
    wait_for("the scratch folder", || !entries(&tmp).is_empty());
    HangingRun {
        child,
        report,
        lock,
        tmp,
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(30), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if t.elapsed() > limit {
            crate::util::procs::kill_tree(child.id() as i32);
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn second_run_on_the_same_report_fails_and_sigint_cleans_up() {
    let dir = scratch();
    let HangingRun {
        child: mut first,
        report,
        lock,
        tmp,
    } = start_hanging_run(dir.path());
    let t = Instant::now();
    let second = run_in(&tmp, &["-o", report.to_str().unwrap()]);
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        err.contains("r.json") && err.contains(&format!("pid {}", first.id())),
        "{err}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "the second run did not fail at once"
    );

    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let status = wait_exit(&mut first, Duration::from_secs(30)).expect("run ended after SIGINT");
    assert_eq!(status.code(), Some(130));
    assert!(!lock.exists(), "lock left behind");
    assert_eq!(entries(&tmp), Vec::<String>::new(), "scratch folder left behind");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(v["run"]["interrupted"].as_str().unwrap().starts_with("SIGINT"), "{v}");
}

#[test]
fn scratch_is_private_and_randomly_named() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let report = dir.path().join("r.json");
    let out = run_in(dir.path(), &["-o", report.to_str().unwrap(), "--keep-outputs"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let kept = stdout
        .lines()
        .find_map(|l| l.strip_prefix("outputs: "))
        .map(PathBuf::from)
        .expect("outputs: line");
    let name = kept.file_name().unwrap().to_string_lossy().into_owned();
    let suffix = name.strip_prefix("wan-vae-bench-").expect("our prefix");
    assert!(!suffix.chars().all(|c| c.is_ascii_digit()), "predictable name {name}");
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{name}");
    std::fs::remove_dir_all(&kept).unwrap();
}

#[test]
fn stale_scratch_folders_of_dead_runs_are_removed_and_nothing_else() {
    let dir = scratch();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let marker = ".wan-vae-bench-owner";
    // A dead run: its marker is there but nobody holds its lock.
    let dead = tmp.join("wan-vae-bench-dead01");
    std::fs::create_dir(&dead).unwrap();
    write(&dead, marker, "999999999\n");
    write(&dead, "case.outputs.safetensors", "x");
    // A live run: this test process holds its marker locked, as a running `run` does.
    let live = tmp.join("wan-vae-bench-live01");
    std::fs::create_dir(&live).unwrap();
    write(&live, marker, &format!("{}\n", std::process::id()));
    let held = std::fs::File::open(live.join(marker)).unwrap();
    held.try_lock().unwrap();
    // A planted symlink with our prefix, pointing at someone's folder with a dead marker.
    let victim = dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    write(&victim, marker, "999999999 1\n");
    std::os::unix::fs::symlink(&victim, tmp.join("wan-vae-bench-link01")).unwrap();
    // Not ours: another prefix.
    let other = tmp.join("other-dead");
    std::fs::create_dir(&other).unwrap();
    write(&other, marker, "999999999 1\n");

    let out = run_in(&tmp, &["-o", dir.path().join("r.json").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        entries(&tmp),
        ["other-dead", "wan-vae-bench-link01", "wan-vae-bench-live01"],
        "only the dead run's folder goes, and this run's own is removed"
    );
    assert!(victim.join(marker).exists(), "followed the symlink");
    drop(held);
}

#[test]
fn a_dead_runs_lock_is_taken_over_and_a_lock_folder_is_named() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let lock = dir.path().join("r.json.lock");
    // Left by a run that died: its pid is written, but no process holds the lock.
    std::fs::write(&lock, "999999999\n").unwrap();
    let out = run_in(dir.path(), &["-o", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(report.is_file() && !lock.exists(), "taken over, then removed");

    // A folder where the lock file goes: refused naming it, before anything runs.
    std::fs::create_dir(&lock).unwrap();
    let out = run_in(dir.path(), &["-o", dir.path().join("r.json").to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("r.json.lock") && err.contains("is a directory"), "{err}");
    assert!(lock.is_dir(), "the folder is left alone");
}

/// Issue 30 item 3: `-o` may not name a file the run executes or reads: this tool's own
/// binary, the `--python` interpreter, a file inside `--comfyui DIR` (links followed).
#[test]
fn the_report_may_not_replace_the_binary_the_interpreter_or_the_engines_folder() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    // A copy of the binary, so a failure here cannot destroy the one the other tests run.
    let own = dir.path().join("wvb");
    std::fs::copy(crate::util::cli::BIN, &own).unwrap();
    let before = std::fs::read(&own).unwrap();
    let out = Command::new(&own)
        .args(["run", "-o"])
        .arg(&own)
        .args(TINY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("this tool's own binary"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&own).unwrap(), before, "the binary is untouched");
    // The interpreter, reached through a link.
    let py = write(dir.path(), "python-x", "#!/bin/sh\nexit 3\n");
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    let link = dir.path().join("py-link");
    std::os::unix::fs::symlink(&py, &link).unwrap();
    let out = bench()
        .args(["run", "--engine", "torch", "--python"])
        .arg(&py)
        .arg("-o")
        .arg(&link)
        .args(TINY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--python"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&py).unwrap(), "#!/bin/sh\nexit 3\n");
    // A file inside the ComfyUI folder.
    let comfy = dir.path().join("ComfyUI");
    std::fs::create_dir_all(comfy.join("comfy")).unwrap();
    write(&comfy.join("comfy"), "sd.py", "# ComfyUI's code\n");
    let out = bench()
        .args(["run", "--comfyui"])
        .arg(&comfy)
        .arg("-o")
        .arg(comfy.join("comfy/sd.py"))
        .args(TINY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("inside the comfyui engine's folder"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(comfy.join("comfy/sd.py")).unwrap(),
        "# ComfyUI's code\n"
    );
}

/// Issue 30 item 1: an `--env-var` product is counted before it is built and refused at once.
#[test]
fn a_huge_env_var_product_is_refused_before_it_is_built() {
    let mut cmd = bench();
    cmd.args(["run", "--list"]);
    for i in 0..8 {
        cmd.arg("--env-var").arg(format!("V{i}=0,1,2,3,4,5,6,7,8,9"));
    }
    let t = Instant::now();
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let err = stderr(&out);
    assert!(
        err.contains("100000000 env variants") && err.contains("--max-cases"),
        "{err}"
    );
}

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> std::fs::File {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills two new descriptors; we close the reading one and own the other.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        std::fs::File::from_raw_fd(fds[1])
    }
}

/// Issue 30 item 4: no command panics when stdout and stderr are closed pipes (`| head`
/// gone, a full disk); `run` still measures and keeps its report.
#[test]
fn no_command_panics_when_its_reader_went_away() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let a = crate::util::reports::save(dir.path(), "a.json", &crate::util::reports::report("h", vec![]));
    let cases = fixture("wan21_tiny.cases.safetensors");
    let weights = fixture("wan21_tiny.weights.safetensors");
    let commands: Vec<Vec<String>> = vec![
        vec!["completions".into(), "bash".into()],
        vec!["system".into()],
        vec!["inspect".into(), "--weights".into(), weights.display().to_string()],
        vec!["compare".into(), a.display().to_string(), a.display().to_string()],
        vec![
            "validate".into(),
            "--weights".into(),
            weights.display().to_string(),
            "--cases".into(),
            cases.display().to_string(),
        ],
        vec!["run".into(), "--list".into()],
        [&["run", "-o", report.to_str().unwrap()][..], TINY]
            .concat()
            .iter()
            .map(|s| s.to_string())
            .collect(),
        vec!["--help".into()],
    ];
    for args in commands {
        let out = Command::new(crate::util::cli::BIN)
            .args(&args)
            .stdout(closed_pipe())
            .stderr(closed_pipe())
            .env_remove("WAN_VAE_BENCH_FAULT")
            .status()
            .unwrap();
        assert_ne!(out.code(), Some(101), "{args:?} panicked");
        assert!(out.code().is_some(), "{args:?} was killed: {out:?}");
    }
    let r = crate::util::cli::load(&report);
    assert_eq!(r.cases.len(), 1, "the run measured and kept its case");
    assert_eq!(r.cases[0].outcome.status, wan_vae_bench::report::CaseStatus::Ok);
}

/// Issue 30 item 11: SIGHUP (the terminal closed), SIGUSR1 and SIGALRM stop a run as SIGINT
/// does: report marked interrupted, lock and scratch removed, exit 128 + the signal.
#[test]
fn hangup_usr1_and_alarm_stop_a_run_cleanly() {
    for (sig, name) in [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGALRM, "SIGALRM"),
    ] {
        let dir = scratch();
        let HangingRun {
            child: mut run,
            report,
            lock,
            tmp,
        } = start_hanging_run(dir.path());
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(run.id() as i32, sig) };
        let status = wait_exit(&mut run, Duration::from_secs(30)).expect("the run ended");
        assert_eq!(status.code(), Some(128 + sig), "{name}");
        assert!(!lock.exists(), "{name}: lock left behind");
        assert_eq!(
            entries(&tmp),
            Vec::<String>::new(),
            "{name}: scratch folder left behind"
        );
        if let Ok(text) = std::fs::read_to_string(&report) {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert!(v["run"]["interrupted"].as_str().unwrap().starts_with(name), "{v}");
        }
    }
}

/// Issue 30 item 14: `-` is not a file name for outputs that cannot stream (a file named `-`
/// was created), and `run -o /dev/stdout` is refused before anything runs.
#[test]
fn dash_and_dev_stdout_are_refused_before_anything_runs() {
    let dir = scratch();
    let report = crate::util::reports::save(dir.path(), "r.json", &crate::util::reports::report("h", vec![]));
    for args in [
        vec![
            "plot".to_string(),
            report.display().to_string(),
            "-o".into(),
            "-".into(),
        ],
        vec![
            "merge".to_string(),
            report.display().to_string(),
            "-o".into(),
            "-".into(),
        ],
        [
            &["run", "--export-csv", "-", "-o"][..],
            &[dir.path().join("x.json").to_str().unwrap()],
            TINY,
        ]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect(),
    ] {
        let out = Command::new(crate::util::cli::BIN)
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("standard output"), "{args:?}: {}", stderr(&out));
        assert!(!dir.path().join("-").exists(), "{args:?} made a file named -");
    }
    let t = Instant::now();
    let out = Command::new(crate::util::cli::BIN)
        .args(["run", "-o", "/dev/stdout"])
        .args(TINY)
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "refused before the run: {:?}",
        t.elapsed()
    );
}

/// Issue 30 item 7: `plot -o` and `--export-*` respect the lock of a report a run is writing.
#[test]
fn plot_and_exports_respect_a_running_reports_lock() {
    let dir = scratch();
    let HangingRun {
        child: mut run, report, ..
    } = start_hanging_run(dir.path());
    let other = crate::util::reports::save(dir.path(), "other.json", &crate::util::reports::report("h", vec![]));
    let plot = bench().arg("plot").arg(&other).arg("-o").arg(&report).output().unwrap();
    let export = bench()
        .args(["run", "--export-csv"])
        .arg(&report)
        .arg("-o")
        .arg(dir.path().join("x.json"))
        .args(TINY)
        .output()
        .unwrap();
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let _ = wait_exit(&mut run, Duration::from_secs(30));
    for (what, out) in [("plot", plot), ("--export-csv", export)] {
        assert_eq!(out.status.code(), Some(2), "{what}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("pid {}", run.id())),
            "{what}: {}",
            stderr(&out)
        );
    }
}

/// Issue 30 item 19: a full disk at the final write (budgets and answer) is exit 1, says
/// that every case is in the file, and still prints the table: not "unusable input".
#[test]
fn a_full_disk_at_the_final_write_keeps_the_cases_and_exits_1() {
    use std::os::unix::process::CommandExt;
    let dir = scratch();
    let first = dir.path().join("r1.json");
    // No telemetry: its samples would make the two reports' sizes differ by more than the
    // 200 bytes this test relies on.
    const QUIET: [&str; 2] = ["--telemetry-ms", "0"];
    let out = bench()
        .args(["run", "-o"])
        .arg(&first)
        .args(TINY)
        .args(QUIET)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let full = std::fs::metadata(&first).unwrap().len();
    let second = dir.path().join("r2.json");
    let limit = full - 200; // above a report without its summary, below one with it
    let mut cmd = bench();
    cmd.args(["run", "-o"]).arg(&second).args(TINY).args(QUIET);
    // SAFETY: setrlimit(2) and signal(2) in the child before exec; both async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the final write of") && err.contains("holds every case"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("report: "),
        "the table is printed"
    );
    let r = crate::util::cli::load(&second);
    assert_eq!(r.cases.len(), 1);
    assert!(r.summary.is_none());
}

/// Issue 30 item 15: a run refused with exit 2 after its outputs were checked (here a bad
/// `--input`) leaves none of the folders it created for them; a folder that existed stays.
#[test]
fn a_refused_run_leaves_no_empty_output_folders() {
    let dir = scratch();
    let bad = write(dir.path(), "bad.npy", "not an array");
    std::fs::create_dir(dir.path().join("kept")).unwrap();
    let report = dir.path().join("a/b/c/r.json");
    let csv = dir.path().join("kept/d/e.csv");
    let out = bench()
        .args(["run", "--weights", "synthetic", "--passes", "decode", "--input"])
        .arg(&bad)
        .arg("-o")
        .arg(&report)
        .arg("--export-csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad.npy"), "{}", stderr(&out));
    assert!(!dir.path().join("a").exists(), "{:?}", entries(dir.path()));
    assert!(dir.path().join("kept").is_dir() && !dir.path().join("kept/d").exists());
}
