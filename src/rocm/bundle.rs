//! `logs --bundle DIR`: what AMD asks users who see slow ComfyUI runs on Strix Halo and
//! RDNA4 to attach (ROCm/TheRock #2591), made from the logs read: the unique hipBLASLt (and
//! rocBLAS) bench lines and the unique `MIOpenDriver` commands, each sorted by count as
//! `sort | uniq -c | sort -rn` would, the system context, the summary as JSON, and a README
//! saying what is in it. DIR must be new or empty when the command starts, and each file is
//! created without replacing one ([`crate::util::files::create_new`]): a file that appeared
//! in DIR meanwhile is never replaced. The count files read back through `logs DIR` to the same counts
//! ([`super::summary::COUNT_FILES`]); a log's control characters are escaped in them. Each
//! command of the replay file is written as the driver runs it
//! ([`super::driver::replayable`]), whatever form it was logged in.
//!
//! [`from_cases`] makes the same summary of a run's cases (`run --export-rocm-bundle`).
//!
//! Must not: read logs.
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::dropped::{Dropped, Why};
use super::logs_json::{FileRead, HipblasltJson, LogsJson, MiopenJson};
use super::miopen::{add, MAX_COMMANDS};
use crate::report::Outcome;
use crate::util::error::UserError;

/// The files a bundle holds.
pub const FILES: [&str; 5] = [
    "README.md",
    "hipblaslt-gemms.txt",
    "miopen-commands.txt",
    "summary.json",
    "system.json",
];

/// DIR is usable (`logs --bundle DIR`): see [`check_for`].
pub fn check(dir: &Path) -> Result<(), UserError> {
    check_for("--bundle", dir)
}

/// DIR, given by `flag`, is usable: absent (made) or an empty folder, and files can be
/// created there, tried at once ([`crate::util::files::check_can_fill`], which leaves
/// nothing behind): before any input is read or any case runs.
pub fn check_for(flag: &str, dir: &Path) -> Result<(), UserError> {
    check_kind(dir).map_err(|e| match e {
        UserError::Other(m) => UserError::Other(m.replacen("--bundle", flag, 1)),
        e => e,
    })?;
    crate::util::files::check_can_fill(dir).map_err(|e| {
        UserError::Other(format!(
            "{flag} {}: no file can be created there ({e}); give a folder you may write",
            dir.display()
        ))
    })
}

/// DIR is absent, with a folder as its nearest existing ancestor, or an empty folder.
fn check_kind(dir: &Path) -> Result<(), UserError> {
    match std::fs::symlink_metadata(dir) {
        // Absent: its nearest existing ancestor must be a folder (it is made there).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut up = dir.parent();
            while let Some(p) = up.filter(|p| !p.as_os_str().is_empty()) {
                match std::fs::metadata(p) {
                    Ok(m) if m.is_dir() => return Ok(()),
                    Ok(_) => {
                        return Err(UserError::Other(format!(
                            "--bundle {}: {} is not a folder",
                            dir.display(),
                            p.display()
                        )))
                    }
                    Err(_) => up = p.parent(),
                }
            }
            Ok(())
        }
        Err(e) => Err(UserError::Other(format!("--bundle {}: {e}", dir.display()))),
        Ok(m) if m.is_dir() => match std::fs::read_dir(dir).map(|mut e| e.next().is_none()) {
            Ok(true) => Ok(()),
            Ok(false) => Err(UserError::Other(format!(
                "--bundle {}: the folder is not empty; give a new or empty folder (nothing in it is overwritten)",
                dir.display()
            ))),
            Err(e) => Err(UserError::Other(format!("--bundle {}: {e}", dir.display()))),
        },
        Ok(_) => Err(UserError::Other(format!(
            "--bundle {}: not a folder; give a new or empty folder",
            dir.display()
        ))),
    }
}

