//! How much memory this process may still use, as the kernel says (`/proc/meminfo`,
//! `/proc/self/status`, `RLIMIT_AS`): the bound on what the tool reads or allocates at once.
//!
//! Must not: hold the machine's other facts (that is `crate::machine::system`).

/// A `KEY:  N kB` field of a `/proc` file (`/proc/meminfo`, `/proc/self/status`), in bytes.
pub fn proc_kib_field(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(1024)
}

/// How much more memory this process can allocate and use, as far as the kernel says: the
/// smaller of `MemAvailable` (`/proc/meminfo`) and, under an address-space limit (`ulimit
/// -v`, `RLIMIT_AS`), what the limit leaves above the current `VmSize`; in bytes, with a
/// phrase saying which it is. `None` when neither is known (not Linux).
pub fn memory_headroom() -> Option<(u64, &'static str)> {
    let available = proc_kib_field("/proc/meminfo", "MemAvailable:")
        .map(|b| (b, "of memory available (MemAvailable in /proc/meminfo)"));
    let limit = address_space_limit().map(|lim| {
        let used = proc_kib_field("/proc/self/status", "VmSize:").unwrap_or(0);
        (
            lim.saturating_sub(used),
            "of address space left under this process's limit (ulimit -v)",
        )
    });
    match (available, limit) {
        (Some(a), Some(l)) => Some(if l.0 < a.0 { l } else { a }),
        (a, l) => a.or(l),
    }
}

/// `RLIMIT_AS` in bytes, when it is set.
#[cfg(unix)]
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not on every Unix
fn address_space_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur as u64)
}

#[cfg(not(unix))]
fn address_space_limit() -> Option<u64> {
    None
}
