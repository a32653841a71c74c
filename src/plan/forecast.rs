//! How long a plan's cases will take, forecast before they run (issue 67, item 4): `run
//! --list`'s forecast column and total, and the run's warning of a case forecast past its
//! timeout. A forecast is the case's GFLOP as the model computes it
//! ([`crate::model::flops::computed_gflop`], tiles' overlap included) over the warmup and
//! timed passes, divided by a rate **measured on this machine**: the median GFLOP/s of the
//! `ok` untiled cases of the same engine, precision, device and pass in the newest reports
//! of this machine ([`crate::machine::identity::same_machine`]) in `results/` (where `run`
//! writes by default) and the folder of `-o`'s file. Why earlier reports and not a calibration pass:
//! they are the same workload on the same engine (a calibration would time another, and
//! cost seconds to minutes every `--list`), they cost a file read, and a machine without
//! any simply says so ("no rate measured yet") instead of guessing. The rate of one size
//! carries to another only roughly (small clips run at a lower rate), the workers' start
//! and model loads are not in it, and a rate measured under load is slower: a forecast is
//! labelled as one, printed, and never written into a report or an export.
//!
//! Must not: time anything, or write a forecast anywhere but the terminal.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::machine::system::SystemInfo;
use crate::model::Config;
use crate::report::settings::CaseSettings;
use crate::report::{CaseStatus, Report};

/// The newest report files read for rates (by name: `run` names them by UTC time).
pub const MAX_REPORTS: usize = 50;

/// Measured rates: GFLOP/s by (engine, precision, device, pass), and where they come from.
#[derive(Debug, Default)]
pub struct Rates {
    by: BTreeMap<(String, String, String, &'static str), f64>,
    /// The folders read.
    pub folders: Vec<PathBuf>,
    /// How many of their reports were of this machine.
    pub reports: usize,
}

/// The folders a run's reports are in: `results/` (where `run` writes by default), and the
/// `-o` file's folder when it is another.
pub fn folders(output: Option<&Path>) -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("results")];
    if let Some(p) = output.and_then(Path::parent) {
        let p = if p.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            p.to_path_buf()
        };
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        if !same(&p, &v[0]) {
            v.push(p);
        }
    }
    v
}

impl Rates {
    /// The rates of this machine (`this`) in the newest [`MAX_REPORTS`] `*.json` files of
    /// `folders`; files that are not reports are passed over.
    pub fn read(folders: &[PathBuf], this: &SystemInfo) -> Rates {
        let mut rates = Rates {
            folders: folders.to_vec(),
            ..Default::default()
        };
        let mut files: Vec<PathBuf> = folders
            .iter()
            .filter_map(|f| std::fs::read_dir(f).ok())
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .collect();
        // Newest first by name (`run` names them by UTC time), whichever folder holds them.
        files.sort_by_key(|p| p.file_name().map(|n| n.to_os_string()));
        let mut samples: BTreeMap<(String, String, String, &'static str), Vec<f64>> = BTreeMap::new();
        for path in files.iter().rev().take(MAX_REPORTS) {
            let Ok(report) = Report::load(path) else {
                continue;
            };
            let mut of_this = false;
            for case in &report.cases {
                let system = case.system.as_ref().unwrap_or(&report.system);
                let device = case.run.as_ref().unwrap_or(&report.run).device.clone();
                let s = &case.settings;
                if case.outcome.status != CaseStatus::Ok
                    || s.tiling.is_some()
                    || s.temporal_tile.is_some()
                    || !crate::machine::identity::same_machine(system, this)
                {
                    continue;
                }
                of_this = true;
                for (pass, stats) in [("encode", &case.outcome.encode), ("decode", &case.outcome.decode)] {
                    if let Some(p) = stats
                        .as_ref()
                        .filter(|p| p.gflop_per_s > 0.0 && p.gflop_per_s.is_finite())
                    {
                        samples.entry(key(s, &device, pass)).or_default().push(p.gflop_per_s);
                    }
                }
            }
            rates.reports += usize::from(of_this);
        }
        rates.by = samples
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k, crate::util::stats::median(&v)))
            .collect();
        rates
    }

    /// The measured GFLOP/s of `s`'s engine and precision on `device` for `pass`.
    fn rate(&self, s: &CaseSettings, device: &str, pass: &'static str) -> Option<f64> {
        self.by.get(&key(s, device, pass)).copied()
    }

    /// Seconds of the passes of a case with `s` on `device` (`warmup + runs` of each), or
    /// `None` when a pass it runs has no measured rate.
    pub fn forecast(&self, cfg: &Config, s: &CaseSettings, device: &str, passes: usize) -> Option<f64> {
        let (e, d) = gflop(cfg, s);
        let mut total = 0.0;
        for (pass, runs, g) in [("encode", s.passes.encodes(), e), ("decode", s.passes.decodes(), d)] {
            if runs {
                total += g / self.rate(s, device, pass)?;
            }
        }
        Some(total * passes as f64)
    }

    /// Where the rates come from, for the forecast's line.
    pub fn source(&self) -> String {
        format!(
            "the GFLOP/s of {} of this machine in {}",
            crate::util::format::count(self.reports, "earlier report"),
            self.places()
        )
    }

    /// The folders read, as the lines name them: `results/`, or `results/ and runs/`.
    pub fn places(&self) -> String {
        let names: Vec<String> = self
            .folders
            .iter()
            .map(|f| format!("{}/", f.display().to_string().trim_end_matches('/')))
            .collect();
        names.join(" and ")
    }
}

