//! Where the device's state is read from, one [`Source`] per kind of device, each handing
//! over observations with the time they were taken, or that it ended ([`Observation`]):
//! - an AMD GPU (`cuda:N` with amdgpu cards): its DRM device folder in sysfs, read through
//!   `WAN_VAE_BENCH_SYSFS_ROOT` (`pp_dpm_sclk`'s `*` line, `pp_od_clk_voltage`,
//!   `gpu_busy_percent`, hwmon `temp*_input` and `power1_average`/`power1_input`,
//!   `mem_info_vram_used`/`mem_info_gtt_used`), read when asked;
//! - an NVIDIA GPU: `nvidia-smi --query-gpu=... -lms INTERVAL` kept running for the case
//!   (a `process::LineStream`: each line once, with the time it arrived, lines capped at
//!   [`MAX_LINE_BYTES`]; a fake `nvidia-smi` on `PATH` in the tests), until it ends;
//! - the CPU: the cores' current frequency (`/proc/cpuinfo`), the maximum (cpufreq's
//!   `cpuinfo_max_freq`) and the package temperature (hwmon `k10temp`, `coretemp`,
//!   `zenpower`), under the same root.
//!
//! Which GPU `cuda:N` is comes from `devices`.
//!
//! Must not: decide what a sample means (the sampler and the report do), or hand over a
//! reading twice.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::devices::{Target, WorkerEnv};

/// One reading of the device; `None` where a quantity is unknown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub clock_mhz: Option<f64>,
    pub temp_c: Option<f64>,
    pub power_w: Option<f64>,
    pub busy_pct: Option<f64>,
    pub vram_used_bytes: Option<u64>,
    pub gtt_used_bytes: Option<u64>,
    /// Active throttle reasons, by name (NVIDIA).
    pub reasons: Vec<String>,
}

/// What a source hands over: a reading and when it was taken, or that it ended (no
/// reading will follow) and why.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    At(Instant, Reading),
    Ended(Instant, String),
}

/// A device whose state can be read.
pub trait Source: Send {
    /// Where the readings come from, for the report.
    fn describe(&self) -> String;
    /// The clock's maximum, MHz, when known.
    fn clock_max_mhz(&mut self) -> Option<f64>;
    /// The observations since the last call (a source read on demand reads now; a stream
    /// hands over what it received), waiting at most `wait` for one of a stream.
    fn observe(&mut self, wait: Duration) -> Vec<Observation>;
    /// The quantities this source cannot give, and why.
    fn unavailable(&self) -> BTreeMap<String, String>;
}

/// The source for the worker's `device` in the worker's environment `env`, or why there
/// is none.
pub fn for_device(device: &str, env: &WorkerEnv, interval_ms: u64) -> Result<Box<dyn Source>, String> {
    match super::devices::resolve(device, env)? {
        Target::Cpu => Cpu::open(&crate::machine::sysfs::sysfs_root()).map(|s| Box::new(s) as Box<dyn Source>),
        Target::Amd(dir) => Ok(Box::new(Amd { dir })),
        Target::Nvidia(index) => Nvidia::start(index, interval_ms)
            .map(|s| Box::new(s) as Box<dyn Source>)
            .map_err(|why| format!("no GPU telemetry for {device}: {why}")),
    }
}

fn read(path: &Path) -> Option<String> {
    crate::machine::sysfs::read_trimmed(path)
}

fn number(path: &Path) -> Option<f64> {
    read(path)?.parse().ok()
}

/// `pp_dpm_sclk`-style levels (`1: 2900Mhz *`): (MHz of the `*` line, highest level).
fn dpm_levels(text: &str) -> (Option<f64>, Option<f64>) {
    let mut current = None;
    let mut max: Option<f64> = None;
    for line in text.lines() {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let mhz = rest
            .split_whitespace()
            .next()
            .map(|w| w.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
            .and_then(|w| w.parse::<f64>().ok());
        if let Some(m) = mhz {
            max = Some(max.map_or(m, |x: f64| x.max(m)));
            if line.trim_end().ends_with('*') {
                current = Some(m);
            }
        }
    }
    (current, max)
}

/// The hwmon folders under `dir/hwmon`, with their `name`.
fn hwmons(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(String, PathBuf)> = entries
        .flatten()
        .map(|e| (read(&e.path().join("name")).unwrap_or_default(), e.path()))
        .collect();
    v.sort_by(|a, b| a.1.cmp(&b.1));
    v
}

/// The hottest `temp*_input` of a hwmon folder, °C.
fn hottest(hwmon: &Path) -> Option<f64> {
    let entries = std::fs::read_dir(hwmon).ok()?;
    entries
        .flatten()
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.starts_with("temp") && n.ends_with("_input")
        })
        .filter_map(|e| number(&e.path()))
        .map(|milli| milli / 1000.0)
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.max(t))))
}

