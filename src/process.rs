//! Child processes we start and must not leave behind (the workers of `run`, the Python
//! worker of `validate`): each in its own process group and, on Linux, killed by the kernel
//! when we die ([`isolate`]); the whole group killed at the end, normal or not
//! ([`kill_group`]), so a background child it started (one holding stderr open, say) goes too.
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
