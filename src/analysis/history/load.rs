//! What `history` makes of a busy newest run (issue 63, item 4), by `compare`'s rule
//! (`crate::analysis::compare::load`): a series whose newest run alone makes it a regression
//! (a level of that one run, or a short series' last two reports), in a case that ran busy
//! (`outcome.load`), is put down to load only when its reference measured in the same report
//! under the same conditions slowed too: the workload's default, or for the default its A/A
//! control, whose newest run is slower than its earlier runs beyond the threshold, the series'
//! own slow-down at most `1 + threshold` times the reference's. Such a series is no regression
//! (`verdict.load`; exit 0) and the text says the newest run was busy and to rerun; any other
//! slow-down stays a regression, exit 1, with the busy run noted beside it
//! (`verdict.newest_busy`).
//!
//! Must not: refit a series or judge one without its newest report's record.
use std::collections::BTreeMap;

use serde::Serialize;

use super::Series;
use crate::report::Report;

/// Why a series' newest run is not a regression: it ran busy and its reference slowed alike.
#[derive(Debug, Clone, Serialize)]
pub struct PutDownToLoad {
    /// The reference's case id (the workload's default, or the default's A/A control).
    pub reference: String,
    /// `newest / earlier - 1` of the reference's runs (earlier: the median of its up to five
    /// runs before).
    pub reference_slower: f64,
    /// The same of this series.
    pub slower: f64,
    /// What made the run busy (`outcome.load.busy_why`).
    pub busy_why: Option<String>,
}

/// A series' key: machine, model, pass and case id.
type Key = (String, String, &'static str, String);

/// How many earlier runs make a series' earlier level here.
const EARLIER_RUNS: usize = 5;

/// `newest / earlier - 1`: the newest run's median against the median of the runs before it
/// (at most [`EARLIER_RUNS`]); `None` with a single run.
fn newest_slower(s: &Series) -> Option<f64> {
    let (newest, before) = s.points.split_last()?;
    let earlier: Vec<f64> = before.iter().rev().take(EARLIER_RUNS).map(|p| p.median_s).collect();
    if earlier.is_empty() {
        return None;
    }
    Some(newest.median_s / crate::util::stats::median(&earlier) - 1.0)
}

/// Mark the series a busy newest run explains (module docs) and those whose newest run was
/// busy; returns how many were put down to load.
pub fn attribute(series: &mut [Series], reports: &[Report], threshold: f64) -> usize {
    // Each series' newest report and its slow-down there, by (machine, model, pass, case).
    let newest: BTreeMap<Key, (usize, Option<f64>)> = series
        .iter()
        .filter_map(|s| {
            let p = s.points.last()?;
            let key = (s.machine.clone(), s.model.clone(), s.pass, s.case_id.clone());
            Some((key, (p.report, newest_slower(s))))
        })
        .collect();
    let mut explained = 0;
    for s in series.iter_mut() {
        let Some(ri) = s.points.last().map(|p| p.report) else {
            continue;
        };
        let Some(report) = reports.get(ri) else {
            continue;
        };
        let Some(record) = report.cases.iter().find(|c| c.id == s.case_id) else {
            continue;
        };
        let Some(load) = record.outcome.load.as_ref().filter(|l| l.busy) else {
            continue;
        };
        s.verdict.newest_busy = true;
        let v = &s.verdict;
        // Only a slow-down the newest run alone makes: a level held by more runs than the
        // busy one is not explained by its load.
        let by_newest_alone = v.last_two.as_ref().is_some_and(|l| l.regression) || (v.regression && v.newest_runs == 1);
        if !v.regressed() || !by_newest_alone {
            continue;
        }
        let Some(slower) = newest_slower(s) else {
            continue;
        };
        let Some(reference) = crate::analysis::compare::load::reference_id(record, report) else {
            continue;
        };
        let key = (s.machine.clone(), s.model.clone(), s.pass, reference.clone());
        let Some(&(rri, Some(reference_slower))) = newest.get(&key) else {
            continue;
        };
        if rri == ri && reference_slower > threshold && 1.0 + slower <= (1.0 + reference_slower) * (1.0 + threshold) {
            s.verdict.load = Some(PutDownToLoad {
                reference,
                reference_slower,
                slower,
                busy_why: load.busy_why.clone(),
            });
            explained += 1;
        }
    }
    explained
}

/// The line for each report of the history's newest runs that ran busy.
pub fn busy_lines(series: &[Series], reports: &[Report], paths: &[String]) -> Vec<String> {
    let mut newest: Vec<usize> = series
        .iter()
        .filter(|s| s.verdict.newest_busy)
        .filter_map(|s| s.points.last().map(|p| p.report))
        .collect();
    newest.sort_unstable();
    newest.dedup();
    newest
        .into_iter()
        .filter_map(|ri| {
            let name = paths.get(ri).map_or("?".to_string(), |p| super::file_name(p));
            crate::report::load::busy_line(reports.get(ri)?, &format!("the newest run's report {name}"))
        })
        .collect()
}
