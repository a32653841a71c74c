//! Issue 64 (the seventh round), items 1, 6 and 7: the project's scripts. The CI gate
//! (`scripts/ci_regression.sh`) compares only a report its own run wrote, and a run that ends
//! with 2, by a signal or in a panic fails the job with that run's code; the test command
//! (`scripts/test.sh`) removes nothing another run of it is using, and a `target` link that
//! leads nowhere or into a cache it was not told to use is replaced, not followed. Fake
//! binaries stand in for the tool, for cargo and for python3, so these tests take seconds.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::cli::{executable, scratch, stderr, stdout, BIN};
use crate::util::procs::{kill_tree, run_bounded, spawn_group, wait_exit};
use crate::util::reports::{case, report, save};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

// ---- item 1: scripts/ci_regression.sh ----

/// The CI script with `results/ci` holding last night's outputs (a report that compares well
/// with the baseline), and a tool whose `run` does `run_body` (the rest is the real tool).
fn ci_gate(dir: &Path, run_body: &str) -> (Output, PathBuf) {
    let steady = [1.0, 1.01, 0.99, 1.0, 1.0];
    let night = report("ci-box", vec![case("fp32-last-night", &steady, &steady)]);
    let baseline = save(dir, "baseline.json", &night);
    let out_dir = dir.join("ci");
    std::fs::create_dir_all(&out_dir).unwrap();
    save(&out_dir, "current.json", &night);
    for stale in ["results.md", "compare.md", "compare.json", "chart.svg"] {
        std::fs::write(out_dir.join(stale), "last night's fp32-last-night\n").unwrap();
    }
    let tool = executable(
        dir,
        "tool",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = run ]; then\n  out=\n  for a in \"$@\"; do [ -n \"$next\" ] && {{ out=$a; next=; }}; \
             [ \"$a\" = --output ] || [ \"$a\" = -o ] && next=1; done\n  {run_body}\nfi\nexec '{BIN}' \"$@\"\n"
        ),
    );
    let mut cmd = Command::new("bash");
    cmd.arg(repo("scripts/ci_regression.sh"))
        .arg(&baseline)
        .env("WAN_VAE_BENCH", &tool)
        .env("CI_OUT_DIR", &out_dir)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("COMPARE_ARGS")
        .env_remove("CI_DEVICE");
    (run_bounded(cmd, Duration::from_secs(60)), out_dir)
}

#[test]
fn the_ci_gate_fails_with_the_runs_own_code_and_never_reads_last_nights_report() {
    // The run exited 2 (a typo in the matrix), was killed (OOM, the CI timeout) or panicked:
    // the script found last night's current.json, printed its table and said "no regression",
    // exit 0.
    for (body, code) in [
        ("echo 'error: unknown key in the matrix' >&2; exit 2", 2),
        ("kill -KILL $$", 128 + libc::SIGKILL),
        ("echo \"thread 'main' panicked at src/main.rs\" >&2; exit 101", 101),
    ] {
        let dir = scratch();
        let (out, out_dir) = ci_gate(dir.path(), body);
        let (text, err) = (stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(code), "{body}: {text}{err}");
        assert!(
            !text.contains("fp32-last-night") && !err.contains("no regression"),
            "{body}: last night's report was used: {text}{err}"
        );
        assert!(err.contains(&format!("exit {code}")), "{body}: {err}");
        // Nothing of last night is left for the job's comment and artifact to show as tonight's.
        for stale in ["current.json", "results.md", "compare.md", "compare.json", "chart.svg"] {
            assert!(!out_dir.join(stale).exists(), "{body}: {stale} of last night was left");
        }
    }
    // A run that ends 0 without writing its report: no report of tonight's, exit 2.
    let dir = scratch();
    let (out, _) = ci_gate(dir.path(), "exit 0");
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("wrote no report"), "{}", stderr(&out));
    assert!(!stdout(&out).contains("fp32-last-night"), "{}", stdout(&out));
    // A run stopped by SIGTERM that finalized a partial report: the job fails with 143.
    let dir = scratch();
    let partial = report("ci-box", vec![case("fp32-tonight", &[1.0, 1.0], &[1.0, 1.0])]);
    let tonight = save(dir.path(), "tonight.json", &partial);
    let (out, _) = ci_gate(dir.path(), &format!("cp '{}' \"$out\"; exit 143", tonight.display()));
    assert_eq!(out.status.code(), Some(143), "{}{}", stdout(&out), stderr(&out));
    assert!(!stderr(&out).contains("no regression"), "{}", stderr(&out));
    // And the real run, for the record: tonight's report is the one compared.
    // (Tonight's decode is twice as slow: the regression is tonight's, never last night's.)
    let dir = scratch();
    let slow: Vec<f64> = [2.0, 2.02, 1.98, 2.0, 2.0].to_vec();
    let steady = [1.0, 1.01, 0.99, 1.0, 1.0];
    let slower = report("ci-box", vec![case("fp32-last-night", &steady, &slow)]);
    let tonight = save(dir.path(), "tonight.json", &slower);
    let (out, _) = ci_gate(dir.path(), &format!("cp '{}' \"$out\"; exit 0", tonight.display()));
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("REGRESSION"), "{}", stderr(&out));
}

