//! Whether this CPU computes bf16 in hardware (issue 67, item 2): x86's `avx512_bf16` or
//! `amx_bf16` in `/proc/cpuinfo`'s flags (read through [`sysfs_root`], so a test can present
//! a CPU without them). Without either, PyTorch's CPU kernels (oneDNN) convert every bf16
//! operand in software: on this project's AVX2-only VM a torch bf16 case of 5 frames at
//! 64x64 ran for over 8 minutes where fp32 takes seconds (docs/results.md), and torch's and
//! diffusers' bf16 cases of the peer matrix waited out the 600 s timeout (issue 67).
//!
//! Must not: decide what a run does; it states the CPU's fact (`plan::check` warns from it).
use super::sysfs::{read_trimmed, sysfs_root};

/// The CPU flags that give PyTorch native bf16 arithmetic.
pub const NATIVE_BF16_FLAGS: [&str; 2] = ["avx512_bf16", "amx_bf16"];

/// What this CPU's flags say of bf16.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuBf16 {
    /// One of [`NATIVE_BF16_FLAGS`] (named).
    Native(String),
    /// An x86 CPU without them: bf16 is emulated.
    Emulated,
    /// Not known (no x86 flags line: another architecture, or no `/proc`).
    Unknown,
}

/// [`CpuBf16`] of this machine, from the first `flags` line of `/proc/cpuinfo`.
pub fn cpu_bf16() -> CpuBf16 {
    match read_trimmed(&sysfs_root().join("proc/cpuinfo")) {
        Some(text) => of_cpuinfo(&text),
        None => CpuBf16::Unknown,
    }
}

/// [`CpuBf16`] of a `/proc/cpuinfo` text.
pub fn of_cpuinfo(text: &str) -> CpuBf16 {
    let Some(flags) = text.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "flags").then_some(value)
    }) else {
        return CpuBf16::Unknown;
    };
    let flags: Vec<&str> = flags.split_whitespace().collect();
    match NATIVE_BF16_FLAGS.iter().find(|f| flags.contains(f)) {
        Some(f) => CpuBf16::Native(f.to_string()),
        None => CpuBf16::Emulated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_line_decides() {
        let zen4 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n";
        assert_eq!(of_cpuinfo(zen4), CpuBf16::Native("avx512_bf16".into()));
        let spr = "flags : avx512f amx_bf16 amx_tile\n";
        assert_eq!(of_cpuinfo(spr), CpuBf16::Native("amx_bf16".into()));
        assert_eq!(of_cpuinfo("flags : fpu avx2 fma avx512f\n"), CpuBf16::Emulated);
        assert_eq!(of_cpuinfo("Features : fp asimd bf16\n"), CpuBf16::Unknown);
    }
}
