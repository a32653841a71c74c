//! The A/A control (issue 63, item 2): for each workload and engine whose cases are compared
//! (at least two of them), a second measurement of its default ([`crate::engine::defaults`]),
//! marked `added_as_control` and timed in a worker process of its own. Two measurements of one
//! setting differ only by the machine (its drift, the luck of a process's memory layout): the
//! answer calls no setting faster or slower by less than they differ (`docs/answer.md`).
//! `run --control off` leaves it out.
//!
//! Must not: run anything or judge (the answer reads the control's times).
use std::collections::BTreeMap;

use super::matrix::Case;

/// What a control's id adds to its default's.
pub const SUFFIX: &str = "-control";

/// Append a control for the default of every workload and engine of `cases` that has at
/// least one other case, in order of the defaults (each once).
pub fn add_controls(cases: &mut Vec<Case>) {
    let mut groups: BTreeMap<(usize, usize, usize, &'static str, &'static str), Vec<usize>> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let s = &c.settings;
        let key = (s.frames, s.width, s.height, s.passes.name(), s.engine.name());
        groups.entry(key).or_default().push(i);
    }
    let mut defaults: Vec<usize> = groups
        .values()
        .filter(|members| members.len() >= 2)
        .filter_map(|members| {
            let at = crate::engine::defaults::default_index(members, |&i| &cases[i].settings)?;
            Some(members[at])
        })
        .collect();
    defaults.sort_unstable();
    for i in defaults {
        cases.push(control_of(&cases[i]));
    }
}

/// The control of `default`.
pub fn control_of(default: &Case) -> Case {
    Case {
        id: format!("{}{SUFFIX}", default.id),
        added_as_control: true,
        added_as_reference: false,
        ..default.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::settings::CaseSettings;

    #[test]
    fn a_control_per_compared_workload_and_engine_of_its_default() {
        let base = CaseSettings::defaults();
        let mut bf16 = base.clone();
        bf16.precision = crate::model::Precision::Bf16;
        let mut other = base.clone();
        other.frames = 9;
        let mut cases = vec![
            Case::new(bf16, BTreeMap::new()),
            Case::new(base.clone(), BTreeMap::new()),
            Case::new(other, BTreeMap::new()),
        ];
        add_controls(&mut cases);
        // The 9-frame workload has one case: nothing to compare, no control.
        assert_eq!(cases.len(), 4);
        assert!(cases[3].added_as_control && cases[3].settings == base);
        assert_eq!(cases[3].id, format!("{}-control", base.id()));
        // A workload without its default gets none.
        let mut no_default = vec![cases[0].clone(), {
            let mut c = cases[0].clone();
            c.settings.chunk = 2;
            c.id = c.settings.id();
            c
        }];
        add_controls(&mut no_default);
        assert_eq!(no_default.len(), 2);
    }
}
