//! Merging reports (`merge A.json B.json ... -o ALL.json`, and `history`'s newest reports):
//! one report from several runs or machines.
//!
//! Every case keeps its own machine context and run settings (`CaseRecord.system` and
//! `CaseRecord.run`, set from its input's `system` and `run` unless it already has them);
//! the top-level `system`, `model`, `run`, `tool` and
//! `created_at` are the first input's. A case id already taken gets a suffix: `@HOST` (the
//! case's host name) when another host holds it, `@HOST-TIME` (its report's `created_at`,
//! `20261122T044200Z`) when a run of the same host does, so two runs of one host are told
//! apart by when they ran; else `@inputN` (1-based input position), plus `-2`, `-3`, ... if
//! still taken; each rename is printed on stderr, and `quality.reference_id` is renamed with it.
//!
//! The parts of a sharded run (`run --shard K/N`, each report's `run.shard`) are checked
//! first ([`check_parts`]): every input a part of one plan (same fingerprint, N and planned
//! total), no part twice, none missing (`--force` merges what is there); a mix of plans, or
//! of parts and unsharded reports, is refused (exit 2), each naming its file; parts that
//! hold every planned case are a complete set (with more parts than the plan has units, the
//! others hold none). Settings outside the fingerprint must agree too: the run's
//! ([`part_setting_differences`]) and the variables the parts' shells set, recorded in the
//! cases' `env` and set by no env variant of the plan ([`part_env_differences`]); with
//! `--force` they are merged on record and the answer calls no winner across them. Messages
//! name at most a few things each (`and N more`). The merge of
//! a complete set is what one unsharded run would have written ([`merge_parts`]): no
//! `run.shard`, the command without `--shard`, cases without their own `run` (and `system`
//! where it is the first part's), and the answer recomputed over every case.
//!
//! Must not: re-measure or recompute statistics; cases are copied as they are.
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::analysis::compare::compat::incompatibilities;
use crate::report::shard::ShardRecord;
use crate::report::Report;
use crate::util::error::UserError;

/// A case id renamed while merging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    /// 0-based position of the input report.
    pub input: usize,
    /// The id in that input.
    pub from: String,
    /// The id in the merged report.
    pub to: String,
}

/// Merge loaded reports (at least one). Returns the merged report and the renames.
pub fn merge(reports: Vec<Report>) -> (Report, Vec<Rename>) {
    let mut iter = reports.into_iter().enumerate();
    let (_, first) = iter.next().expect("merge needs at least one report");
    let mut merged = Report {
        cases: Vec::new(),
        // The answer belongs to one run; merged cases come from several.
        summary: None,
        ..first.clone()
    };
    // Each merged id, with the host of its case.
    let mut taken: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut renames = Vec::new();
    for (index, report) in std::iter::once((0, first)).chain(iter) {
        let mut map = BTreeMap::new();
        let mut cases = report.cases;
        for case in &mut cases {
            if case.system.is_none() {
                case.system = Some(report.system.clone());
            }
            if case.run.is_none() {
                case.run = Some(report.run.clone());
            }
            let host = case_host(case);
            let new_id = free_id(&case.id, host.clone(), &report.created_at, index, &taken);
            taken.insert(new_id.clone(), host);
            if new_id != case.id {
                renames.push(Rename {
                    input: index,
                    from: case.id.clone(),
                    to: new_id.clone(),
                });
                map.insert(case.id.clone(), new_id.clone());
                case.id = new_id;
            }
        }
        for case in &mut cases {
            if let Some(q) = &mut case.quality {
                if let Some(to) = map.get(&q.reference_id) {
                    q.reference_id = to.clone();
                }
                if let Some(x) = &mut q.cross_engine {
                    if let Some(to) = map.get(&x.reference_id) {
                        x.reference_id = to.clone();
                    }
                }
            }
        }
        // Each engine's context: the first report that has one keeps it.
        for (engine, ctx) in report.engines {
            merged.engines.entry(engine).or_insert(ctx);
        }
        merged.cases.extend(cases);
    }
    (merged, renames)
}

