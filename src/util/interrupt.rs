//! SIGINT and SIGTERM during `run` (and SIGHUP, a closed terminal, SIGUSR1 and SIGALRM,
//! [`STOP_SIGNALS`], whose default would end the process and leave its lock): the first
//! one only sets a flag (signal-hook), which the
//! executor's wait loop and the scheduler check, so the run stops its worker, finalizes the
//! report, removes its scratch folder and its lock, and exits with 128 + the signal number.
//! A second signal of the same kind ends the process at once.
//!
//! Before that, during set-up (the output locked, the weights hashed, a FIFO input opened, a
//! hub download), [`guard_setup`] makes SIGINT/SIGTERM remove the output's lock file and
//! exit at once with 128 + the signal number: nothing else exists yet to clean up or keep.
//! `merge` uses the same guard while it holds its output's lock. From [`install`] on (the
//! scratch folder, the worker files), a signal is a flag: the scheduler sees it before the
//! first case, and a run stopped before any case finished leaves an existing report as it
//! was.
//!
//! Must not: do anything else in the handler (setting an atomic is all that is safe there).
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// The signals that stop a run cleanly (each: report finalized, lock and scratch removed,
/// exit 128 + its number).
pub const STOP_SIGNALS: [i32; 5] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
    signal_hook::consts::SIGUSR1,
    signal_hook::consts::SIGALRM,
];

/// Most lock files the set-up guard removes: the report's and the three exports'.
const MAX_SETUP_LOCKS: usize = 4;

/// The lock files (leaked C strings) to remove when a signal comes during set-up; null once
/// [`install`] took over, or unused.
static SETUP_LOCKS: [AtomicPtr<libc::c_char>; MAX_SETUP_LOCKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_SETUP_LOCKS];

/// Disarm the set-up guard (its paths stay leaked: a handler may still be reading one).
fn disarm_setup() {
    for slot in &SETUP_LOCKS {
        slot.store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}
static SETUP_HANDLERS: OnceLock<()> = OnceLock::new();

/// From now until [`install`]: a stop signal removes `locks` (our output locks, already
/// acquired: the report's, and those of its exports; at most [`MAX_SETUP_LOCKS`]) and ends
/// the process with 128 + the signal number. The handler only calls `unlink` and `_exit`,
/// both async-signal-safe.
pub fn guard_setup(locks: &[std::path::PathBuf]) -> anyhow::Result<SetupGuard> {
    use std::os::unix::ffi::OsStrExt;
    anyhow::ensure!(locks.len() <= MAX_SETUP_LOCKS, "at most {MAX_SETUP_LOCKS} output locks");
    for (slot, lock) in SETUP_LOCKS.iter().zip(locks) {
        let c = std::ffi::CString::new(lock.as_os_str().as_bytes())?;
        let old = slot.swap(c.into_raw(), Ordering::SeqCst);
        if !old.is_null() {
            // SAFETY: `old` came from `CString::into_raw` above, and no handler reads it now
            // that it is swapped out (set-up runs once per process; a handler racing this
            // swap would at worst unlink the previous lock path, which is ours too).
            drop(unsafe { std::ffi::CString::from_raw(old) });
        }
    }
    if SETUP_HANDLERS.get().is_none() {
        for sig in STOP_SIGNALS {
            // SAFETY: the action only loads an atomic and calls unlink and _exit.
            unsafe {
                signal_hook::low_level::register(sig, move || {
                    let mut armed = false;
                    for slot in &SETUP_LOCKS {
                        let p = slot.load(Ordering::SeqCst);
                        if !p.is_null() {
                            libc::unlink(p);
                            armed = true;
                        }
                    }
                    if armed {
                        libc::_exit(128 + sig);
                    }
                })?;
            }
        }
        let _ = SETUP_HANDLERS.set(());
    }
    Ok(SetupGuard)
}

/// Disarms [`guard_setup`] when dropped (set-up returned early, e.g. `--list`, or an error).
pub struct SetupGuard;

impl Drop for SetupGuard {
    fn drop(&mut self) {
        disarm_setup();
    }
}

/// Install the handlers (once per process; later calls do nothing).
pub fn install() -> anyhow::Result<()> {
    if RECEIVED.get().is_some() {
        return Ok(());
    }
    let received = Arc::new(AtomicUsize::new(0));
    for sig in STOP_SIGNALS {
        // Registered first, so the second signal (flag already set) terminates.
        let seen = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&seen))?;
        signal_hook::flag::register(sig, seen)?;
        signal_hook::flag::register_usize(sig, Arc::clone(&received), sig as usize)?;
    }
    let _ = RECEIVED.set(received);
    // The run's own handling takes over from the set-up guard.
    disarm_setup();
    Ok(())
}

/// The signal received, if any.
pub fn received() -> Option<i32> {
    let n = RECEIVED.get()?.load(Ordering::SeqCst);
    (n != 0).then_some(n as i32)
}

/// `SIGINT`, `SIGTERM`, `SIGHUP`, ... or `signal N`.
pub fn name(sig: i32) -> String {
    match sig {
        signal_hook::consts::SIGINT => "SIGINT".into(),
        signal_hook::consts::SIGTERM => "SIGTERM".into(),
        signal_hook::consts::SIGHUP => "SIGHUP".into(),
        signal_hook::consts::SIGUSR1 => "SIGUSR1".into(),
        signal_hook::consts::SIGALRM => "SIGALRM".into(),
        n => format!("signal {n}"),
    }
}
