//! What a case's worker process cost and whether it was shared ([`WorkerUse`], a case's
//! `worker` in the report): a run groups the cases that may share a process (same engine,
//! interpreter, device and environment) into one worker that imports once and keeps its
//! model; `run --isolate case` gives every case its own. The worker writes the part only it
//! can time (imports, whether it kept its model), the parent the rest.
//!
//! Must not: decide which cases share a worker (the executor does, `run::executor`).
use serde::{Deserialize, Serialize};

/// How a case's worker process was used, and its fixed costs in this case.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct WorkerUse {
    /// `fresh`: the process was started for this case (its first); `reused`: it had run
    /// earlier cases of the run.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub process: String,
    /// The worker's process id (cases with the same one shared a process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// How many cases this process ran before this one (0 when fresh).
    #[serde(default)]
    pub cases_before: usize,
    /// A fresh worker's start: from the spawn until it asked for its first case (the
    /// interpreter and the worker's own code), seconds, measured by the parent; absent when
    /// reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_to_ready_s: Option<f64>,
    /// Seconds this case spent importing the engine's libraries (torch, diffusers, ComfyUI);
    /// near 0 once a worker has imported them; absent for candle (nothing to import).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import_s: Option<f64>,
    /// Whether the worker kept the model an earlier case loaded (same weights, precision and
    /// engine): this case's `load_s` is then 0.
    #[serde(default)]
    pub model_reused: bool,
    /// The fixed cost this case paid before its first pass: `spawn_to_ready_s` (fresh only)
    /// + `import_s` + `load_s`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_s: Option<f64>,
    /// Set when the reused worker this case was first sent to ended or went deaf before it
    /// acknowledged the case (the worker's failure, not the case's): why, and that the case
    /// then ran in a fresh worker (this record's `pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<String>,
}
