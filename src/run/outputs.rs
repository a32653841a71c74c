//! The outputs files and the quality measurement: workers save the outputs of their last
//! timed pass (f32 safetensors, tensors [`LATENT`] and [`DECODED`]) in the run's scratch
//! directory; once a case and its reference case (fp32, untiled, chunk 1, same frames, size
//! and env variant, see [`crate::plan::matrix::Case::reference`]) have both finished, [`QualityBook`]
//! compares the two files with [`crate::report::quality::error_stats`] and fills the case's
//! `quality`.
//!
//! Semantics (also in `docs/report-schema.md`):
//! - a reference case that saved its outputs gets `quality` with `reference_id` = its own id,
//!   `latent` and `decoded` null, and its `roundtrip_psnr_db`;
//! - any other `ok` case gets `reference_id`, `latent` and `decoded` (null when either side's
//!   outputs are missing, e.g. the reference failed) and its `roundtrip_psnr_db`; `quality`
//!   stays null when none of these is known;
//! - a case that is not `ok` has no `quality`;
//! - a reference case whose engine names a `cross_check` engine
//!   ([`crate::engine::EngineSpec::cross_check`]: candle for the Python engines) gets
//!   `quality.cross_engine` when its twin (the same settings run by that engine) also ran:
//!   its decoded video against the twin's.
//!
//! Must not: time anything; the worker saves, the parent compares.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use candle_core::{DType, Device};

use crate::plan::matrix::Case;
use crate::report::values::Engine;
use crate::report::{CaseStatus, CrossEngine, ErrorStats, Quality, Report};

pub use crate::engine::protocol::{OUTPUT_DECODED as DECODED, OUTPUT_LATENT as LATENT};

/// One output tensor, flattened to f32, with its shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub dims: Vec<usize>,
    pub values: Vec<f32>,
}

/// Read an outputs file: (latent, decoded), each `None` when the file lacks it.
pub fn load_outputs(path: &Path) -> anyhow::Result<(Option<Output>, Option<Output>)> {
    let tensors = candle_core::safetensors::load(path, &Device::Cpu)
        .with_context(|| format!("cannot read the outputs {}", path.display()))?;
    let get = |name: &str| -> anyhow::Result<Option<Output>> {
        let Some(t) = tensors.get(name) else {
            return Ok(None);
        };
        Ok(Some(Output {
            dims: t.dims().to_vec(),
            values: t.flatten_all()?.to_dtype(DType::F32)?.to_vec1()?,
        }))
    };
    Ok((get(LATENT)?, get(DECODED)?))
}

/// The decoded video in `case` against the one in `reference`, another engine's.
pub fn cross_engine(reference: &Path, case: &Path, engine: Engine, reference_id: &str) -> anyhow::Result<CrossEngine> {
    let decoded = |path: &Path| -> anyhow::Result<_> {
        load_outputs(path)?
            .1
            .ok_or_else(|| anyhow::anyhow!("{} holds no {DECODED}", path.display()))
    };
    let (rd, cd) = (decoded(reference)?, decoded(case)?);
    if rd.dims != cd.dims {
        anyhow::bail!("{DECODED} shapes differ: {engine} {:?}, case {:?}", rd.dims, cd.dims);
    }
    let stats = crate::report::quality::error_stats(&rd.values, &cd.values);
    Ok(CrossEngine {
        reference_engine: engine.name().to_string(),
        reference_id: reference_id.to_string(),
        max_abs_error: stats.max_abs,
        mean_abs_error: stats.mean_abs,
        psnr_db: stats.psnr_db,
        max_abs_reference: rd.values.iter().fold(0f64, |m, v| m.max(v.abs() as f64)),
    })
}

/// Latent and decoded error of the outputs in `case` against those in `reference`; each
/// `None` when either file lacks that output.
pub fn compare_files(reference: &Path, case: &Path) -> anyhow::Result<(Option<ErrorStats>, Option<ErrorStats>)> {
    let (rl, rd) = load_outputs(reference)?;
    let (cl, cd) = load_outputs(case)?;
    let stats = |name: &str, r: Option<Output>, c: Option<Output>| -> anyhow::Result<Option<ErrorStats>> {
        let (Some(r), Some(c)) = (r, c) else {
            return Ok(None);
        };
        if r.dims != c.dims {
            anyhow::bail!("{name} shapes differ: reference {:?}, case {:?}", r.dims, c.dims);
        }
        Ok(Some(crate::report::quality::error_stats(&r.values, &c.values)))
    };
    Ok((stats(LATENT, rl, cl)?, stats(DECODED, rd, cd)?))
}

