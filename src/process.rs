//! Child processes we start and must not leave behind (the workers of `run`, the Python
//! worker of `validate`): each in its own process group and, on Linux, killed by the kernel
//! when we die ([`isolate`]); the whole group killed at the end, normal or not
//! ([`kill_group`]), so a background child it started (one holding stderr open, say) goes too.
//! One that left the group (`setsid`) is caught on Linux by making us a child subreaper
//! ([`become_subreaper`]): orphans of our workers become our children, and
//! [`kill_inherited`] ends them when a case ends.
//!
//! Must not: know what the child runs, or read its output.
use std::process::Command;

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
