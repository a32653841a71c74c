//! The advice, table-driven: every engine x setting the answer can name, each checked
//! against what the case recorded (its settings, passes, `compute_dtype` and its engine's
//! record). Reports are built in memory: the real engines' records are checked by the
//! integration tests (`tests/analysis/answer_advice.rs`, `tests/engine/engine_comfyui.rs`).
//!
//! Must not: be built outside `cargo test`.
use serde_json::json;

use super::apply;
use crate::model::temporal_tiling::TemporalTiling;
use crate::model::{Precision, Tiling};
use crate::report::settings::{CaseSettings, Knobs};
use crate::report::values::{Engine, Passes, Switch};
use crate::report::{testing, CaseRecord, ModelInfo, Report};

/// One row: an engine's case and what its advice must (and must not) say.
struct Row {
    name: &'static str,
    engine: Engine,
    wan22: bool,
    set: fn(&mut CaseSettings),
    compute_dtype: &'static str,
    engine_case: serde_json::Value,
    must: &'static [&'static str],
    must_not: &'static [&'static str],
}

fn record(row: &Row) -> (Report, CaseRecord) {
    let mut s = CaseSettings::defaults();
    s.engine = row.engine;
    (row.set)(&mut s);
    let mut outcome = testing::ok();
    outcome.compute_dtype = Some(row.compute_dtype.into());
    outcome.engine_case = row
        .engine_case
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    let model = ModelInfo {
        z_dim: if row.wan22 { 48 } else { 16 },
        ..Default::default()
    };
    (testing::report(model, vec![]), testing::case(s, outcome))
}

fn bf16(s: &mut CaseSettings) {
    s.precision = Precision::Bf16;
}
fn tile_64(s: &mut CaseSettings) {
    s.tiling = Some(Tiling::new(64, 32).unwrap());
}
fn tile_64_decode(s: &mut CaseSettings) {
    tile_64(s);
    s.passes = Passes::Decode;
}
fn ttile(s: &mut CaseSettings) {
    s.temporal_tile = Some(TemporalTiling::new(8, 4).unwrap());
    s.passes = Passes::Decode;
}
fn chunk_both(s: &mut CaseSettings) {
    s.chunk = 2;
}
fn chunk_encode(s: &mut CaseSettings) {
    s.chunk = 2;
    s.passes = Passes::Encode;
}
fn gpu_knobs(s: &mut CaseSettings) {
    s.knobs = Knobs {
        cudnn: Switch::On,
        cudnn_benchmark: Switch::On,
        tf32: Switch::Off,
        ..Knobs::default()
    };
}
fn nothing(_: &mut CaseSettings) {}

const AUTOCAST: &str = "bf16 (autocast over f32 weights: convs, matmuls and attention in bf16; RMS norms in bf16 too)";
const CAST: &str = "bf16 (model and activations cast to bf16)";

