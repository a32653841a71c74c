//! Child processes we start and must not leave behind (the workers of `run`, the Python
//! worker of `validate`): each in its own process group and, on Linux, killed by the kernel
//! when we die ([`isolate`]); the whole group killed at the end, normal or not
//! ([`kill_group`]), so a background child it started (one holding stderr open, say) goes too.
//! One that left the group (`setsid`) is caught on Linux by making us a child subreaper
//! ([`become_subreaper`]): orphans of our workers become our children, and
//! [`kill_inherited`] ends them when a case ends.
//!
//! Also the one bounded runner of the parent's own external commands (`nvidia-smi` for the
//! system context, the device list and telemetry): [`output_bounded`] runs one to its end
//! under a time limit and a byte cap, [`LineStream`] reads a long-running one line by line
//! under a line cap, each line with the time it arrived, then an `ended` event; neither
//! can hang the run or fill its memory, and a failure comes back as a reason, never a panic.
//!
//! Must not: know what the child runs, or read a worker's output.
use std::io::{BufRead, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Own process group (so killing the group kills everything the child started), and on
/// Linux die with the parent (so Ctrl-C or a kill of this process leaves no child behind).
#[cfg(unix)]
pub fn isolate(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    unsafe {
        // SAFETY: prctl is async-signal-safe and touches only the child's own state.
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

#[cfg(not(unix))]
pub fn isolate(_cmd: &mut Command) {}

/// SIGKILL the process group of a child started with [`isolate`] (its id is the child's pid).
#[cfg(unix)]
pub fn kill_group(pid: u32) {
    // SAFETY: plain syscall; the group id is the child's pid (process_group(0)).
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}

#[cfg(not(unix))]
pub fn kill_group(_pid: u32) {}

/// Make this process the reaper of its descendants' orphans (Linux; elsewhere nothing).
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl on our own process, no pointers.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
}

/// Children of ours that [`kill_inherited`] leaves alone: the parent's own helpers (the
/// telemetry sampler's `nvidia-smi`), registered by [`spare`] while they run.
static SPARED: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Keep `pid` (a helper the parent started itself) out of [`kill_inherited`] until
/// [`unspare`].
pub fn spare(pid: u32) {
    if let Ok(mut s) = SPARED.lock() {
        s.push(pid as i32);
    }
}

/// Undo [`spare`] (the helper is about to be killed and reaped by its owner).
pub fn unspare(pid: u32) {
    if let Ok(mut s) = SPARED.lock() {
        s.retain(|p| *p != pid as i32);
    }
}

/// SIGKILL and reap every child of ours still alive but the [`spare`]d ones: once a worker
/// has ended, those are orphans it left in a session of their own. Returns how many.
#[cfg(target_os = "linux")]
pub fn kill_inherited() -> usize {
    let me = std::process::id().to_string();
    let spared = SPARED.lock().map(|s| s.clone()).unwrap_or_default();
    let mut killed = 0;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        if rest.split_whitespace().nth(1) == Some(me.as_str()) && !spared.contains(&pid) {
            // SAFETY: plain syscalls on a child of ours.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            killed += 1;
        }
    }
    killed
}

#[cfg(not(target_os = "linux"))]
pub fn kill_inherited() -> usize {
    0
}

/// Why a bounded command gave no output: not installed, or it failed (in words).
#[derive(Debug, Clone, PartialEq)]
pub enum Bounded {
    /// The program is not on `PATH` (nothing to report: the machine lacks it).
    NotFound,
    /// It ran and failed: timed out, printed too much, a line without end, a bad status.
    Failed(String),
}

impl std::fmt::Display for Bounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bounded::NotFound => write!(f, "not installed (not on PATH)"),
            Bounded::Failed(why) => write!(f, "{why}"),
        }
    }
}

