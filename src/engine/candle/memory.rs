//! Memory a worker process used: peak resident memory (Linux `/proc/self/status`, else
//! `getrusage`) and the device memory it holds on NVIDIA GPUs (through [`crate::machine::system::nvidia_smi`], the one
//! place that runs `nvidia-smi`).
//!
//! Must not: measure time or know about cases.

/// Peak resident memory of this process, bytes: VmHWM in `/proc/self/status`, else (no
/// `/proc`, e.g. macOS) `getrusage`'s `ru_maxrss`; `None` when neither can be read.
pub fn peak_rss_bytes() -> Option<u64> {
    vmhwm_bytes().or_else(rusage_max_rss_bytes)
}

/// Start a new peak: the memory the allocator kept from freed blocks goes back to the system
/// first ([`release_freed_memory`]), then Linux resets VmHWM to the current resident size
/// when `5` is written to `/proc/self/clear_refs` (a worker that runs several cases reports
/// each case's own peak: what it holds at its start, the kept model, plus its passes'
/// growth). Elsewhere nothing happens, and the peak stays the process's.
pub fn reset_peak_rss() {
    release_freed_memory();
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// glibc's steady state, fixed from the start: the mmap threshold at 32 MiB (the most its
/// dynamic threshold reaches, once a process has freed large blocks) and the trim threshold
/// at twice that, as glibc sets them together. A fresh worker then places its allocations as
/// a worker that ran earlier cases does, so a case's peak memory does not depend on what ran
/// before it in the process (a case after a model rebuild measured 7% more without it).
/// Called once, at the worker's start.
pub fn steady_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Give freed memory back to the system (glibc's `malloc_trim`: every arena, also the free
/// pages inside the heap), so an earlier case's freed buffers are no longer resident.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only releases free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn vmhwm_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `ru_maxrss` of this process in bytes: macOS reports bytes, Linux and the BSDs KiB. It is
/// kept across `execve`, so it can also be the peak of the forked parent before the exec
/// (the parent's size at the spawn, when that was larger than the worker ever got).
#[cfg(unix)]
fn rusage_max_rss_bytes() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole `rusage` into the pointer it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialized (zeroed, then filled by a successful getrusage).
    let raw = u64::try_from(unsafe { usage.assume_init() }.ru_maxrss).ok()?;
    let bytes = if cfg!(target_vendor = "apple") { raw } else { raw * 1024 };
    (bytes > 0).then_some(bytes)
}

#[cfg(not(unix))]
fn rusage_max_rss_bytes() -> Option<u64> {
    None
}

/// Device memory this process holds on NVIDIA GPUs, bytes; `None` without `nvidia-smi` or
/// when the process holds none.
pub fn cuda_memory_used_bytes() -> Option<u64> {
    let text =
        crate::machine::system::nvidia_smi(&["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])?;
    let pid = std::process::id().to_string();
    let mib: u64 = text
        .lines()
        .filter_map(|l| l.split_once(','))
        .filter(|(p, _)| p.trim() == pid)
        .filter_map(|(_, m)| m.trim().parse::<u64>().ok())
        .sum();
    (mib > 0).then_some(mib * 1024 * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn vmhwm_is_read() {
        assert!(super::peak_rss_bytes().unwrap() > 1024 * 1024);
    }

    /// The fallback where `/proc` is missing counts the same peak as VmHWM (both KiB on
    /// Linux), or more: it also keeps the peak from before this process's `execve`.
    #[test]
    #[cfg(target_os = "linux")]
    fn rusage_is_at_least_vmhwm() {
        let hwm = super::vmhwm_bytes().unwrap();
        let rusage = super::rusage_max_rss_bytes().unwrap();
        assert!(rusage > 1024 * 1024, "{rusage}");
        // VmHWM read first: anything touched since only raises ru_maxrss.
        assert!(rusage >= hwm, "ru_maxrss {rusage} < VmHWM {hwm}: wrong unit?");
    }
}
