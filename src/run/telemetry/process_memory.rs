//! The worker process's device memory as the NVIDIA driver reports it, sampled by the parent
//! while the worker runs its passes: NVML (`libnvidia-ml.so.1`, opened at run time, so the
//! tool needs no NVIDIA library to start), `nvmlDeviceGetComputeRunningProcesses_v3` on every
//! GPU, the worker's entries summed, every [`INTERVAL_MS`]; the peak of the readings taken
//! during an `encode` or `decode` phase (warmups included) becomes the case's
//! `device_process_peak` ([`crate::report::DeviceProcessPeak`]). One metric for every engine
//! (candle's allocator returns memory, torch's keeps it: a reading after the case says
//! neither's peak).
//!
//! Must not: know what an engine allocates, or read anything but NVML.
use std::ffi::c_void;
use std::sync::mpsc;
use std::time::Duration;

use crate::report::DeviceProcessPeak;

/// How often the worker's device memory is read, milliseconds.
pub const INTERVAL_MS: u64 = 10;

const SOURCE: &str = "NVML per-process used memory (nvmlDeviceGetComputeRunningProcesses_v3, summed over the GPUs), \
                      sampled by the parent during the encode and decode passes";

/// NVML's `nvmlProcessInfo_t` (as `_v3` fills it).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct ProcessInfo {
    pid: u32,
    used_gpu_memory: u64,
    gpu_instance_id: u32,
    compute_instance_id: u32,
}

/// `NVML_VALUE_NOT_AVAILABLE` in an `unsigned long long`.
const NOT_AVAILABLE: u64 = u64::MAX;
const NVML_SUCCESS: u32 = 0;
const NVML_ERROR_INSUFFICIENT_SIZE: u32 = 7;

type Device = *mut c_void;

/// The NVML entry points the sampler calls.
struct Nvml {
    count: unsafe extern "C" fn(*mut u32) -> u32,
    handle: unsafe extern "C" fn(u32, *mut Device) -> u32,
    processes: unsafe extern "C" fn(Device, *mut u32, *mut ProcessInfo) -> u32,
}

// SAFETY: NVML's functions are thread-safe; the struct holds only function pointers.
unsafe impl Send for Nvml {}

impl Nvml {
    /// Open `libnvidia-ml.so.1` and initialize it, or say why not.
    fn open() -> Result<Nvml, String> {
        #[cfg(unix)]
        {
            let name = c"libnvidia-ml.so.1";
            // SAFETY: a NUL-terminated name; the library stays loaded for the process.
            let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if lib.is_null() {
                return Err("libnvidia-ml.so.1 (NVML, part of the NVIDIA driver) could not be loaded".into());
            }
            let sym = |n: &std::ffi::CStr| -> Result<*mut c_void, String> {
                // SAFETY: a live handle and a NUL-terminated name.
                let p = unsafe { libc::dlsym(lib, n.as_ptr()) };
                if p.is_null() {
                    return Err(format!("NVML has no {}", n.to_string_lossy()));
                }
                Ok(p)
            };
            // SAFETY: the symbols have these C signatures (nvml.h).
            unsafe {
                let init: unsafe extern "C" fn() -> u32 = std::mem::transmute(sym(c"nvmlInit_v2")?);
                let nvml = Nvml {
                    count: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut u32) -> u32>(sym(
                        c"nvmlDeviceGetCount_v2",
                    )?),
                    handle: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(u32, *mut Device) -> u32>(sym(
                        c"nvmlDeviceGetHandleByIndex_v2",
                    )?),
                    processes: std::mem::transmute::<
                        *mut c_void,
                        unsafe extern "C" fn(Device, *mut u32, *mut ProcessInfo) -> u32,
                    >(sym(c"nvmlDeviceGetComputeRunningProcesses_v3")?),
                };
                let rc = init();
                if rc != NVML_SUCCESS {
                    return Err(format!("nvmlInit_v2 failed: {}", nvml_error(rc)));
                }
                Ok(nvml)
            }
        }
        #[cfg(not(unix))]
        Err("NVML is read on Linux only".into())
    }

    /// The device memory `pid` uses over every GPU, bytes; `None` when no GPU lists it.
    fn used_by(&self, pid: u32, buf: &mut Vec<ProcessInfo>) -> Option<u64> {
        let mut n = 0;
        // SAFETY: NVML writes the count.
        if unsafe { (self.count)(&mut n) } != NVML_SUCCESS {
            return None;
        }
        let mut entries = Vec::new();
        for i in 0..n {
            let mut dev: Device = std::ptr::null_mut();
            // SAFETY: NVML writes the handle of device i < count.
            if unsafe { (self.handle)(i, &mut dev) } != NVML_SUCCESS {
                continue;
            }
            for _ in 0..2 {
                if buf.len() < 64 {
                    buf.resize(64, ProcessInfo::default());
                }
                let mut count = buf.len() as u32;
                // SAFETY: buf holds `count` entries; NVML fills at most that many.
                let rc = unsafe { (self.processes)(dev, &mut count, buf.as_mut_ptr()) };
                if rc == NVML_ERROR_INSUFFICIENT_SIZE {
                    buf.resize(count as usize + 16, ProcessInfo::default());
                    continue;
                }
                if rc == NVML_SUCCESS {
                    entries.extend(
                        buf[..(count as usize).min(buf.len())]
                            .iter()
                            .map(|p| (p.pid, p.used_gpu_memory)),
                    );
                }
                break;
            }
        }
        used_by(&entries, pid)
    }
}

