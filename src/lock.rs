//! Who owns what on disk: [`ProcessMark`] (a process id plus its start time, so a reused
//! pid is not mistaken for the owner) and [`OutputLock`], the exclusive `<output>.lock`
//! beside a report that `run` and `merge` hold while they write it. The lock file is
//! created with `O_EXCL` and holds the owner's mark; a lock whose owner is gone is stale
//! and taken over; the lock is removed when dropped (also after SIGINT/SIGTERM, which
//! `run` turns into a normal return).
//!
//! Must not: write the output itself (that is `files`).
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::UserError;

/// A process: pid and, on Linux, its start time in clock ticks since boot
/// (`/proc/PID/stat` field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessMark {
    pub pid: u32,
    pub start: Option<u64>,
}

impl ProcessMark {
    /// This process.
    pub fn me() -> ProcessMark {
        let pid = std::process::id();
        ProcessMark {
            pid,
            start: start_time(pid),
        }
    }

    /// `PID START` (or `PID -` when the start time is unknown).
    pub fn to_text(self) -> String {
        match self.start {
            Some(s) => format!("{} {s}\n", self.pid),
            None => format!("{} -\n", self.pid),
        }
    }

    /// Parse [`ProcessMark::to_text`]; `None` when it is not one.
    pub fn parse(text: &str) -> Option<ProcessMark> {
        let mut parts = text.split_whitespace();
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next().and_then(|s| s.parse().ok());
        Some(ProcessMark { pid, start })
    }

    /// Whether the process still runs (and is the same process, when the start time is known).
    pub fn is_alive(self) -> bool {
        if !pid_exists(self.pid) {
            return false;
        }
        match (self.start, start_time(self.pid)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }
}

#[cfg(unix)]
fn pid_exists(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn pid_exists(_pid: u32) -> bool {
    true
}

/// Start time of `pid` in clock ticks after boot (Linux), `None` elsewhere or when gone.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// An exclusive lock on an output file, released (the lock file removed) on drop.
#[derive(Debug)]
pub struct OutputLock {
    path: PathBuf,
}

impl OutputLock {
    /// `<output>.lock`.
    pub fn path_for(output: &Path) -> PathBuf {
        let mut name = output.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        output.with_file_name(name)
    }

    /// Take the lock on `output`, or fail at once naming the output and the holder's pid.
    /// The output's folder must exist (see `files::check_output`).
    pub fn acquire(output: &Path) -> Result<OutputLock, UserError> {
        let path = Self::path_for(output);
        for _ in 0..3 {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    f.write_all(ProcessMark::me().to_text().as_bytes())
                        .map_err(|e| UserError::file(&path, format!("cannot write the lock file: {e}")))?;
                    return Ok(OutputLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    match ProcessMark::parse(&text) {
                        Some(holder) if holder.is_alive() => {
                            return Err(UserError::file(
                                output,
                                format!(
                                    "is being written by another process (pid {}; lock file {}); \
                                     wait for it, or choose another output",
                                    holder.pid,
                                    path.display()
                                ),
                            ))
                        }
                        // Empty text: the holder may be between create and write; look again.
                        None if text.is_empty() => std::thread::sleep(std::time::Duration::from_millis(50)),
                        // A dead holder (or garbage): the lock is stale.
                        _ => {
                            let _ = std::fs::remove_file(&path);
                        }
                    }
                }
                Err(e) => return Err(UserError::file(&path, format!("cannot create the lock file: {e}"))),
            }
        }
        Err(UserError::file(
            &path,
            "cannot take the lock (it keeps reappearing); remove the file if no run is writing this output",
        ))
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        // Remove only our own lock (a stale-lock takeover by another process replaces it).
        let ours = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| ProcessMark::parse(&t))
            .is_some_and(|m| m.pid == std::process::id());
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_round_trip_and_detect_the_living() {
        let me = ProcessMark::me();
        assert_eq!(ProcessMark::parse(&me.to_text()), Some(me));
        assert!(me.is_alive());
        if me.start.is_some() {
            let reused = ProcessMark {
                start: me.start.map(|s| s + 1),
                ..me
            };
            assert!(!reused.is_alive(), "same pid, other start time: not us");
        }
        assert!(ProcessMark::parse("garbage").is_none());
    }

    #[test]
    fn second_lock_fails_naming_the_holder_and_stale_locks_are_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let lock = OutputLock::acquire(&out).unwrap();
        let e = OutputLock::acquire(&out).unwrap_err().to_string();
        assert!(
            e.contains(&format!("pid {}", std::process::id())) && e.contains("r.json"),
            "{e}"
        );
        drop(lock);
        assert!(!OutputLock::path_for(&out).exists());
        // A lock left by a process that is gone.
        std::fs::write(OutputLock::path_for(&out), "999999999 1\n").unwrap();
        let lock = OutputLock::acquire(&out).unwrap();
        drop(lock);
        assert!(!OutputLock::path_for(&out).exists());
    }
}
