//! A [`History`] as the terminal table and as Markdown (a CI job summary): one line per
//! series (case, pass, machine) with its segments' medians, then one line per step with its
//! date, run and what changed in the stack.
//!
//! Must not: fit or judge (that is [`super::steps`] and [`super`]); numbers go through
//! `crate::util::format`.
use std::fmt::Write;

use super::judge::Test;
use super::{file_name, History, Series, Step, Verdict};
use crate::util::format::seconds;

/// The segments' medians: `100.0 ms -> 125.0 ms (+25.0%)`.
fn segments(s: &Series) -> String {
    let mut out = s
        .segments
        .iter()
        .map(|g| seconds(g.median_s))
        .collect::<Vec<_>>()
        .join(" -> ");
    if let Some(st) = s.steps.last() {
        let _ = write!(out, " ({:+.1}%)", st.change * 100.0);
    }
    out
}

/// `run 7 of 12, 2026-11-20T03:00:00Z (r07.json)`.
fn when(h: &History, s: &Series, st: &Step) -> String {
    format!(
        "run {} of {}, {} ({})",
        st.point + 1,
        s.points.len(),
        st.created_at,
        file_name(&h.reports[s.points[st.point].report].path)
    )
}

/// What changed at a step, or that nothing in the stack did (and what did one run later or
/// earlier, where the run-to-run noise may have put the step instead).
pub fn changed(st: &Step) -> String {
    let text = |c: &[super::stack::Change]| c.iter().map(|c| c.text()).collect::<Vec<_>>().join("; ");
    match st.near_point {
        _ if !st.changes.is_empty() => text(&st.changes),
        Some(q) => format!(
            "nothing in the stack changed here, but one run {} (run {}): {}",
            if q > st.point { "later" } else { "earlier" },
            q + 1,
            text(&st.near_changes)
        ),
        None => "nothing in the stack changed: the cause is elsewhere (thermal state, the machine, noise)".into(),
    }
}

/// How many runs hold the two levels, and whether one run is enough: `18 runs now vs 16`;
/// a level of one run is judged against the run-to-run variation, and the text says whether
/// that was enough.
fn held(v: &Verdict) -> String {
    let (now, before) = (v.newest_runs, v.best_earlier_runs.unwrap_or(0));
    let mut out = format!("{} now vs {before}", crate::util::format::count(now, "run"));
    if now == 1 || before == 1 {
        let which = if now == 1 {
            "the newest level"
        } else {
            "the best earlier level"
        };
        let spread = match v.run_to_run {
            Some(t) => format!("the run-to-run variation of {:.1}%", t * 100.0),
            None => "its samples".to_string(),
        };
        let _ = match v.significant {
            true => write!(out, "; {which} is one run: enough against {spread}"),
            false => write!(out, "; {which} is one run: not enough against {spread}, rerun to tell"),
        };
    }
    out
}

