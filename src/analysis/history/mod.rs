//! Many runs over time (the `history REPORTS|DIR...` command's logic, `crate::cli::history`):
//! which update made a case slower.
//!
//! One series per case id, pass (encode, decode) and machine (host, CPU and GPUs as the
//! system context records them, told apart by machine id, board and memory:
//! [`crate::machine::identity`]), its runs ordered by the reports' `created_at`. Each run's
//! level varies by its samples and by the run-to-run variation a series estimates
//! ([`model`]); the series' run medians are fitted with a penalized piecewise-constant
//! model in those units, its likelihood's exact optimum ([`steps`]); at each step the
//! components of the software stack that differ between the last run before it and the
//! first after it are named ([`stack`]), or the step says that none did.
//!
//! The command exits 0: no case is slower now; 1: the newest segment of some series is slower than its
//! best earlier segment by more than `--threshold` and not noise (at `--alpha`, allowing for
//! the run-to-run variation; a series of 2 to 4 runs on its samples, as `compare` judges,
//! and never less than `compare` says of its two newest runs; [`judge`]), or the newest
//! segment drifts slower by more than `--threshold` (Mann-Kendall at `--alpha / 2`,
//! [`trend`]); 2: unusable input (an unreadable report, timings `compare` would refuse, a
//! time that is not RFC 3339 or no real time, one more than an hour after now, no report).
//! A newest run alone far off, whose one or two samples cannot show whether it is a noisy
//! run or a slower one, is said so, rerun to tell (exit 0; 1 under `--fail-on-rerun`).
//!
//! Must not: change the reports it reads, or know how cases run (`bench`, `engine`).
pub mod drift;
pub mod grid;
pub mod judge;
pub mod load;
pub mod model;
pub mod render;
pub mod spread;
pub mod stack;
pub mod steps;
pub mod svg;
pub mod time;
pub mod trend;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::report::{CaseStatus, Report};
use crate::util::error::UserError;
pub use judge::Verdict;
use stack::Change;

/// The whole history (`--export-json`).
#[derive(Debug, Clone, Serialize)]
pub struct History {
    /// `--threshold`, a fraction (0.05 = 5%).
    pub threshold: f64,
    /// `--alpha`.
    pub alpha: f64,
    /// The reports read, oldest first.
    pub reports: Vec<RunInfo>,
    /// One per case id, pass and machine.
    pub series: Vec<Series>,
    /// How many series are slower now than their best earlier segment, or (a series of fewer
    /// than 5 runs) in their newest run than in the one before as `compare` judges them
    /// (exit 1 when any).
    pub regressions: usize,
    /// How many series drift slower within their newest segment beyond the threshold
    /// (exit 1 when any).
    pub drifts: usize,
    /// How many series' newest run alone is off, slower beyond the threshold, its samples
    /// unable to show its own spread (one or two of them): rerun to tell (exit 0; 1 under
    /// `--fail-on-rerun`).
    pub reruns: usize,
    /// Reports, or some of their cases, not counted, and why: a merged report's cases that
    /// its parts beside it hold already ([`copies`]), a report dated in the future
    /// (`--skip-future-dates`).
    pub set_aside: Vec<SetAside>,
    /// How many series' newest run alone was slower in a busy run whose reference slowed
    /// alike: put down to load, not counted in `regressions` ([`load`]).
    pub put_down_to_load: usize,
    /// A line for each report holding series' newest runs that ran on a busy machine.
    pub busy: Vec<String>,
}

/// A report, or some of its cases, that a history did not count.
#[derive(Debug, Clone, Serialize)]
pub struct SetAside {
    /// Its file.
    pub path: String,
    /// Why, and what of it.
    pub reason: String,
}

/// One report of the history.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// Its file.
    pub path: String,
    /// Its `created_at`.
    pub created_at: String,
}

/// One case's pass on one machine over time.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// The case id.
    pub case_id: String,
    /// `encode` or `decode`.
    pub pass: &'static str,
    /// `host (CPU; GPUs)`.
    pub machine: String,
    /// The weights measured (`wan_2.1_vae.safetensors, sha256 0123456789ab`, or for synthetic
    /// weights their model: `synthetic Wan 2.1 (126.9 M params)`): a series is one model on
    /// one machine, so another VAE is never taken for a slower run of this one.
    pub model: String,
    /// Its runs, oldest first.
    pub points: Vec<Point>,
    /// The fit's segments, oldest first.
    pub segments: Vec<SegmentInfo>,
    /// Where the level changed.
    pub steps: Vec<Step>,
    /// The newest segment against the best earlier one.
    pub verdict: Verdict,
}

