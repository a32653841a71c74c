//! What a set of logs says, as `logs` prints it and `logs --json` writes it ([`LogsJson`], a
//! contract): MIOpen's versions, find modes and database state, one row per distinct
//! convolution problem with the solver MIOpen ran it with and its family, the kernels it
//! launched, and the distinct hipBLASLt/rocBLAS GEMMs by count; [`read_all`] reads the files
//! (a file that cannot be read, or that holds no ROCm line, is unusable input, named).
//!
//! Must not: run anything (it reads what was logged), print or write files.
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::report::{ConvProblem, Gemm, KernelCount};
use crate::rocm::{LogReader, RocmLogs};
use crate::util::error::UserError;

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

pub const SCHEMA: &str = "wan-vae-bench logs 1";

/// Read every input into one summary; a file that cannot be read or holds no ROCm line is
/// unusable input (exit 2), named.
pub fn read_all(files: &[PathBuf]) -> anyhow::Result<LogsJson> {
    let mut reader = LogReader::default();
    let mut read = Vec::new();
    for path in files {
        let before = reader.rocm_lines();
        let shown = if path.as_os_str() == "-" {
            "standard input".to_string()
        } else {
            path.display().to_string()
        };
        let lines = if path.as_os_str() == "-" {
            crate::rocm::read_stream(std::io::stdin().lock(), &mut reader)
        } else {
            let file = std::fs::File::open(path).map_err(|e| UserError::Other(format!("cannot read {shown}: {e}")))?;
            if file.metadata().is_ok_and(|m| m.is_dir()) {
                return Err(UserError::Other(format!("{shown} is a folder: give log files")).into());
            }
            crate::rocm::read_stream(file, &mut reader)
        }
        .map_err(|e| UserError::Other(format!("cannot read {shown}: {e}")))?;
        reader.end_of_input();
        let rocm_lines = reader.rocm_lines() - before;
        if rocm_lines == 0 {
            return Err(UserError::Other(format!(
                "{shown}: no MIOpen line and no hipBLASLt or rocBLAS bench line in {lines} lines; run the program with \
                 MIOPEN_ENABLE_LOGGING_CMD=1 MIOPEN_LOG_LEVEL=5 (MIOpen) or HIPBLASLT_LOG_MASK=32 (hipBLASLt) and give \
                 its output (see docs/rocm.md)"
            ))
            .into());
        }
        read.push(FileRead {
            path: shown,
            lines,
            rocm_lines,
        });
    }
    Ok(summary(read, reader.finish()))
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
