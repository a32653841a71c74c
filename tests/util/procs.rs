//! Helpers of the tests that start the binary as a process and may have to stop it: it runs
//! in its own process group, and a test that gives up on it kills the whole tree it started
//! ([`kill_tree`]: its group, and the group of every descendant, such as a worker and the
//! `sleep` a fake interpreter left in the background), so no process outlives a failed
//! test. Also the fake Python interpreter the worker tests use ([`fake_python`]), and
//! process lookups in `/proc`.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Start `cmd` in a process group of its own (so [`kill_tree`] can end it with everything
/// it started).
pub fn spawn_group(cmd: &mut Command) -> Child {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0).spawn().expect("start the binary")
}

/// Run `cmd` to its end, at most `limit`, capturing its output; past the limit the process
/// tree is killed and the test fails.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = spawn_group(&mut cmd);
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            kill_tree(pid);
            panic!("the command did not end within {limit:?}");
        }
    }
}

/// Wait for `child` at most `limit`; past it the process tree is killed and the test fails.
pub fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > limit {
            kill_tree(child.id() as i32);
            let _ = child.wait();
            panic!("the process did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `(pid, parent pid, process group)` of every process in `/proc`.
fn processes() -> Vec<(i32, i32, i32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // After the command name (which may hold spaces): state ppid pgrp ...
            let rest = &stat[stat.rfind(')')? + 1..];
            let mut f = rest.split_whitespace().skip(1);
            Some((pid, f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect()
}

/// SIGKILL `root`, its process group, and every descendant with its group (a worker runs in
/// a group of its own). Collected before anything is killed, since the children of a
/// killed process are re-parented; repeated, for what was started meanwhile.
pub fn kill_tree(root: i32) {
    // SAFETY: getpgrp has no preconditions.
    let ours = unsafe { libc::getpgrp() };
    for _ in 0..3 {
        let all = processes();
        let mut tree = vec![root];
        let mut i = 0;
        while i < tree.len() {
            let parent = tree[i];
            tree.extend(all.iter().filter(|p| p.1 == parent).map(|p| p.0));
            i += 1;
        }
        let mut groups: Vec<i32> = all.iter().filter(|p| tree.contains(&p.0)).map(|p| p.2).collect();
        groups.push(root);
        for g in groups.into_iter().filter(|&g| g > 1 && g != ours) {
            // SAFETY: plain kill(2) of a process group we started.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
        for pid in tree {
            // SAFETY: plain kill(2) of a process we started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` is alive (a zombie is gone for our purpose).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// The live processes whose command line contains `needle` (not this test process).
pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    processes()
        .into_iter()
        .map(|p| p.0)
        .filter(|&pid| pid != me && alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

/// A worker result file of status ok whose encode and decode hold `samples` (JSON text,
/// e.g. `[0.01]`), every statistic `stat`: what a fake interpreter writes.
pub fn result_json(samples: &str, stat: &str) -> String {
    let pass = format!(
        r#"{{"samples_s":{samples},"min_s":{stat},"median_s":{stat},"mean_s":{stat},"stddev_s":0,"max_s":{stat},"warmup_s":[],"frames_per_s":1,"gflop":0,"gflop_per_s":0,"outliers":0}}"#
    );
    format!(
        r#"{{"status":"ok","error":null,"compute_dtype":"f32","encode":{pass},"decode":{pass},"load_s":0.1,"peak_rss_bytes":null,"device_memory_bytes":null,"env":{{}},"model":null,"roundtrip_psnr_db":null,"outputs_error":null}}"#
    )
}

/// A fake interpreter: a shell script that, as a worker (`INTERPRETER -u SCRIPT worker
/// --session DIR`), reads its first case line from stdin and runs `body` with `$r` set to
/// that case's result path (as `validate`, with `$v` set to its `--verdict` path).
pub fn fake_python(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("fake-python");
    let text = format!(
        "#!/bin/sh\nr=\nv=\nwhile [ $# -gt 0 ]; do [ \"$1\" = --session ] && {{ IFS= read -r line; r=${{line#*\t}}; }}; \
         [ \"$1\" = --verdict ] && v=$2; shift; done\n{body}\n"
    );
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Send `sig` to `child` and wait for it to exit (at most `limit`), then kill whatever it
/// left in its group, should a check of the caller fail.
pub fn signal_and_wait(child: &mut Child, sig: i32, limit: Duration) -> ExitStatus {
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let status = wait_exit(child, limit);
    kill_tree(child.id() as i32);
    status
}