/// No other output of the command may lie inside the bundle folder: the bundle's files would
/// replace it (`--json b/summary.json --bundle b`), however spelled (a link to `b`, `c/../b`:
/// [`crate::util::files::check_outside`]).
pub fn check_apart<'a>(dir: &Path, others: impl IntoIterator<Item = (&'a str, &'a Path)>) -> Result<(), UserError> {
    let bundle = crate::util::files::OutFolder {
        flag: "--bundle",
        what: "bundle folder",
        path: dir,
    };
    let others: Vec<crate::util::files::Named> = others.into_iter().map(|(flag, p)| (flag, Some(p))).collect();
    crate::util::files::check_outside(&[bundle], &others)
}

/// What the bundle of a run stopped part way says of itself (`run --export-rocm-bundle`
/// after SIGINT or SIGTERM): `partial` in `summary.json`, and a paragraph atop the README.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Partial {
    /// The cases measured (those the bundle holds).
    pub cases_measured: usize,
    /// The cases the run was to measure.
    pub cases_planned: usize,
    /// The signal that stopped it (`SIGTERM`).
    pub stopped_by: String,
}

/// `summary.json`: the summary, `partial` first when the bundle is partial.
#[derive(serde::Serialize)]
struct Summary<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    partial: Option<&'a Partial>,
    #[serde(flatten)]
    json: &'a LogsJson,
}

/// Write the bundle into `dir` (checked by [`check`]); a file of the bundle that exists by
/// now (made meanwhile by someone else) stops it, named, and what this call made is removed.
/// `partial`: the run that made it was stopped part way (said in the summary and README).
pub fn write(dir: &Path, json: &LogsJson, partial: Option<&Partial>) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| UserError::Other(format!("--bundle {}: {e}", dir.display())))?;
    let line = |count: u64, text: &str| format!("{count:>7} {}\n", crate::util::format::printable(text));
    // A replay file holds only what was logged to replay: whole bench lines, not trace lines,
    // result rows or cut bench lines (which would replay a GEMM that never ran with the
    // tool's defaults for what was cut; all are in summary.json).
    let gemms: String = json
        .hipblaslt
        .gemms
        .iter()
        .filter(|g| replays(g))
        .map(|g| line(g.count, &g.command))
        .collect();
    let mut problems: Vec<_> = json.miopen.problems.iter().collect();
    problems.sort_by(|a, b| crate::rocm::miopen::problem_order(a, b));
    let mut unread: Vec<_> = json.miopen.unread_commands.iter().collect();
    unread.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.command.cmp(&b.command)));
    // Each as the driver runs it (`driver::replayable`): an old MIOpen's API call dropped
    // (its direction given as `-F`), `MIOpenDriver` before the execution summary's bare
    // `conv ...`; so it replays, and reads back to the same problem.
    let replay = |text: &str| crate::rocm::driver::replayable(text);
    let commands: String = problems
        .iter()
        .map(|p| line(p.count, &replay(&p.command)))
        .chain(unread.iter().map(|u| line(u.count, &replay(&u.command))))
        .collect();
    let system = crate::machine::system::collect();
    let files = [
        ("hipblaslt-gemms.txt", gemms),
        ("miopen-commands.txt", commands),
        (
            "summary.json",
            super::summary::json_text(&Summary { partial, json })? + "\n",
        ),
        ("system.json", serde_json::to_string_pretty(&system)? + "\n"),
        ("README.md", readme(json, partial)),
    ];
    let mut made = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        if let Err(e) = crate::util::files::create_new(&path, text.as_bytes()) {
            for p in &made {
                let _ = std::fs::remove_file(p);
            }
            return Err(match e.kind() {
                std::io::ErrorKind::AlreadyExists => UserError::Other(format!(
                    "bundle folder {}: {name} appeared in it after it was checked; it is not replaced, and \
                     nothing of this bundle is left there: give a new or empty folder",
                    dir.display()
                ))
                .into(),
                _ => anyhow::Error::new(e).context(format!("cannot write {}", path.display())),
            });
        }
        made.push(path);
    }
    Ok(())
}

