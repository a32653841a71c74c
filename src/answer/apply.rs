//! How to apply a measured case outside this tool: the env variant's variables to export
//! (as the workers recorded them, against the `baseline` variant's), and the settings in the
//! user's terms, as the engine's entry says ([`crate::engine::ApplyAs`]): ComfyUI's node
//! (`VAEDecode` / `VAEDecodeTiled` and its `tile_size`, `overlap`, `temporal_size`,
//! `temporal_overlap`) and launch switch (`--fp32-vae`, `--bf16-vae`, `--fp16-vae`); PyTorch's
//! dtype, tiling (diffusers: its `enable_tiling` call) and `torch.backends.cudnn` knobs; or
//! this tool's flags.
//!
//! Must not: choose the case (the caller did), describe anything the case did not run, or
//! name an engine to decide what to say (its [`crate::engine::EngineSpec::apply`] does).
use std::collections::BTreeMap;

use crate::engine::ApplyAs;
use crate::report::{Apply, CaseRecord, ComfyuiApply, Report};
use crate::settings::{CaseSettings, BASELINE};
use crate::values::{MiopenDb, Switch};

/// What `miopen_db = fresh` points at a per-case scratch folder: not the user's to export.
const FRESH_DB_VARS: [&str; 2] = ["MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR"];

/// How to apply `case`, whose default (same workload and engine) is `base` when measured.
pub fn apply(report: &Report, case: &CaseRecord, base: Option<&CaseRecord>) -> Apply {
    let s = &case.settings;
    let (env_set, env_unset) = env_change(report, case, base);
    let mut steps = Vec::new();
    let how = crate::engine::spec(s.engine).apply;
    let comfyui = match how {
        ApplyAs::ComfyuiNodes => Some(comfyui(s, &mut steps)),
        ApplyAs::ToolFlags => {
            tool_flags(s, &mut steps);
            None
        }
        ApplyAs::PyTorch | ApplyAs::Diffusers => {
            python(report, s, how, &mut steps);
            None
        }
    };
    knobs(s, &mut steps);
    steps.extend(super::levers::steps(s.engine, s.layout, s.conv3d));
    if steps.is_empty() {
        steps.push("no setting besides the environment differs from the default".into());
    }
    Apply {
        engine: s.engine.name().to_string(),
        env_set,
        env_unset,
        comfyui,
        steps,
    }
}