/// An AMD GPU through amdgpu's sysfs files.
struct Amd {
    dir: PathBuf,
}

impl Source for Amd {
    fn describe(&self) -> String {
        format!("amdgpu sysfs ({})", self.dir.display())
    }

    fn clock_max_mhz(&mut self) -> Option<f64> {
        // Its `OD_SCLK:` section (up to the next `NAME:` header): the user's clock cap.
        let od = read(&self.dir.join("pp_od_clk_voltage")).and_then(|t| {
            let section = t.split("OD_SCLK:").nth(1)?;
            let levels: Vec<&str> = section.lines().take_while(|l| !l.trim_end().ends_with(':')).collect();
            dpm_levels(&levels.join("\n")).1
        });
        od.or_else(|| read(&self.dir.join("pp_dpm_sclk")).and_then(|t| dpm_levels(&t).1))
    }

    fn observe(&mut self, _wait: Duration) -> Vec<Observation> {
        let taken = Instant::now();
        let hwmon = hwmons(&self.dir.join("hwmon")).into_iter().next().map(|(_, p)| p);
        let power = hwmon
            .as_ref()
            .and_then(|h| number(&h.join("power1_average")).or_else(|| number(&h.join("power1_input"))));
        let reading = Reading {
            clock_mhz: read(&self.dir.join("pp_dpm_sclk")).and_then(|t| dpm_levels(&t).0),
            temp_c: hwmon.as_deref().and_then(hottest),
            power_w: power.map(|uw| uw / 1e6),
            busy_pct: number(&self.dir.join("gpu_busy_percent")),
            vram_used_bytes: number(&self.dir.join("mem_info_vram_used")).map(|b| b as u64),
            gtt_used_bytes: number(&self.dir.join("mem_info_gtt_used")).map(|b| b as u64),
            reasons: Vec::new(),
        };
        vec![Observation::At(taken, reading)]
    }

    fn unavailable(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(
            "throttle_reasons".to_string(),
            "amdgpu's sysfs reports none; the clock rule alone marks throttling".to_string(),
        )])
    }
}

/// NVIDIA's throttle reasons (NVML `nvmlClocksEventReasons`), and whether each is a thermal
/// or power limit.
const NVIDIA_REASONS: [(u64, &str, bool); 9] = [
    (0x1, "gpu_idle", false),
    (0x2, "applications_clocks_setting", false),
    (0x4, "sw_power_cap", true),
    (0x8, "hw_slowdown", true),
    (0x10, "sync_boost", false),
    (0x20, "sw_thermal_slowdown", true),
    (0x40, "hw_thermal_slowdown", true),
    (0x80, "hw_power_brake_slowdown", true),
    (0x100, "display_clock_setting", false),
];

/// Whether a reason's name is a thermal or power limit.
pub fn is_thermal_or_power(reason: &str) -> bool {
    NVIDIA_REASONS.iter().any(|(_, n, limit)| *limit && *n == reason)
}

/// Whether a limit is the hardware's own slowdown (NVML: the clock cut by half or more),
/// rather than the driver's software scaling (`sw_power_cap`, `sw_thermal_slowdown`), which
/// a datacenter card at full load touches while it keeps its clock near the maximum.
pub fn is_hardware_slowdown(reason: &str) -> bool {
    is_thermal_or_power(reason) && reason.starts_with("hw_")
}

/// The query `nvidia-smi` answers, in this order.
const NVIDIA_QUERY: &str =
    "clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,clocks_throttle_reasons.active";

/// The longest line read from `nvidia-smi -lms` (one is about 60 bytes): a longer one ends
/// the stream rather than fill the memory.
pub const MAX_LINE_BYTES: usize = 4096;

/// How long a new `nvidia-smi -lms` may take to print its first reading.
const FIRST_LINE: Duration = Duration::from_secs(3);

/// An NVIDIA GPU through a running `nvidia-smi -lms`: each line it prints is one
/// observation, at the time it arrived; once it ends, none follows.
struct Nvidia {
    index: usize,
    stream: crate::util::process::LineStream,
    max_mhz: Option<f64>,
    /// Observations received but not handed over yet (the first reading, at start).
    pending: Vec<Observation>,
    /// Lines that were not a reading.
    unparsed: usize,
}