/// A GEMM the replay file holds: one with a whole bench line.
fn replays(g: &crate::report::Gemm) -> bool {
    g.form == "bench" && !g.incomplete
}

fn readme(json: &LogsJson, partial: Option<&Partial>) -> String {
    let text = readme_whole(json);
    let Some(p) = partial else {
        return text;
    };
    // After the title line: what the bundle lacks comes before what it holds.
    let (title, rest) = text.split_once("\n\n").unwrap_or((&text, ""));
    format!(
        "{title}\n\n**Partial**: the run was stopped by {} after {} of the {} cases it planned: this \
         bundle holds what {} logged, not the whole matrix (`summary.json`: `partial`).\n\n{rest}",
        p.stopped_by,
        p.cases_measured,
        p.cases_planned,
        crate::util::format::count(p.cases_measured, "measured case")
    )
}

fn readme_whole(json: &LogsJson) -> String {
    let files: Vec<String> = json
        .files
        .iter()
        .map(|f| format!("`{}`", crate::util::format::printable(&f.path)))
        .collect();
    let bench = json.hipblaslt.gemms.iter().filter(|g| replays(g)).count();
    let other = json.hipblaslt.gemms.len() - bench;
    format!(
        "# ROCm logs, summarized by wan-vae-bench {}\n\n\
         Made by `wan-vae-bench logs --bundle` from {}, for an issue such as ROCm/TheRock #2591.\n\n\
         - `hipblaslt-gemms.txt`: the unique hipBLASLt (and rocBLAS) bench lines (`HIPBLASLT_LOG_MASK=32`), \
         each with how many times it was logged, most frequent first ({bench} lines), as `sort | uniq -c | sort -rn` \
         writes them. Each line replays its GEMM with `hipblaslt-bench`.{}\n\
         - `miopen-commands.txt`: one `MIOpenDriver` command per distinct convolution problem, with how many \
         command lines named it, most frequent first ({} problems{}). Each replays its convolution: it is \
         written as the driver runs it, whatever form it was logged in (an old MIOpen's API call before it \
         dropped and its direction given as `-F`; `MIOpenDriver` before a bare `conv ...`).\n\
         - `summary.json`: everything `logs --json` reports: MIOpen's version and find mode, whether its \
         database was cold, each problem with the solver MIOpen ran it with, the kernels, the GEMMs.\n\
         - `system.json`: the machine, GPU, driver and ROCm this summary was made on (the machine that \
         ran `logs`, which may not be the one that wrote the logs).\n\n\
         `wan-vae-bench logs` on this folder reads the two count files back to the same counts.\n",
        env!("CARGO_PKG_VERSION"),
        files.join(", "),
        if other > 0 {
            format!(" {other} GEMMs seen in trace lines, result rows or cut bench lines have no whole bench line to replay: they are in `summary.json`.")
        } else {
            String::new()
        },
        json.miopen.problems.len(),
        if json.miopen.unread_commands.is_empty() {
            String::new()
        } else {
            format!(
                ", then {} commands with a value the driver cannot take, which do not replay",
                json.miopen.unread_commands.len()
            )
        },
    )
}