/// Variables of the case's env that the `baseline` variant's env of the same engine lacks
/// or sets differently, and those it has that the case's lacks. Empty for the `baseline`
/// variant itself; this tool's own `WAN_VAE_BENCH_*` variables (test hooks) are left out.
fn env_change(
    report: &Report,
    case: &CaseRecord,
    base: Option<&CaseRecord>,
) -> (BTreeMap<String, String>, Vec<String>) {
    if case.settings.env_variant == BASELINE {
        return Default::default();
    }
    let baseline_env = base
        .or_else(|| {
            report
                .cases
                .iter()
                .find(|c| c.settings.env_variant == BASELINE && c.settings.engine == case.settings.engine)
        })
        .map(|c| c.outcome.env.clone())
        .unwrap_or_default();
    let fresh = case.settings.knobs.miopen_db == MiopenDb::Fresh;
    let own = |k: &String| k.starts_with("WAN_VAE_BENCH_") || (fresh && FRESH_DB_VARS.contains(&k.as_str()));
    let keep = |k: &String| !own(k);
    let set = case
        .outcome
        .env
        .iter()
        .filter(|(k, v)| keep(k) && baseline_env.get(*k) != Some(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let unset = baseline_env
        .keys()
        .filter(|k| keep(k) && !case.outcome.env.contains_key(*k))
        .cloned()
        .collect();
    (set, unset)
}

/// `--bf16-vae`, ... for `VAEDecodeTiled`/`VAEDecode` and ComfyUI's launch.
fn comfyui(s: &CaseSettings, steps: &mut Vec<String>) -> ComfyuiApply {
    let decode = s.passes.decodes();
    let tiled = s.tiling.is_some() || s.temporal_tile.is_some();
    let node = match (decode, tiled) {
        (true, false) => "VAEDecode",
        (true, true) => "VAEDecodeTiled",
        (false, false) => "VAEEncode",
        (false, true) => "VAEEncodeTiled",
    };
    let launch_switch = match s.precision.name() {
        "auto" => None,
        p => Some(format!("--{p}-vae")),
    };
    let out = ComfyuiApply {
        node: node.to_string(),
        tile_size_px: s.tiling.map(|t| t.tile_px),
        overlap_px: s.tiling.map(|t| t.overlap_px),
        temporal_size_frames: s.temporal_tile.map(|t| t.tile_frames),
        temporal_overlap_frames: s.temporal_tile.map(|t| t.overlap_frames),
        launch_switch,
    };
    steps.push(match &out.launch_switch {
        Some(sw) => format!("launch ComfyUI with {sw}"),
        None => "launch ComfyUI without a VAE dtype switch (its own choice, `auto`)".into(),
    });
    if tiled {
        let space = match s.tiling {
            Some(t) => format!("tile_size {} overlap {}", t.tile_px, t.overlap_px),
            None => format!(
                "tile_size at least {} (no spatial tiling) overlap 0",
                s.width.max(s.height)
            ),
        };
        let time = match s.temporal_tile {
            Some(t) => format!("temporal_size {} temporal_overlap {}", t.tile_frames, t.overlap_frames),
            None => format!("temporal_size at least {} (no temporal tiling)", s.frames),
        };
        steps.push(format!("use the {node} node with {space}, {time}"));
    } else {
        steps.push(format!("use the {node} node (untiled)"));
    }
    out
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

/// The PyTorch engines (`torch`, `diffusers`: [`ApplyAs::PyTorch`], [`ApplyAs::Diffusers`]).
fn python(report: &Report, s: &CaseSettings, how: ApplyAs, steps: &mut Vec<String>) {
    let p = s.precision.name();
    if p != "fp32" {
        let dtype = match p {
            "bf16" => "torch.bfloat16",
            "fp16" => "torch.float16",
            other => other,
        };
        steps.push(match report.run.torch_precision.as_deref() {
            Some("autocast") => {
                format!("keep the VAE's fp32 weights and run it under torch.autocast(device_type, dtype={dtype})")
            }
            _ => format!("load the VAE in {dtype} (vae.to({dtype}); diffusers: torch_dtype={dtype})"),
        });
    }
    if let Some(t) = s.tiling {
        let stride = t.tile_px - t.overlap_px;
        steps.push(if how == ApplyAs::Diffusers {
            format!(
                "vae.enable_tiling(tile_sample_min_height={0}, tile_sample_min_width={0}, tile_sample_stride_height={stride}, tile_sample_stride_width={stride}) (Wan 2.2 encode: halve them)",
                t.tile_px
            )
        } else {
            format!(
                "spatial tiles of {} px overlapping {} px, blended linearly (diffusers' enable_tiling with tile_sample_min {} and stride {stride})",
                t.tile_px, t.overlap_px, t.tile_px
            )
        });
    }
    if let Some(t) = s.temporal_tile {
        steps.push(format!(
            "temporal tiles of {} frames overlapping {} (ComfyUI VAEDecodeTiled temporal_size/temporal_overlap)",
            t.tile_frames, t.overlap_frames
        ));
    }
    if s.chunk != 1 {
        steps.push(format!(
            "{} latent frames per decoder call (chunk; the official code decodes 1)",
            s.chunk
        ));
    }
}

/// The `torch.backends.cudnn` knobs and TF32 the case set (not left to the engine, `auto`)
/// and the MIOpen database, where they apply; `on` is named too, since an engine may turn cuDNN
/// off at start-up (ComfyUI on AMD), and `off` for the benchmark only where it was set.
fn knobs(s: &CaseSettings, steps: &mut Vec<String>) {
    let k = &s.knobs;
    match k.cudnn {
        Switch::Off => steps.push("torch.backends.cudnn.enabled = False (MIOpen off on ROCm)".into()),
        Switch::On => steps.push("torch.backends.cudnn.enabled = True (MIOpen on ROCm), after start-up".into()),
        Switch::Auto | Switch::NotApplicable => {}
    }
    if k.cudnn_benchmark == Switch::On {
        steps.push("torch.backends.cudnn.benchmark = True".into());
    }
    match k.tf32 {
        Switch::On | Switch::Off => {
            let (v, legacy) = if k.tf32 == Switch::On {
                ("tf32", "True")
            } else {
                ("ieee", "False")
            };
            steps.push(format!(
                "torch.backends.cudnn.conv.fp32_precision = \"{v}\"; torch.backends.cuda.matmul.fp32_precision = \"{v}\" \
                 (torch < 2.9: torch.backends.cudnn.allow_tf32 = {legacy}; torch.backends.cuda.matmul.allow_tf32 = {legacy})"
            ));
        }
        Switch::Auto | Switch::NotApplicable => {}
    }
    if k.miopen_db == MiopenDb::Fresh {
        steps.push(
            "an empty MIOpen database: point MIOPEN_USER_DB_PATH and MIOPEN_CUSTOM_CACHE_DIR at a new empty folder"
                .into(),
        );
    }
}
