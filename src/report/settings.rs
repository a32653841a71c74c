//! What one case measures: [`CaseSettings`], one point of the matrix, shared by the
//! matrix's cases (`plan::matrix::Case`), the worker spec (`engine::protocol::WorkerSpec`)
//! and the report's `CaseRecord`. serde flattens it into their JSON as the flat keys
//! `engine`, `precision`, `chunk`, `tile_px`, `overlap_px`, `frames`, `width`, `height`,
//! `env_variant`, `passes`, `temporal_tile_frames`, `temporal_overlap_frames`, `cudnn`,
//! `cudnn_benchmark`, `miopen_db`, `tf32`, `layout`, `conv3d` (tiling read back through [`Tiling::new`]'s checks). Also
//! owns the PyTorch [`Knobs`] (with where they act) and the reference settings of a case.
//! How each field is spelled, parsed, defaulted and named in the case id is `axes`' table
//! (which also implements [`CaseSettings::defaults`] and [`CaseSettings::id`] from it).
//!
//! Must not: know about processes, files, the matrix file syntax or flags.
use serde::{Deserialize, Serialize};

use crate::model::{Precision, RunOptions, TemporalTiling, Tiling};
use crate::report::values::{Conv3dMode, Engine, Layout, MiopenDb, Passes, Switch};

/// Name of the env variant that exists even when no `[env.baseline]` table is written.
pub const BASELINE: &str = "baseline";

/// The PyTorch knobs of a case. They act only in the engines whose `engine::EngineSpec`
/// says so, on a GPU (`cuda:N`, which is also how ROCm builds name AMD GPUs); elsewhere
/// every knob is `n/a`, so a matrix does not multiply them into duplicate cases
/// (`engine::EngineSpec::run_as`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Knobs {
    /// `torch.backends.cudnn.enabled` (MIOpen on ROCm, cuDNN on CUDA).
    pub cudnn: Switch,
    /// `torch.backends.cudnn.benchmark`.
    pub cudnn_benchmark: Switch,
    /// The MIOpen database directories.
    pub miopen_db: MiopenDb,
    /// TF32 for fp32 convolutions and matmuls (`torch.backends.cudnn.conv` and
    /// `torch.backends.cuda.matmul`): NVIDIA GPUs since Ampere; the worker records that it is
    /// not applicable on ROCm.
    pub tf32: Switch,
}

/// The settings of one case: one point of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Wire", into = "Wire")]
pub struct CaseSettings {
    /// Which implementation computes.
    pub engine: Engine,
    /// Model precision.
    pub precision: Precision,
    /// Latent frames per decoder call (encoder: 4x this many frames per call).
    pub chunk: usize,
    /// Spatial tiling; `None` = untiled.
    pub tiling: Option<Tiling>,
    /// Video frames.
    pub frames: usize,
    /// Video width in pixels.
    pub width: usize,
    /// Video height in pixels.
    pub height: usize,
    /// Name of the env variant.
    pub env_variant: String,
    /// PyTorch knobs (all `n/a` for candle and on the CPU).
    pub knobs: Knobs,
    /// Which passes are timed.
    pub passes: Passes,
    /// Temporal tiling of the decode (ComfyUI's `VAEDecodeTiled`); `None` = untiled in time.
    pub temporal_tile: Option<TemporalTiling>,
    /// Memory layout of the model's Conv3d weights and of its causal convolutions' inputs
    /// (a lever of the Python engines; candle: `ncdhw` only).
    pub layout: Layout,
    /// Causal 3D convolutions as one `conv3d` or split into `conv2d` over the time offsets
    /// (a lever of the Python engines; candle: `native` only).
    pub conv3d: Conv3dMode,
}

/// The JSON spelling of [`CaseSettings`] (the report schema's flat keys).
#[derive(Serialize, Deserialize)]
struct Wire {
    /// Absent in reports written before the engine axis: candle.
    #[serde(default)]
    engine: Engine,
    precision: Precision,
    chunk: usize,
    tile_px: Option<usize>,
    overlap_px: Option<usize>,
    frames: usize,
    width: usize,
    height: usize,
    /// Absent in specs written before the field existed.
    #[serde(default = "baseline")]
    env_variant: String,
    /// Absent in specs and reports written before the field existed: both passes.
    #[serde(default)]
    passes: Passes,
    #[serde(default)]
    temporal_tile_frames: Option<usize>,
    #[serde(default)]
    temporal_overlap_frames: Option<usize>,
    #[serde(default)]
    cudnn: Switch,
    #[serde(default)]
    cudnn_benchmark: Switch,
    #[serde(default)]
    miopen_db: MiopenDb,
    /// Absent in specs and reports written before the knob existed: `n/a`.
    #[serde(default)]
    tf32: Switch,
    /// Absent in specs and reports written before the levers: `ncdhw`.
    #[serde(default)]
    layout: Layout,
    /// Absent in specs and reports written before the levers: `native`.
    #[serde(default)]
    conv3d: Conv3dMode,
}

