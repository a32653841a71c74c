//! What the answer trusts on a machine that is not quiet (issue 63): the interval of a
//! speed-up drawn round by round when the cases were timed in interleaved rounds
//! ([`interval`]); the A/A control's drift, below which no setting is called faster or slower
//! ([`drift`]); and which cases may be advised at all ([`Advice`]): a variable that cannot
//! act on the case (`engine::env_reach`) is measured but never advised, a case that differs
//! from the default only in such variables is the default in effect, and a variable the tool
//! does not know is advised only from a case where its value alone changed.
//!
//! Must not: render, or pick the fastest case (the answer does, among what this allows).
use std::collections::BTreeMap;

use super::bootstrap;
use super::run_times;
use crate::engine::env_reach::{reach, Reach};
use crate::report::rounds::paired;
use crate::report::settings::CaseSettings;
use crate::report::{CaseRecord, CaseStatus, Drift, Report};

/// A ratio of `num`'s time over `den`'s as the answer states it.
pub struct Ratio {
    /// The estimate: paired by round, the median of the rounds' ratios; else the ratio of
    /// the two medians.
    pub ratio: f64,
    /// Its 95% interval (none with fewer than 2 runs, or rounds, to resample).
    pub interval: Option<(f64, f64)>,
    /// `rounds` or `independent`.
    pub method: &'static str,
}

/// The ratio of `num`'s time over `den`'s: paired by round when both carry their rounds
/// (`rounds`), else from independent samples (`independent`).
pub fn ratio(num: &CaseRecord, den: &CaseRecord) -> Ratio {
    let (a, b) = (run_times(num), run_times(den));
    let plain = crate::util::stats::median(&a) / crate::util::stats::median(&b);
    match paired((&a, num.outcome.rounds.as_ref()), (&b, den.outcome.rounds.as_ref())) {
        Some(rounds) if !rounds.is_empty() => Ratio {
            ratio: bootstrap::paired_ratio(&rounds).unwrap_or(plain),
            interval: bootstrap::paired_ratio_interval(&rounds),
            method: "rounds",
        },
        _ => Ratio {
            ratio: plain,
            interval: bootstrap::ratio_interval(&a, &b),
            method: "independent",
        },
    }
}

/// The A/A control's reading of `default` (its control among `cases`), when both ran `ok`.
pub fn drift(default: &CaseRecord, cases: &[&CaseRecord]) -> Option<Drift> {
    let id = format!("{}{}", default.id, crate::plan::control::SUFFIX);
    let control = cases.iter().find(|c| c.added_as_control && c.id == id)?;
    if run_times(default).is_empty() || run_times(control).is_empty() {
        return None;
    }
    let Ratio {
        ratio, interval: iv, ..
    } = self::ratio(default, control);
    let far = |r: f64| if r >= 1.0 { r } else { 1.0 / r };
    let floor_ratio = match iv {
        Some((lo, hi)) => far(lo).max(far(hi)),
        None => far(ratio),
    };
    Some(Drift {
        control_id: control.id.clone(),
        ratio,
        ratio_low: iv.map(|i| i.0),
        ratio_high: iv.map(|i| i.1),
        floor_ratio,
    })
}

/// Which cases of a workload may be advised, and the variables that never are.
#[derive(Debug, Default)]
pub struct Advice {
    /// Variable -> why it is not advised.
    pub not_advised: BTreeMap<String, String>,
}

impl Advice {
    /// Whether `c` may be recommended over the default `base`: it is not the A/A control, it
    /// differs from the default in something that can act, and every variable of its env
    /// variant that the tool does not know changed alone. Every variable it sets that cannot
    /// act, or that is not advised, is noted with why.
    pub fn eligible(&mut self, report: &Report, c: &CaseRecord, base: Option<&CaseRecord>) -> bool {
        if c.added_as_control {
            return false;
        }
        let Some(b) = base else {
            return true;
        };
        if b.id == c.id {
            return true;
        }
        let (set, unset) = super::apply::env_change(report, c, Some(b));
        let run = c.run.as_ref().unwrap_or(&report.run);
        let vendors = c.system.as_ref().unwrap_or(&report.system).gpu_vendors();
        let (mut acting, mut unknown) = (Vec::new(), Vec::new());
        for var in set.keys().chain(&unset) {
            match reach(var, c.settings.engine, &run.device, vendors) {
                Reach::Acts => acting.push(var.clone()),
                Reach::Unknown => unknown.push(var.clone()),
                Reach::CannotAct(why) => {
                    self.not_advised.insert(var.clone(), why);
                }
            }
        }
        let same_settings = CaseSettings {
            env_variant: b.settings.env_variant.clone(),
            ..c.settings.clone()
        } == b.settings;
        // The default in effect: an A/A replica, not a setting (where the default itself ran;
        // where it failed, what differs is what the tool set, and the case stands alone).
        if same_settings && acting.is_empty() && unknown.is_empty() && b.outcome.status == CaseStatus::Ok {
            return false;
        }
        if !(unknown.is_empty() || same_settings && acting.is_empty() && unknown.len() == 1) {
            for var in unknown {
                self.not_advised.entry(var.clone()).or_insert_with(|| {
                    format!(
                        "{var} is not a variable this tool knows to act here, and no case changed it alone: measured, \
                         not advised (sweep it on its own to be advised)"
                    )
                });
            }
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rounds::CaseRounds;
    use crate::report::testing;

    fn timed(id: &str, times: &[f64], rounds: Option<Vec<usize>>) -> CaseRecord {
        let mut o = testing::ok();
        o.decode = Some(crate::report::PassStats::from_samples(times.to_vec(), vec![], 1, 1.0));
        o.rounds = rounds.map(|of_run| CaseRounds {
            planned: of_run.len(),
            done: of_run.len(),
            of_run,
        });
        let mut s = crate::report::settings::CaseSettings::defaults();
        s.passes = crate::report::values::Passes::Decode;
        let mut c = testing::case(s, o);
        c.id = id.into();
        c
    }

    #[test]
    fn the_control_sets_a_floor_and_rounds_pair_the_runs() {
        let d = timed("d", &[1.0, 2.0, 1.5], Some(vec![0, 1, 2]));
        let mut c = timed("d-control", &[1.02, 2.04, 1.53], Some(vec![0, 1, 2]));
        c.added_as_control = true;
        let dr = drift(&d, &[&d, &c]).unwrap();
        assert!(dr.floor_ratio > 1.0 && dr.floor_ratio < 1.03, "{dr:?}");
        let r = ratio(&d, &c);
        assert_eq!(r.method, "rounds");
        assert!(r.interval.unwrap().1 < 1.0);
        // Without rounds the same runs spread over the load.
        let (d2, c2) = (
            timed("x", &[1.0, 2.0, 1.5], None),
            timed("y", &[1.02, 2.04, 1.53], None),
        );
        let r2 = ratio(&d2, &c2);
        assert_eq!(r2.method, "independent");
        assert!(r2.interval.unwrap().0 < 0.8, "{:?}", r2.interval);
        // No control for another id.
        assert!(drift(&c, &[&d, &c]).is_none());
    }
}