impl Nvidia {
    fn start(index: usize, interval_ms: u64) -> Result<Nvidia, String> {
        let mut cmd = std::process::Command::new("nvidia-smi");
        cmd.arg(format!("--query-gpu={NVIDIA_QUERY}"))
            .args(["--format=csv,noheader,nounits", "-i", &index.to_string()])
            .args(["-lms", &interval_ms.max(1).to_string()]);
        let stream = crate::util::process::LineStream::start(cmd, MAX_LINE_BYTES)
            .map_err(|e| format!("nvidia-smi could not be run: {e}"))?;
        let mut s = Nvidia {
            index,
            stream,
            max_mhz: None,
            pending: Vec::new(),
            unparsed: 0,
        };
        // A driver that is not loaded makes nvidia-smi exit at once: no source, and why.
        let until = Instant::now() + FIRST_LINE;
        while !s.pending.iter().any(|o| matches!(o, Observation::At(..))) {
            if let Some(Observation::Ended(_, why)) = s.pending.last() {
                return Err(format!("nvidia-smi gave no reading of GPU {index}: {why}"));
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "nvidia-smi gave no reading of GPU {index} within {} s",
                    FIRST_LINE.as_secs()
                ));
            }
            s.receive(left);
        }
        Ok(s)
    }

    /// Take what the stream holds into `pending`, waiting at most `wait` for the first.
    fn receive(&mut self, wait: Duration) {
        let mut wait = wait;
        while let Some(event) = self.stream.next(wait) {
            wait = Duration::ZERO;
            match event {
                crate::util::process::StreamEvent::Line(at, line) => match parse_nvidia(&line) {
                    Some((reading, max)) => {
                        self.max_mhz = max.or(self.max_mhz);
                        self.pending.push(Observation::At(at, reading));
                    }
                    None => self.unparsed += 1,
                },
                crate::util::process::StreamEvent::Ended(at, why) => {
                    self.pending.push(Observation::Ended(at, format!("nvidia-smi: {why}")));
                }
            }
        }
    }
}

/// One line of [`NVIDIA_QUERY`]: the reading and the maximum clock.
fn parse_nvidia(line: &str) -> Option<(Reading, Option<f64>)> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() < 6 {
        return None;
    }
    let num = |s: &str| s.parse::<f64>().ok();
    let mask = u64::from_str_radix(f[5].trim_start_matches("0x"), 16).ok();
    let reasons = mask
        .map(|m| {
            NVIDIA_REASONS
                .iter()
                .filter(|(bit, _, _)| m & bit != 0)
                .map(|(_, n, _)| n.to_string())
                .collect()
        })
        .unwrap_or_default();
    let reading = Reading {
        clock_mhz: num(f[0]),
        temp_c: num(f[2]),
        power_w: num(f[3]),
        busy_pct: num(f[4]),
        reasons,
        ..Default::default()
    };
    Some((reading, num(f[1])))
}

impl Source for Nvidia {
    fn describe(&self) -> String {
        format!("nvidia-smi (GPU {})", self.index)
    }

    fn clock_max_mhz(&mut self) -> Option<f64> {
        self.max_mhz
    }

    fn observe(&mut self, wait: Duration) -> Vec<Observation> {
        self.receive(if self.pending.is_empty() { wait } else { Duration::ZERO });
        std::mem::take(&mut self.pending)
    }

    fn unavailable(&self) -> BTreeMap<String, String> {
        let mut why = BTreeMap::from([(
            "vram_gtt".to_string(),
            "per-process device memory comes from torch (device_peak_*_bytes)".to_string(),
        )]);
        if self.unparsed > 0 {
            why.insert(
                "unparsed".to_string(),
                format!("{} line(s) of nvidia-smi were not a reading", self.unparsed),
            );
        }
        why
    }
}

/// The CPU: current frequency of its cores, maximum, package temperature.
struct Cpu {
    root: PathBuf,
    max_mhz: Option<f64>,
    hwmon: Option<(String, PathBuf)>,
}

/// hwmon drivers that report a CPU package temperature.
const CPU_HWMONS: [&str; 4] = ["k10temp", "coretemp", "zenpower", "cpu_thermal"];