/// The summary of what the cases' records hold: each case that logged MIOpen or hipBLASLt
/// lines is one entry of `files` (`case ID`; `lines` and `rocm_lines` count its distinct
/// problems and GEMMs), and their problems, solvers, kernels and GEMMs are summed as if one
/// log held them all. A sum past 64 bits (a hostile record's counts) keeps the total it had
/// and counts 1 in `dropped`; at most [`MAX_COMMANDS`] unread commands are kept, the rest
/// counted in `dropped`.
pub fn from_cases<'a>(cases: impl Iterator<Item = (&'a str, &'a Outcome)>) -> LogsJson {
    let (mut m, mut h) = (MiopenJson::default(), HipblasltJson::default());
    let (mut m_dropped, mut h_dropped) = (Dropped::default(), Dropped::default());
    let mut problem_at: HashMap<String, usize> = HashMap::new();
    let mut kernel_at: HashMap<String, usize> = HashMap::new();
    let mut unread_at: HashMap<String, usize> = HashMap::new();
    let mut gemm_at: HashMap<String, usize> = HashMap::new();
    let mut files = Vec::new();
    let merge = |map: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>, dropped: &mut Dropped| {
        for (k, v) in from {
            add(map.entry(k.clone()).or_default(), *v, dropped);
        }
    };
    for (id, outcome) in cases {
        let mut read = 0;
        if let Some(log) = &outcome.miopen {
            for v in &log.versions {
                if !m.versions.contains(v) {
                    m.versions.push(v.clone());
                }
            }
            for v in &log.find_modes {
                if !m.find_modes.contains(v) {
                    m.find_modes.push(v.clone());
                }
            }
            m.cold_db_evidence
                .extend(log.cold_db.iter().take(8 - m.cold_db_evidence.len().min(8)).cloned());
            merge(&mut m.solvers, &log.solvers, &mut m_dropped);
            merge(&mut m.evaluated_solvers, &log.evaluated_solvers, &mut m_dropped);
            for p in &log.problems {
                let key = crate::rocm::driver::key(p);
                match problem_at.get(&key) {
                    Some(&i) => {
                        let q = &mut m.problems[i];
                        add(&mut q.count, p.count, &mut m_dropped);
                        merge(&mut q.solvers, &p.solvers, &mut m_dropped);
                    }
                    None => {
                        problem_at.insert(key, m.problems.len());
                        m.problems.push(p.clone());
                    }
                }
            }
            for k in &log.kernels {
                match kernel_at.get(&k.name) {
                    Some(&i) => add(&mut m.kernels[i].count, k.count, &mut m_dropped),
                    None => {
                        kernel_at.insert(k.name.clone(), m.kernels.len());
                        m.kernels.push(k.clone());
                    }
                }
            }
            for u in &log.unread_commands {
                match unread_at.get(&u.command) {
                    Some(&i) => add(&mut m.unread_commands[i].count, u.count, &mut m_dropped),
                    None if m.unread_commands.len() < MAX_COMMANDS => {
                        unread_at.insert(u.command.clone(), m.unread_commands.len());
                        m.unread_commands.push(u.clone());
                    }
                    None => m_dropped.add(Why::Capped, None),
                }
            }
            m.counted_lines = m.counted_lines.saturating_add(log.counted_lines);
            m_dropped.add_n(Why::CaseRecords, log.dropped, None);
            read += (log.problems.len() + log.unread_commands.len()) as u64;
        }
        if let Some(log) = &outcome.hipblaslt {
            for g in &log.gemms {
                match gemm_at.get(&g.command) {
                    Some(&i) => add(&mut h.gemms[i].count, g.count, &mut h_dropped),
                    None => {
                        gemm_at.insert(g.command.clone(), h.gemms.len());
                        h.gemms.push(g.clone());
                    }
                }
            }
            h_dropped.add_n(Why::CaseRecords, log.dropped, None);
            read += log.gemms.len() as u64;
        }
        if outcome.miopen.is_some() || outcome.hipblaslt.is_some() {
            files.push(FileRead {
                path: format!("case {id}"),
                lines: read,
                rocm_lines: read,
                diff_removed_lines: 0,
                rejoined_lines: 0,
            });
        }
    }
    m.cold_db = !m.cold_db_evidence.is_empty();
    (m.dropped, m.dropped_reasons) = (m_dropped.total(), m_dropped.reasons());
    (h.dropped, h.dropped_reasons) = (h_dropped.total(), h_dropped.reasons());
    crate::rocm::miopen::settle(&mut m.problems, &mut m.kernels);
    crate::rocm::hipblaslt::sort(&mut h.gemms);
    LogsJson {
        schema: super::logs_json::SCHEMA.to_string(),
        files,
        conclusions: super::conclusion::conclusions(&m),
        miopen: m,
        hipblaslt: h,
    }
}