fn baseline() -> String {
    BASELINE.to_string()
}

impl TryFrom<Wire> for CaseSettings {
    type Error = String;
    fn try_from(w: Wire) -> Result<Self, String> {
        let tiling = match (w.tile_px, w.overlap_px) {
            (None, None) => None,
            (Some(t), o) => Some(Tiling::new(t, o.unwrap_or(0)).map_err(|e| e.to_string())?),
            (None, Some(o)) => return Err(format!("overlap_px {o} without tile_px")),
        };
        let temporal_tile = match (w.temporal_tile_frames, w.temporal_overlap_frames) {
            (None, None) => None,
            (Some(t), Some(o)) => Some(TemporalTiling::new(t, o).map_err(|e| e.to_string())?),
            (t, o) => {
                return Err(format!(
                    "temporal_tile_frames {t:?} and temporal_overlap_frames {o:?}: give both or neither"
                ))
            }
        };
        Ok(CaseSettings {
            engine: w.engine,
            precision: w.precision,
            chunk: w.chunk,
            tiling,
            frames: w.frames,
            width: w.width,
            height: w.height,
            env_variant: w.env_variant,
            passes: w.passes,
            temporal_tile,
            layout: w.layout,
            conv3d: w.conv3d,
            knobs: Knobs {
                cudnn: w.cudnn,
                cudnn_benchmark: w.cudnn_benchmark,
                miopen_db: w.miopen_db,
                tf32: w.tf32,
            },
        })
    }
}

impl From<CaseSettings> for Wire {
    fn from(s: CaseSettings) -> Wire {
        Wire {
            engine: s.engine,
            precision: s.precision,
            chunk: s.chunk,
            tile_px: s.tile_px(),
            overlap_px: s.overlap_px(),
            frames: s.frames,
            width: s.width,
            height: s.height,
            env_variant: s.env_variant,
            passes: s.passes,
            temporal_tile_frames: s.temporal_tile.map(|t| t.tile_frames),
            temporal_overlap_frames: s.temporal_tile.map(|t| t.overlap_frames),
            cudnn: s.knobs.cudnn,
            cudnn_benchmark: s.knobs.cudnn_benchmark,
            miopen_db: s.knobs.miopen_db,
            tf32: s.knobs.tf32,
            layout: s.layout,
            conv3d: s.conv3d,
        }
    }
}

impl CaseSettings {
    /// Tile size in pixels; `None` when untiled.
    pub fn tile_px(&self) -> Option<usize> {
        self.tiling.map(|t| t.tile_px)
    }

    /// Tile overlap in pixels; `None` when untiled.
    pub fn overlap_px(&self) -> Option<usize> {
        self.tiling.map(|t| t.overlap_px)
    }