impl Cpu {
    fn open(root: &Path) -> Result<Cpu, String> {
        let cpuinfo = root.join("proc/cpuinfo");
        if cpu_mhz(&cpuinfo).is_none() {
            return Err(format!("no `cpu MHz` lines in {}", cpuinfo.display()));
        }
        let max_mhz =
            number(&root.join("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")).map(|khz| khz / 1000.0);
        let hwmon = hwmons(&root.join("sys/class/hwmon"))
            .into_iter()
            .find(|(n, _)| CPU_HWMONS.contains(&n.as_str()));
        Ok(Cpu {
            root: root.to_path_buf(),
            max_mhz,
            hwmon,
        })
    }
}

/// The fastest core's `cpu MHz` in `/proc/cpuinfo`: the busy cores' clock (idle ones park
/// low, and would drag a mean under the single-core maximum it is compared with).
fn cpu_mhz(path: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .filter(|l| l.starts_with("cpu MHz"))
        .filter_map(|l| l.split_once(':')?.1.trim().parse::<f64>().ok())
        .reduce(f64::max)
}

impl Source for Cpu {
    fn describe(&self) -> String {
        let temp = self
            .hwmon
            .as_ref()
            .map_or(String::new(), |(n, _)| format!(", hwmon {n}"));
        format!("cpu (/proc/cpuinfo, fastest core{temp})")
    }

    fn clock_max_mhz(&mut self) -> Option<f64> {
        self.max_mhz
    }

    fn observe(&mut self, _wait: Duration) -> Vec<Observation> {
        let taken = Instant::now();
        let reading = Reading {
            clock_mhz: cpu_mhz(&self.root.join("proc/cpuinfo")),
            temp_c: self.hwmon.as_ref().and_then(|(_, p)| hottest(p)),
            ..Default::default()
        };
        vec![Observation::At(taken, reading)]
    }

    fn unavailable(&self) -> BTreeMap<String, String> {
        let mut why = BTreeMap::from([
            ("power".to_string(), "not read on the CPU".to_string()),
            ("busy".to_string(), "not read on the CPU".to_string()),
        ]);
        if self.max_mhz.is_none() {
            why.insert(
                "clock_max".to_string(),
                "no cpufreq cpuinfo_max_freq (a VM, or no cpufreq driver): clock fractions unknown".to_string(),
            );
        }
        if self.hwmon.is_none() {
            why.insert(
                "temperature".to_string(),
                format!("no hwmon named {} in /sys/class/hwmon", CPU_HWMONS.join(", ")),
            );
        }
        why
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpm_levels_give_the_current_and_the_highest() {
        let t = "0: 600Mhz\n1: 1800Mhz *\n2: 2900Mhz\n";
        assert_eq!(dpm_levels(t), (Some(1800.0), Some(2900.0)));
        assert_eq!(dpm_levels("garbage"), (None, None));
    }

    #[test]
    fn nvidia_lines_are_parsed_with_their_reasons() {
        let (r, max) = parse_nvidia("1410, 1980, 71, 350.5, 99, 0x0000000000000044").unwrap();
        assert_eq!(
            (r.clock_mhz, max, r.temp_c, r.power_w, r.busy_pct),
            (Some(1410.0), Some(1980.0), Some(71.0), Some(350.5), Some(99.0))
        );
        assert_eq!(r.reasons, ["sw_power_cap", "hw_thermal_slowdown"]);
        assert!(r.reasons.iter().all(|n| is_thermal_or_power(n)));
        assert!(parse_nvidia("1410, 1980").is_none());
    }

    /// Issue 47: on APUs `power1_average` can fail with EINVAL (lm-sensors #144 shows
    /// `grep: /sys/class/hwmon/hwmon0/power1_average: Invalid argument` on an amdgpu hwmon);
    /// the reading then takes `power1_input`. A folder at the name fails the read the same way.
    #[test]
    fn an_unreadable_power1_average_falls_back_to_power1_input() {
        let dir = tempfile::tempdir().unwrap();
        let hwmon = dir.path().join("hwmon/hwmon0");
        std::fs::create_dir_all(hwmon.join("power1_average")).unwrap();
        std::fs::write(hwmon.join("name"), "amdgpu\n").unwrap();
        std::fs::write(hwmon.join("power1_input"), "14000000\n").unwrap();
        std::fs::write(hwmon.join("temp1_input"), "28000\n").unwrap();
        let mut amd = Amd {
            dir: dir.path().to_path_buf(),
        };
        let got = amd.observe(Duration::ZERO);
        let Some(Observation::At(_, r)) = got.first() else {
            panic!("one reading")
        };
        assert_eq!((r.power_w, r.temp_c), (Some(14.0), Some(28.0)));
    }
}
