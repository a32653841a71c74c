//! The report's record of a sharded run (`run.shard`): which part of which plan the report
//! holds, so that `merge` can check that its inputs are the parts of one plan.
//!
//! Must not: decide how a plan is split (that is `plan::shard`'s) or check merges
//! (`merge`'s); it is the record only.
use serde::{Deserialize, Serialize};

/// `run --shard K/N`: part `index` of `count` of a plan of `planned_cases` cases whose
/// fingerprint is `plan_fingerprint`. Absent from unsharded runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ShardRecord {
    /// K, 1-based.
    pub index: usize,
    /// N, how many parts the plan was split into.
    pub count: usize,
    /// Cases of the whole plan (references included), over every part.
    pub planned_cases: usize,
    /// Cases of this part (references included).
    pub shard_cases: usize,
    /// SHA-256 (first 16 hex digits) of the whole plan: its sorted case ids, warmup and timed
    /// passes and device. Every part of one plan has the same; the shuffle seed plays no part.
    pub plan_fingerprint: String,
}

impl ShardRecord {
    /// `K/N`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}