fn rows() -> Vec<Row> {
    let none = json!({});
    let comfy_tiled = json!({
        "comfyui_version": "0.3.64",
        "launch_flags": ["--cpu", "--fp32-vae"],
        "nodes": {
            "encode": {"node": "VAEEncodeTiled", "tile_size": 64, "overlap": 32, "temporal_size": 8, "temporal_overlap": 8},
            "decode": {"node": "VAEDecodeTiled", "tile_size": 64, "overlap": 32, "temporal_size": 8, "temporal_overlap": 8},
        },
        "switches": {"fast_autotune": true, "enable_miopen_env": false, "cudnn_off_on_amd": true, "rocm": false},
    });
    let comfy_ttile = json!({
        "comfyui_version": "0.3.64",
        "launch_flags": ["--fp32-vae"],
        "nodes": {"decode": {"node": "VAEDecodeTiled", "tile_size": 64, "overlap": 0, "temporal_size": 8, "temporal_overlap": 4}},
    });
    let comfy_amd_old = json!({
        "comfyui_version": "0.3.64", "launch_flags": [],
        "nodes": {"encode": {"node": "VAEEncode"}, "decode": {"node": "VAEDecode"}},
        "switches": {"fast_autotune": true, "enable_miopen_env": false, "cudnn_off_on_amd": true, "rocm": true},
    });
    let comfy_amd_new = json!({
        "comfyui_version": "0.38.2", "launch_flags": [],
        "nodes": {"encode": {"node": "VAEEncode"}, "decode": {"node": "VAEDecode"}},
        "switches": {"fast_autotune": false, "enable_miopen_env": true, "cudnn_off_on_amd": true, "rocm": true},
    });
    let diffusers_22 = json!({"enable_tiling": {
        "encode": {"tile_sample_min_height": 32, "tile_sample_min_width": 32, "tile_sample_stride_height": 16, "tile_sample_stride_width": 16},
        "decode": {"tile_sample_min_height": 64, "tile_sample_min_width": 64, "tile_sample_stride_height": 32, "tile_sample_stride_width": 32},
    }});
    let diffusers_21 = json!({"enable_tiling": {
        "encode": {"tile_sample_min_height": 64, "tile_sample_min_width": 64, "tile_sample_stride_height": 32, "tile_sample_stride_width": 32},
        "decode": {"tile_sample_min_height": 64, "tile_sample_min_width": 64, "tile_sample_stride_height": 32, "tile_sample_stride_width": 32},
    }});
    use Engine::*;
    vec![
        // 1. The dtype as the case ran it, not as a run-wide flag says.
        Row {
            name: "torch autocast",
            engine: Torch,
            wan22: false,
            set: bf16,
            compute_dtype: AUTOCAST,
            engine_case: none.clone(),
            must: &["torch.autocast", "fp32 weights"],
            must_not: &["vae.to("],
        },
        Row {
            name: "torch cast",
            engine: Torch,
            wan22: false,
            set: bf16,
            compute_dtype: CAST,
            engine_case: none.clone(),
            must: &["vae.to(torch.bfloat16)", "without autocast"],
            must_not: &["torch.autocast("],
        },
        Row {
            name: "diffusers cast",
            engine: Diffusers,
            wan22: false,
            set: bf16,
            compute_dtype: CAST,
            engine_case: none.clone(),
            must: &["torch_dtype=torch.bfloat16"],
            must_not: &["torch.autocast("],
        },
        Row {
            name: "diffusers autocast",
            engine: Diffusers,
            wan22: false,
            set: bf16,
            compute_dtype: AUTOCAST,
            engine_case: none.clone(),
            must: &["torch.autocast(", "no torch_dtype"],
            must_not: &[],
        },
        // 2. ComfyUI encode+decode with a spatial tile: both nodes, as recorded; --cpu said (9).
        Row {
            name: "comfyui tiled both",
            engine: Comfyui,
            wan22: false,
            set: tile_64,
            compute_dtype: "f32",
            engine_case: comfy_tiled.clone(),
            must: &[
                "encode: the VAEEncodeTiled node with tile_size 64, overlap 32",
                "decode: the VAEDecodeTiled node with tile_size 64",
                "launch ComfyUI with --cpu --fp32-vae",
                "(--cpu: the case ran on the CPU",
            ],
            must_not: &["VAEDecode node (untiled)"],
        },
        // 7. The whole clip in one temporal tile: the value the engine ran (8 for 2 latent frames).
        Row {
            name: "comfyui temporal",
            engine: Comfyui,
            wan22: false,
            set: ttile,
            compute_dtype: "f32",
            engine_case: comfy_ttile,
            must: &[
                "decode: the VAEDecodeTiled node with tile_size 64, overlap 0 (one tile covers the 64x64 frame",
                "temporal_size 8, temporal_overlap 4",
            ],
            must_not: &["encode:", "no temporal tiling", "at least"],
        },
        // 8. Knobs as the user's own ComfyUI offers them, per version.
        Row {
            name: "comfyui 0.3.64 on AMD",
            engine: Comfyui,
            wan22: false,
            set: gpu_knobs,
            compute_dtype: "f32",
            engine_case: comfy_amd_old,
            must: &[
                "--fast autotune",
                "ComfyUI 0.3.64 turns cuDNN/MIOpen off on AMD at start-up with no switch",
                "ComfyUI 0.3.64 has no switch for TF32",
            ],
            must_not: &[
                "torch.backends.cudnn.benchmark = True\"",
                "COMFYUI_ENABLE_MIOPEN=1 before",
            ],
        },
        Row {
            name: "comfyui 0.38 on AMD",
            engine: Comfyui,
            wan22: false,
            set: gpu_knobs,
            compute_dtype: "f32",
            engine_case: comfy_amd_new,
            must: &[
                "export COMFYUI_ENABLE_MIOPEN=1 before launching",
                "ComfyUI 0.38.2 has no switch for cuDNN benchmark",
            ],
            must_not: &["--fast autotune"],
        },
        Row {
            name: "torch knobs",
            engine: Torch,
            wan22: false,
            set: gpu_knobs,
            compute_dtype: "f32",
            engine_case: none.clone(),
            must: &["torch.backends.cudnn.benchmark = True", "fp32_precision = \"ieee\""],
            must_not: &["custom node"],
        },
        // 3. diffusers has no temporal tiling: a code change, said so.
        Row {
            name: "diffusers temporal",
            engine: Diffusers,
            wan22: false,
            set: ttile,
            compute_dtype: "f32",
            engine_case: json!({"enable_tiling": {"decode": null}}),
            must: &["diffusers' AutoencoderKLWan has no temporal tiling", "code change"],
            must_not: &["(ComfyUI VAEDecodeTiled temporal_size/temporal_overlap)"],
        },
        Row {
            name: "torch temporal",
            engine: Torch,
            wan22: false,
            set: ttile,
            compute_dtype: "f32",
            engine_case: none.clone(),
            must: &["code change", "temporal_size 8 / temporal_overlap 4"],
            must_not: &[],
        },
        // 4. The chunk: what it changes in the passes timed, and where the code goes.
        Row {
            name: "torch chunk both",
            engine: Torch,
            wan22: false,
            set: chunk_both,
            compute_dtype: "f32",
            engine_case: none.clone(),
            must: &[
                "decoder runs on 2 latent frames",
                "encoder on 8 video frames",
                "code change",
                "WanVAE_.decode",
                "WanVAE_.encode",
            ],
            must_not: &[],
        },
        Row {
            name: "torch chunk encode-only",
            engine: Torch,
            wan22: false,
            set: chunk_encode,
            compute_dtype: "f32",
            engine_case: none.clone(),
            must: &["encoder runs on 8 video frames", "WanVAE_.encode"],
            must_not: &["decoder", "WanVAE_.decode"],
        },
        Row {
            name: "candle chunk",
            engine: Candle,
            wan22: false,
            set: chunk_both,
            compute_dtype: "f32",
            engine_case: none.clone(),
            must: &["--chunk 2"],
            must_not: &[],
        },
        // 9. Wan 2.2's halving: only for Wan 2.2, only with an encode, in both PyTorch engines.
        Row {
            name: "diffusers wan2.2 both",
            engine: Diffusers,
            wan22: true,
            set: tile_64,
            compute_dtype: "f32",
            engine_case: diffusers_22,
            must: &[
                "before encode: vae.enable_tiling(tile_sample_min_height=32",
                "before decode: vae.enable_tiling(tile_sample_min_height=64",
                "half the decoder's",
            ],
            must_not: &[],
        },
        Row {
            name: "diffusers wan2.1 both",
            engine: Diffusers,
            wan22: false,
            set: tile_64,
            compute_dtype: "f32",
            engine_case: diffusers_21,
            must: &["vae.enable_tiling(tile_sample_min_height=64"],
            must_not: &["halve", "half", "before encode"],
        },
        Row {
            name: "diffusers wan2.2 decode-only",
            engine: Diffusers,
            wan22: true,
            set: tile_64_decode,
            compute_dtype: "f32",
            engine_case: none.clone(),
            must: &["vae.enable_tiling(tile_sample_min_height=64"],
            must_not: &["halve", "half"],
        },
        Row {
            name: "torch wan2.2 both",
            engine: Torch,
            wan22: true,
            set: tile_64,
            compute_dtype: "f32",
            engine_case: none.clone(),
            must: &[
                "encode: vae.enable_tiling(tile_sample_min_height=32",
                "decode: vae.enable_tiling(tile_sample_min_height=64",
                "half the decoder's",
            ],
            must_not: &[],
        },
        Row {
            name: "torch wan2.1 both",
            engine: Torch,
            wan22: false,
            set: tile_64,
            compute_dtype: "f32",
            engine_case: none.clone(),
            must: &["encode: vae.enable_tiling(tile_sample_min_height=64"],
            must_not: &["half"],
        },
        Row {
            name: "fp32 default",
            engine: Torch,
            wan22: false,
            set: nothing,
            compute_dtype: "f32",
            engine_case: none,
            must: &["no setting besides the environment"],
            must_not: &["torch."],
        },
    ]
}