/// The verdict of a series: `SLOWER +25.0% than the best earlier (p < 0.0001, run levels;
/// 6 runs now vs 4)`, `+8.0% vs the best earlier, not significant (p = 0.0900, run levels;
/// 1 run now vs 20; ...)`, `+13.0% vs the best earlier, cannot tell: too few samples (...)`,
/// `SLOWER +100.0% than the run before (p = 0.0006, samples, as compare judges the last two
/// reports)`, `ok (+2.0% vs the best earlier, within the 5.0% threshold)`, `ok`; then the
/// newest segment's drift, when beyond the threshold. A slow-down beyond the threshold is
/// never called ok.
pub fn verdict(h: &History, s: &Series) -> String {
    let v = &s.verdict;
    let p = |p: Option<f64>| p.map(p_value).unwrap_or_else(|| "no test".into());
    let test = match v.test {
        Some(Test::RunLevels) => "run levels",
        Some(Test::Samples) => "samples",
        Some(Test::NoOverlap) => "too few samples for a test, no overlap",
        None => "",
    };
    if let Some(l) = &v.load {
        return format!(
            "slower {:+.1}% in a busy newest run, as its reference {} ({:+.1}%) in the same run: put down to load, \
             not a regression; rerun on a quiet machine",
            l.slower * 100.0,
            l.reference,
            l.reference_slower * 100.0
        );
    }
    let mut out = match (v.regression, v.slower) {
        (true, Some(x)) => format!(
            "SLOWER {:+.1}% than the best earlier ({}, {test}; {})",
            x * 100.0,
            p(v.p_value),
            held(v)
        ),
        (false, Some(x)) if x > h.threshold && v.test == Some(Test::NoOverlap) => format!(
            "{:+.1}% vs the best earlier, cannot tell: too few samples for a test, and they overlap ({})",
            x * 100.0,
            held(v)
        ),
        (false, Some(x)) if x > h.threshold => format!(
            "{:+.1}% vs the best earlier, not significant ({}, {test}; {})",
            x * 100.0,
            p(v.p_value),
            held(v)
        ),
        (false, Some(x)) if x > 0.0 => format!(
            "ok ({:+.1}% vs the best earlier, within the {:.1}% threshold)",
            x * 100.0,
            h.threshold * 100.0
        ),
        _ => "ok".into(),
    };
    if let Some(l) = v.last_two.as_ref().filter(|l| l.regression && !v.regression) {
        let how = match l.test {
            Test::NoOverlap => "too few samples for a test, no overlap".to_string(),
            _ => format!("{}, samples", p(l.p_value)),
        };
        out = format!(
            "SLOWER {:+.1}% than the run before ({how}, as compare judges the last two reports); {out}",
            l.slower * 100.0
        );
    }
    // The newest run alone beyond the threshold, not enough to call: never "ok".
    let mut more = Vec::new();
    if v.newest_busy && v.regressed() {
        more.push(
            "its newest run ran on a busy machine, but its reference in that run did not slow alike: a regression all \
             the same"
                .to_string(),
        );
    }
    if let Some(l) = v.last_two.as_ref().filter(|l| !l.regression && l.slower > h.threshold) {
        more.push(match l.test {
            Test::NoOverlap => format!(
                "the newest run is {:+.1}% vs the one before, cannot tell: too few samples for a test, and they \
                 overlap",
                l.slower * 100.0
            ),
            _ => format!(
                "the newest run is {:+.1}% vs the one before, not significant ({}, samples)",
                l.slower * 100.0,
                p(l.p_value)
            ),
        });
    }
    if let Some(o) = &v.newest_off {
        let which = s
            .points
            .get(o.point)
            .map(|p| {
                format!(
                    "run {} of {}, {}",
                    o.point + 1,
                    s.points.len(),
                    file_name(&h.reports[p.report].path)
                )
            })
            .unwrap_or_default();
        let why = match o.samples {
            0 | 1 => "one sample, which cannot show its spread".to_string(),
            2 => "two samples, which cannot show its spread".to_string(),
            k => format!("{k} samples on both sides of that level"),
        };
        more.push(format!(
            "{} the newest run alone is {:+.1}% off the rest of its level ({which}; {why}; {}): rerun to tell",
            if o.slower > h.threshold { "RERUN:" } else { "note:" },
            o.slower * 100.0,
            p_value(o.p_value)
        ));
    }
    if let Some(r) = &v.newest_run {
        more.push(format!(
            "the newest run is {:+.1}% above the rest of its level: one run, not enough against the run-to-run \
             variation of {:.1}% ({}), rerun to tell",
            r.slower * 100.0,
            v.run_to_run.unwrap_or(0.0) * 100.0,
            p_value(r.p_value)
        ));
    }
    if !more.is_empty() {
        out = match out.as_str() {
            "ok" => more.join("; "),
            _ => format!("{out}; {}", more.join("; ")),
        };
    }
    if let Some(d) = v.drift.as_ref().filter(|d| d.change > h.threshold) {
        let runs = d.last_point - d.first_point + 1;
        // "ok; DRIFT ..." would call a drifting series ok.
        out = match out.as_str() {
            "ok" => String::new(),
            _ => out + "; ",
        };
        let _ = match d.regression {
            true => write!(
                out,
                "DRIFT {:+.1}% over the last {runs} runs ({})",
                d.change * 100.0,
                p_value(d.p_value)
            ),
            false => write!(
                out,
                "drift {:+.1}% over the last {runs} runs, not significant ({})",
                d.change * 100.0,
                p_value(d.p_value)
            ),
        };
    }
    out
}

/// `p = 0.38`, `p < 0.0001`.
fn p_value(p: f64) -> String {
    if p < 1e-4 {
        "p < 0.0001".into()
    } else {
        format!("p = {p:.4}")
    }
}

/// Slower beyond the threshold somewhere (the newest segment, or the newest run alone) but
/// not significantly, or not judged for too few samples.
fn unproven(h: &History, v: &Verdict) -> bool {
    !v.regressed()
        && v.load.is_none()
        && (v.slower.is_some_and(|x| x > h.threshold)
            || v.last_two.as_ref().is_some_and(|l| l.slower > h.threshold)
            || v.newest_run.is_some())
}

