//! What a set of logs says, as `logs` prints it and `logs --json` writes it ([`LogsJson`], a
//! contract): MIOpen's versions, find modes and database state, one row per distinct
//! convolution problem with the solver MIOpen ran it with and its family, the kernels it
//! launched, and the distinct hipBLASLt/rocBLAS GEMMs by count; [`read_all`] reads the files
//! (a file that cannot be read, or that holds no ROCm line, is unusable input, named).
//!
//! Every input is read before anything is printed or written: a file that cannot be read,
//! or that holds no line of MIOpen's and no GEMM line, is unusable input (exit 2), named.
//! One file given twice (the same path, a link to it, `-` and `/dev/stdin`) is read once. A
//! bundle folder (`logs DIR` on what `--bundle DIR` wrote) is read through its count files,
//! not its `summary.json` as well. What a log holds reaches the terminal and the bundle's
//! text files with its control characters escaped ([`crate::util::format::printable`];
//! [`json_text`] for the JSON).
//!
//! Must not: run anything (it reads what was logged), print or write files.
use std::path::PathBuf;

use serde::Serialize;

use super::logs_json::{ErrorCount, FileRead, HipblasltJson, LogsJson, MiopenJson, SCHEMA};
use crate::rocm::{LogReader, RocmLogs};
use crate::util::error::UserError;

/// The count files of a bundle (`crate::rocm::bundle` writes them), in `uniq -c`'s format:
/// what `logs DIR` reads back.
pub const COUNT_FILES: [&str; 2] = ["hipblaslt-gemms.txt", "miopen-commands.txt"];

/// Read every input into one summary; a file that cannot be read or holds no ROCm line is
/// unusable input (exit 2), named. A file given twice is read once (said on stderr).
pub fn read_all(files: &[PathBuf]) -> anyhow::Result<LogsJson> {
    let mut reader = LogReader::default();
    let mut read = Vec::new();
    let mut seen: Vec<(Identity, String)> = Vec::new();
    for path in files {
        for (input, shown) in inputs(path)? {
            if let Some(id) = identity(&input) {
                if let Some((_, first)) = seen.iter().find(|(i, _)| *i == id) {
                    crate::errln!(
                        "{}: the same file as {}, read once",
                        crate::util::format::printable(&shown),
                        crate::util::format::printable(first)
                    );
                    continue;
                }
                seen.push((id, shown.clone()));
            }
            read.push(read_one(&input, &shown, &mut reader)?);
        }
    }
    Ok(summary(read, reader.finish()))
}

/// The files `path` stands for: itself (`-` for stdin), or a bundle folder's count files.
fn inputs(path: &PathBuf) -> Result<Vec<(PathBuf, String)>, UserError> {
    if path.as_os_str() == "-" {
        return Ok(vec![(path.clone(), "standard input".into())]);
    }
    if !std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Ok(vec![(path.clone(), path.display().to_string())]);
    }
    let counts: Vec<(PathBuf, String)> = read_through(path)
        .into_iter()
        // An empty one (no GEMM, or no command, was logged) holds nothing to read.
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() > 0))
        .map(|p| {
            let shown = p.display().to_string();
            (p, shown)
        })
        .collect();
    if counts.is_empty() {
        return Err(UserError::Other(format!(
            "{} is a folder with no bundle in it ({}): give log files, or a folder `logs --bundle` wrote",
            path.display(),
            COUNT_FILES.join(", ")
        )));
    }
    Ok(counts)
}

/// Every file `logs` may read for `path` as given: itself, or for a folder each of its count
/// files (an empty or absent one too: it belongs to the bundle read, never to an output), so
/// an output is compared with what is read, not with the folder.
pub fn read_through(path: &std::path::Path) -> Vec<PathBuf> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        COUNT_FILES.iter().map(|f| path.join(f)).collect()
    } else {
        vec![path.to_path_buf()]
    }
}

/// A file's identity: its device and inode (stdin's through `/dev/stdin`).
type Identity = (u64, u64);