fn case_host(case: &crate::report::CaseRecord) -> Option<String> {
    case.system
        .as_ref()
        .and_then(|s| s.hostname.clone())
        .filter(|h| !h.is_empty())
}

/// First id not yet taken: `id`, `id@host` (the id held by another host's case) or
/// `id@host-TIME` (held by a case of the same host: another run of it), `id@inputN`, then
/// numbered suffixes.
fn free_id(
    id: &str,
    host: Option<String>,
    created_at: &str,
    index: usize,
    taken: &BTreeMap<String, Option<String>>,
) -> String {
    let mut candidates = vec![id.to_string()];
    if let Some(h) = host {
        let same_host = taken
            .get(id)
            .is_some_and(|holder| holder.as_deref() == Some(h.as_str()));
        let stamp: String = created_at.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        if !same_host {
            candidates.push(format!("{id}@{h}"));
        }
        if !stamp.is_empty() {
            candidates.push(format!("{id}@{h}-{stamp}"));
        }
    }
    let by_index = format!("{id}@input{}", index + 1);
    candidates.push(by_index.clone());
    if let Some(free) = candidates.into_iter().find(|c| !taken.contains_key(c)) {
        return free;
    }
    (2..)
        .map(|n| format!("{by_index}-{n}"))
        .find(|c| !taken.contains_key(c))
        .expect("an unbounded range always has a free id")
}

/// Merge the loaded `reports` (read from `paths`, in order) after the checks that may refuse
/// them (exit 2, naming the files; `force` merges with a warning instead): reports of other
/// weights or schema versions, the parts of a sharded run ([`check_parts`], [`part_problems`]),
/// settings that differ between parts ([`part_setting_differences`]). A complete set of parts
/// merges as one unsharded run ([`merge_parts`]), anything else as reports ([`merge`]).
pub fn merge_checked(paths: &[PathBuf], reports: Vec<Report>, force: bool) -> Result<(Report, Vec<Rename>), UserError> {
    // A part of a sharded run may have no case (more parts than units): it loaded no weights.
    let base = reports.iter().position(|r| !r.cases.is_empty()).unwrap_or(0);
    for (path, report) in paths.iter().zip(&reports) {
        if report.cases.is_empty() {
            continue;
        }
        let problems = incompatibilities(&reports[base], report);
        if problems.is_empty() {
            continue;
        }
        let msg = format!(
            "{} vs {}: {}",
            paths[base].display(),
            path.display(),
            problems.join("; ")
        );
        refuse_unless_forced(
            force,
            format!("refusing to merge {msg}; pass --force to merge anyway"),
            format!("warning: {msg} (merged anyway: --force)"),
        )?;
    }
    let complete = check_parts(paths, &reports, force)?;
    // Each part against its own record: every case it should hold, none of another part's,
    // and no interruption. Refused, or with --force merged and kept on record.
    let incomplete = part_problems(paths, &reports);
    if !incomplete.is_empty() {
        let msg = crate::util::format::bounded(&incomplete, "; ", MAX_NAMED);
        refuse_unless_forced(
            force,
            format!("refusing to merge: {msg}; run the part(s) again, or pass --force to merge what is there"),
            format!("warning: {msg} (merged anyway: --force; recorded in run.interrupted)"),
        )?;
    }
    // Settings outside the plan's fingerprint that change what was measured: one value for
    // every part, else the merged report would claim the first part's for all.
    let differing = part_setting_differences(paths, &reports);
    if !differing.is_empty() {
        let msg = crate::util::format::bounded(&differing, "; ", MAX_NAMED);
        refuse_unless_forced(
            force,
            format!("refusing to merge parts run with different settings: {msg}; rerun them alike, or pass --force"),
            format!("warning: parts run with different settings: {msg} (merged anyway: --force)"),
        )?;
    }
    // The variables the parts' shells set (recorded in the cases' `env`, set by no env
    // variant of the plan): one value for every part, else the answer would compare them.
    let shells = part_env_differences(paths, &reports);
    if !shells.is_empty() {
        let msg = crate::util::format::bounded(&shells, "; ", MAX_NAMED);
        refuse_unless_forced(
            force,
            format!(
                "refusing to merge parts run with different environments: {msg}; no env variant of the plan sets \
                 it: rerun the parts with the same value (or make it an env variant), or pass --force"
            ),
            format!(
                "warning: parts run with different environments: {msg} (merged anyway: --force; each case's env \
                 keeps its value, and the answer calls no winner across them)"
            ),
        )?;
    }
    let (mut merged, renames) = if complete { merge_parts(reports) } else { merge(reports) };
    if !incomplete.is_empty() {
        merged.run.interrupted = Some(format!(
            "merged with --force from parts that are not whole: {}",
            crate::util::format::bounded(&incomplete, "; ", MAX_NAMED)
        ));
    }
    Ok((merged, renames))
}

