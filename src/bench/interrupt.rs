//! SIGINT and SIGTERM during `run`: the first one only sets a flag (signal-hook), which the
//! executor's wait loop and the scheduler check, so the run stops its worker, finalizes the
//! report, removes its scratch folder and its lock, and exits with 128 + the signal number.
//! A second signal of the same kind ends the process at once.
//!
//! Must not: do anything else in the handler (setting an atomic is all that is safe there).
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Install the handlers (once per process; later calls do nothing).
pub fn install() -> anyhow::Result<()> {
    if RECEIVED.get().is_some() {
        return Ok(());
    }
    let received = Arc::new(AtomicUsize::new(0));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first, so the second signal (flag already set) terminates.
        let seen = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&seen))?;
        signal_hook::flag::register(sig, seen)?;
        signal_hook::flag::register_usize(sig, Arc::clone(&received), sig as usize)?;
    }
    let _ = RECEIVED.set(received);
    Ok(())
}

/// The signal received, if any.
pub fn received() -> Option<i32> {
    let n = RECEIVED.get()?.load(Ordering::SeqCst);
    (n != 0).then_some(n as i32)
}

/// `SIGINT`, `SIGTERM` or `signal N`.
pub fn name(sig: i32) -> String {
    match sig {
        signal_hook::consts::SIGINT => "SIGINT".into(),
        signal_hook::consts::SIGTERM => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}
