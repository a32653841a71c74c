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
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::report::{ConvProblem, Gemm, KernelCount, UnreadCommand};
use crate::rocm::{LogReader, RocmLogs};
use crate::util::error::UserError;

/// The count files of a bundle (`crate::rocm::bundle` writes them), in `uniq -c`'s format:
/// what `logs DIR` reads back.
pub const COUNT_FILES: [&str; 2] = ["hipblaslt-gemms.txt", "miopen-commands.txt"];

/// What `logs --json` writes. Field names are a contract.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LogsJson {
    /// `wan-vae-bench logs`, and this layout's version.
    pub schema: String,
    pub files: Vec<FileRead>,
    pub miopen: MiopenJson,
    pub hipblaslt: HipblasltJson,
}

/// One input and how many of its lines were ROCm's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FileRead {
    pub path: String,
    pub lines: u64,
    pub rocm_lines: u64,
}

/// MIOpen's part of [`LogsJson`]; every field present, empty when the logs say nothing.
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct MiopenJson {
    pub versions: Vec<String>,
    pub find_modes: Vec<String>,
    /// Whether a line showed a cold find or performance database.
    pub cold_db: bool,
    pub cold_db_evidence: Vec<String>,
    pub problems: Vec<ConvProblem>,
    /// Solver -> how many times MIOpen chose or ran it.
    pub solvers: BTreeMap<String, u64>,
    /// Solver -> how many times a Find evaluated, listed or timed it without choosing it.
    pub evaluated_solvers: BTreeMap<String, u64>,
    pub kernels: Vec<KernelCount>,
    /// Driver commands with a value the driver cannot take: as logged, counted, and why.
    pub unread_commands: Vec<UnreadCommand>,
    /// Lines that carried a `uniq -c` count: their solver lines are not tied to commands.
    pub counted_lines: u64,
    /// Names and commands past the caps (not kept).
    pub dropped: u64,
}

/// hipBLASLt's (and rocBLAS's) part of [`LogsJson`].
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct HipblasltJson {
    /// Distinct GEMMs, most frequent first.
    pub gemms: Vec<Gemm>,
    pub dropped: u64,
}

pub const SCHEMA: &str = "wan-vae-bench logs 2";

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

/// Read one input into `reader`; how many of its lines were ROCm's.
fn read_one(path: &std::path::Path, shown: &str, reader: &mut LogReader) -> anyhow::Result<FileRead> {
    let before = reader.rocm_lines();
    let lines = if path.as_os_str() == "-" {
        crate::rocm::read_stream(std::io::stdin().lock(), reader)
    } else {
        let file = std::fs::File::open(path).map_err(|e| UserError::Other(format!("cannot read {shown}: {e}")))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(UserError::Other(format!("{shown} is a folder: give log files")).into());
        }
        crate::rocm::read_stream(file, reader)
    }
    .map_err(|e| UserError::Other(format!("cannot read {shown}: {e}")))?;
    reader.end_of_input();
    let rocm_lines = reader.rocm_lines() - before;
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
    })
}

/// The JSON summary of what was read.
pub fn summary(files: Vec<FileRead>, logs: RocmLogs) -> LogsJson {
    let miopen = logs.miopen.map_or_else(MiopenJson::default, |m| MiopenJson {
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
    });
    let hipblaslt = logs.hipblaslt.map_or_else(HipblasltJson::default, |h| HipblasltJson {
        gemms: h.gemms,
        dropped: h.dropped,
    });
    LogsJson {
        schema: SCHEMA.to_string(),
        files,
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