/// What is known about a finished case.
#[derive(Debug, Clone)]
struct Finished {
    ok: bool,
    roundtrip_psnr_db: Option<f64>,
    outputs: Option<PathBuf>,
}

/// Fills `quality` of the report's cases as cases and their references finish.
#[derive(Debug, Default)]
pub struct QualityBook {
    reference_of: BTreeMap<String, String>,
    /// Reference case -> (its twin: the same settings run by its engine's `cross_check`
    /// engine, that engine), both cases in the run.
    twin_of: BTreeMap<String, (String, Engine)>,
    finished: BTreeMap<String, Finished>,
    done: BTreeSet<String>,
    cross_done: BTreeSet<String>,
}

impl QualityBook {
    /// A book for these cases (references included), run on `device`.
    pub fn new(cases: &[Case], device: &str) -> QualityBook {
        let ids: BTreeSet<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        let twin_of = cases
            .iter()
            // Cross-engine compares decoded videos: encode-only cases have none.
            .filter(|c| c.reference_id() == c.id && c.settings.passes.decodes())
            .filter_map(|c| {
                let other = crate::engine::spec(c.settings.engine).cross_check?;
                let twin = crate::engine::spec(other).run_as(&c.settings, device).id();
                Some((c.id.clone(), (twin, other)))
            })
            .filter(|(_, (twin, _))| ids.contains(twin.as_str()))
            .collect();
        QualityBook {
            reference_of: cases.iter().map(|c| (c.id.clone(), c.reference_id())).collect(),
            twin_of,
            ..QualityBook::default()
        }
    }

    /// Case `id` finished (its record is already in `report`); `outputs` is its outputs
    /// file when the worker saved one. Fills the `quality` of every case that this makes
    /// computable; returns warnings (outputs that could not be compared).
    pub fn finished(
        &mut self,
        report: &mut Report,
        id: &str,
        roundtrip_psnr_db: Option<f64>,
        outputs: Option<PathBuf>,
    ) -> Vec<String> {
        let ok = report
            .cases
            .iter()
            .any(|c| c.id == id && c.outcome.status == CaseStatus::Ok);
        self.finished.insert(
            id.to_string(),
            Finished {
                ok,
                roundtrip_psnr_db,
                outputs: outputs.filter(|p| ok && p.is_file()),
            },
        );
        let mut candidates = vec![id.to_string()];
        candidates.extend(
            self.reference_of
                .iter()
                .filter(|(c, r)| r.as_str() == id && c.as_str() != id)
                .map(|(c, _)| c.clone()),
        );
        let mut warnings = Vec::new();
        for c in candidates {
            if self.done.contains(&c) || !self.finished.contains_key(&c) {
                continue;
            }
            let r = self.reference_of.get(&c).cloned().unwrap_or_else(|| c.clone());
            let Some(reference) = self.finished.get(&r) else {
                continue; // wait for the reference
            };
            let case = &self.finished[&c];
            let quality = if !case.ok {
                None
            } else if c == r {
                case.outputs.as_ref().map(|_| Quality {
                    reference_id: r.clone(),
                    latent: None,
                    decoded: None,
                    roundtrip_psnr_db: case.roundtrip_psnr_db,
                    cross_engine: None,
                })
            } else {
                let (mut latent, mut decoded) = (None, None);
                if let (Some(rp), Some(cp)) = (&reference.outputs, &case.outputs) {
                    match compare_files(rp, cp) {
                        Ok((l, d)) => (latent, decoded) = (l, d),
                        Err(e) => warnings.push(format!("cannot compare the outputs of {c} with {r}: {e:#}")),
                    }
                }
                (latent.is_some() || decoded.is_some() || case.roundtrip_psnr_db.is_some()).then(|| Quality {
                    reference_id: r.clone(),
                    latent,
                    decoded,
                    roundtrip_psnr_db: case.roundtrip_psnr_db,
                    cross_engine: None,
                })
            };
            if let Some(rec) = report.cases.iter_mut().find(|x| x.id == c) {
                rec.quality = quality;
            }
            self.done.insert(c);
        }
        self.cross_engines(report, &mut warnings);
        warnings
    }

