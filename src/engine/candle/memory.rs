//! Memory a worker process used: peak resident memory (Linux `/proc/self/status`) and the
//! device memory it holds on NVIDIA GPUs (through [`crate::system::nvidia_smi`], the one
//! place that runs `nvidia-smi`).
//!
//! Must not: measure time or know about cases.

/// Peak resident memory of this process (VmHWM in `/proc/self/status`), bytes; `None`
/// where there is no `/proc` (macOS) or it cannot be read.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Device memory this process holds on NVIDIA GPUs, bytes; `None` without `nvidia-smi` or
/// when the process holds none.
pub fn cuda_memory_used_bytes() -> Option<u64> {
    let text = crate::system::nvidia_smi(&["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])?;
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
}