/// Start `cmd` with stdin closed, stdout piped, stderr discarded, in a group of its own that
/// dies with us, spared by [`kill_inherited`] while it runs.
fn spawn_helper(cmd: &mut Command) -> Result<std::process::Child, Bounded> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    isolate(cmd);
    let child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Bounded::NotFound,
        _ => Bounded::Failed(format!("could not be run: {e}")),
    })?;
    spare(child.id());
    Ok(child)
}

/// Kill a helper of [`spawn_helper`] with its group, reap it, and stop sparing it.
fn end_helper(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let status = match child.try_wait() {
        Ok(Some(s)) => Some(s),
        _ => {
            kill_group(child.id());
            let _ = child.kill();
            child.wait().ok()
        }
    };
    unspare(child.id());
    status
}

/// Run `cmd` to its end and return its standard output; killed (with everything it
/// started) when it runs past `limit` or prints more than `max_bytes`, and then, as on a
/// failing status, `Err` says why.
pub fn output_bounded(mut cmd: Command, limit: Duration, max_bytes: usize) -> Result<String, Bounded> {
    let start = Instant::now();
    let mut child = spawn_helper(&mut cmd)?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = stdout.take(max_bytes as u64 + 1).read_to_end(&mut buf);
        let _ = tx.send(r.map(|_| buf));
    });
    let fail = |child: &mut std::process::Child, why: String| {
        end_helper(child);
        Err(Bounded::Failed(why))
    };
    let out = match rx.recv_timeout(limit.saturating_sub(start.elapsed())) {
        Ok(Ok(buf)) if buf.len() > max_bytes => {
            return fail(&mut child, format!("printed more than {max_bytes} bytes"));
        }
        Ok(Ok(buf)) => buf,
        Ok(Err(e)) => return fail(&mut child, format!("its output could not be read: {e}")),
        Err(_) => return fail(&mut child, format!("gave no answer within {} s", limit.as_secs_f64())),
    };
    // Its output is closed; it should exit now.
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(5)),
            _ => return fail(&mut child, format!("did not exit within {} s", limit.as_secs_f64())),
        }
    };
    unspare(child.id());
    if !status.success() {
        return Err(Bounded::Failed(format!("ended with {status}")));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// What a [`LineStream`] hands over: a line with the time it arrived, or the end of the
/// stream (the command exited, or broke the line cap) with why.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Line(Instant, String),
    Ended(Instant, String),
}

/// Lines a [`LineStream`] holds for its reader before the command has to wait.
const STREAM_BACKLOG: usize = 4096;

/// A long-running command read line by line (`nvidia-smi -lms`): a thread of ours reads
/// each line (at most `max_line_bytes`; a longer one ends the stream) and queues it with the
/// time it arrived. Dropping it kills the command and everything it started.
pub struct LineStream {
    child: std::process::Child,
    rx: mpsc::Receiver<StreamEvent>,
    ended: bool,
}

impl LineStream {
    /// Start `cmd`; `Err` when it cannot be started.
    pub fn start(mut cmd: Command, max_line_bytes: usize) -> Result<LineStream, Bounded> {
        let mut child = spawn_helper(&mut cmd)?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::sync_channel(STREAM_BACKLOG);
        std::thread::spawn(move || {
            let mut reader = std::io::BufReader::new(stdout);
            let mut lines = 0usize;
            let why = loop {
                let mut buf = Vec::new();
                match (&mut reader)
                    .take(max_line_bytes as u64 + 1)
                    .read_until(b'\n', &mut buf)
                {
                    Ok(0) => break format!("it ended after {lines} line(s)"),
                    Ok(_) if buf.last() != Some(&b'\n') && buf.len() > max_line_bytes => {
                        break format!("a line longer than {max_line_bytes} bytes after {lines} line(s)")
                    }
                    Ok(_) => {
                        lines += 1;
                        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                        if tx.send(StreamEvent::Line(Instant::now(), line)).is_err() {
                            return;
                        }
                    }
                    Err(e) => break format!("its output could not be read after {lines} line(s): {e}"),
                }
            };
            // Dropping the reader closes the pipe: a command still writing gets SIGPIPE.
            drop(reader);
            let _ = tx.send(StreamEvent::Ended(Instant::now(), why));
        });
        Ok(LineStream {
            child,
            rx,
            ended: false,
        })
    }