/// Refuse (exit 2) with `refusal`, or under `--force` print `warning` and go on.
fn refuse_unless_forced(force: bool, refusal: String, warning: String) -> Result<(), UserError> {
    if !force {
        return Err(UserError::Other(refusal));
    }
    crate::errln!("{warning}");
    Ok(())
}

/// Whether the inputs are every part of one sharded plan (`true`), or unsharded reports
/// (`false`). Refused (exit 2), naming the files: parts of several plans, parts beside
/// unsharded reports, a part given twice, and (unless `force`: then a warning, and the
/// parts are merged as any reports) a missing part.
pub fn check_parts(paths: &[PathBuf], reports: &[Report], force: bool) -> Result<bool, UserError> {
    let parts: Vec<Option<&ShardRecord>> = reports.iter().map(|r| r.run.shard.as_ref()).collect();
    let Some((first, fp)) = parts.iter().enumerate().find_map(|(i, p)| p.map(|p| (i, p))) else {
        return Ok(false);
    };
    let name = |i: usize| paths[i].display().to_string();
    let plan = |p: &ShardRecord| {
        format!(
            "plan {} ({} parts, {} cases)",
            p.plan_fingerprint, p.count, p.planned_cases
        )
    };
    let mut seen: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, part) in parts.iter().enumerate() {
        let Some(p) = part else {
            return Err(UserError::Other(format!(
                "refusing to merge {}, an unsharded report, with {}, part {} of {}: merge the parts of one \
                 plan, or whole runs, not both",
                name(i),
                name(first),
                fp.label(),
                plan(fp)
            )));
        };
        if (p.plan_fingerprint.as_str(), p.count, p.planned_cases)
            != (fp.plan_fingerprint.as_str(), fp.count, fp.planned_cases)
        {
            return Err(UserError::Other(format!(
                "refusing to merge {}: it is part {} of {}, a foreign shard: {} is part {} of {}; merge the \
                 parts of one plan (the same matrix, flags and --shard N)",
                name(i),
                p.label(),
                plan(p),
                name(first),
                fp.label(),
                plan(fp)
            )));
        }
        if let Some(other) = seen.insert(p.index, i) {
            return Err(UserError::Other(format!(
                "refusing to merge: part {} of {} is given twice ({} and {}); give each part once",
                p.label(),
                plan(p),
                name(other),
                name(i)
            )));
        }
    }
    let missing: Vec<usize> = (1..=fp.count).filter(|k| !seen.contains_key(k)).collect();
    if missing.is_empty() {
        return Ok(true);
    }
    // More parts than units: the parts given may hold every planned case, the others none.
    let held: BTreeSet<&str> = reports
        .iter()
        .flat_map(|r| r.cases.iter().map(|c| c.id.as_str()))
        .collect();
    if held.len() == fp.planned_cases {
        crate::errln!(
            "note: the parts given hold all {} of {}; part(s) {} hold none",
            crate::util::format::count(fp.planned_cases, "case"),
            plan(fp),
            part_ranges(&missing, fp.count)
        );
        return Ok(true);
    }
    let given: Vec<usize> = seen.keys().copied().collect();
    let msg = format!(
        "part(s) {} of {} missing (given: {})",
        part_ranges(&missing, fp.count),
        plan(fp),
        part_ranges(&given, fp.count)
    );
    if !force {
        return Err(UserError::Other(format!(
            "refusing to merge: {msg}; run them (`run --shard K/{}`), or pass --force to merge what is there",
            fp.count
        )));
    }
    crate::errln!("warning: {msg} (merged anyway: --force)");
    Ok(false)
}