#[test]
fn every_engine_and_setting_is_advised_as_it_ran() {
    let mut failures = Vec::new();
    for row in rows() {
        let (report, case) = record(&row);
        let a = apply(&report, &case, None);
        let text = a.steps.join("\n");
        for want in row.must {
            if !text.contains(want) {
                failures.push(format!("{}: lacks {want:?} in:\n{text}", row.name));
            }
        }
        for not in row.must_not {
            if text.contains(not) {
                failures.push(format!("{}: says {not:?} in:\n{text}", row.name));
            }
        }
        if row.engine == Engine::Comfyui {
            let c = a.comfyui.as_ref().expect("comfyui apply");
            let recorded = &row.engine_case["nodes"];
            for n in &c.nodes {
                let r = &recorded[n.pass.as_str()];
                assert_eq!(r["node"], n.node.as_str(), "{}", row.name);
                assert_eq!(
                    r["tile_size"].as_u64().map(|v| v as usize),
                    n.tile_size_px,
                    "{}",
                    row.name
                );
                assert_eq!(
                    r["temporal_size"].as_u64().map(|v| v as usize),
                    n.temporal_size_frames,
                    "{}",
                    row.name
                );
            }
            assert_eq!(
                c.nodes.len(),
                case.settings.passes.encodes() as usize + case.settings.passes.decodes() as usize
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
