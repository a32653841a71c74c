//! Case expansion: every combination of the values of the axes (`axes::AXES`) is one
//! [`Case`], whose settings ([`CaseSettings`]) give it a stable id (`compare` matches cases
//! across reports by it), and the quality references a matrix lacks.
//!
//! Must not: run anything or know how cases are ordered (that is the scheduler's).
use std::collections::BTreeMap;

use super::options::BenchOptions;
use crate::plan::axes::{Axis, AXES};
use crate::report::settings::CaseSettings;

/// One point of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Stable id, [`CaseSettings::id`].
    pub id: String,
    /// What the case measures.
    pub settings: CaseSettings,
    /// Variables the variant adds to the worker's environment.
    pub env_vars: BTreeMap<String, String>,
    /// Variables the variant removes from the worker's environment (`--env-var NAME=@unset`).
    pub env_unset: Vec<String>,
    /// Not in the matrix: added by [`add_references`] as another case's quality reference.
    pub added_as_reference: bool,
    /// Not in the matrix: the A/A control of its workload's default (`plan::control`).
    pub added_as_control: bool,
}

impl Case {
    /// A case of `settings` (its id derived from them).
    pub fn new(settings: CaseSettings, env_vars: BTreeMap<String, String>) -> Case {
        Case {
            id: settings.id(),
            settings,
            env_vars,
            env_unset: Vec::new(),
            added_as_reference: false,
            added_as_control: false,
        }
    }

    /// The same case, its variant removing `names` from the worker's environment.
    pub fn unsetting(mut self, names: Vec<String>) -> Case {
        self.env_unset = names;
        self
    }

    /// The case this one's outputs are compared with: fp32, untiled, chunk 1, same frames,
    /// size and env variant (a reference case is its own reference).
    pub fn reference(&self) -> Case {
        Case::new(self.settings.reference(), self.env_vars.clone()).unsetting(self.env_unset.clone())
    }