/// How many things (problems, parts, values) a merge message names before `and N more`.
const MAX_NAMED: usize = 8;

/// Part numbers (ascending) as `K/N` and runs as `K/N to M/N`, at most [`MAX_NAMED`] of
/// them, then `and N more`: `--shard 1/100000` names its missing parts in one short line.
fn part_ranges(parts: &[usize], count: usize) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &k in parts {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == k => *end = k,
            _ => runs.push((k, k)),
        }
    }
    let text: Vec<String> = runs
        .iter()
        .map(|&(a, b)| match a == b {
            true => format!("{a}/{count}"),
            false => format!("{a}/{count} to {b}/{count}"),
        })
        .collect();
    crate::util::format::bounded(&text, ", ", MAX_NAMED)
}

/// The variables the parts' shells set differently: recorded in the `ok` cases' `env`, set
/// by no env variant of the plan, not the tool's own ([`crate::report::env::differences`]),
/// with different values in different parts; each as `env RAYON_NUM_THREADS is 1 in part
/// 1/2 (a.json) but 2 in part 2/2 (b.json)`. Empty for unsharded reports.
pub fn part_env_differences(paths: &[PathBuf], reports: &[Report]) -> Vec<String> {
    let cases: Vec<(usize, &crate::report::CaseRecord, &crate::report::RunSettings)> = reports
        .iter()
        .enumerate()
        .filter(|(_, r)| r.run.shard.is_some())
        .flat_map(|(i, r)| r.cases.iter().map(move |c| (i, c, &r.run)))
        .collect();
    let label = |i: usize| reports[i].run.shard.as_ref().map_or_else(String::new, |s| s.label());
    let mut out = Vec::new();
    for d in crate::report::env::differences(cases.iter().map(|(_, c, r)| (*c, *r))) {
        let parts_of = |at: &[usize]| -> Vec<usize> {
            let set: BTreeSet<usize> = at.iter().map(|&k| cases[k].0).collect();
            set.into_iter().collect()
        };
        let all: BTreeSet<usize> = d.values.iter().flat_map(|(_, at)| parts_of(at)).collect();
        if all.len() < 2 {
            continue; // within one part: not what the parts' shells set
        }
        let values: Vec<String> = d
            .values
            .iter()
            .map(|(v, at)| {
                let parts: Vec<String> = parts_of(at)
                    .into_iter()
                    .map(|i| format!("part {} ({})", label(i), paths[i].display()))
                    .collect();
                format!(
                    "{} in {}",
                    crate::report::env::shown(v.as_deref()),
                    crate::util::format::bounded(&parts, ", ", 3)
                )
            })
            .collect();
        out.push(format!(
            "env {} is {}",
            crate::util::format::printable(&d.name),
            crate::util::format::bounded(&values, " but ", 4)
        ));
    }
    out
}

