//! What one case measures: [`CaseSettings`], declared once and shared by the matrix's cases
//! (`bench::matrix::Case`), the worker spec (`bench::protocol::WorkerSpec`) and the report's
//! `CaseRecord`. It is flattened into their JSON with serde, so the wire and report layout
//! are the flat keys `precision`, `chunk`, `tile_px`, `overlap_px`, `frames`, `width`,
//! `height`, `env_variant`; tiling is read back through [`Tiling::new`]'s checks.
//! Also owns the case id built from the settings.
//!
//! Adding an axis (engine, passes, temporal tiling) is one field here plus its key in
//! [`Wire`], its id part in [`CaseSettings::id`] and, when it matters for quality, its
//! reference value in [`CaseSettings::reference`].
//!
//! Must not: know about processes, files or the matrix file syntax.
use serde::{Deserialize, Serialize};

use crate::model::{Precision, RunOptions, Tiling};

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
        Ok(CaseSettings {
            precision: w.precision,
            chunk: w.chunk,
            tiling,
            frames: w.frames,
            width: w.width,
            height: w.height,
            env_variant: w.env_variant,
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
    /// as frames x W x H. `compare` and `merge` match cases across reports by it.
    pub fn id(&self) -> String {
        let tile = match self.tiling {
            None => "untiled".to_string(),
            Some(t) => format!("tile{}o{}", t.tile_px, t.overlap_px),
        };
        format!(
            "{}-chunk{}-{tile}-{}x{}x{}-{}",
            self.precision.name(),
            self.chunk,
            self.frames,
            self.width,
            self.height,
            self.env_variant
        )
    }

    /// The settings whose outputs these are compared with: fp32, untiled, chunk 1, the rest
    /// unchanged.
    pub fn reference(&self) -> CaseSettings {
        CaseSettings {
            precision: Precision::Fp32,
            tiling: None,
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
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"precision": "bf16", "chunk": 2, "tile_px": 256, "overlap_px": 64,
                "frames": 5, "width": 64, "height": 32, "env_variant": "f"})
        );
        assert_eq!(serde_json::from_value::<CaseSettings>(v).unwrap(), s);
        assert_eq!(s.id(), "bf16-chunk2-tile256o64-5x64x32-f");
        assert_eq!(s.reference().id(), "fp32-chunk1-untiled-5x64x32-f");
        let bad = serde_json::json!({"precision": "fp32", "chunk": 1, "tile_px": 60, "overlap_px": 8,
            "frames": 5, "width": 64, "height": 64, "env_variant": "baseline"});
        assert!(serde_json::from_value::<CaseSettings>(bad).is_err());
    }
}
