//! What the machine was doing while a case's timed passes ran (issue 63, item 4): the
//! record `cases[].outcome.load` ([`CaseLoad`]), the rule that calls a case **busy**
//! ([`CaseLoad::judge`]), and the report-wide list of busy cases that `run`, `compare` and
//! `history` print ([`busy_cases`]). The parent measures it (`run::telemetry::load`), from
//! `/proc`: the other processes' CPU time, the hypervisor's steal time, the load average and,
//! on the CPU device, the clock.
//!
//! Why these and not the load average alone: the load average counts the benchmark's own
//! worker threads (a 2-thread torch pass reads as load 2 on an idle machine) and lags by a
//! minute; the CPU time other processes took inside the timed passes' own windows is what
//! competes with the worker. Steal time is what a hypervisor gave to other guests.
//!
//! Must not: measure anything (the parent's meter does) or decide verdicts beyond "busy".
use serde::{Deserialize, Serialize};

/// A case is busy when other processes used at least this share of the machine's CPUs
/// during its timed passes (pyperf warns about a busy system in the same spirit)...
pub const BUSY_OTHERS_SHARE: f64 = 0.10;
/// ...and at least this many cores' worth (a browser tab on a 64-core machine is not load).
pub const BUSY_OTHERS_MIN_CORES: f64 = 0.25;
/// A case is busy when the hypervisor took at least this share of the CPU time (steal).
pub const BUSY_STEAL_SHARE: f64 = 0.05;

/// The machine's load while one case's timed passes ran (all its visits together, in a run
/// of interleaved rounds).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CaseLoad {
    /// Seconds of timed passes the figures cover (every visit's window, summed).
    pub window_s: f64,
    /// Online CPUs (hardware threads) of the machine.
    pub cpus: usize,
    /// CPU time the other processes of the machine used in the window, in cores (CPU
    /// seconds per second): the machine's busy time less the case's worker process and this
    /// tool's own process.
    pub others_cpu_cores: f64,
    /// CPU time of the case's worker process in the window, in cores.
    pub worker_cpu_cores: f64,
    /// Share of the machine's CPU time the hypervisor gave elsewhere (steal), 0 to 1.
    pub steal_share: f64,
    /// The highest 1-minute load average read at a window's start or end (it counts the
    /// worker's own threads too).
    pub loadavg_1m_max: f64,
    /// The CPUs' mean clock across the window's readings, MHz (the CPU device only, where
    /// the kernel reports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_clock_mean_mhz: Option<f64>,
    /// Whether the machine was busy ([`CaseLoad::judge`]).
    pub busy: bool,
    /// Why it was called busy, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_why: Option<String>,
    /// What could not be measured, and why (the worker ended before its CPU time was read:
    /// the others' share then includes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl CaseLoad {
    /// Set `busy` and `busy_why` from the figures: the others' CPU at least
    /// [`BUSY_OTHERS_SHARE`] of the CPUs and [`BUSY_OTHERS_MIN_CORES`] cores, or steal at
    /// least [`BUSY_STEAL_SHARE`].
    pub fn judge(&mut self) {
        let cpus = self.cpus.max(1) as f64;
        let floor = (BUSY_OTHERS_SHARE * cpus).max(BUSY_OTHERS_MIN_CORES);
        let mut why = Vec::new();
        if self.others_cpu_cores >= floor {
            why.push(format!(
                "other processes used {:.2} of {} CPUs (busy from {floor:.2})",
                self.others_cpu_cores, self.cpus
            ));
        }
        if self.steal_share >= BUSY_STEAL_SHARE {
            why.push(format!(
                "the hypervisor took {:.0}% of the CPU time (steal; busy from {:.0}%)",
                100.0 * self.steal_share,
                100.0 * BUSY_STEAL_SHARE
            ));
        }
        self.busy = !why.is_empty();
        self.busy_why = (!why.is_empty()).then(|| why.join("; "));
    }

    /// `others 1.20 CPUs, steal 0%` (the table's and `compare`'s short form).
    pub fn short(&self) -> String {
        format!(
            "others {:.2} of {} CPUs, steal {:.0}%, load average {:.1}",
            self.others_cpu_cores,
            self.cpus,
            100.0 * self.steal_share,
            self.loadavg_1m_max
        )
    }
}

/// The ids of `cases` whose timed passes ran on a busy machine, in order.
pub fn busy_cases<'a>(cases: impl IntoIterator<Item = &'a crate::report::CaseRecord>) -> Vec<&'a str> {
    cases
        .into_iter()
        .filter(|c| c.outcome.load.as_ref().is_some_and(|l| l.busy))
        .map(|c| c.id.as_str())
        .collect()
}

/// The line a command prints when some of a report's cases ran busy (`None` when none
/// did): how many, which (the first few), and what it means for the figures.
pub fn busy_line(report: &crate::report::Report, label: &str) -> Option<String> {
    let busy = busy_cases(&report.cases);
    if busy.is_empty() {
        return None;
    }
    let why = report
        .cases
        .iter()
        .find_map(|c| {
            c.outcome
                .load
                .as_ref()
                .filter(|l| l.busy)
                .and_then(|l| l.busy_why.clone())
        })
        .unwrap_or_default();
    let ids: Vec<String> = busy.iter().map(|s| s.to_string()).collect();
    Some(format!(
        "{label} ran on a busy machine in {} of {} case(s) ({}; e.g. {why}): their times include that load; \
         rerun on a quiet machine before trusting small differences",
        busy.len(),
        report.cases.len(),
        crate::util::format::bounded(&ids, ", ", 3)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(cpus: usize, others: f64, steal: f64) -> CaseLoad {
        let mut l = CaseLoad {
            window_s: 1.0,
            cpus,
            others_cpu_cores: others,
            steal_share: steal,
            ..Default::default()
        };
        l.judge();
        l
    }

    #[test]
    fn busy_is_a_share_of_the_cpus_with_a_floor_and_steal() {
        // 2 CPUs: the floor is 0.25 cores (10% would be 0.2).
        assert!(!load(2, 0.2, 0.0).busy);
        assert!(load(2, 0.3, 0.0).busy);
        // 32 CPUs: 10% is 3.2 cores; a browser's 1 core is not load.
        assert!(!load(32, 1.0, 0.0).busy);
        assert!(load(32, 4.0, 0.0).busy);
        let stolen = load(2, 0.0, 0.08);
        assert!(
            stolen.busy && stolen.busy_why.as_deref().unwrap().contains("steal"),
            "{stolen:?}"
        );
        assert!(load(2, 0.5, 0.0).busy_why.unwrap().contains("0.50 of 2 CPUs"));
    }
}
