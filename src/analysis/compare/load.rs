//! What `compare` makes of a busy machine (issue 63, item 4): each report's cases that ran
//! busy (`outcome.load`) are named, and a slower pass is put down to load only as far as a
//! reference measured in the same run under the same conditions slowed too: the case's
//! workload default, or for the default its A/A control (`plan::control`), which slowed by
//! as much (the case's ratio at most `1 + threshold` times the reference's), in a case that
//! ran busy. Such a pass is `explained_by_load`: no regression, and the text says the run
//! was busy and to rerun. Any other slow-down stays a regression, exit 1, with the load
//! noted beside it.
//!
//! Must not: print (the renderers do) or change the timing rule (`verdict` owns it).
use std::collections::BTreeMap;

use super::verdict::{Comparison, Verdict};
use crate::report::{CaseRecord, Report};

/// The reference of case `c` in its own report: its control for a workload's default, the
/// default for its control, else its workload's default; `None` when the report has none.
pub(crate) fn reference_id(c: &CaseRecord, report: &Report) -> Option<String> {
    let suffix = crate::plan::control::SUFFIX;
    if c.added_as_control {
        return c.id.strip_suffix(suffix).map(str::to_string);
    }
    let s = &c.settings;
    let members: Vec<&CaseRecord> = report
        .cases
        .iter()
        .filter(|x| {
            let t = &x.settings;
            !x.added_as_control
                && (t.frames, t.width, t.height, t.passes, t.engine)
                    == (s.frames, s.width, s.height, s.passes, s.engine)
        })
        .collect();
    let default = members[crate::engine::defaults::default_index(&members, |x| &x.settings)?];
    Some(if default.id == c.id {
        format!("{}{suffix}", c.id)
    } else {
        default.id.clone()
    })
}

/// The line for each side whose cases ran busy.
pub fn busy_warnings(baseline: &Report, current: &Report) -> Vec<String> {
    [("baseline", baseline), ("current", current)]
        .into_iter()
        .filter_map(|(side, r)| crate::report::load::busy_line(r, &format!("the {side} report")))
        .collect()
}

/// Put down to load the slower passes a busy current run explains (module docs): mark them,
/// clear the cases they alone made regressions, and say what was done.
pub fn attribute(cmp: &mut Comparison, current: &Report) {
    let threshold = cmp.rules.threshold;
    let by_id: BTreeMap<&str, &CaseRecord> = current.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    // Each compared case's ratio per pass, to look its reference's up.
    let ratios: BTreeMap<(String, String), (f64, Verdict)> = cmp
        .cases
        .iter()
        .flat_map(|c| {
            c.passes
                .iter()
                .map(move |p| ((c.id.clone(), p.pass.clone()), (p.ratio, p.verdict)))
        })
        .collect();
    let mut explained = 0;
    for case in &mut cmp.cases {
        let Some(record) = by_id.get(case.id.as_str()) else {
            continue;
        };
        let load = record.outcome.load.as_ref().filter(|l| l.busy);
        let reference = reference_id(record, current);
        for p in case.passes.iter_mut().filter(|p| p.verdict == Verdict::Slower) {
            let Some(load) = load else {
                continue;
            };
            let r = reference
                .as_ref()
                .and_then(|id| ratios.get(&(id.clone(), p.pass.clone())).map(|x| (id, x.0)));
            match r {
                Some((id, ref_ratio)) if ref_ratio > 1.0 + threshold && p.ratio <= ref_ratio * (1.0 + threshold) => {
                    p.explained_by_load = true;
                    case.notes.push(format!(
                        "{}: {:.2}x slower, as its reference {id} ({ref_ratio:.2}x) in the same busy run ({}): the \
                         machine's load, not a regression; rerun on a quiet machine",
                        p.pass,
                        p.ratio,
                        load.short()
                    ));
                }
                Some((id, ref_ratio)) => case.notes.push(format!(
                    "{}: ran on a busy machine ({}), but its reference {id} slowed {ref_ratio:.2}x, not as much: a \
                     regression",
                    p.pass,
                    load.short()
                )),
                None => case.notes.push(format!(
                    "{}: ran on a busy machine ({}), with no reference in its run to tell load from a regression",
                    p.pass,
                    load.short()
                )),
            }
        }
        let slow_left = case
            .passes
            .iter()
            .any(|p| p.verdict == Verdict::Slower && !p.explained_by_load);
        let quality = case.quality.iter().any(|q| q.regression);
        let before = case.regression;
        case.regression = case.status_regression || slow_left || quality;
        if before && !case.regression {
            explained += 1;
        }
    }
    cmp.regressed_cases = cmp.cases.iter().filter(|c| c.regression).count();
    let fatal = cmp.warnings.iter().any(|w| w.starts_with("regression:"));
    cmp.regression = cmp.regressed_cases > 0 || fatal;
    if explained > 0 {
        cmp.warnings.push(format!(
            "the current run was busy: {explained} case(s) slowed as their references did in the same run, put down \
             to the machine's load, not counted as regressions; rerun on a quiet machine to tell"
        ));
    }
}
