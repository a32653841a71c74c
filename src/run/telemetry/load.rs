//! The machine's load while a case's timed passes run (issue 63, item 4), read by the parent
//! from `/proc` at the start and end of each timed window (the worker's phase markers say
//! when its timed passes begin and end; warmups, loading and saving are left out): the
//! machine's busy and steal jiffies (`/proc/stat`), the worker's CPU time
//! (`/proc/PID/stat`), this process's own, the 1-minute load average (`/proc/loadavg`) and,
//! on the CPU device, the CPUs' clock (cpufreq, else `/proc/cpuinfo`). [`LoadWindows`] adds
//! a case's windows up (all its visits, in a run of rounds) into its
//! [`crate::report::load::CaseLoad`].
//!
//! Must not: run cases, decide what "busy" means (`report::load` does) or change what a
//! worker measures (nothing here touches the worker).
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::report::load::CaseLoad;

/// The machine-wide CPU times of `/proc/stat`'s `cpu` line, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq (guest time is inside user).
    pub busy: u64,
    /// Every field but guest and guest_nice (counted inside user and nice).
    pub total: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Parse `/proc/stat`'s text: its first `cpu ` line.
    pub fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        if v.len() < 4 {
            return None;
        }
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal guest guest_nice
        let busy = at(0) + at(1) + at(2) + at(5) + at(6);
        let total = (0..8).map(at).sum();
        Some(CpuTimes {
            busy,
            total,
            steal: at(7),
        })
    }
}

/// A process's CPU time from its `/proc/PID/stat` text: utime + stime + the CPU time of
/// the children it waited for (cutime + cstime), clock ticks.
pub fn process_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces and parentheses: fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3, so field n is f[n - 3]: utime 14 .. cstime 17.
    let ticks = |n: usize| f.get(n - 3)?.parse::<i64>().ok();
    let sum = ticks(14)? + ticks(15)? + ticks(16)?.max(0) + ticks(17)?.max(0);
    u64::try_from(sum).ok()
}

/// One reading of the machine at a window's start or end.
#[derive(Debug, Clone)]
pub struct Snapshot {
    at: Instant,
    cpu: CpuTimes,
    /// The worker's CPU ticks; `None` when it could not be read (the process is gone).
    worker: Option<u64>,
    own: u64,
    loadavg_1m: Option<f64>,
    clock_mhz: Option<f64>,
}

/// Reads `/proc` (under a root, for tests) for [`Snapshot`]s.
#[derive(Debug, Clone)]
pub struct LoadMeter {
    root: PathBuf,
    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
    pub ticks_per_s: f64,
    /// Online CPUs.
    pub cpus: usize,
    /// Read the CPUs' clock too (the CPU device: the worker runs on them).
    pub clock: bool,
}

impl LoadMeter {
    /// A meter of this machine; `clock` on the CPU device.
    pub fn new(clock: bool) -> LoadMeter {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        LoadMeter {
            root: PathBuf::from("/"),
            ticks_per_s: if hz > 0 { hz as f64 } else { 100.0 },
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            clock,
        }
    }

    /// A meter reading `root/proc/...` and `root/sys/...` instead of the machine's.
    pub fn with_root(root: &Path, ticks_per_s: f64, cpus: usize, clock: bool) -> LoadMeter {
        LoadMeter {
            root: root.to_path_buf(),
            ticks_per_s,
            cpus,
            clock,
        }
    }

    fn read(&self, path: &str) -> Option<String> {
        crate::machine::sysfs::read_trimmed(&self.root.join(path))
    }

