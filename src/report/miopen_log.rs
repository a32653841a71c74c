//! A case's `miopen` record: what MIOpen's log lines on its worker's stderr said, as
//! `run::miopen` read them.
//!
//! Must not: read logs (that is `run::miopen`).
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the MIOpen log lines on a worker's stderr said (`MIOPEN_ENABLE_LOGGING_CMD=1`,
/// `MIOPEN_LOG_LEVEL=5`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct MiopenLog {
    /// Solver name -> how many times MIOpen said it chose or ran it: a Find's `Chosen
    /// Algorithm` line, or immediate mode's `[Convolution...Immediate] solver_id = NAME`
    /// (PyTorch's default, `cudnn.benchmark` off). Never a solver only evaluated or listed.
    pub solvers: BTreeMap<String, u64>,
    /// Solvers MIOpen evaluated during a Find (`Evaluating Solver: ALGO:NAME`), not chosen.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evaluated_solvers: BTreeMap<String, u64>,
    /// The find modes MIOpen said were in force (`MIOPEN_FIND_MODE = DYNAMIC_HYBRID(5)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub find_modes: Vec<String>,
    /// The MIOpen versions it reported (`MIOpen version 3.3.0.`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// Each `MIOpenDriver` command -> the solvers the call it was logged for chose or ran,
    /// counted: a solver line is tied to the command line logged before it, by order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub solver_by_command: BTreeMap<String, BTreeMap<String, u64>>,
    /// Distinct `MIOpenDriver` command lines, in the order first seen (to replay a slow
    /// convolution).
    pub driver_commands: Vec<String>,
    /// Solver names and distinct commands not kept: past the caps of 200 distinct solvers and
    /// 1000 distinct commands per case. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