/// What is wrong with the parts of a sharded run, each against its own `run.shard`: a part
/// that was interrupted, or holds fewer or more cases than its `shard_cases`, or a case id
/// that another part holds too. Empty for whole parts (and for unsharded reports).
pub fn part_problems(paths: &[PathBuf], reports: &[Report]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut owner: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, r) in reports.iter().enumerate() {
        let Some(p) = &r.run.shard else { continue };
        let name = paths[i].display();
        if let Some(why) = &r.run.interrupted {
            problems.push(format!("part {} ({name}) was interrupted ({why})", p.label()));
        } else if r.cases.len() != p.shard_cases {
            problems.push(format!(
                "part {} ({name}) holds {} but its record says {}",
                p.label(),
                crate::util::format::count(r.cases.len(), "case"),
                p.shard_cases
            ));
        }
        for c in &r.cases {
            if let Some(j) = owner.insert(c.id.as_str(), i) {
                problems.push(format!(
                    "case {:?} is in part {} ({}) and in part {} ({name}): each case of a plan is in one part",
                    c.id,
                    reports[j]
                        .run
                        .shard
                        .as_ref()
                        .map_or_else(|| "?".to_string(), |s| s.label()),
                    paths[j].display(),
                    p.label()
                ));
            }
        }
    }
    problems
}

/// The run settings a part holds that the plan's fingerprint does not (it covers the case
/// ids, passes and device), where a part differs from the first: the `--input` file (by its
/// SHA-256), `--torch-precision`, the Python interpreter, the tool's own variables.
pub fn part_setting_differences(paths: &[PathBuf], reports: &[Report]) -> Vec<String> {
    let parts: Vec<(usize, &Report)> = reports
        .iter()
        .enumerate()
        .filter(|(_, r)| r.run.shard.is_some())
        .collect();
    let Some(&(first, a)) = parts.first() else {
        return Vec::new();
    };
    let settings = |r: &Report| -> Vec<(&'static str, String)> {
        let run = &r.run;
        vec![
            (
                "--input",
                run.input.as_ref().map_or("none".to_string(), |i| {
                    format!("sha256 {}", crate::analysis::compare::compat::short(&i.sha256))
                }),
            ),
            (
                "--torch-precision",
                run.torch_precision.clone().unwrap_or_else(|| "default".into()),
            ),
            ("--python", run.python.clone().unwrap_or_else(|| "default".into())),
            ("the tool's variables", format!("{:?}", run.overrides)),
        ]
    };
    let mine = settings(a);
    let mut out = Vec::new();
    for &(i, r) in &parts[1..] {
        for ((name, x), (_, y)) in mine.iter().zip(settings(r)) {
            if *x != y {
                out.push(format!(
                    "{name} is {x} in {} but {y} in {}",
                    paths[first].display(),
                    paths[i].display()
                ));
            }
        }
    }
    out
}

/// Every part of one plan merged into what one unsharded run would have written.
pub fn merge_parts(mut reports: Vec<Report>) -> (Report, Vec<Rename>) {
    // The first part that measured something gives the model and machine; parts in their
    // plan's order, whatever the order of the arguments.
    reports.sort_by_key(|r| (r.cases.is_empty(), r.run.shard.as_ref().map_or(0, |s| s.index)));
    let min_psnr = reports[0].summary.as_ref().map(|s| s.min_psnr_db);
    let (mut merged, renames) = merge(reports);
    merged.run.shard = None;
    merged.run.command = without_shard(&merged.run.command);
    for case in &mut merged.cases {
        case.run = None;
        if case.system.as_ref() == Some(&merged.system) {
            case.system = None;
        }
    }
    merged.summary = min_psnr.map(|m| crate::analysis::answer::summarize(&merged, m));
    (merged, renames)
}

/// A command line without its `--shard K/N` (or `--shard=K/N`).
fn without_shard(words: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut skip = false;
    for w in words {
        if std::mem::take(&mut skip) || w.starts_with("--shard=") {
            continue;
        }
        if w == "--shard" {
            skip = true;
            continue;
        }
        out.push(w.clone());
    }
    out
}
