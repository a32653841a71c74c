//! Case expansion: every combination of the matrix axes is one [`Case`], with a stable id
//! built from its settings (`compare` matches cases across reports by it).
use std::collections::BTreeMap;

use crate::model::{Precision, Tiling};

use super::options::{precision_name, BenchOptions};

/// One point of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Stable id, see [`case_id`].
    pub id: String,
    pub precision: Precision,
    pub chunk: usize,
    pub tiling: Option<Tiling>,
    pub frames: usize,
    pub width: usize,
    pub height: usize,
    /// Env variant name.
    pub env_variant: String,
    /// Variables the variant adds to the worker's environment.
    pub env_vars: BTreeMap<String, String>,
    /// Not in the matrix: added by [`add_references`] as another case's quality reference.
    pub added_as_reference: bool,
}

impl Case {
    /// The case this one's outputs are compared with: fp32, untiled, chunk 1, same frames,
    /// size and env variant (a reference case is its own reference).
    pub fn reference(&self) -> Case {
        let mut r = self.clone();
        r.precision = Precision::Fp32;
        r.tiling = None;
        r.chunk = 1;
        r.id = case_id(
            r.precision,
            r.chunk,
            r.tiling,
            r.frames,
            r.width,
            r.height,
            &r.env_variant,
        );
        r
    }

    /// Id of [`Case::reference`].
    pub fn reference_id(&self) -> String {
        self.reference().id
    }

    /// True when the case is its own reference.
    pub fn is_reference(&self) -> bool {
        self.reference_id() == self.id
    }
}

/// Append the reference of every case that the list lacks, marked `added_as_reference`
/// (each once, in order of first need).
pub fn add_references(cases: &mut Vec<Case>) {
    let mut known: std::collections::BTreeSet<String> = cases.iter().map(|c| c.id.clone()).collect();
    let mut added = Vec::new();
    for c in cases.iter() {
        let r = c.reference();
        if known.insert(r.id.clone()) {
            added.push(Case {
                added_as_reference: true,
                ..r
            });
        }
    }
    cases.extend(added);
}

/// `fp32-chunk1-untiled-5x64x64-baseline`; tiled as `tile256o64`; size as frames x W x H.
pub fn case_id(
    precision: Precision,
    chunk: usize,
    tiling: Option<Tiling>,
    frames: usize,
    width: usize,
    height: usize,
    env_variant: &str,
) -> String {
    let tile = match tiling {
        None => "untiled".to_string(),
        Some(t) => format!("tile{}o{}", t.tile_px, t.overlap_px),
    };
    format!(
        "{}-chunk{chunk}-{tile}-{frames}x{width}x{height}-{env_variant}",
        precision_name(precision)
    )
}

/// All cases in matrix order (frames, size, precision, tile, chunk, env; the last varies fastest).
pub fn expand(opts: &BenchOptions) -> Vec<Case> {
    let a = &opts.axes;
    let mut cases = Vec::with_capacity(opts.case_count());
    for &frames in &a.frames {
        for &(width, height) in &a.sizes {
            for &precision in &a.precisions {
                for &tiling in &a.tiles {
                    for &chunk in &a.chunks {
                        for env in &a.envs {
                            cases.push(Case {
                                id: case_id(precision, chunk, tiling, frames, width, height, env),
                                precision,
                                chunk,
                                tiling,
                                frames,
                                width,
                                height,
                                env_variant: env.clone(),
                                env_vars: opts.variants.get(env).cloned().unwrap_or_default(),
                                added_as_reference: false,
                            });
                        }
                    }
                }
            }
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_unique() {
        let o = crate::bench::config::parse(
            "[matrix]\nprecision=[\"fp32\",\"bf16\"]\ntile=[\"none\",\"256:64\"]\nchunk=[1,2]\nenv=[\"baseline\",\"f\"]\n[env.f]\nA=\"1\"",
        )
        .unwrap();
        let cases = expand(&o);
        assert_eq!(cases.len(), 16);
        assert_eq!(cases[0].id, "fp32-chunk1-untiled-5x64x64-baseline");
        assert!(cases
            .iter()
            .any(|c| c.id == "bf16-chunk2-tile256o64-5x64x64-f" && c.env_vars["A"] == "1"));
        let ids: std::collections::BTreeSet<_> = cases.iter().map(|c| &c.id).collect();
        assert_eq!(ids.len(), 16);
        let mut with_refs = cases.clone();
        add_references(&mut with_refs);
        assert_eq!(with_refs, cases, "every reference is in the matrix");
        let bf16 = cases
            .iter()
            .find(|c| c.id == "bf16-chunk2-tile256o64-5x64x64-f")
            .unwrap();
        assert_eq!(bf16.reference_id(), "fp32-chunk1-untiled-5x64x64-f");
        assert!(!bf16.is_reference());
        assert!(cases[0].is_reference());
    }

    #[test]
    fn missing_references_are_added_once() {
        let o = crate::bench::config::parse(
            "[matrix]\nprecision=[\"bf16\",\"fp32\"]\nchunk=[2]\ntile=[\"none\",\"16:8\"]\nsize=[\"32x32\",\"64x32\"]",
        )
        .unwrap();
        let mut cases = expand(&o);
        assert_eq!(cases.len(), 8);
        add_references(&mut cases);
        let added: Vec<&str> = cases
            .iter()
            .filter(|c| c.added_as_reference)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(
            added,
            [
                "fp32-chunk1-untiled-5x32x32-baseline",
                "fp32-chunk1-untiled-5x64x32-baseline"
            ]
        );
        assert!(cases.iter().filter(|c| c.added_as_reference).all(|c| c.is_reference()));
    }
}