    /// The next event, waiting at most `wait`; `None` when there is none yet, or the
    /// stream has ended and its `Ended` was handed over.
    pub fn next(&mut self, wait: Duration) -> Option<StreamEvent> {
        if self.ended {
            return None;
        }
        let e = self.rx.recv_timeout(wait).ok()?;
        if let StreamEvent::Ended(at, why) = e {
            self.ended = true;
            // Give the command a moment to exit, so its status can be told.
            let until = Instant::now() + Duration::from_millis(200);
            let status = loop {
                match self.child.try_wait() {
                    Ok(Some(s)) => break Some(s),
                    Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                    _ => break None,
                }
            };
            let why = match status {
                Some(s) => format!("{why} ({s})"),
                None => why,
            };
            return Some(StreamEvent::Ended(at, why));
        }
        Some(e)
    }
}

impl Drop for LineStream {
    fn drop(&mut self) {
        end_helper(&mut self.child);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_bounded_command_that_hangs_or_floods_or_fails_says_why() {
        let t = Instant::now();
        let hang = output_bounded(sh("sleep 30"), Duration::from_millis(300), 1 << 20);
        assert_eq!(hang, Err(Bounded::Failed("gave no answer within 0.3 s".into())));
        assert!(t.elapsed() < Duration::from_secs(5));
        // A background child holding the pipe open goes with the group.
        let held = output_bounded(sh("echo hi; sleep 30 & sleep 30"), Duration::from_millis(300), 100);
        assert!(matches!(held, Err(Bounded::Failed(w)) if w.starts_with("gave no answer")));
        let flood = output_bounded(sh("yes"), Duration::from_secs(10), 4096);
        assert_eq!(flood, Err(Bounded::Failed("printed more than 4096 bytes".into())));
        let bad = output_bounded(sh("echo x; exit 9"), Duration::from_secs(10), 4096);
        assert!(matches!(bad, Err(Bounded::Failed(w)) if w.contains("exit status: 9")));
        assert_eq!(
            output_bounded(sh("echo ok"), Duration::from_secs(10), 4096),
            Ok("ok\n".into())
        );
        let none = output_bounded(Command::new("/nonexistent/wan-vae-bench-x"), Duration::from_secs(1), 1);
        assert_eq!(none, Err(Bounded::NotFound));
    }

    #[test]
    fn a_stream_hands_over_timed_lines_then_why_it_ended() {
        let before = Instant::now();
        let mut s = LineStream::start(sh("echo a; echo b"), 100).unwrap();
        let mut got = Vec::new();
        while let Some(e) = s.next(Duration::from_secs(5)) {
            got.push(e);
        }
        assert!(matches!(&got[0], StreamEvent::Line(t, l) if l == "a" && *t >= before));
        assert!(matches!(&got[1], StreamEvent::Line(_, l) if l == "b"));
        assert!(
            matches!(&got[2], StreamEvent::Ended(_, w) if w.starts_with("it ended after 2 line(s)")),
            "{got:?}"
        );
        // A line without end stops the reading at the cap.
        let mut s = LineStream::start(sh("echo ok; exec cat /dev/zero"), 1000).unwrap();
        assert!(matches!(s.next(Duration::from_secs(5)), Some(StreamEvent::Line(_, l)) if l == "ok"));
        let e = s.next(Duration::from_secs(5));
        assert!(
            matches!(&e, Some(StreamEvent::Ended(_, w)) if w.starts_with("a line longer than 1000 bytes after 1 line(s)")),
            "{e:?}"
        );
    }
}
