//! The software stack one case ran on, as its report records it, component by component,
//! and what differs between two runs: the tool's version and commit, the kernel, the
//! amdgpu / NVIDIA driver, ROCm, the case's engine's context (torch, HIP, CUDA,
//! MIOpen / cuDNN, diffusers, ComfyUI version and commit, Python), the variables its worker
//! saw (the env variant's, and the recorded prefixes), the tool's own overrides
//! (`run.overrides`) and the weights' sha256.
//!
//! Must not: judge timings; it names components only.
use std::collections::BTreeMap;

use serde::Serialize;

use crate::report::{CaseRecord, Report};

/// Component name -> its value (absent when the report does not record it).
pub type Stack = BTreeMap<String, String>;

/// One component that differs between the last run before a step and the first after it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Change {
    /// The component, e.g. `torch`, `kernel`, `env MIOPEN_FIND_MODE`.
    pub component: String,
    /// Its value before (null: not recorded).
    pub before: Option<String>,
    /// Its value after (null: not recorded).
    pub after: Option<String>,
}

impl Change {
    /// `torch 2.4.0 -> 2.5.0`.
    pub fn text(&self) -> String {
        let v = |s: &Option<String>| s.clone().unwrap_or_else(|| "(none)".into());
        format!("{} {} -> {}", self.component, v(&self.before), v(&self.after))
    }
}

/// The stack `case` of `report` ran on.
pub fn of(report: &Report, case: &CaseRecord) -> Stack {
    let mut s = Stack::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            s.insert(k.to_string(), v);
        }
    };
    put("tool version", Some(report.tool.version.clone()));
    put("tool commit", report.tool.git_commit.clone());
    let sys = case.system.as_ref().unwrap_or(&report.system);
    put("kernel", sys.kernel.clone());
    put("NVIDIA driver", sys.nvidia_driver_version.clone());
    let amd: Vec<String> = sys
        .gpus
        .iter()
        .filter(|g| g.vendor == "amd")
        .filter_map(|g| g.driver_version.clone())
        .collect();
    put("amdgpu driver", (!amd.is_empty()).then(|| amd.join(", ")));
    put("ROCm", sys.rocm_version.clone());
    put("candle", sys.candle_version.clone());
    put("rustc", sys.rustc_version.clone());
    if let Some(ctx) = report.engines.get(case.settings.engine.name()) {
        for (key, name) in [
            ("torch", "torch"),
            ("hip", "HIP"),
            ("cuda", "CUDA"),
            ("cudnn_version", "MIOpen/cuDNN"),
            ("diffusers", "diffusers"),
            ("comfyui_version", "ComfyUI version"),
            ("comfyui_commit", "ComfyUI commit"),
            ("python", "Python"),
        ] {
            put(name, ctx.get(key).map(plain));
        }
    }
    for (k, v) in &case.run.as_ref().unwrap_or(&report.run).overrides {
        put(&format!("override {k}"), Some(v.clone()));
    }
    // The tool's own scratch paths are not the user's stack (older reports recorded them).
    for (k, v) in crate::report::env::user_env(&case.outcome.env) {
        put(&format!("env {k}"), Some(v.clone()));
    }
    put(
        "weights sha256",
        report
            .model
            .sha256
            .clone()
            .or_else(|| Some(report.model.source.clone())),
    );
    s
}

/// A JSON value as text (strings without their quotes).
fn plain(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The components whose values differ (one side may lack it), in name order.
pub fn diff(before: &Stack, after: &Stack) -> Vec<Change> {
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| Change {
            component: k.clone(),
            before: before.get(k).cloned(),
            after: after.get(k).cloned(),
        })
        .collect()
}
