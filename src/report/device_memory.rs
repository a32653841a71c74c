//! A case's peak device memory by one metric for every engine (`device_process_peak`): the
//! worker process's device memory as the NVIDIA driver reports it (NVML's per-process used
//! memory: the CUDA context, the allocator's pools, cuDNN's and cuBLAS's workspaces), sampled
//! by the parent while the worker runs its encode and decode passes (warmups included), so
//! candle (whose allocator returns memory) and torch (whose caching allocator keeps it) are
//! measured alike. `run::telemetry::process_memory` samples it.
//!
//! Must not: sample (the parent's telemetry does).
use serde::{Deserialize, Serialize};

/// The peak of a worker's device memory during its passes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct DeviceProcessPeak {
    /// The largest reading taken during a pass, bytes; absent when none was taken (the
    /// driver listed no memory for the process, or no pass ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_bytes: Option<u64>,
    /// Readings taken during the passes.
    pub samples: u64,
    /// The sampling interval, milliseconds (a peak shorter than it can be missed).
    pub interval_ms: u64,
    /// Where the readings come from.
    pub source: String,
    /// Why there is no peak, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