fn identity(path: &std::path::Path) -> Option<Identity> {
    let path = if path.as_os_str() == "-" {
        std::path::Path::new("/dev/stdin")
    } else {
        path
    };
    crate::util::files::identity(&std::fs::metadata(path).ok()?)
}

/// Read one input into `reader`; how many of its lines were ROCm's. Only what can end is
/// read: a regular file, a FIFO or a pipe, or a terminal on standard input; a device
/// (`/dev/zero`, `/dev/urandom`) or a socket is refused before a byte is read, as the rest
/// of the tool refuses them. The tool's own JSON (a `logs --json` summary, a bundle's
/// `summary.json`, a report) is refused: it is no log, and its commands and GEMMs would be
/// read as logged once each ([`own_output`]).
fn read_one(path: &std::path::Path, shown: &str, reader: &mut LogReader) -> anyhow::Result<FileRead> {
    let before = (reader.rocm_lines(), reader.removed_lines(), reader.rejoined_lines());
    let cannot = |e: std::io::Error| UserError::Other(format!("cannot read {shown}: {e}"));
    let lines = if path.as_os_str() == "-" {
        let meta = stdin_metadata().map_err(cannot)?;
        use std::io::IsTerminal;
        if !readable(&meta) && !std::io::stdin().is_terminal() {
            return Err(not_readable(shown, &meta).into());
        }
        let mut input = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
        own_output(&mut input, path, shown)?;
        crate::rocm::read_stream(input, reader)
    } else {
        // Checked before it is opened (opening a FIFO waits for a writer; a device is never
        // opened), then again on what was opened (a rename in between).
        let meta = std::fs::metadata(path).map_err(cannot)?;
        if meta.is_dir() {
            return Err(UserError::Other(format!("{shown} is a folder: give log files")).into());
        }
        if !readable(&meta) {
            return Err(not_readable(shown, &meta).into());
        }
        let file = std::fs::File::open(path).map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        if meta.is_dir() {
            return Err(UserError::Other(format!("{shown} is a folder: give log files")).into());
        }
        if !readable(&meta) {
            return Err(not_readable(shown, &meta).into());
        }
        let mut input = std::io::BufReader::with_capacity(1 << 16, file);
        own_output(&mut input, path, shown)?;
        crate::rocm::read_stream(input, reader)
    }
    .map_err(cannot)?;
    reader.end_of_input();
    let rocm_lines = reader.rocm_lines() - before.0;
    let diff_removed_lines = reader.removed_lines() - before.1;
    let rejoined_lines = reader.rejoined_lines() - before.2;
    if rocm_lines == 0 {
        return Err(UserError::Other(format!(
            "{shown}: no MIOpen line and no hipBLASLt or rocBLAS GEMM line in {lines} lines; run the program with \
             MIOPEN_ENABLE_LOGGING_CMD=1 MIOPEN_LOG_LEVEL=5 (MIOpen) or HIPBLASLT_LOG_MASK=32 (hipBLASLt) and give \
             its output (see docs/rocm.md)"
        ))
        .into());
    }
    Ok(FileRead {
        path: shown.to_string(),
        lines,
        rocm_lines,
        diff_removed_lines,
        rejoined_lines,
    })
}

/// Standard input's own metadata (`fstat` of file descriptor 0): the file, FIFO, device or
/// terminal it is, whatever path reached it.
pub fn stdin_metadata() -> std::io::Result<std::fs::Metadata> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
    std::fs::File::from(fd).metadata()
}

/// A regular file or a FIFO (a pipe): what ends. Not a device, socket or folder.
fn readable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.is_file() || meta.file_type().is_fifo()
}

fn not_readable(shown: &str, meta: &std::fs::Metadata) -> UserError {
    UserError::Other(format!(
        "{shown} is {}, not a regular file; refusing to read it (it may never end): give a log file, a pipe, or `-` \
         for standard input",
        crate::util::read::kind(meta)
    ))
}

