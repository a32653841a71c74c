//! `logs --bundle DIR`: what AMD asks users who see slow ComfyUI runs on Strix Halo and
//! RDNA4 to attach (ROCm/TheRock #2591), made from the logs read: the unique hipBLASLt (and
//! rocBLAS) bench lines and the unique `MIOpenDriver` commands, each sorted by count as
//! `sort | uniq -c | sort -rn` would, the system context, the summary as JSON, and a README
//! saying what is in it. DIR must be new or empty: nothing the user owns is overwritten.
//!
//! [`from_cases`] makes the same summary of a run's cases (`run --export-rocm-bundle`).
//!
//! Must not: read logs.
use std::fmt::Write;
use std::path::Path;

use std::collections::HashMap;

use super::summary::{FileRead, HipblasltJson, LogsJson, MiopenJson};
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

/// DIR is usable: absent (made), or an empty folder.
pub fn check(dir: &Path) -> Result<(), UserError> {
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

/// Write the bundle into `dir` (checked by [`check`]).
pub fn write(dir: &Path, json: &LogsJson) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| UserError::Other(format!("--bundle {}: {e}", dir.display())))?;
    let mut gemms = String::new();
    for g in &json.hipblaslt.gemms {
        let _ = writeln!(gemms, "{:>7} {}", g.count, g.command);
    }
    let mut problems: Vec<_> = json.miopen.problems.iter().collect();
    problems.sort_by_key(|x| std::cmp::Reverse(x.count));
    let mut commands = String::new();
    for p in problems {
        let _ = writeln!(commands, "{:>7} {}", p.count, p.command);
    }
    let system = crate::machine::system::collect();
    crate::util::files::write_atomic(&dir.join("hipblaslt-gemms.txt"), gemms)?;
    crate::util::files::write_atomic(&dir.join("miopen-commands.txt"), commands)?;
    crate::util::files::write_atomic(&dir.join("summary.json"), serde_json::to_string_pretty(json)? + "\n")?;
    crate::util::files::write_atomic(&dir.join("system.json"), serde_json::to_string_pretty(&system)? + "\n")?;
    crate::util::files::write_atomic(&dir.join("README.md"), readme(json))?;
    Ok(())
}

fn readme(json: &LogsJson) -> String {
    let files: Vec<String> = json.files.iter().map(|f| format!("`{}`", f.path)).collect();
    format!(
        "# ROCm logs, summarized by wan-vae-bench {}\n\n\
         Made by `wan-vae-bench logs --bundle` from {}, for an issue such as ROCm/TheRock #2591.\n\n\
         - `hipblaslt-gemms.txt`: the unique hipBLASLt (and rocBLAS) bench lines (`HIPBLASLT_LOG_MASK=32`), \
         each with how many times it was logged, most frequent first ({} lines). Each line replays its GEMM \
         with `hipblaslt-bench`.\n\
         - `miopen-commands.txt`: one `MIOpenDriver` command per distinct convolution problem, with how many \
         command lines named it, most frequent first ({} problems). Each replays its convolution.\n\
         - `summary.json`: everything `logs --json` reports: MIOpen's version and find mode, whether its \
         database was cold, each problem with the solver MIOpen ran it with, the kernels, the GEMMs.\n\
         - `system.json`: the machine, GPU, driver and ROCm this summary was made on (the machine that \
         ran `logs`, which may not be the one that wrote the logs).\n",
        env!("CARGO_PKG_VERSION"),
        files.join(", "),
        json.hipblaslt.gemms.len(),
        json.miopen.problems.len(),
    )
}

/// The summary of what the cases' records hold: each case that logged MIOpen or hipBLASLt
/// lines is one entry of `files` (`case ID`; `lines` and `rocm_lines` count its distinct
/// problems and GEMMs), and their
/// problems, solvers, kernels and GEMMs are summed as if one log held them all.
pub fn from_cases<'a>(cases: impl Iterator<Item = (&'a str, &'a Outcome)>) -> LogsJson {
    let (mut m, mut h) = (MiopenJson::default(), HipblasltJson::default());
    let mut problem_at: HashMap<String, usize> = HashMap::new();
    let mut kernel_at: HashMap<String, usize> = HashMap::new();
    let mut gemm_at: HashMap<String, usize> = HashMap::new();
    let mut files = Vec::new();
    let add = |map: &mut std::collections::BTreeMap<String, u64>, from: &std::collections::BTreeMap<String, u64>| {
        for (k, v) in from {
            *map.entry(k.clone()).or_default() += v;
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
            add(&mut m.solvers, &log.solvers);
            add(&mut m.evaluated_solvers, &log.evaluated_solvers);
            for p in &log.problems {
                let key = crate::rocm::driver::key(p);
                match problem_at.get(&key) {
                    Some(&i) => {
                        let q = &mut m.problems[i];
                        q.count += p.count;
                        add(&mut q.solvers, &p.solvers);
                    }
                    None => {
                        problem_at.insert(key, m.problems.len());
                        m.problems.push(p.clone());
                    }
                }
            }
            for k in &log.kernels {
                match kernel_at.get(&k.name) {
                    Some(&i) => m.kernels[i].count += k.count,
                    None => {
                        kernel_at.insert(k.name.clone(), m.kernels.len());
                        m.kernels.push(k.clone());
                    }
                }
            }
            m.dropped += log.dropped;
            read += log.problems.len() as u64;
        }
        if let Some(log) = &outcome.hipblaslt {
            for g in &log.gemms {
                match gemm_at.get(&g.command) {
                    Some(&i) => h.gemms[i].count += g.count,
                    None => {
                        gemm_at.insert(g.command.clone(), h.gemms.len());
                        h.gemms.push(g.clone());
                    }
                }
            }
            h.dropped += log.dropped;
            read += log.gemms.len() as u64;
        }
        if outcome.miopen.is_some() || outcome.hipblaslt.is_some() {
            files.push(FileRead {
                path: format!("case {id}"),
                lines: read,
                rocm_lines: read,
            });
        }
    }
    m.cold_db = !m.cold_db_evidence.is_empty();
    crate::rocm::miopen::settle(&mut m.problems, &mut m.kernels);
    h.gemms.sort_by_key(|x| std::cmp::Reverse(x.count));
    LogsJson {
        schema: super::summary::SCHEMA.to_string(),
        files,
        miopen: m,
        hipblaslt: h,
    }
}