/// One run of a series.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Index into [`History::reports`].
    pub report: usize,
    /// The pass's median, seconds.
    pub median_s: f64,
    /// The standard error of its samples less their outliers, seconds (null with one
    /// sample).
    pub spread_s: Option<f64>,
    /// Its weight in the fit (median weight 1).
    pub weight: f64,
    /// Its samples, seconds.
    #[serde(skip)]
    pub samples_s: Vec<f64>,
    /// Index into the stacks (not exported).
    #[serde(skip)]
    pub stack: usize,
}

/// A segment of constant level.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentInfo {
    /// First and last point (indices into `points`).
    pub first_point: usize,
    /// Last point, inclusive.
    pub last_point: usize,
    /// Its level, seconds: its runs' medians averaged on a log scale, each weighted by one
    /// over its variance (its samples' and the run-to-run one), a run far off set aside.
    pub median_s: f64,
}

/// A change of level between two segments.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The first point after the step.
    pub point: usize,
    /// Its report's file and time.
    pub report: String,
    /// Its `created_at`.
    pub created_at: String,
    /// Level before and after, seconds.
    pub before_s: f64,
    /// Level after, seconds.
    pub after_s: f64,
    /// `after_s / before_s - 1`.
    pub change: f64,
    /// The stack components that differ between the last run before and the first after
    /// (empty: nothing in the stack changed; the cause is elsewhere).
    pub changes: Vec<Change>,
    /// When nothing changed at the step but did one run later or earlier (where run-to-run
    /// noise may have put the step instead): the first point after that change.
    pub near_point: Option<usize>,
    /// What changed there.
    pub near_changes: Vec<Change>,
}

/// What of a report a history reads and its dashboard exports write: the cases' timings,
/// samples, settings, env and system, never the answer (`summary`, tens of KB a report),
/// a case's per-layer profile or its telemetry readings. Dropped as each report is read, so
/// a history of 10,000 reports holds their timings, not their files.
pub fn keep_what_history_reads(report: &mut Report) {
    report.summary = None;
    for case in &mut report.cases {
        case.profile = None;
        case.outcome.telemetry = None;
    }
}