/// The rate key: engine, precision, device, pass.
fn key(s: &CaseSettings, device: &str, pass: &'static str) -> (String, String, String, &'static str) {
    (
        s.engine.name().to_string(),
        s.precision.name().to_string(),
        device.trim().to_ascii_lowercase(),
        pass,
    )
}

/// `(encode, decode)` GFLOP of one pass of a case as the model computes it.
pub fn gflop(cfg: &Config, s: &CaseSettings) -> (f64, f64) {
    crate::model::flops::computed_gflop(
        cfg,
        s.passes.encodes(),
        s.passes.decodes(),
        s.frames,
        s.width,
        s.height,
        s.tiling,
        s.temporal_tile,
    )
}

/// A duration as people read it: `0.8 s`, `45 s`, `3 min 12 s`, `14 h 20 min`, `3 d 2 h`.
pub fn duration(s: f64) -> String {
    if !s.is_finite() {
        return "-".into();
    }
    let whole = s.round() as u64;
    match whole {
        _ if s < 10.0 => format!("{s:.1} s"),
        0..=59 => format!("{whole} s"),
        60..=3599 => two(whole / 60, "min", whole % 60, "s"),
        3600..=86_399 => two(whole / 3600, "h", (whole % 3600) / 60, "min"),
        _ => two(whole / 86_400, "d", (whole % 86_400) / 3600, "h"),
    }
}

/// `3 min 12 s`, or `10 min` when the second unit is 0.
fn two(a: u64, unit_a: &str, b: u64, unit_b: &str) -> String {
    if b == 0 {
        format!("{a} {unit_a}")
    } else {
        format!("{a} {unit_a} {b} {unit_b}")
    }
}

/// The run's warning, printed before the first case: the cases whose forecast is past the
/// timeout, named (a few) with their forecast; `None` when none is, or nothing is measured.
pub fn past_timeout(
    rates: &Rates,
    cfg: &Config,
    cases: &[(String, CaseSettings)],
    device: &str,
    passes: usize,
    timeout_s: f64,
) -> Option<String> {
    let over: Vec<String> = cases
        .iter()
        .filter_map(|(id, s)| {
            let f = rates.forecast(cfg, s, device, passes)?;
            (f > timeout_s).then(|| format!("{id} ({})", duration(f)))
        })
        .collect();
    (!over.is_empty()).then(|| {
        format!(
            "warning: {} forecast past the timeout of {}: {}; raise --timeout, or make the case smaller \
             (forecast from {}: not a measurement)",
            crate::util::format::count(over.len(), "case"),
            duration(timeout_s),
            crate::util::format::bounded(&over, ", ", 3),
            rates.source()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(0.84), "0.8 s");
        assert_eq!(duration(45.2), "45 s");
        assert_eq!(duration(192.0), "3 min 12 s");
        assert_eq!(duration(600.0), "10 min");
        assert_eq!(duration(14.0 * 3600.0 + 20.0 * 60.0), "14 h 20 min");
        assert_eq!(duration(3.0 * 86_400.0 + 7200.0), "3 d 2 h");
    }

    #[test]
    fn the_folders_are_the_reports() {
        let results = PathBuf::from("results");
        assert_eq!(folders(None), vec![results.clone()]);
        assert_eq!(folders(Some(Path::new("results/r.json"))), vec![results.clone()]);
        assert_eq!(
            folders(Some(Path::new("r.json"))),
            vec![results.clone(), PathBuf::from(".")]
        );
        assert_eq!(
            folders(Some(Path::new("runs/r.json"))),
            vec![results, PathBuf::from("runs")]
        );
    }
}