/// An NVML return code as nvml.h names it (the common ones), with its number.
fn nvml_error(rc: u32) -> String {
    let name = match rc {
        3 => "NVML_ERROR_NOT_SUPPORTED",
        4 => "NVML_ERROR_NO_PERMISSION",
        9 => "NVML_ERROR_DRIVER_NOT_LOADED (no NVIDIA driver running)",
        12 => "NVML_ERROR_LIBRARY_NOT_FOUND",
        _ => "NVML error",
    };
    format!("{name} ({rc})")
}

/// The memory of `pid` among NVML's `(pid, used bytes)` entries, summed (a process on
/// several GPUs); entries NVML cannot size are left out; `None` when none is left.
fn used_by(entries: &[(u32, u64)], pid: u32) -> Option<u64> {
    let mine: Vec<u64> = entries
        .iter()
        .filter(|(p, used)| *p == pid && *used != NOT_AVAILABLE)
        .map(|(_, used)| *used)
        .collect();
    (!mine.is_empty()).then(|| mine.iter().sum())
}

/// The peak over the readings taken during pass phases.
#[derive(Debug, Default)]
struct PeakTracker {
    in_pass: bool,
    peak: Option<u64>,
    samples: u64,
}

impl PeakTracker {
    /// The worker entered `phase`.
    fn phase(&mut self, phase: &str) {
        self.in_pass = phase.starts_with("encode") || phase.starts_with("decode");
    }

    /// A reading (`None`: the driver listed no memory for the process).
    fn reading(&mut self, used: Option<u64>) {
        if !self.in_pass {
            return;
        }
        self.samples += 1;
        if let Some(u) = used {
            self.peak = Some(self.peak.map_or(u, |p| p.max(u)));
        }
    }

    fn finish(self, error: Option<String>) -> DeviceProcessPeak {
        let error = error.or_else(|| match (self.peak, self.samples) {
            (Some(_), _) => None,
            (None, 0) => Some("no reading was taken during a pass".into()),
            (None, _) => Some("NVML listed no device memory for the worker's process (another PID namespace?)".into()),
        });
        DeviceProcessPeak {
            peak_bytes: self.peak,
            samples: self.samples,
            interval_ms: INTERVAL_MS,
            source: SOURCE.into(),
            error,
        }
    }
}

enum Msg {
    Phase(String),
    Stop,
}

/// A sampler of one worker process during one case.
pub struct ProcessMemory {
    tx: mpsc::Sender<Msg>,
    handle: std::thread::JoinHandle<DeviceProcessPeak>,
}