/// Refuse (exit 2) an input that is this tool's own JSON: it starts with `{` and its first
/// 4 KiB name `wan-vae-bench` (a `logs --json` summary's `schema`, a report's `tool`). It is
/// no log: its commands and GEMMs would each be read as logged once, its counts lost. A
/// bundle's `summary.json` points at the bundle folder, which `logs DIR` reads through its
/// count files.
fn own_output(input: &mut impl std::io::BufRead, path: &std::path::Path, shown: &str) -> Result<(), UserError> {
    let head = match input.fill_buf() {
        Ok(b) => &b[..b.len().min(4096)],
        Err(_) => return Ok(()),
    };
    let text = String::from_utf8_lossy(head);
    let json = text.trim_start().starts_with('{');
    if !(json && (text.contains("\"wan-vae-bench logs") || text.contains("\"name\": \"wan-vae-bench\""))) {
        return Ok(());
    }
    let folder = path
        .parent()
        .filter(|p| COUNT_FILES.iter().any(|f| p.join(f).is_file()))
        .filter(|_| path.file_name().is_some_and(|n| n == "summary.json"));
    let what = if text.contains("\"wan-vae-bench logs") {
        "a `logs --json` summary"
    } else {
        "a report of `run`"
    };
    Err(UserError::Other(match folder {
        Some(dir) => format!(
            "{shown} is the summary of a bundle `logs --bundle` wrote, not a log: give the bundle folder ({}), \
             which is read through its count files, or the logs it was made from",
            dir.display()
        ),
        None => format!(
            "{shown} is wan-vae-bench's own JSON ({what}), not a log: read as a log, each of its commands and \
             GEMMs would count once; give the logs it was made from, or a bundle folder `logs --bundle` wrote"
        ),
    }))
}

/// The JSON summary of what was read.
pub fn summary(files: Vec<FileRead>, logs: RocmLogs) -> LogsJson {
    let mut miopen = logs.miopen.map_or_else(MiopenJson::default, |m| MiopenJson {
        versions: m.versions,
        find_modes: m.find_modes,
        cold_db: !m.cold_db.is_empty(),
        cold_db_evidence: m.cold_db,
        problems: m.problems,
        solvers: m.solvers,
        evaluated_solvers: m.evaluated_solvers,
        kernels: m.kernels,
        unread_commands: m.unread_commands,
        counted_lines: m.counted_lines,
        dropped: m.dropped,
        dropped_reasons: Vec::new(),
        system_db_missing: Vec::new(),
        errors: Vec::new(),
    });
    // What a log with no problem or solver still said.
    miopen.dropped = logs.miopen_dropped.total();
    miopen.dropped_reasons = logs.miopen_dropped.reasons();
    miopen.system_db_missing = logs.miopen_notes.system_db;
    miopen.errors = logs
        .miopen_notes
        .errors
        .into_iter()
        .map(|(error, count)| ErrorCount { error, count })
        .collect();
    let hipblaslt = logs.hipblaslt.map_or_else(HipblasltJson::default, |h| HipblasltJson {
        gemms: h.gemms,
        dropped: h.dropped,
        dropped_reasons: logs.hipblaslt_dropped.reasons(),
    });
    let conclusions = super::conclusion::conclusions(&miopen);
    LogsJson {
        schema: SCHEMA.to_string(),
        files,
        conclusions,
        miopen,
        hipblaslt,
    }
}

/// `json` as pretty JSON with every control character escaped: serde escapes those below
/// U+0020; DEL and the C1 controls (U+0080 to U+009F, which some terminals obey) too.
pub fn json_text(json: &impl Serialize) -> anyhow::Result<String> {
    let text = serde_json::to_string_pretty(json)?;
    Ok(text
        .chars()
        .map(|c| match c {
            '\u{7f}' | '\u{80}'..='\u{9f}' => format!("\\u{:04x}", c as u32),
            c => c.to_string(),
        })
        .collect())
}