    /// Id of [`Case::reference`].
    pub fn reference_id(&self) -> String {
        self.settings.reference().id()
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

/// All cases in matrix order ([`AXES`] order, the last axis varying fastest). Knobs that
/// do not act (candle, or the CPU: [`crate::engine::EngineSpec::run_as`]) become `n/a`, and the duplicates
/// this makes are dropped, so they are not measured twice.
pub fn expand(opts: &BenchOptions) -> Vec<Case> {
    let mut all = vec![CaseSettings::defaults()];
    for axis in AXES {
        all = product(&all, axis, opts.axes.get(axis));
    }
    // Only true duplicates go (knobs made `n/a`); settings that merely share an id stay, for
    // `check_unique` to refuse.
    let mut seen = std::collections::BTreeSet::new();
    all.into_iter()
        .map(|s| crate::engine::spec(s.engine).run_as(&s, &opts.device))
        // Temporal tiling splits the decode only: an encode-only case is untiled in time
        // (`plan::collapsed_temporal` says so once).
        .map(|s| CaseSettings {
            temporal_tile: s.temporal_tile.filter(|_| s.passes.decodes()),
            ..s
        })
        .filter(crate::plan::levers::planned)
        .filter(|s| seen.insert((s.id(), serde_json::to_string(s).unwrap_or_default())))
        .map(|s| {
            let vars = opts.variants.get(&s.env_variant).cloned().unwrap_or_default();
            let unset = opts.unset.get(&s.env_variant).into_iter().flatten().cloned().collect();
            Case::new(s, vars).unsetting(unset)
        })
        .collect()
}

/// Refuse (exit 2) two different cases with one id: an env variant named like another's id
/// with a suffix (`x-decode` beside `x` with `passes = decode`) would otherwise share its
/// record, its scratch files and its quality.
pub fn check_unique(cases: &[Case]) -> Result<(), crate::util::error::UserError> {
    let mut seen: BTreeMap<&str, &Case> = BTreeMap::new();
    for c in cases {
        if let Some(other) = seen.insert(&c.id, c) {
            if other.settings != c.settings {
                return Err(crate::util::error::UserError::Other(format!(
                    "two different cases have the id `{}` (env variants `{}` and `{}`, passes {} and {}): the ids \
                     of a report must be unique; rename the env variant `{}` so that it does not end like an id part \
                     (-decode, -encode, -cudnn_on, -tf32_off, ...)",
                    c.id,
                    other.settings.env_variant,
                    c.settings.env_variant,
                    other.settings.passes.name(),
                    c.settings.passes.name(),
                    if other.settings.env_variant.len() > c.settings.env_variant.len() {
                        &other.settings.env_variant
                    } else {
                        &c.settings.env_variant
                    }
                )));
            }
        }
    }
    Ok(())
}

/// Each of `settings` combined with each value of `axis`, the values varying fastest.
fn product(settings: &[CaseSettings], axis: &Axis, values: &[String]) -> Vec<CaseSettings> {
    let mut out = Vec::with_capacity(settings.len() * values.len());
    for s in settings {
        for v in values {
            let mut next = s.clone();
            (axis.set)(&mut next, axis.key, v).expect("stored axis values are canonical");
            out.push(next);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_unique() {
        let o = crate::plan::config::parse(
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
        assert_ne!(bf16.reference_id(), bf16.id);
        assert_eq!(cases[0].reference_id(), cases[0].id);
    }

    #[test]
    fn missing_references_are_added_once() {
        let o = crate::plan::config::parse(
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
        assert!(cases
            .iter()
            .filter(|c| c.added_as_reference)
            .all(|c| c.reference_id() == c.id));
    }

    #[test]
    fn knobs_multiply_only_where_they_apply() {
        let text = "[matrix]\nengine=[\"candle\",\"torch\"]\ncudnn=[\"on\",\"off\"]\ncudnn_benchmark=[\"off\",\"on\"]\nmiopen_db=[\"user\",\"fresh\"]";
        let cpu = crate::plan::config::parse(text).unwrap();
        let ids: Vec<String> = expand(&cpu).into_iter().map(|c| c.id).collect();
        assert_eq!(
            ids,
            [
                "fp32-chunk1-untiled-5x64x64-baseline",
                "torch-fp32-chunk1-untiled-5x64x64-baseline"
            ]
        );
        assert_eq!(cpu.case_count(), 2);
        let mut gpu = cpu.clone();
        gpu.device = "cuda:0".into();
        let cases = expand(&gpu);
        // On this machine's GPUs: MIOpen's database cannot act where they are NVIDIA's only
        // (torch 2 x 2 there), TF32 where they are AMD's only.
        use crate::machine::system::GpuVendors;
        let vendors = crate::machine::system::gpu_vendors();
        let miopen_acts = vendors != GpuVendors::NvidiaOnly;
        assert_eq!(
            cases.len(),
            1 + if miopen_acts { 8 } else { 4 },
            "candle once, torch 2 x 2 (x 2)"
        );
        // candle: TF32 alone acts on an NVIDIA GPU (`auto`, its true fp32: the id it had).
        let tf32 = match vendors == GpuVendors::AmdOnly {
            true => crate::report::values::Switch::NotApplicable,
            false => crate::report::values::Switch::Auto,
        };
        let candle_knobs = crate::report::settings::Knobs {
            tf32,
            ..Default::default()
        };
        assert_eq!(cases[0].settings.knobs, candle_knobs);
        assert_eq!(cases[0].id, "fp32-chunk1-untiled-5x64x64-baseline");
        let fresh = match miopen_acts {
            true => "torch-fp32-chunk1-untiled-5x64x64-baseline-cudnn_off-bench_on-miopen_fresh",
            false => "torch-fp32-chunk1-untiled-5x64x64-baseline-cudnn_off-bench_on",
        };
        assert!(cases.iter().any(|c| c.id == fresh), "{fresh}");
    }
}