/// The report files: each file given, and each folder's `*.json` files (not its sub-folders),
/// sorted, each file once however often it is named (by path, folder or link); none at all
/// is unusable input.
pub fn report_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, UserError> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let entries =
                std::fs::read_dir(input).map_err(|e| UserError::file(input, format!("cannot read the folder: {e}")))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(input.clone());
        }
    }
    // One file given twice (`history results/ results/*.json`, or through a link) is one run:
    // counted twice it would weigh double in the fit and could flip a verdict.
    let mut seen = std::collections::BTreeSet::new();
    files.retain(|p| match std::fs::metadata(p) {
        Ok(m) => crate::util::files::identity(&m).is_none_or(|id| seen.insert(id)),
        Err(_) => true, // read (and refused, naming it) with the others
    });
    if files.is_empty() {
        return Err(UserError::Other(format!(
            "no report found in {}: give reports (JSON files `run` wrote) or folders holding them",
            inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(files)
}

/// Which weights a report measured, as a series names them: the file by its SHA-256, or
/// synthetic weights by their model (z_dim, width and parameters tell Wan 2.1 from 2.2).
pub fn model_label(m: &crate::report::ModelInfo) -> String {
    let params = format!("{:.1} M params", m.params as f64 / 1e6);
    match &m.sha256 {
        Some(sha) => format!("{}, sha256 {}", m.source, crate::analysis::compare::compat::short(sha)),
        None => format!("{} (z_dim {}, dim {}, {params})", m.source, m.z_dim, m.dim),
    }
}

/// The series of `reports` (oldest first, `paths` their files), fitted and judged.
pub fn analyse(paths: &[PathBuf], reports: &[Report], threshold: f64, alpha: f64) -> History {
    let mut stacks = Vec::new();
    let mut by_key: BTreeMap<(String, &'static str, String, String), Vec<Point>> = BTreeMap::new();
    // Machines by more than host and CPU (issue 67): two runners called `vm` are two series.
    let machines = crate::machine::identity::Machines::of(
        reports
            .iter()
            .flat_map(|r| r.cases.iter().map(move |c| c.system.as_ref().unwrap_or(&r.system))),
    );
    let (copied, set_aside) = copies(paths, reports);
    for (ri, report) in reports.iter().enumerate() {
        let model = model_label(&report.model);
        let ok = report
            .cases
            .iter()
            .enumerate()
            .filter(|(_, c)| c.outcome.status == CaseStatus::Ok);
        for (_, case) in ok.filter(|(ci, _)| !copied[ri].contains(ci)) {
            let m = machines.name(case.system.as_ref().unwrap_or(&report.system));
            let mut stack = None;
            for (pass, stats) in [("encode", &case.outcome.encode), ("decode", &case.outcome.decode)] {
                let Some(p) = stats.as_ref().filter(|p| p.median_s > 0.0) else {
                    continue;
                };
                let si = *stack.get_or_insert_with(|| {
                    stacks.push(stack::of(report, case));
                    stacks.len() - 1
                });
                // A hiccup the tool counts as an outlier does not move the median; it must
                // not lower the run's weight either.
                let kept = crate::util::stats::without_outliers(&p.samples_s);
                let n = kept.len();
                let spread = (n > 1)
                    .then(|| crate::util::stats::summarize(&kept).map(|s| s.stddev / (n as f64).sqrt()))
                    .flatten();
                by_key
                    .entry((case.id.clone(), pass, m.clone(), model.clone()))
                    .or_default()
                    .push(Point {
                        report: ri,
                        median_s: p.median_s,
                        spread_s: spread,
                        weight: 1.0,
                        samples_s: p.samples_s.clone(),
                        stack: si,
                    });
            }
        }
    }
    let infos: Vec<RunInfo> = paths
        .iter()
        .zip(reports)
        .map(|(p, r)| RunInfo {
            path: p.display().to_string(),
            created_at: r.created_at.clone(),
        })
        .collect();
    let mut series: Vec<Series> = by_key
        .into_iter()
        .map(|((case_id, pass, machine, model), points)| {
            let mut s = fit(case_id, pass, machine, points, &infos, &stacks, threshold, alpha);
            s.model = model;
            s
        })
        .collect();
    let put_down_to_load = load::attribute(&mut series, reports, threshold);
    let names: Vec<String> = infos.iter().map(|i| i.path.clone()).collect();
    let busy = load::busy_lines(&series, reports, &names);
    History {
        threshold,
        alpha,
        put_down_to_load,
        busy,
        regressions: series.iter().filter(|s| s.verdict.regressed()).count(),
        reruns: series.iter().filter(|s| s.verdict.rerun(threshold)).count(),
        drifts: series
            .iter()
            .filter(|s| s.verdict.drift.as_ref().is_some_and(|d| d.regression))
            .count(),
        reports: infos,
        series,
        set_aside,
    }
}

/// A measurement as another report may hold a copy of it: the case's machine and weights and
/// the bits of its passes' samples (two runs never time alike to the nanosecond).
type Fingerprint = (String, String, Vec<u64>, Vec<u64>);

fn fingerprint(report: &Report, case: &crate::report::CaseRecord) -> Option<Fingerprint> {
    let bits = |p: &Option<crate::report::PassStats>| -> Vec<u64> {
        p.as_ref()
            .map(|p| p.samples_s.iter().map(|x| x.to_bits()).collect())
            .unwrap_or_default()
    };
    let (e, d) = (bits(&case.outcome.encode), bits(&case.outcome.decode));
    (!e.is_empty() || !d.is_empty()).then(|| {
        let machine = case.system.as_ref().unwrap_or(&report.system).machine();
        (machine, model_label(&report.model), e, d)
    })
}

/// The cases of each report that are copies of another report's measurements, and what was
/// set aside: `merge` copies its inputs' cases as they are, so a merged report read beside
/// its parts (or its inputs) would count each measurement twice (issue 64). Report `m`
/// merges report `p` when every ok case of `p` is one of `m`'s, bit for bit, and `m` holds
/// more cases than `p` or `p` is a shard part and `m` not (so the relation runs one way);
/// `m`'s copies are then set aside and `p`'s counted, with `p`'s own time and stack. Runs
/// whose samples happen to be equal (a fixture's identical runs) hold as many cases each:
/// neither merges the other.
pub fn copies(paths: &[PathBuf], reports: &[Report]) -> (Vec<std::collections::BTreeSet<usize>>, Vec<SetAside>) {
    use std::collections::{BTreeSet, HashMap};
    let mut skip = vec![BTreeSet::new(); reports.len()];
    let mut held: HashMap<Fingerprint, Vec<(usize, usize)>> = HashMap::new();
    let mut ok_cases = vec![0usize; reports.len()];
    for (ri, report) in reports.iter().enumerate() {
        for (ci, case) in report.cases.iter().enumerate() {
            if case.outcome.status != CaseStatus::Ok {
                continue;
            }
            ok_cases[ri] += 1;
            if let Some(f) = fingerprint(report, case) {
                held.entry(f).or_default().push((ri, ci));
            }
        }
    }
    // For each pair of reports sharing measurements: how many of the second's are the
    // first's, and which of the first's cases they are.
    let mut shared: BTreeMap<(usize, usize), (BTreeSet<usize>, BTreeSet<usize>)> = BTreeMap::new();
    for holders in held.values().filter(|h| h.len() > 1) {
        for &(m, mc) in holders {
            for &(p, pc) in holders.iter().filter(|(p, _)| *p != m) {
                let e = shared.entry((m, p)).or_default();
                e.0.insert(mc);
                e.1.insert(pc);
            }
        }
    }
    let sharded = |r: usize| reports[r].run.shard.is_some();
    let mut parts: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for ((m, p), (in_m, of_p)) in shared {
        let merges = of_p.len() == ok_cases[p] && (ok_cases[m] > ok_cases[p] || (sharded(p) && !sharded(m)));
        if merges {
            skip[m].extend(in_m);
            parts.entry(m).or_default().push(p);
        }
    }
    let name = |r: usize| file_name(&paths[r].display().to_string());
    let set_aside = parts
        .into_iter()
        .map(|(m, ps)| {
            let named: Vec<String> = ps.iter().map(|&p| name(p)).collect();
            SetAside {
                path: paths[m].display().to_string(),
                reason: format!(
                    "{} of its {} are copies of those in {} (a merged report beside its parts): each counted once, \
                     from the part",
                    skip[m].len(),
                    crate::util::format::count(ok_cases[m], "case"),
                    crate::util::format::bounded(&named, ", ", 5)
                ),
            }
        })
        .collect();
    (skip, set_aside)
}

#[allow(clippy::too_many_arguments)]
fn fit(
    case_id: String,
    pass: &'static str,
    machine: String,
    mut points: Vec<Point>,
    infos: &[RunInfo],
    stacks: &[stack::Stack],
    threshold: f64,
    alpha: f64,
) -> Series {
    let judged = judge::series(&points, threshold, alpha);
    for (p, w) in points.iter_mut().zip(&judged.weights) {
        p.weight = *w;
    }
    let segs = judged.segments;
    let segments: Vec<SegmentInfo> = segs
        .iter()
        .map(|s| SegmentInfo {
            first_point: s.start,
            last_point: s.end - 1,
            median_s: s.level,
        })
        .collect();
    let steps: Vec<Step> = segs
        .windows(2)
        .map(|pair| {
            let at = pair[1].start;
            let after = &points[at];
            let diff_at = |q: usize| stack::diff(&stacks[points[q - 1].stack], &stacks[points[q].stack]);
            let changes = diff_at(at);
            // Nothing changed here: one run later, then one earlier (each within the series).
            let near = match changes.is_empty() {
                true => [at + 1, at - 1]
                    .into_iter()
                    .filter(|&q| q >= 1 && q < points.len())
                    .map(|q| (q, diff_at(q)))
                    .find(|(_, d)| !d.is_empty()),
                false => None,
            };
            Step {
                point: at,
                report: infos[after.report].path.clone(),
                created_at: infos[after.report].created_at.clone(),
                before_s: pair[0].level,
                after_s: pair[1].level,
                change: pair[1].level / pair[0].level - 1.0,
                changes,
                near_point: near.as_ref().map(|n| n.0),
                near_changes: near.map(|n| n.1).unwrap_or_default(),
            }
        })
        .collect();
    let verdict = judged.verdict;
    Series {
        case_id,
        pass,
        machine,
        model: String::new(),
        points,
        segments,
        steps,
        verdict,
    }
}

/// The newest report of each machine, merged (the dashboards' view of "now").
pub fn newest_per_machine(reports: Vec<Report>) -> Report {
    let mut newest: BTreeMap<String, Report> = BTreeMap::new();
    let machines = crate::machine::identity::Machines::of(reports.iter().map(|r| &r.system));
    for r in reports {
        newest.insert(machines.name(&r.system), r);
    }
    // Every case named with its machine before they meet: no name depends on the others.
    let parts: Vec<Report> = newest
        .into_values()
        .map(|r| crate::analysis::export::dashboards::with_machine_names(&r))
        .collect();
    crate::analysis::merge::merge(parts).0
}

/// A path as the table shows it: its file name.
pub fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}