    /// How the model runs each call.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            chunk: self.chunk,
            tiling: self.tiling,
        }
    }

    /// The settings whose outputs these are compared with: true fp32 (TF32 off where the
    /// knob acts, so an NVIDIA GPU's default TF32 convolutions are measured against it, not
    /// taken for it; `auto` for an engine whose `auto` is true fp32, candle), untiled in space
    /// and time, chunk 1, the levers at their defaults
    /// (`ncdhw`, `native`: a lever's case shows its own error), the rest (engine, the other knobs
    /// and passes included, so a decode-only case is compared with a decode of the same
    /// latent) unchanged.
    pub fn reference(&self) -> CaseSettings {
        let tf32 = match self.knobs.tf32 {
            Switch::NotApplicable => Switch::NotApplicable,
            // candle: `auto` and `off` are true fp32 (each its own reference); `on` is
            // compared with `auto`, the id its cases always had.
            Switch::On if self.engine.tf32_alone() => Switch::Auto,
            t if self.engine.tf32_alone() => t,
            _ => Switch::Off,
        };
        CaseSettings {
            precision: Precision::Fp32,
            tiling: None,
            temporal_tile: None,
            chunk: 1,
            layout: Layout::Ncdhw,
            conv3d: Conv3dMode::Native,
            knobs: Knobs { tf32, ..self.knobs },
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_the_flat_report_layout_and_tiling_is_checked() {
        let s = CaseSettings {
            engine: Engine::Candle,
            precision: Precision::Bf16,
            chunk: 2,
            tiling: Some(Tiling::new(256, 64).unwrap()),
            frames: 5,
            width: 64,
            height: 32,
            env_variant: "f".into(),
            passes: Passes::Both,
            temporal_tile: None,
            knobs: Knobs::default(),
            layout: Layout::Ncdhw,
            conv3d: Conv3dMode::Native,
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"engine": "candle", "precision": "bf16", "chunk": 2, "tile_px": 256,
                "overlap_px": 64, "frames": 5, "width": 64, "height": 32, "env_variant": "f",
                "passes": "both", "temporal_tile_frames": null, "temporal_overlap_frames": null,
                "cudnn": "n/a", "cudnn_benchmark": "n/a", "miopen_db": "n/a", "tf32": "n/a",
                "layout": "ncdhw", "conv3d": "native"})
        );
        assert_eq!(serde_json::from_value::<CaseSettings>(v).unwrap(), s);
        assert_eq!(s.id(), "bf16-chunk2-tile256o64-5x64x32-f");
        assert_eq!(s.reference().id(), "fp32-chunk1-untiled-5x64x32-f");
        let bad = serde_json::json!({"precision": "fp32", "chunk": 1, "tile_px": 60, "overlap_px": 8,
            "frames": 5, "width": 64, "height": 64, "env_variant": "baseline"});
        assert!(serde_json::from_value::<CaseSettings>(bad).is_err());
        // Older specs and reports (no passes, no temporal tiling) still load.
        let old = serde_json::json!({"precision": "fp32", "chunk": 1, "tile_px": null, "overlap_px": null,
            "frames": 5, "width": 64, "height": 64, "env_variant": "baseline"});
        let old: CaseSettings = serde_json::from_value(old).unwrap();
        assert_eq!((old.passes, old.temporal_tile), (Passes::Both, None));
    }

    #[test]
    fn passes_and_temporal_tiling_are_part_of_the_id() {
        let s = CaseSettings {
            precision: Precision::Bf16,
            chunk: 1,
            tiling: Some(Tiling::new(256, 64).unwrap()),
            frames: 17,
            width: 320,
            height: 320,
            env_variant: "baseline".into(),
            passes: Passes::Decode,
            temporal_tile: Some(TemporalTiling::COMFYUI_DEFAULT),
            engine: Engine::Candle,
            knobs: Knobs::default(),
            layout: Layout::ChannelsLast3d,
            conv3d: Conv3dMode::Split,
        };
        assert_eq!(
            s.id(),
            "bf16-chunk1-tile256o64-ttile64o8-17x320x320-baseline-decode-cl3d-split"
        );
        // The levers' reference is the default layout and conv3d: their own error shows.
        assert_eq!(s.reference().id(), "fp32-chunk1-untiled-17x320x320-baseline-decode");
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            (v["passes"].as_str(), v["temporal_tile_frames"].as_u64()),
            (Some("decode"), Some(64))
        );
        assert_eq!(
            (v["layout"].as_str(), v["conv3d"].as_str()),
            (Some("channels_last_3d"), Some("split"))
        );
        assert_eq!(serde_json::from_value::<CaseSettings>(v).unwrap(), s);
    }

    #[test]
    fn old_records_read_as_candle_and_python_ids_carry_engine_and_knobs() {
        let old = serde_json::json!({"precision": "fp32", "chunk": 1, "tile_px": null, "overlap_px": null,
            "frames": 5, "width": 64, "height": 64, "env_variant": "baseline"});
        let s: CaseSettings = serde_json::from_value(old).unwrap();
        assert_eq!((s.engine, s.knobs), (Engine::Candle, Knobs::default()));
        assert_eq!((s.layout, s.conv3d), (Layout::Ncdhw, Conv3dMode::Native));
        assert_eq!(s.id(), "fp32-chunk1-untiled-5x64x64-baseline");
        let mut t = CaseSettings {
            engine: Engine::Torch,
            ..s.clone()
        };
        assert_eq!(t.id(), "torch-fp32-chunk1-untiled-5x64x64-baseline");
        t.knobs = Knobs {
            cudnn: Switch::Off,
            cudnn_benchmark: Switch::On,
            miopen_db: MiopenDb::Fresh,
            tf32: Switch::Auto,
        };
        assert_eq!(
            t.id(),
            "torch-fp32-chunk1-untiled-5x64x64-baseline-cudnn_off-bench_on-miopen_fresh"
        );
        // The reference of an `auto` TF32 case is true fp32; `on` and `off` are in the id.
        assert_eq!(
            t.reference().id(),
            "torch-fp32-chunk1-untiled-5x64x64-baseline-cudnn_off-bench_on-miopen_fresh-tf32_off"
        );
        t.knobs.tf32 = Switch::On;
        assert!(t.id().ends_with("-miopen_fresh-tf32_on"), "{}", t.id());
        t.knobs.tf32 = Switch::NotApplicable;
        assert_eq!(t.reference().id(), t.id(), "no TF32 knob: its own reference");
    }
}