    /// The machine now, with worker `pid`'s CPU time; `None` when `/proc/stat` cannot be
    /// read (not Linux).
    pub fn snapshot(&self, pid: Option<u32>) -> Option<Snapshot> {
        let cpu = CpuTimes::parse(&self.read("proc/stat")?)?;
        let worker = pid.and_then(|p| process_ticks(&self.read(&format!("proc/{p}/stat"))?));
        let own = self.read("proc/self/stat").and_then(|s| process_ticks(&s)).unwrap_or(0);
        let loadavg_1m = self
            .read("proc/loadavg")
            .and_then(|s| s.split_whitespace().next()?.parse().ok());
        let clock_mhz = self.clock.then(|| self.clock_mhz()).flatten();
        Some(Snapshot {
            at: Instant::now(),
            cpu,
            worker,
            own,
            loadavg_1m,
            clock_mhz,
        })
    }

    /// The CPUs' mean current clock, MHz: cpufreq's `scaling_cur_freq` (kHz) where the
    /// kernel has it, else `/proc/cpuinfo`'s `cpu MHz` lines.
    fn clock_mhz(&self) -> Option<f64> {
        let khz: Vec<f64> = (0..self.cpus)
            .filter_map(|i| {
                self.read(&format!("sys/devices/system/cpu/cpu{i}/cpufreq/scaling_cur_freq"))?
                    .parse()
                    .ok()
            })
            .collect();
        if !khz.is_empty() {
            return Some(khz.iter().sum::<f64>() / khz.len() as f64 / 1000.0);
        }
        let mhz: Vec<f64> = self
            .read("proc/cpuinfo")?
            .lines()
            .filter(|l| l.starts_with("cpu MHz"))
            .filter_map(|l| l.split(':').nth(1)?.trim().parse().ok())
            .collect();
        (!mhz.is_empty()).then(|| mhz.iter().sum::<f64>() / mhz.len() as f64)
    }
}

/// A case's timed windows added up.
#[derive(Debug, Clone, Default)]
pub struct LoadWindows {
    window_s: f64,
    busy: u64,
    total: u64,
    steal: u64,
    worker: u64,
    own: u64,
    /// Windows whose worker CPU time could not be read at both ends.
    unread_worker: usize,
    loadavg_max: f64,
    clocks: Vec<f64>,
    windows: usize,
}

impl LoadWindows {
    /// Add the window from `start` to `end` (a later snapshot of the same worker).
    pub fn add(&mut self, start: &Snapshot, end: &Snapshot) {
        let d = |a: u64, b: u64| b.saturating_sub(a);
        self.window_s += end.at.saturating_duration_since(start.at).as_secs_f64();
        self.busy += d(start.cpu.busy, end.cpu.busy);
        self.total += d(start.cpu.total, end.cpu.total);
        self.steal += d(start.cpu.steal, end.cpu.steal);
        match (start.worker, end.worker) {
            (Some(a), Some(b)) => self.worker += d(a, b),
            _ => self.unread_worker += 1,
        }
        self.own += d(start.own, end.own);
        for l in [start.loadavg_1m, end.loadavg_1m].into_iter().flatten() {
            self.loadavg_max = self.loadavg_max.max(l);
        }
        self.clocks
            .extend([start.clock_mhz, end.clock_mhz].into_iter().flatten());
        self.windows += 1;
    }

    /// Add another visit's windows.
    pub fn absorb(&mut self, o: &LoadWindows) {
        self.window_s += o.window_s;
        self.busy += o.busy;
        self.total += o.total;
        self.steal += o.steal;
        self.worker += o.worker;
        self.own += o.own;
        self.unread_worker += o.unread_worker;
        self.loadavg_max = self.loadavg_max.max(o.loadavg_max);
        self.clocks.extend(&o.clocks);
        self.windows += o.windows;
    }