impl ProcessMemory {
    /// Start sampling process `pid`; `Err` says why it cannot be (the case records it).
    pub fn start(pid: u32) -> Result<ProcessMemory, String> {
        let nvml = Nvml::open()?;
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("nvml-process-memory".into())
            .spawn(move || {
                let mut tracker = PeakTracker::default();
                let mut buf = Vec::new();
                loop {
                    match rx.recv_timeout(Duration::from_millis(INTERVAL_MS)) {
                        Ok(Msg::Phase(p)) => {
                            // The end of the phase before, then the start of this one.
                            tracker.reading(nvml.used_by(pid, &mut buf));
                            tracker.phase(&p);
                            tracker.reading(nvml.used_by(pid, &mut buf));
                        }
                        Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        Err(mpsc::RecvTimeoutError::Timeout) => tracker.reading(nvml.used_by(pid, &mut buf)),
                    }
                }
                tracker.finish(None)
            })
            .map_err(|e| format!("cannot start the NVML sampler thread: {e}"))?;
        Ok(ProcessMemory { tx, handle })
    }

    /// The worker entered `phase`.
    pub fn phase(&self, phase: &str) {
        let _ = self.tx.send(Msg::Phase(phase.to_string()));
    }

    /// Stop and give the peak.
    pub fn finish(self) -> DeviceProcessPeak {
        let _ = self.tx.send(Msg::Stop);
        self.handle
            .join()
            .unwrap_or_else(|_| PeakTracker::default().finish(Some("the NVML sampler thread failed".into())))
    }

    /// Why there is no peak: the record of a case whose sampler could not start.
    pub fn unavailable(why: String) -> DeviceProcessPeak {
        PeakTracker::default().finish(Some(why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_is_the_largest_reading_taken_during_a_pass() {
        let mut t = PeakTracker::default();
        t.phase("load");
        t.reading(Some(50 << 30)); // loading's transient: not a pass
        t.phase("encode warmup 1/1");
        t.reading(Some(3 << 30));
        t.reading(Some(7 << 30));
        t.phase("decode run 1/3");
        t.reading(None);
        t.reading(Some(5 << 30));
        t.phase("outputs");
        t.reading(Some(9 << 30));
        let p = t.finish(None);
        assert_eq!((p.peak_bytes, p.samples, p.error), (Some(7 << 30), 4, None));
        assert_eq!(p.interval_ms, INTERVAL_MS);
    }

    #[test]
    fn no_reading_or_no_memory_listed_says_why() {
        let p = PeakTracker::default().finish(None);
        assert!(p.peak_bytes.is_none() && p.error.unwrap().contains("no reading"));
        let mut t = PeakTracker::default();
        t.phase("decode 1/1");
        t.reading(None);
        let p = t.finish(None);
        assert!(
            p.error.unwrap().contains("listed no device memory"),
            "one sample, no memory"
        );
        assert_eq!(
            nvml_error(9),
            "NVML_ERROR_DRIVER_NOT_LOADED (no NVIDIA driver running) (9)"
        );
        let p = ProcessMemory::unavailable("libnvidia-ml.so.1 could not be loaded".into());
        assert_eq!(p.error.as_deref(), Some("libnvidia-ml.so.1 could not be loaded"));
    }

    #[test]
    fn a_process_memory_is_its_entries_summed_without_unsized_ones() {
        let entries = [(10, 1 << 30), (11, 5), (10, 2 << 30), (10, NOT_AVAILABLE)];
        assert_eq!(used_by(&entries, 10), Some(3 << 30));
        assert_eq!(used_by(&entries, 11), Some(5));
        assert_eq!(used_by(&entries, 12), None);
        assert_eq!(used_by(&[(12, NOT_AVAILABLE)], 12), None);
    }

    #[test]
    fn the_struct_is_nvmls() {
        // nvml.h's nvmlProcessInfo_t: unsigned int, unsigned long long, unsigned int, unsigned int.
        assert_eq!(std::mem::size_of::<ProcessInfo>(), 24);
        assert_eq!(std::mem::offset_of!(ProcessInfo, used_gpu_memory), 8);
    }
}