fn summary(h: &History) -> String {
    let machines: std::collections::BTreeSet<&str> = h.series.iter().map(|s| s.machine.as_str()).collect();
    let steps: usize = h.series.iter().map(|s| s.steps.len()).sum();
    let mut out = format!(
        "{} series from {} on {}; {}; threshold {:.1}%, alpha {}",
        h.series.len(),
        crate::util::format::count(h.reports.len(), "report"),
        crate::util::format::count(machines.len(), "machine"),
        crate::util::format::count(steps, "step"),
        h.threshold * 100.0,
        h.alpha
    );
    let unproven = h.series.iter().filter(|s| unproven(h, &s.verdict)).count();
    if h.regressions > 0 {
        let _ = write!(
            out,
            "\nREGRESSION: {} series slower now than in their best earlier segment",
            h.regressions
        );
        // Series of 2 to 4 runs whose newest run `compare` calls slower than the one before.
        let by_last_two = h
            .series
            .iter()
            .filter(|s| !s.verdict.regression && s.verdict.regressed())
            .count();
        if by_last_two > 0 {
            let _ = write!(
                out,
                " or, {by_last_two} of them, in their newest run than in the one before (as compare judges two reports)"
            );
        }
    }
    if h.drifts > 0 {
        let _ = write!(
            out,
            "\nDRIFT: {} series drifting slower beyond the threshold within their newest segment",
            h.drifts
        );
    }
    if h.reruns > 0 {
        let _ = write!(
            out,
            "\nRERUN: {} series whose newest run alone is slower beyond the threshold, with too few samples to tell a \
             noisy run from a slower one: rerun to tell (exit 0; --fail-on-rerun fails)",
            h.reruns
        );
    }
    if h.regressions == 0 && h.drifts == 0 {
        out.push_str(match unproven + h.reruns + h.put_down_to_load {
            0 => "\nno case is slower now than its best earlier segment",
            _ => "\nno significant slow-down",
        });
    }
    if unproven > 0 {
        let _ = write!(
            out,
            "\n{unproven} series slower beyond the threshold (their newest segment, or their newest run alone), but \
             not significantly or with too few samples to tell: more runs will tell"
        );
    }
    if h.put_down_to_load > 0 {
        let _ = write!(
            out,
            "\nLOAD: {} series slower only in a busy newest run, as their reference in the same run: put down to \
             load, not a regression (exit 0); rerun on a quiet machine",
            h.put_down_to_load
        );
    }
    for line in &h.busy {
        let _ = write!(out, "\nbusy: {line}");
    }
    for a in &h.set_aside {
        let _ = write!(out, "\nset aside: {}: {}", file_name(&a.path), a.reason);
    }
    out
}

/// The terminal table.
pub fn text(h: &History) -> String {
    let head = ["case", "pass", "machine", "runs", "segments (median)", "verdict"].map(String::from);
    let rows = h.series.iter().map(|s| {
        [
            s.case_id.clone(),
            s.pass.to_string(),
            place(h, s),
            s.points.len().to_string(),
            segments(s),
            verdict(h, s),
        ]
    });
    let lines = crate::util::format::columns(&std::iter::once(head).chain(rows).collect::<Vec<_>>());
    let mut out = format!("{}\n", lines[0]);
    for (s, line) in h.series.iter().zip(&lines[1..]) {
        out.push_str(line);
        out.push('\n');
        for st in &s.steps {
            let _ = writeln!(
                out,
                "    step {:+.1}% at {}: {}",
                st.change * 100.0,
                when(h, s, st),
                changed(st)
            );
        }
    }
    out + &summary(h) + "\n"
}

/// Markdown: a table of series, then one bullet per step.
pub fn markdown(h: &History) -> String {
    let cell = crate::util::format::md_cell;
    let mut out =
        String::from("## Benchmark history\n\n| case | pass | machine | runs | segments (median) | verdict |\n");
    out.push_str("| --- | --- | --- | ---: | --- | --- |\n");
    for s in &h.series {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            cell(&s.case_id),
            s.pass,
            cell(&place(h, s)),
            s.points.len(),
            segments(s),
            if s.verdict.fails() {
                format!("**{}**", verdict(h, s))
            } else {
                verdict(h, s)
            }
        );
    }
    let steps: Vec<String> = h
        .series
        .iter()
        .flat_map(|s| {
            s.steps.iter().map(move |st| {
                format!(
                    "- `{}` {} on {}: {:+.1}% at {}: {}",
                    cell(&s.case_id),
                    s.pass,
                    cell(&place(h, s)),
                    st.change * 100.0,
                    when(h, s, st),
                    changed(st)
                )
            })
        })
        .collect();
    if !steps.is_empty() {
        out.push_str("\n### Steps\n\n");
        out.push_str(&steps.join("\n"));
        out.push('\n');
    }
    out + "\n" + &summary(h) + "\n"
}