    /// The case's record ([`CaseLoad`], judged busy or not); `None` with no window, or one
    /// too short to say anything (no clock tick passed).
    pub fn record(&self, meter: &LoadMeter) -> Option<CaseLoad> {
        if self.windows == 0 || self.window_s <= 0.0 || self.total == 0 {
            return None;
        }
        let cores = |ticks: u64| ticks as f64 / meter.ticks_per_s / self.window_s;
        let others = self.busy.saturating_sub(self.worker + self.own);
        let mut load = CaseLoad {
            window_s: self.window_s,
            cpus: meter.cpus,
            others_cpu_cores: cores(others),
            worker_cpu_cores: cores(self.worker),
            steal_share: self.steal as f64 / self.total as f64,
            loadavg_1m_max: self.loadavg_max,
            cpu_clock_mean_mhz: (!self.clocks.is_empty())
                .then(|| self.clocks.iter().sum::<f64>() / self.clocks.len() as f64),
            unavailable: (self.unread_worker > 0).then(|| {
                format!(
                    "the worker's CPU time could not be read in {} of {} window(s) (it had ended): the others' \
                     share includes it there",
                    self.unread_worker, self.windows
                )
            }),
            ..CaseLoad::default()
        };
        load.judge();
        Some(load)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_and_pid_stat_parse() {
        let stat = "cpu  100 5 50 1000 10 3 2 40 0 0\ncpu0 50 2 25 500 5 1 1 20 0 0\nintr 1\n";
        assert_eq!(
            CpuTimes::parse(stat),
            Some(CpuTimes {
                busy: 160,
                total: 1210,
                steal: 40
            })
        );
        assert_eq!(CpuTimes::parse("intr 1\n"), None);
        // A command name with spaces and a ')' in it.
        let pid = "4242 (python3 (worker) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 70 30 4 6 20 0 9 0 1 2 3";
        assert_eq!(process_ticks(pid), Some(110));
        assert_eq!(process_ticks("garbage"), None);
    }

    #[test]
    fn windows_add_up_to_the_others_share_and_steal() {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path().join("proc");
        std::fs::create_dir_all(proc.join("7")).unwrap();
        std::fs::create_dir_all(proc.join("self")).unwrap();
        let write = |busy: u64, idle: u64, steal: u64, worker: u64, own: u64| {
            std::fs::write(proc.join("stat"), format!("cpu  {busy} 0 0 {idle} 0 0 0 {steal} 0 0\n")).unwrap();
            std::fs::write(
                proc.join("7/stat"),
                format!("7 (w) S 1 1 1 0 -1 0 0 0 0 0 {worker} 0 0 0\n"),
            )
            .unwrap();
            std::fs::write(
                proc.join("self/stat"),
                format!("9 (p) S 1 1 1 0 -1 0 0 0 0 0 {own} 0 0 0\n"),
            )
            .unwrap();
            std::fs::write(proc.join("loadavg"), "3.50 1.0 0.5 1/100 99\n").unwrap();
        };
        let meter = LoadMeter::with_root(dir.path(), 100.0, 2, false);
        write(1000, 5000, 0, 100, 10);
        let a = meter.snapshot(Some(7)).unwrap();
        // 200 ticks busy: the worker 100, this process 10, others 90; 10 of steal.
        write(1200, 5000, 10, 200, 20);
        let mut b = meter.snapshot(Some(7)).unwrap();
        b.at = a.at + std::time::Duration::from_secs(1);
        let mut w = LoadWindows::default();
        w.add(&a, &b);
        let r = w.record(&meter).unwrap();
        assert!((r.others_cpu_cores - 0.9).abs() < 1e-9, "{r:?}");
        assert!((r.worker_cpu_cores - 1.0).abs() < 1e-9, "{r:?}");
        assert!((r.steal_share - 10.0 / 210.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.loadavg_1m_max, 3.5);
        assert!(r.busy && r.unavailable.is_none(), "{r:?}");
        // A worker gone at the end: its time counts as the others', and the record says so.
        let mut gone = b.clone();
        gone.worker = None;
        let mut w2 = LoadWindows::default();
        w2.add(&a, &gone);
        assert!(w2.record(&meter).unwrap().unavailable.unwrap().contains("1 of 1"));
        assert!(LoadWindows::default().record(&meter).is_none());
    }
}