// ---- items 6 and 7: scripts/test.sh ----

/// A clone of the repository with the test script alone (and its lock file) in `root`.
fn clone(root: &Path) -> PathBuf {
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    for f in ["scripts/test.sh", "scripts/test-python.lock"] {
        std::fs::copy(repo(f), root.join(f)).unwrap();
    }
    root.to_path_buf()
}

/// Fake `cargo` and `python3` in `bin`. cargo: `--version`; a build (`--no-run`) makes
/// `target/release` as cargo does (exit 101 where it cannot, as on a dangling link) and
/// leaves `target/release/built-by-$FAKE_NAME`; the tests touch `$FAKE_READY` and wait for
/// `$FAKE_GO` (at most 60 s) when those are set. python3: `-c` prints a version, `-m venv
/// DIR` makes DIR/bin/python (this script), anything else succeeds (pip, the imports).
fn fakes(bin: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    executable(
        bin,
        "cargo",
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'cargo 0.0.0 (fake)'; exit 0; }\n\
         case \" $* \" in *' --no-run '*)\n  mkdir -p target/release || exit 101\n  \
         : > \"target/release/built-by-$FAKE_NAME\" || exit 101\n  exit 0;;\nesac\n\
         if [ -n \"$FAKE_READY\" ]; then\n  : > \"$FAKE_READY\"\n  i=0\n  \
         while [ ! -e \"$FAKE_GO\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\nfi\nexit 0\n",
    );
    executable(
        bin,
        "python3",
        "#!/bin/sh\ncase \"$1\" in\n  -c) echo '3.99.0 (fake)';;\n  \
         -m) if [ \"$2\" = venv ]; then mkdir -p \"$3/bin\" && cp \"$0\" \"$3/bin/python\"; fi;;\nesac\nexit 0\n",
    );
}

