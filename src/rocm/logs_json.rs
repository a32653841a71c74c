//! The JSON `logs --json` writes ([`LogsJson`], a contract: field names are kept) and the
//! bundle's `summary.json` holds: its record types, filled by [`super::summary`] (and by
//! [`super::bundle`] reading a bundle back), read by [`super::conclusion`] and
//! [`super::render`].
//!
//! Must not: read logs or decide anything; types only.
use std::collections::BTreeMap;

use serde::Serialize;

use crate::report::{ConvProblem, Gemm, KernelCount, UnreadCommand};
use crate::rocm::dropped::DroppedReason;

/// What `logs --json` writes. Field names are a contract.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LogsJson {
    /// `wan-vae-bench logs`, and this layout's version.
    pub schema: String,
    pub files: Vec<FileRead>,
    /// What the logs show, each in one line ([`super::conclusion`], filled by [`super::summary`]): most convolution calls
    /// ran MIOpen's naive fallback, and what to try.
    pub conclusions: Vec<String>,
    pub miopen: MiopenJson,
    pub hipblaslt: HipblasltJson,
}

/// One input and how many of its lines were ROCm's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FileRead {
    pub path: String,
    pub lines: u64,
    pub rocm_lines: u64,
    /// Lines a pasted diff removed (`-`): not read, not counted as calls. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub diff_removed_lines: u64,
    /// Physical lines joined back to the command a narrow terminal cut them from
    /// ([`crate::rocm::wrapped`]): `lines` counts them as they came. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rejoined_lines: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    /// Records, names and counts not kept, over all reasons.
    pub dropped: u64,
    /// Why: each reason with how many and the first record dropped for it.
    pub dropped_reasons: Vec<DroppedReason>,
    /// The lines that said MIOpen's system database is missing or unreadable (`Missing
    /// system database file: gfx1151_40.kdb Performance may degrade`), as logged.
    pub system_db_missing: Vec<String>,
    /// MIOpen's `Error` lines, counted by their text without the source path, in the order
    /// first seen.
    pub errors: Vec<ErrorCount>,
}

/// One of MIOpen's error lines, counted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ErrorCount {
    /// `[Where] message`, the source file it named left out.
    pub error: String,
    pub count: u64,
}

/// hipBLASLt's (and rocBLAS's) part of [`LogsJson`].
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct HipblasltJson {
    /// Distinct GEMMs, most frequent first.
    pub gemms: Vec<Gemm>,
    /// Lines, GEMMs and counts not kept, over all reasons.
    pub dropped: u64,
    /// Why: each reason with how many and the first line dropped for it.
    pub dropped_reasons: Vec<DroppedReason>,
}

pub const SCHEMA: &str = "wan-vae-bench logs 2";