    /// Fill `cross_engine` of each reference case whose twin has finished too.
    fn cross_engines(&mut self, report: &mut Report, warnings: &mut Vec<String>) {
        for (case, (twin, engine)) in &self.twin_of {
            if self.cross_done.contains(case) || !self.done.contains(case) {
                continue;
            }
            let (Some(c), Some(t)) = (self.finished.get(case), self.finished.get(twin)) else {
                continue;
            };
            self.cross_done.insert(case.clone());
            let (Some(cp), Some(tp)) = (&c.outputs, &t.outputs) else {
                continue; // one side failed or saved nothing
            };
            match cross_engine(tp, cp, *engine, twin) {
                Ok(x) => {
                    if let Some(q) = report
                        .cases
                        .iter_mut()
                        .find(|r| &r.id == case)
                        .and_then(|r| r.quality.as_mut())
                    {
                        q.cross_engine = Some(x);
                    }
                }
                Err(e) => warnings.push(format!("cannot compare the outputs of {case} with {twin}: {e:#}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::candle::worker::save_outputs;
    use crate::report::CaseRecord;
    use candle_core::Tensor;

    fn save(path: &Path, latent: &[f32], decoded: &[f32]) {
        let t = |v: &[f32]| Tensor::from_slice(v, (1, 1, v.len()), &Device::Cpu).unwrap();
        save_outputs(path, Some(&t(latent)), Some(&t(decoded))).unwrap();
    }

    fn record(id: &str, status: CaseStatus) -> CaseRecord {
        serde_json::from_value(serde_json::json!({
            "id": id, "precision": "fp32", "compute_dtype": null, "chunk": 1, "tile_px": null,
            "overlap_px": null, "frames": 5, "width": 32, "height": 32, "env_variant": "baseline",
            "env": {}, "status": status, "error": null, "encode": null, "decode": null,
            "load_s": null, "peak_rss_bytes": null, "device_memory_bytes": null, "quality": null
        }))
        .unwrap()
    }

    fn cases() -> Vec<Case> {
        let o = crate::plan::config::parse("[matrix]\nprecision=[\"bf16\"]\nchunk=[2]\nsize=[\"32x32\"]").unwrap();
        let mut cases = crate::plan::matrix::expand(&o);
        crate::plan::matrix::add_references(&mut cases);
        cases
    }

    const REF: &str = "fp32-chunk1-untiled-5x32x32-baseline";
    const CASE: &str = "bf16-chunk2-untiled-5x32x32-baseline";

    #[test]
    fn outputs_round_trip_through_safetensors() {
        use crate::engine::clip::structured_clip;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.outputs.safetensors");
        let latent = structured_clip(1, 8, 8, &Device::Cpu)
            .unwrap()
            .to_dtype(candle_core::DType::BF16)
            .unwrap();
        let decoded = structured_clip(5, 16, 8, &Device::Cpu).unwrap();
        save_outputs(&path, Some(&latent), Some(&decoded)).unwrap();
        let back = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
        assert_eq!(back[LATENT].dtype(), candle_core::DType::F32);
        assert_eq!(back[DECODED].dims(), &[1, 3, 5, 8, 16]);
    }

    #[test]
    fn identical_and_perturbed_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let (rp, cp) = (dir.path().join("r.safetensors"), dir.path().join("c.safetensors"));
        save(&rp, &[0.0, 0.5, -0.5, 1.0], &[0.25, -0.25]);
        save(&cp, &[0.0, 0.5, -0.5, 1.0], &[0.25, -0.25]);
        let (l, d) = compare_files(&rp, &cp).unwrap();
        let (l, d) = (l.unwrap(), d.unwrap());
        for s in [&l, &d] {
            assert!(s.identical);
            assert_eq!((s.psnr_db, s.max_abs, s.mean_abs), (None, 0.0, 0.0));
        }
        // Latent: one of four values off by 0.1: MSE 0.0025, PSNR 10 log10(4 / 0.0025) = 32.04 dB.
        // Decoded: both values off by 0.02: MSE 4e-4, PSNR 40 dB.
        save(&cp, &[0.0, 0.5, -0.5, 0.9], &[0.27, -0.23]);
        let (l, d) = compare_files(&rp, &cp).unwrap();
        let (l, d) = (l.unwrap(), d.unwrap());
        assert!((l.psnr_db.unwrap() - 32.0412).abs() < 1e-3, "{l:?}");
        assert!((l.max_abs - 0.1).abs() < 1e-6 && (l.mean_abs - 0.025).abs() < 1e-6);
        assert!((d.psnr_db.unwrap() - 40.0).abs() < 1e-3, "{d:?}");
        assert!(!l.identical && !d.identical);
        // Different shapes are an error, not a number.
        save(&cp, &[0.0, 0.5, -0.5], &[0.25, -0.25]);
        assert!(compare_files(&rp, &cp)
            .unwrap_err()
            .to_string()
            .contains("shapes differ"));
        // A decode-only case saves no latent of its own: only the decoded video is compared.
        let t = Tensor::from_slice(&[0.25f32, -0.25], (1, 1, 2), &Device::Cpu).unwrap();
        save_outputs(&cp, None, Some(&t)).unwrap();
        let (l, d) = compare_files(&rp, &cp).unwrap();
        assert!(l.is_none() && d.unwrap().identical);
    }

    #[test]
    fn quality_is_filled_once_both_cases_finished() {
        let dir = tempfile::tempdir().unwrap();
        let (rp, cp) = (dir.path().join("r.safetensors"), dir.path().join("c.safetensors"));
        save(&rp, &[0.0, 0.5], &[0.25, -0.25]);
        save(&cp, &[0.0, 0.5], &[0.27, -0.23]);
        let cases = cases();
        assert_eq!(cases.len(), 2);
        let mut book = QualityBook::new(&cases, "cpu");
        let mut report = crate::report::Report {
            schema_version: 1,
            tool: Default::default(),
            created_at: String::new(),
            system: Default::default(),
            model: Default::default(),
            run: Default::default(),
            engines: Default::default(),
            summary: None,
            cases: vec![record(CASE, CaseStatus::Ok)],
        };
        // The case first: nothing to compare with yet.
        assert!(book.finished(&mut report, CASE, Some(20.0), Some(cp)).is_empty());
        assert_eq!(report.cases[0].quality, None);
        report.cases.push(record(REF, CaseStatus::Ok));
        assert!(book.finished(&mut report, REF, Some(21.0), Some(rp)).is_empty());
        let q = report.cases[0].quality.clone().unwrap();
        assert_eq!(q.reference_id, REF);
        assert_eq!(q.latent.unwrap().psnr_db, None);
        assert!((q.decoded.unwrap().psnr_db.unwrap() - 40.0).abs() < 1e-3);
        assert_eq!(q.roundtrip_psnr_db, Some(20.0));
        let rq = report.cases[1].quality.clone().unwrap();
        assert_eq!((rq.reference_id.as_str(), rq.latent, rq.decoded), (REF, None, None));
        assert_eq!(rq.roundtrip_psnr_db, Some(21.0));
    }

    #[test]
    fn failed_reference_leaves_no_comparison() {
        let dir = tempfile::tempdir().unwrap();
        let cp = dir.path().join("c.safetensors");
        save(&cp, &[0.0], &[0.0]);
        let mut book = QualityBook::new(&cases(), "cpu");
        let mut report = crate::report::Report {
            schema_version: 1,
            tool: Default::default(),
            created_at: String::new(),
            system: Default::default(),
            model: Default::default(),
            run: Default::default(),
            engines: Default::default(),
            summary: None,
            cases: vec![record(REF, CaseStatus::Failed), record(CASE, CaseStatus::Ok)],
        };
        book.finished(&mut report, REF, None, None);
        book.finished(&mut report, CASE, None, Some(cp.clone()));
        assert!(report.cases.iter().all(|c| c.quality.is_none()));
        // With a round trip (real weights) the case still reports it.
        let mut book = QualityBook::new(&cases(), "cpu");
        book.finished(&mut report, REF, None, None);
        book.finished(&mut report, CASE, Some(18.5), Some(cp));
        let q = report.cases[1].quality.clone().unwrap();
        assert_eq!((q.latent, q.decoded, q.roundtrip_psnr_db), (None, None, Some(18.5)));
    }
}
