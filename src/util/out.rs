//! Writing to stdout and stderr without panicking. `println!` panics when the write fails:
//! a closed pipe (`wan-vae-bench ... | head`) or a full disk. For this tool the reader going
//! away is not a failure of the work: a `run` goes on and keeps its report, and a command
//! that only prints ends normally. [`outln!`](crate::outln), [`out!`](crate::util::out),
//! [`errln!`](crate::errln) and [`err!`](crate::err) write like their `std` namesakes and
//! drop a failed write; the first one is remembered ([`stdout_closed`]).
//!
//! Must not: format anything itself.
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Write `args` to stdout; a failure is remembered, never a panic.
pub fn stdout(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if out.write_fmt(args).and_then(|_| out.flush()).is_err() {
        STDOUT_FAILED.store(true, Ordering::Relaxed);
    }
}

/// Write `args` to stderr; a failure is dropped (there is nowhere left to say it).
pub fn stderr(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Whether a write to stdout failed (the reader went away, or the disk is full).
pub fn stdout_closed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

/// `println!` that never panics.
#[macro_export]
macro_rules! outln {
    () => { $crate::util::out::stdout(format_args!("\n")) };
    ($($t:tt)*) => { $crate::util::out::stdout(format_args!("{}\n", format_args!($($t)*))) };
}

/// `print!` that never panics.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::util::out::stdout(format_args!($($t)*)) };
}

/// `eprintln!` that never panics.
#[macro_export]
macro_rules! errln {
    () => { $crate::util::out::stderr(format_args!("\n")) };
    ($($t:tt)*) => { $crate::util::out::stderr(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprint!` that never panics.
#[macro_export]
macro_rules! err {
    ($($t:tt)*) => { $crate::util::out::stderr(format_args!($($t)*)) };
}
