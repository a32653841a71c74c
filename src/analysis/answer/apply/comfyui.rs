//! The advice for a `comfyui` case, in a ComfyUI user's terms: the launch flags the case's
//! start-up stands for (`--cpu`, `--bf16-vae`, ...), the node each timed pass ran as with the
//! widget values it was given (the engine records them: `engine_case.nodes`), and for each
//! PyTorch knob the switch the user's own ComfyUI offers (`engine_case.switches`: `--fast
//! autotune`, `COMFYUI_ENABLE_MIOPEN=1`), or that only a custom node can set it.
//!
//! Must not: compute widget values itself: what the engine ran is what is advised.
use super::Measured;
use crate::report::values::Switch;
use crate::report::{ComfyuiApply, ComfyuiNode};

/// The nodes and launch of the case, its steps pushed onto `steps`.
pub(super) fn apply(m: &Measured, steps: &mut Vec<String>) -> ComfyuiApply {
    let flags: Vec<String> = m
        .engine_case("launch_flags")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let dtype = flags.iter().any(|f| f.ends_with("-vae"));
    steps.push(match (flags.is_empty(), dtype) {
        (true, _) => "launch ComfyUI without a VAE dtype switch (its own choice, `auto`)".to_string(),
        (false, true) => format!("launch ComfyUI with {}", flags.join(" ")),
        (false, false) => format!(
            "launch ComfyUI with {} and no VAE dtype switch (its own choice, `auto`)",
            flags.join(" ")
        ),
    });
    if flags.iter().any(|f| f == "--cpu") {
        steps.push("(--cpu: the case ran on the CPU, as ComfyUI does with that flag)".into());
    }
    let mut nodes = Vec::new();
    for pass in m.passes() {
        let rec = m.engine_case("nodes").and_then(|n| n.get(pass));
        let Some(node) = rec.and_then(|r| r.get("node")).and_then(|n| n.as_str()) else {
            steps.push(format!(
                "{pass}: the ComfyUI node it ran as was not recorded (a report of an older wan-vae-bench): rerun \
                 the case to get it"
            ));
            continue;
        };
        let num = |k: &str| rec.and_then(|r| r.get(k)).and_then(|v| v.as_u64()).map(|v| v as usize);
        let n = ComfyuiNode {
            pass: pass.to_string(),
            node: node.to_string(),
            tile_size_px: num("tile_size"),
            overlap_px: num("overlap"),
            temporal_size_frames: num("temporal_size"),
            temporal_overlap_frames: num("temporal_overlap"),
        };
        steps.push(node_step(m, &n));
        nodes.push(n);
    }
    knobs(m, steps);
    ComfyuiApply {
        nodes,
        launch_flags: flags,
    }
}

/// `decode: the VAEDecodeTiled node with tile_size 64 (one tile: ...), overlap 0, ...`.
fn node_step(m: &Measured, n: &ComfyuiNode) -> String {
    let Some(tile) = n.tile_size_px else {
        return format!("{}: the {} node (untiled)", n.pass, n.node);
    };
    let s = m.settings;
    let space = if s.tiling.is_some() {
        format!("tile_size {tile}, overlap {}", n.overlap_px.unwrap_or(0))
    } else {
        format!(
            "tile_size {tile}, overlap {} (one tile covers the {}x{} frame: no spatial tiling)",
            n.overlap_px.unwrap_or(0),
            s.width,
            s.height
        )
    };
    let covers = s.temporal_tile.is_none() || n.pass == "encode";
    let time = match (n.temporal_size_frames, n.temporal_overlap_frames) {
        (Some(ts), Some(to)) if covers => format!(
            "temporal_size {ts}, temporal_overlap {to} (one tile covers the {} frames: no temporal tiling)",
            m.case.frames_used.unwrap_or(s.frames)
        ),
        (Some(ts), Some(to)) => format!("temporal_size {ts}, temporal_overlap {to}"),
        _ => String::new(),
    };
    let sep = if time.is_empty() { "" } else { ", " };
    format!("{}: the {} node with {space}{sep}{time}", n.pass, n.node)
}

/// A switch of the user's ComfyUI, as the engine found it (`engine_case.switches`).
fn switch(m: &Measured, key: &str) -> bool {
    m.engine_case("switches")
        .and_then(|s| s.get(key))
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// The PyTorch knobs the case set, as this ComfyUI lets its users set them.
fn knobs(m: &Measured, steps: &mut Vec<String>) {
    let k = &m.settings.knobs;
    let version = m
        .engine_case("comfyui_version")
        .and_then(|v| v.as_str())
        .map_or("this ComfyUI".to_string(), |v| format!("ComfyUI {v}"));
    let custom = |what: &str| format!("{version} has no switch for {what}: only a custom node can set it");
    if k.cudnn_benchmark == Switch::On {
        steps.push(if switch(m, "fast_autotune") {
            "launch ComfyUI with --fast autotune (it sets torch.backends.cudnn.benchmark = True)".into()
        } else {
            custom("cuDNN benchmark (torch.backends.cudnn.benchmark = True)")
        });
    }
    let rocm = switch(m, "rocm");
    match k.cudnn {
        Switch::On if rocm && switch(m, "enable_miopen_env") => steps.push(
            "export COMFYUI_ENABLE_MIOPEN=1 before launching ComfyUI (else it turns cuDNN/MIOpen off on AMD)".into(),
        ),
        Switch::On if rocm && switch(m, "cudnn_off_on_amd") => steps.push(format!(
            "{version} turns cuDNN/MIOpen off on AMD at start-up with no switch: only a custom node that sets \
             torch.backends.cudnn.enabled = True after start-up gives it (newer ComfyUI: COMFYUI_ENABLE_MIOPEN=1)"
        )),
        Switch::On => steps.push("nothing to set for cuDNN: ComfyUI leaves it on here".into()),
        Switch::Off if rocm && switch(m, "enable_miopen_env") => {
            steps.push("leave COMFYUI_ENABLE_MIOPEN unset (ComfyUI then turns cuDNN/MIOpen off on AMD)".into())
        }
        Switch::Off if rocm && switch(m, "cudnn_off_on_amd") => steps.push(format!(
            "nothing to set: {version} turns cuDNN/MIOpen off on AMD itself"
        )),
        Switch::Off => steps.push(custom("turning cuDNN off (torch.backends.cudnn.enabled = False)")),
        Switch::Auto | Switch::NotApplicable => {}
    }
    if matches!(k.tf32, Switch::On | Switch::Off) {
        let v = if k.tf32 == Switch::On { "tf32" } else { "ieee" };
        steps.push(custom(&format!(
            "TF32 (torch.backends.cudnn.conv.fp32_precision = \"{v}\"; torch.backends.cuda.matmul.fp32_precision = \"{v}\")"
        )));
    }
}