/// Where a series was measured: its machine, and its model too when the history holds
/// several (Wan 2.1 and Wan 2.2 runs are separate series, never one).
fn place(h: &History, s: &super::Series) -> String {
    let models: std::collections::BTreeSet<&str> = h.series.iter().map(|x| x.model.as_str()).collect();
    match models.len() {
        0 | 1 => s.machine.clone(),
        _ => format!("{}, {}", s.machine, s.model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::history::{judge, Verdict};

    fn history(verdict: Verdict) -> History {
        History {
            threshold: 0.05,
            alpha: 0.05,
            reports: Vec::new(),
            regressions: usize::from(verdict.regressed()),
            drifts: usize::from(verdict.drift.as_ref().is_some_and(|d| d.regression)),
            reruns: usize::from(verdict.rerun(0.05)),
            set_aside: Vec::new(),
            put_down_to_load: usize::from(verdict.load.is_some()),
            busy: Vec::new(),
            series: vec![Series {
                case_id: "c".into(),
                pass: "decode",
                machine: "box".into(),
                model: String::new(),
                points: Vec::new(),
                segments: Vec::new(),
                steps: Vec::new(),
                verdict,
            }],
        }
    }

    #[test]
    fn slower_beyond_the_threshold_but_not_significant_is_said_so_never_ok() {
        // Issue 49: "ok (+49.3% vs the best earlier, within threshold or noise)".
        let h = history(Verdict {
            slower: Some(0.493),
            p_value: Some(0.38),
            test: Some(judge::Test::Samples),
            newest_runs: 4,
            best_earlier_runs: Some(4),
            ..Verdict::default()
        });
        let v = verdict(&h, &h.series[0]);
        assert_eq!(
            v,
            "+49.3% vs the best earlier, not significant (p = 0.3800, samples; 4 runs now vs 4)"
        );
        let t = summary(&h);
        assert!(
            t.contains("no significant slow-down") && t.contains("not significantly"),
            "{t}"
        );
        assert!(!t.contains("no case is slower"), "{t}");
        let h = history(Verdict {
            slower: Some(0.02),
            p_value: Some(0.01),
            ..Verdict::default()
        });
        assert_eq!(
            verdict(&h, &h.series[0]),
            "ok (+2.0% vs the best earlier, within the 5.0% threshold)"
        );
    }

    #[test]
    fn a_level_of_one_run_says_whether_that_is_enough() {
        // Issue 56: the newest level may be one run; say so, and whether it is enough.
        let one = |significant: bool, regression: bool| {
            history(Verdict {
                regression,
                significant,
                slower: Some(0.08),
                p_value: Some(if significant { 0.0004 } else { 0.09 }),
                test: Some(judge::Test::RunLevels),
                newest_runs: 1,
                best_earlier_runs: Some(20),
                run_to_run: Some(0.03),
                ..Verdict::default()
            })
        };
        let h = one(true, true);
        assert_eq!(
            verdict(&h, &h.series[0]),
            "SLOWER +8.0% than the best earlier (p = 0.0004, run levels; 1 run now vs 20; the newest level is \
             one run: enough against the run-to-run variation of 3.0%)"
        );
        let h = one(false, false);
        assert_eq!(
            verdict(&h, &h.series[0]),
            "+8.0% vs the best earlier, not significant (p = 0.0900, run levels; 1 run now vs 20; the newest \
             level is one run: not enough against the run-to-run variation of 3.0%, rerun to tell)"
        );
        assert!(summary(&h).contains("not significantly"), "{}", summary(&h));
    }

    #[test]
    fn a_short_series_says_what_compare_says_of_its_last_two_runs() {
        let h = history(Verdict {
            slower: Some(0.0),
            last_two: Some(judge::LastTwo {
                slower: 1.0,
                p_value: Some(0.0006),
                test: judge::Test::Samples,
                regression: true,
            }),
            ..Verdict::default()
        });
        let v = verdict(&h, &h.series[0]);
        assert!(
            v.starts_with("SLOWER +100.0% than the run before (p = 0.0006, samples, as compare judges the last two"),
            "{v}"
        );
        assert!(h.series[0].verdict.fails());
    }

    #[test]
    fn a_drift_is_named_with_its_runs_and_p() {
        let h = history(Verdict {
            drift: Some(judge::Drift {
                first_point: 0,
                last_point: 39,
                change: 0.2,
                p_value: 1e-9,
                regression: true,
            }),
            ..Verdict::default()
        });
        assert_eq!(
            verdict(&h, &h.series[0]),
            "DRIFT +20.0% over the last 40 runs (p < 0.0001)"
        );
        assert!(summary(&h).contains("DRIFT: 1 series"), "{}", summary(&h));
    }
}
