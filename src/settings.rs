//! What one case measures: [`CaseSettings`], declared once and shared by the matrix's cases
//! (`bench::matrix::Case`), the worker spec (`bench::protocol::WorkerSpec`) and the report's
//! `CaseRecord`. It is flattened into their JSON with serde, so the wire and report layout
//! are the flat keys `precision`, `chunk`, `tile_px`, `overlap_px`, `frames`, `width`,
//! `height`, `env_variant`, `passes`, `temporal_tile_frames`, `temporal_overlap_frames`;
//! tiling is read back through [`Tiling::new`]'s checks.
//! Also owns the case id built from the settings.
//!
//! Adding an axis (engine, passes, temporal tiling) is one field here plus its key in
//! [`Wire`], its id part in [`CaseSettings::id`] and, when it matters for quality, its
//! reference value in [`CaseSettings::reference`].
//!
//! Must not: know about processes, files or the matrix file syntax.
use serde::{Deserialize, Serialize};

use crate::model::{Precision, RunOptions, TemporalTiling, Tiling};

/// Name of the env variant that exists even when no `[env.baseline]` table is written.
pub const BASELINE: &str = "baseline";

/// The settings of one case: one point of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Wire", into = "Wire")]
pub struct CaseSettings {
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
    /// Which passes are timed.
    pub passes: Passes,
    /// Temporal tiling of the decode (ComfyUI's `VAEDecodeTiled`); `None` = untiled in time.
    pub temporal_tile: Option<TemporalTiling>,
}

/// The passes a case times: `encode`, `decode` or `both` (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Passes {
    Encode,
    Decode,
    #[default]
    Both,
}

impl Passes {
    /// `encode`, `decode` or `both` (the JSON and matrix-file spelling).
    pub fn name(self) -> &'static str {
        match self {
            Passes::Encode => "encode",
            Passes::Decode => "decode",
            Passes::Both => "both",
        }
    }
    /// Whether the encode pass is timed.
    pub fn encodes(self) -> bool {
        self != Passes::Decode
    }
    /// Whether the decode pass is timed.
    pub fn decodes(self) -> bool {
        self != Passes::Encode
    }
}

impl std::str::FromStr for Passes {
    type Err = crate::error::UserError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "encode" => Ok(Passes::Encode),
            "decode" => Ok(Passes::Decode),
            "both" | "encode+decode" => Ok(Passes::Both),
            _ => Err(crate::error::UserError::invalid("passes", s, "encode, decode or both")),
        }
    }
}

/// The JSON spelling of [`CaseSettings`] (the report schema's flat keys).
#[derive(Serialize, Deserialize)]
struct Wire {
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
            precision: w.precision,
            chunk: w.chunk,
            tiling,
            frames: w.frames,
            width: w.width,
            height: w.height,
            env_variant: w.env_variant,
            passes: w.passes,
            temporal_tile,
        })
    }
}

impl From<CaseSettings> for Wire {
    fn from(s: CaseSettings) -> Wire {
        Wire {
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

    /// Stable id, e.g. `fp32-chunk1-untiled-5x64x64-baseline`; tiled as `tile256o64`; size
    /// as frames x W x H. Temporal tiling adds `-ttile64o8` after the spatial tiling and a
    /// single pass adds `-decode` / `-encode` at the end; both are absent at their defaults
    /// (untiled in time, both passes), so ids of older reports stay valid. `compare` and
    /// `merge` match cases across reports by it.
    pub fn id(&self) -> String {
        let tile = match self.tiling {
            None => "untiled".to_string(),
            Some(t) => format!("tile{}o{}", t.tile_px, t.overlap_px),
        };
        let ttile = match self.temporal_tile {
            None => String::new(),
            Some(t) => format!("-ttile{}o{}", t.tile_frames, t.overlap_frames),
        };
        let passes = match self.passes {
            Passes::Both => String::new(),
            p => format!("-{}", p.name()),
        };
        format!(
            "{}-chunk{}-{tile}{ttile}-{}x{}x{}-{}{passes}",
            self.precision.name(),
            self.chunk,
            self.frames,
            self.width,
            self.height,
            self.env_variant
        )
    }

    /// The settings whose outputs these are compared with: fp32, untiled in space and time,
    /// chunk 1, the rest (passes included, so a decode-only case is compared with a
    /// decode of the same latent) unchanged.
    pub fn reference(&self) -> CaseSettings {
        CaseSettings {
            precision: Precision::Fp32,
            tiling: None,
            temporal_tile: None,
            chunk: 1,
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
            precision: Precision::Bf16,
            chunk: 2,
            tiling: Some(Tiling::new(256, 64).unwrap()),
            frames: 5,
            width: 64,
            height: 32,
            env_variant: "f".into(),
            passes: Passes::Both,
            temporal_tile: None,
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"precision": "bf16", "chunk": 2, "tile_px": 256, "overlap_px": 64,
                "frames": 5, "width": 64, "height": 32, "env_variant": "f", "passes": "both",
                "temporal_tile_frames": null, "temporal_overlap_frames": null})
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
        };
        assert_eq!(s.id(), "bf16-chunk1-tile256o64-ttile64o8-17x320x320-baseline-decode");
        assert_eq!(s.reference().id(), "fp32-chunk1-untiled-17x320x320-baseline-decode");
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            (v["passes"].as_str(), v["temporal_tile_frames"].as_u64()),
            (Some("decode"), Some(64))
        );
        assert_eq!(serde_json::from_value::<CaseSettings>(v).unwrap(), s);
        assert_eq!("both".parse::<Passes>().unwrap(), Passes::Both);
        assert!("twice".parse::<Passes>().unwrap_err().to_string().contains("twice"));
    }
}