/// `scripts/test.sh` of `clone` with the fakes of `bin` first in PATH, the cache `cache`
/// (or `off`), named `name` (for its build's marker), and `env`.
fn test_sh(clone: &Path, bin: &Path, cache: &str, name: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new("bash");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    cmd.arg(clone.join("scripts/test.sh"))
        .current_dir(clone)
        .env("PATH", path)
        .env("WAN_VAE_BENCH_CACHE", cache)
        .env("FAKE_NAME", name)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("WAN_VAE_BENCH_CACHE_MAX_GB")
        .env_remove("FAKE_READY")
        .env_remove("FAKE_GO")
        .env("WAN_VAE_BENCH_TEST_PYTHON", "/nonexistent/bin/python");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// A run of the test script started in the background that waits, in its tests, for `go`.
struct Waiting {
    child: std::process::Child,
    go: PathBuf,
}

impl Waiting {
    fn start(mut cmd: Command, dir: &Path, tag: &str) -> Waiting {
        let (ready, go) = (dir.join(format!("{tag}.ready")), dir.join(format!("{tag}.go")));
        cmd.env("FAKE_READY", &ready)
            .env("FAKE_GO", &go)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = spawn_group(&mut cmd);
        let t = Instant::now();
        while !ready.exists() {
            if let Some(s) = child.try_wait().unwrap() {
                panic!("the first run ended before its tests: {s:?}");
            }
            if t.elapsed() > Duration::from_secs(60) {
                kill_tree(child.id() as i32);
                panic!("the first run did not reach its tests");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Waiting { child, go }
    }

    fn finish(mut self) {
        std::fs::write(&self.go, "").unwrap();
        let s = wait_exit(&mut self.child, Duration::from_secs(60));
        assert!(s.success(), "the first run: {s:?}");
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        kill_tree(self.child.id() as i32);
    }
}

#[test]
fn the_size_check_never_removes_the_cached_build_another_clone_builds_in() {
    // Item 6: a second clone's size check removed the shared target/ while the first clone's
    // build and tests ran in it.
    let dir = scratch();
    let (bin, cache) = (dir.path().join("bin"), dir.path().join("cache"));
    fakes(&bin);
    let cache_s = cache.to_str().unwrap();
    let a = clone(&dir.path().join("a"));
    let first = Waiting::start(test_sh(&a, &bin, cache_s, "a", &[]), dir.path(), "a");
    let built = cache.join("target/release/built-by-a");
    assert!(built.exists(), "the first clone builds in the cache");
    // Over the bound (0 GiB): the second clone may not remove what the first one uses.
    let b = clone(&dir.path().join("b"));
    let out = run_bounded(
        test_sh(&b, &bin, cache_s, "b", &[("WAN_VAE_BENCH_CACHE_MAX_GB", "0")]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(
        built.exists(),
        "the build another clone uses was removed: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("in use"), "{}", stderr(&out));
    first.finish();
    // Once nobody uses it, the bound holds again.
    let c = clone(&dir.path().join("c"));
    let out = run_bounded(
        test_sh(&c, &bin, cache_s, "c", &[("WAN_VAE_BENCH_CACHE_MAX_GB", "0")]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(!built.exists(), "the cache over its bound is removed: {}", stderr(&out));
    assert!(cache.join("target/release/built-by-c").exists());
}

/// Make `dir` look old (so it is the first the pruning of test Pythons picks).
fn age(dir: &Path) {
    let ok = Command::new("touch")
        .args(["-d", "2001-01-01"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn a_new_test_python_never_removes_one_another_run_is_using() {
    // Item 6: a third cache key removed the test Python another run's tests were running in.
    let dir = scratch();
    let (bin, cache) = (dir.path().join("bin"), dir.path().join("cache"));
    fakes(&bin);
    let cache_s = cache.to_str().unwrap();
    // Run A makes its own test Python (its lock file differs: another key) and tests in it.
    let a = clone(&dir.path().join("a"));
    let lock = a.join("scripts/test-python.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    std::fs::write(&lock, format!("{text}# another pin\n")).unwrap();
    let mut cmd = test_sh(&a, &bin, cache_s, "a", &[]);
    cmd.env_remove("WAN_VAE_BENCH_TEST_PYTHON");
    let first = Waiting::start(cmd, dir.path(), "a");
    let pythons = |c: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(c)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with("python-"))
            .collect();
        v.sort();
        v
    };
    let made = pythons(&cache);
    assert_eq!(made.len(), 1, "{made:?}");
    let used = made[0].clone();
    // Run B, by its test Python in the cache's (as WAN_VAE_BENCH_TEST_PYTHON names it here).
    let other = cache.join("python-0000000000000000");
    std::fs::create_dir_all(other.join("bin")).unwrap();
    std::fs::copy(bin.join("python3"), other.join("bin/python")).unwrap();
    std::fs::write(other.join("complete"), "").unwrap();
    let b = clone(&dir.path().join("b"));
    let other_python = other.join("bin/python");
    let second = Waiting::start(
        test_sh(
            &b,
            &bin,
            cache_s,
            "b",
            &[("WAN_VAE_BENCH_TEST_PYTHON", other_python.to_str().unwrap())],
        ),
        dir.path(),
        "b",
    );
    age(&used);
    age(&other);
    // And a newer one nobody uses: with the third key's, the two newest.
    let newer = cache.join("python-ffffffffffffffff");
    std::fs::create_dir_all(newer.join("bin")).unwrap();
    std::fs::write(newer.join("complete"), "").unwrap();
    // Run C makes a third key's: both in-use ones are the oldest, and neither is removed.
    let c = clone(&dir.path().join("c"));
    let mut cmd = test_sh(&c, &bin, cache_s, "c", &[]);
    cmd.env_remove("WAN_VAE_BENCH_TEST_PYTHON");
    let out = run_bounded(cmd, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(
        used.join("bin/python").exists(),
        "run A's test Python was removed: {}",
        stderr(&out)
    );
    assert!(
        other.join("bin/python").exists(),
        "run B's test Python was removed: {}",
        stderr(&out)
    );
    first.finish();
    second.finish();
    // Nobody uses them now: the next run keeps the two newest only.
    let d = clone(&dir.path().join("d"));
    let mut cmd = test_sh(&d, &bin, cache_s, "d", &[]);
    cmd.env_remove("WAN_VAE_BENCH_TEST_PYTHON");
    let out = run_bounded(cmd, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let left = pythons(&cache);
    assert!(!left.contains(&used) && !left.contains(&other), "{left:?}");
}

#[test]
fn a_target_link_that_leads_nowhere_or_into_another_cache_is_replaced() {
    // Item 7: a clone that used the cache could not build once the cache was gone, even with
    // WAN_VAE_BENCH_CACHE=off: its target was a dangling link (cargo exit 101).
    let dir = scratch();
    let bin = dir.path().join("bin");
    fakes(&bin);
    let gone = dir.path().join("gone-cache/target");
    let link = |clone: &Path, to: &Path| std::os::unix::fs::symlink(to, clone.join("target")).unwrap();
    let is_link = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type().is_symlink();
    // The cache gone, and off: the clone builds in a target/ of its own.
    let a = clone(&dir.path().join("a"));
    link(&a, &gone);
    let out = run_bounded(test_sh(&a, &bin, "off", "a", &[]), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(!is_link(&a.join("target")) && a.join("target/release/built-by-a").exists());
    assert!(!gone.exists(), "the dangling link was followed");
    // The cache gone, and a new one: the link is made again, to the new cache.
    let cache = dir.path().join("cache");
    let b = clone(&dir.path().join("b"));
    link(&b, &gone);
    let out = run_bounded(
        test_sh(&b, &bin, cache.to_str().unwrap(), "b", &[]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(std::fs::read_link(b.join("target")).unwrap(), cache.join("target"));
    assert!(cache.join("target/release/built-by-b").exists() && !gone.exists());
    // A link into a cache that is there, with the cache turned off: not followed (the cache's
    // build is left alone), the clone builds in its own.
    let c = clone(&dir.path().join("c"));
    link(&c, &cache.join("target"));
    let out = run_bounded(test_sh(&c, &bin, "off", "c", &[]), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(!is_link(&c.join("target")) && c.join("target/release/built-by-c").exists());
    assert!(
        !cache.join("target/release/built-by-c").exists(),
        "built in the cache turned off"
    );
    // A link of the user's own to a build folder of theirs is theirs: kept, and built in.
    let mine = dir.path().join("fast-disk/target");
    std::fs::create_dir_all(&mine).unwrap();
    let d = clone(&dir.path().join("d"));
    link(&d, &mine);
    let out = run_bounded(
        test_sh(&d, &bin, cache.to_str().unwrap(), "d", &[]),
        Duration::from_secs(60),
    );
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(std::fs::read_link(d.join("target")).unwrap(), mine);
    assert!(mine.join("release/built-by-d").exists());
}
