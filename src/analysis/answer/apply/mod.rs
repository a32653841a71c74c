//! How to apply a measured case outside this tool: the env variant's variables to export
//! (as the workers recorded them, against the `baseline` variant's), and the settings in the
//! user's own world, as the engine's entry says ([`crate::engine::ApplyAs`]): ComfyUI's nodes
//! and launch flags ([`comfyui`]), PyTorch and diffusers calls ([`pytorch`]), or this tool's
//! flags. The text is built from what the case recorded (its settings, the passes it timed,
//! its `compute_dtype`, and the engine's own record of what it ran: ComfyUI's node widgets,
//! diffusers' `enable_tiling` keywords), never from run-wide flags. A setting that no library
//! exposes says so, and where the code change goes. Per engine: `docs/answer.md`.
//!
//! Must not: choose the case (the caller did), describe anything the case did not run, or
//! name an engine to decide what to say (its [`crate::engine::EngineSpec::apply`] does).
use std::collections::BTreeMap;

use crate::engine::ApplyAs;
use crate::report::env::{user_env, FRESH_DB_VARS};
use crate::report::settings::{CaseSettings, BASELINE};
use crate::report::values::MiopenDb;
use crate::report::{Apply, CaseRecord, Report};

mod comfyui;
mod pytorch;
#[cfg(test)]
mod tests;

/// What the advice reads of a case: its settings, its record, and the model it ran.
pub(super) struct Measured<'a> {
    pub settings: &'a CaseSettings,
    pub case: &'a CaseRecord,
    /// The Wan 2.2 VAE (its encoder tiles the patchified video: half the pixels).
    pub wan22: bool,
}

impl Measured<'_> {
    /// What the engine's own code recorded under `key` (`engine_case`).
    pub fn engine_case(&self, key: &str) -> Option<&serde_json::Value> {
        self.case.outcome.engine_case.as_ref().and_then(|m| m.get(key))
    }

    /// The passes the case timed, in order: `encode`, `decode`.
    pub fn passes(&self) -> Vec<&'static str> {
        let p = self.settings.passes;
        [("encode", p.encodes()), ("decode", p.decodes())]
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| n)
            .collect()
    }
}

/// How to apply `case`, whose default (same workload and engine) is `base` when measured.
pub fn apply(report: &Report, case: &CaseRecord, base: Option<&CaseRecord>) -> Apply {
    let s = &case.settings;
    let (env_set, env_unset) = env_change(report, case, base);
    let m = Measured {
        settings: s,
        case,
        wan22: report.model.z_dim == crate::model::ModelKind::Wan22.config().z_dim,
    };
    let mut steps = Vec::new();
    let how = crate::engine::spec(s.engine).apply;
    let comfyui = match how {
        ApplyAs::ComfyuiNodes => Some(comfyui::apply(&m, &mut steps)),
        ApplyAs::ToolFlags => {
            tool_flags(s, &mut steps);
            None
        }
        ApplyAs::PyTorch | ApplyAs::Diffusers => {
            pytorch::apply(&m, how, &mut steps);
            None
        }
    };
    steps.extend(super::levers::steps(s.engine, s.layout, s.conv3d));
    if s.knobs.miopen_db == MiopenDb::Fresh {
        steps.push(
            "an empty MIOpen database: point MIOPEN_USER_DB_PATH and MIOPEN_CUSTOM_CACHE_DIR at a new empty folder"
                .into(),
        );
    }
    if steps.is_empty() {
        steps.push("no setting besides the environment differs from the default".into());
    }
    Apply {
        engine: s.engine.name().to_string(),
        env_set,
        env_unset,
        env_not_advised: BTreeMap::new(),
        comfyui,
        steps,
    }
}

/// Variables of the case's env that the `baseline` variant's env of the same engine lacks
/// or sets differently, and those it has that the case's lacks. Empty for the `baseline`
/// variant itself; this tool's own `WAN_VAE_BENCH_*` variables (test hooks) are left out.
pub(in crate::analysis::answer) fn env_change(
    report: &Report,
    case: &CaseRecord,
    base: Option<&CaseRecord>,
) -> (BTreeMap<String, String>, Vec<String>) {
    if case.settings.env_variant == BASELINE {
        return Default::default();
    }
    let baseline_env: BTreeMap<String, String> = base
        .or_else(|| {
            report
                .cases
                .iter()
                .find(|c| c.settings.env_variant == BASELINE && c.settings.engine == case.settings.engine)
        })
        .map(|c| user_env(&c.outcome.env).map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let fresh = case.settings.knobs.miopen_db == MiopenDb::Fresh;
    let own = |k: &String| k.starts_with("WAN_VAE_BENCH_") || (fresh && FRESH_DB_VARS.contains(&k.as_str()));
    let keep = |k: &String| !own(k);
    // The tool's scratch paths (older reports recorded them) are no one's to export.
    let env: BTreeMap<String, String> = user_env(&case.outcome.env)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let set = env
        .iter()
        .filter(|(k, v)| keep(k) && baseline_env.get(*k) != Some(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let unset = baseline_env
        .keys()
        .filter(|k| keep(k) && !env.contains_key(*k))
        .cloned()
        .collect();
    (set, unset)
}

/// An engine of this tool's own (candle, its Rust port): the `run` flags that reproduce the case.
fn tool_flags(s: &CaseSettings, steps: &mut Vec<String>) {
    let engine = s.engine.name();
    let mut flags = format!("--engine {engine} --precision {}", s.precision.name());
    if let Some(t) = s.tiling {
        flags += &format!(" --tile {}:{}", t.tile_px, t.overlap_px);
    }
    if let Some(t) = s.temporal_tile {
        flags += &format!(" --temporal-tile {}:{}", t.tile_frames, t.overlap_frames);
    }
    if s.chunk != 1 {
        flags += &format!(" --chunk {}", s.chunk);
    }
    let about = crate::engine::spec(s.engine).about;
    steps.push(format!("{engine} ({about}): {flags}"));
}
