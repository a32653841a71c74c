//! The parent <-> worker protocol, for any worker (this binary's hidden `worker` command, or
//! a worker in another language): the spec the parent passes (JSON), the phase marker lines
//! the worker prints on stderr, the result file it writes (JSON), the statuses, the
//! environment it reports and the file layout of the run's scratch directory.
//! `docs/worker-protocol.md` describes the same wire format for implementers; keep the two
//! in step. The result shares its measured part with the report's case record
//! ([`crate::report::Outcome`], flattened into both).
//!
//! Must not: measure anything, or spawn processes (that is the executor's job).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::report::settings::CaseSettings;
use crate::report::values::TorchPrecision;
use crate::report::{CaseStatus, EngineContext, Outcome};
use crate::weights::WeightsSource;

/// Prefix of the stderr lines through which the worker tells the parent its current phase.
pub const PHASE_MARKER: &str = "@@wan-vae-bench-phase ";

/// The stderr line a worker (`worker --session`) prints once, when it is ready to read its
/// first case from stdin.
pub const READY_MARKER: &str = "@@wan-vae-bench-ready";

/// Prefix of the stderr line a worker prints as soon as it has read a case's spec, before
/// any work: the case's id follows. A worker that ends before acknowledging a case never
/// started it (the parent blames the worker and runs the case in a fresh one).
pub const START_MARKER: &str = "@@wan-vae-bench-start ";

/// The stderr line a worker prints after each case, once its result file is written.
pub const DONE_MARKER: &str = "@@wan-vae-bench-done";

/// Tensor name of the latent in an outputs file.
pub const OUTPUT_LATENT: &str = "latent";
/// Tensor name of the decoded video in an outputs file.
pub const OUTPUT_DECODED: &str = "decoded";

/// Prefixes of the variables a worker reports besides those its variant set (kept with the
/// report's reading of `env`, which tells from them what every worker recorded).
pub use crate::report::env::REPORTED_ENV_PREFIXES;

/// What the parent asks a worker to measure: one case, as a JSON file whose path the
/// parent sends on the worker's stdin (`worker --session`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkerSpec {
    pub id: String,
    /// The case's settings, flattened: `engine`, `precision`, `chunk`, `tile_px`,
    /// `overlap_px`, `frames`, `width`, `height`, `env_variant`, `passes`, the temporal
    /// tiling and the knobs.
    #[serde(flatten)]
    pub settings: CaseSettings,
    /// What every case of the run shares, flattened: `weights`, `model`, `device`,
    /// `warmup`, `runs`, `weights_path`, `torch_precision`.
    #[serde(flatten)]
    pub run: RunSpec,
    /// Names of the variables the env variant set (always reported).
    pub variant_vars: Vec<String>,
    /// Where to save the last timed pass's outputs (safetensors, f32 tensors
    /// [`OUTPUT_LATENT`] and [`OUTPUT_DECODED`]); nothing is saved when `None`.
    #[serde(default)]
    pub outputs: Option<PathBuf>,
    /// The input to use instead of the built-in clip: a normalized latent (decode-only
    /// cases: the user's `--input`, or the untimed encode of the clip the parent prepared)
    /// or a video; absent = the built-in clip.
    #[serde(default)]
    pub input: Option<WorkerInput>,
    /// Safetensors file with the input clip (f32 tensor [`INPUT_VIDEO`], `[1, 3, F, H, W]`)
    /// that the parent wrote once, so every engine encodes the same bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_path: Option<PathBuf>,
    /// The folder of the user's own install the engine runs (its `--<flag> DIR`, see
    /// `engine::EngineFolder`); absent for engines that need none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_dir: Option<PathBuf>,
    /// For a Python engine, the module of the shipped Python worker that makes it (its
    /// entry's `WorkerKind::Python::module`, [`crate::engine::EngineSpec::python_module`]);
    /// absent for other engines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_module: Option<String>,
    /// `run --profile`: this lease runs the case's profiled pass ([`ProfileRequest`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileRequest>,
}

/// A profiled lease (`run --profile`): after at most one warmup, the one timed pass of each
/// kind runs profiled, per layer, and the result carries [`WorkerResult::profile`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ProfileRequest {
    /// Write the profiled passes' Chrome/Perfetto trace here (`<this>.<pass>.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<PathBuf>,
}

/// The part of a [`WorkerSpec`] every case of a run shares (the scheduler keeps one and
/// copies it into each spec).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSpec {
    /// The weights, already resolved by the parent: `"synthetic"` (seed 0),
    /// `"synthetic:SEED"`, or a local file path.
    #[serde(with = "weights_wire")]
    pub weights: WeightsSource,
    /// The model of synthetic weights (Wan 2.1 when absent); a file must agree with it.
    #[serde(default)]
    pub model: Option<crate::model::ModelKind>,
    pub device: String,
    pub warmup: usize,
    pub runs: usize,
    /// The weights file to read instead of `weights`: with synthetic weights and a Python
    /// engine in the run, the parent writes them once (original key names) and every
    /// engine reads the same bits. `weights` stays the label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_path: Option<PathBuf>,
    /// How a Python engine applies bf16/fp16 (`cast` or `autocast`); absent: its default.
    /// The parent sends it only to engines that list the mode
    /// (`engine::EngineSpec::precision_modes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_precision: Option<TorchPrecision>,
    /// The testing hook (`WAN_VAE_BENCH_FAULT`) may act: set only by `run --fault-hooks`
    /// (hidden); otherwise a worker ignores the variable and says so on stderr.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fault_hooks: bool,
}

/// Where a worker finds its input: an f32 safetensors file holding tensor `latent`
/// (`[1,z,t,h,w]`, normalized as `encode` returns it) or `video` (`[1,3,T,H,W]` in [-1, 1]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkerInput {
    pub path: PathBuf,
    pub kind: InputKind,
}

/// What an input file holds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    Latent,
    Video,
}

impl InputKind {
    /// The tensor name in the file: `latent` or `video`.
    pub fn tensor(self) -> &'static str {
        match self {
            InputKind::Latent => OUTPUT_LATENT,
            InputKind::Video => "video",
        }
    }
}

/// Tensor name of the clip in an input file ([`WorkerSpec::input_path`]).
pub const INPUT_VIDEO: &str = "video";

/// Model facts a worker learned while loading (the parent fills the report's `model`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct WorkerModel {
    pub format: String,
    pub on_disk_dtype: String,
    pub params: u64,
    pub dim: usize,
    pub z_dim: usize,
}

/// What a worker writes back (a JSON file at the path the parent gave).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkerResult {
    /// Status, error, timings, memory and environment: what the report's case record keeps
    /// (flattened: the same keys in both).
    #[serde(flatten)]
    pub outcome: Outcome,
    pub model: Option<WorkerModel>,
    /// PSNR (dB) of the last timed pass's decode(encode(clip)), clamped to [-1, 1], against
    /// the clip; real weights only (null with synthetic weights, or when identical).
    #[serde(default)]
    pub roundtrip_psnr_db: Option<f64>,
    /// Why the outputs could not be saved (the timings are still valid).
    #[serde(default)]
    pub outputs_error: Option<String>,
    /// What the engine ran on (the report keeps it per engine, `engines.<name>`). The
    /// Python worker writes it as `python`.
    #[serde(default, rename = "python", skip_serializing_if = "Option::is_none")]
    pub engine_context: Option<EngineContext>,
    /// A profiled lease's per-layer profile (raw: the parent completes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::report::profile::CaseProfile>,
}

impl WorkerResult {
    /// A result with nothing measured.
    pub fn empty(status: CaseStatus, error: Option<String>, env: BTreeMap<String, String>) -> Self {
        WorkerResult {
            outcome: Outcome::new(status, error, env),
            model: None,
            roundtrip_psnr_db: None,
            outputs_error: None,
            engine_context: None,
            profile: None,
        }
    }

    /// Whether an `ok` result holds what `spec` asked for: each pass asked for, with
    /// `spec.run.runs` samples, every timing finite and non-negative. The parent checks
    /// every result (a worker is another program); `Err` says what is wrong.
    pub fn check(&self, spec: &WorkerSpec) -> Result<(), String> {
        let o = &self.outcome;
        if o.status != CaseStatus::Ok {
            return Ok(());
        }
        let passes = spec.settings.passes;
        for (name, asked, stats) in [
            ("encode", passes.encodes(), &o.encode),
            ("decode", passes.decodes(), &o.decode),
        ] {
            if !asked {
                continue;
            }
            let Some(p) = stats else {
                return Err(format!("no {name} timings"));
            };
            if p.samples_s.len() != spec.run.runs {
                let n = p.samples_s.len();
                return Err(format!("{n} {name} samples, {} asked for", spec.run.runs));
            }
            let all = p.samples_s.iter().chain(&p.warmup_s);
            let stats = [p.min_s, p.median_s, p.mean_s, p.stddev_s, p.max_s];
            if let Some(bad) = all.chain(&stats).find(|t| !t.is_finite() || **t < 0.0) {
                return Err(format!(
                    "{name} timing {bad} is not a finite, non-negative number of seconds"
                ));
            }
        }
        match o.load_s {
            Some(t) if !t.is_finite() || t < 0.0 => Err(format!("load time {t} is not a finite, non-negative number")),
            _ => Ok(()),
        }
    }

    /// The worker's exit code for this result: 0 when `ok`, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        if self.outcome.status == CaseStatus::Ok {
            0
        } else {
            1
        }
    }
}

/// Tell the parent which phase is running (a marker line on stderr).
pub fn phase(name: &str) {
    crate::errln!("{PHASE_MARKER}{name}");
}

/// The variables the variant set plus every variable with a reported prefix.
pub fn seen_env(variant_vars: &[String]) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for (k, v) in std::env::vars_os() {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
            continue;
        };
        if variant_vars.iter().any(|n| n == k) || REPORTED_ENV_PREFIXES.iter().any(|p| k.starts_with(p)) {
            env.insert(k.to_string(), v.to_string());
        }
    }
    env
}

/// File layout of the run's scratch directory, named after the case id ([`file_stem`]).
pub fn result_path(scratch: &Path, id: &str) -> PathBuf {
    scratch.join(format!("{}.result.json", file_stem(id)))
}

/// Where the parent writes the spec of case `id` for its worker (see [`result_path`]).
pub fn spec_path(scratch: &Path, id: &str) -> PathBuf {
    scratch.join(format!("{}.spec.json", file_stem(id)))
}

/// Where the parent writes the input clip of `frames` x `width` x `height`.
pub fn input_path(scratch: &Path, frames: usize, width: usize, height: usize) -> PathBuf {
    scratch.join(format!("input-{frames}x{width}x{height}.safetensors"))
}

/// Where the worker of case `id` saves its outputs (see [`result_path`]).
pub fn outputs_path(scratch: &Path, id: &str) -> PathBuf {
    scratch.join(format!("{}.outputs.safetensors", file_stem(id)))
}

/// A file name for case `id`, unique and bounded: its first 120 characters with every one
/// ([`crate::util::files::file_stem`], where the profile's trace files take it too).
pub use crate::util::files::file_stem;

/// [`WeightsSource`] on the wire: a string, so the protocol stays the one workers already
/// speak (`"synthetic"` or a path), with `"synthetic:SEED"` for another seed.
mod weights_wire {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::weights::WeightsSource;

    pub fn serialize<S: Serializer>(w: &WeightsSource, s: S) -> Result<S::Ok, S::Error> {
        match w {
            WeightsSource::Synthetic { seed: 0 } => s.serialize_str("synthetic"),
            WeightsSource::Synthetic { seed } => s.serialize_str(&format!("synthetic:{seed}")),
            WeightsSource::File(path) => match path.to_str() {
                Some(p) => s.serialize_str(p),
                None => Err(serde::ser::Error::custom(format!(
                    "weights path {} is not UTF-8",
                    path.display()
                ))),
            },
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<WeightsSource, D::Error> {
        let text = String::deserialize(d)?;
        if text == "synthetic" {
            return Ok(WeightsSource::Synthetic { seed: 0 });
        }
        if let Some(seed) = text.strip_prefix("synthetic:") {
            let seed = seed
                .parse()
                .map_err(|_| serde::de::Error::custom(format!("bad synthetic seed in {text:?}")))?;
            return Ok(WeightsSource::Synthetic { seed });
        }
        Ok(WeightsSource::File(text.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Precision;

    #[test]
    fn spec_wire_format_is_flat_with_a_weights_string() {
        let spec = WorkerSpec {
            id: "fp32-chunk1-untiled-5x64x64-baseline".into(),
            settings: CaseSettings {
                precision: Precision::Fp32,
                chunk: 1,
                tiling: None,
                frames: 5,
                width: 64,
                height: 64,
                env_variant: "baseline".into(),
                passes: crate::report::values::Passes::Both,
                temporal_tile: None,
                engine: Default::default(),
                knobs: Default::default(),
                layout: Default::default(),
                conv3d: Default::default(),
            },
            run: RunSpec {
                weights: WeightsSource::Synthetic { seed: 0 },
                model: None,
                device: "cpu".into(),
                warmup: 1,
                runs: 2,
                weights_path: None,
                torch_precision: None,
                fault_hooks: false,
            },
            variant_vars: vec![],
            outputs: None,
            input: None,
            input_path: None,
            engine_dir: None,
            python_module: None,
            profile: None,
        };
        let v = serde_json::to_value(&spec).unwrap();
        assert_eq!(v["weights"], "synthetic");
        assert_eq!(v["precision"], "fp32");
        assert_eq!(v["tile_px"], serde_json::Value::Null);
        assert_eq!(serde_json::from_value::<WorkerSpec>(v.clone()).unwrap(), spec);
        let mut file = v;
        file["weights"] = "/models/wan.safetensors".into();
        let back: WorkerSpec = serde_json::from_value(file).unwrap();
        assert_eq!(back.run.weights, WeightsSource::File("/models/wan.safetensors".into()));
        let mut with_input = serde_json::to_value(&spec).unwrap();
        with_input["input"] = serde_json::json!({"path": "/s/input.safetensors", "kind": "latent"});
        let back: WorkerSpec = serde_json::from_value(with_input).unwrap();
        assert_eq!(back.input.unwrap().kind.tensor(), "latent");
    }

    #[test]
    fn result_wire_format_is_flat_and_keeps_the_engine_context_as_reported() {
        // As the Python worker writes it: extra keys (`engine`, `knobs`) are ignored.
        let json = serde_json::json!({"status": "ok", "error": null, "compute_dtype": "f32",
            "encode": null, "decode": null, "load_s": 0.5, "peak_rss_bytes": 1024,
            "device_memory_bytes": null, "env": {"OMP_NUM_THREADS": "2"}, "model": null,
            "roundtrip_psnr_db": null, "outputs_error": null, "engine": "torch",
            "knobs": {"cudnn": "on"}, "device_peak_allocated_bytes": 7,
            "python": {"python": "3.11.7", "torch": "2.5.1", "hip": null, "threads": 2}});
        let r: WorkerResult = serde_json::from_value(json).unwrap();
        let o = &r.outcome;
        assert_eq!(
            (o.status, o.load_s, o.peak_rss_bytes),
            (CaseStatus::Ok, Some(0.5), Some(1024))
        );
        assert_eq!(
            (o.device_peak_allocated_bytes, o.device_peak_reserved_bytes),
            (Some(7), None)
        );
        assert_eq!(o.env["OMP_NUM_THREADS"], "2");
        let ctx = r.engine_context.as_ref().unwrap();
        assert_eq!((ctx.text("torch"), ctx.get("hip")), (Some("2.5.1"), None));
        assert_eq!(ctx.0.len(), 4, "null values are kept as reported");
        let v = serde_json::to_value(&r).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "compute_dtype",
                "decode",
                "device_memory_bytes",
                "device_peak_allocated_bytes",
                "encode",
                "env",
                "error",
                "load_s",
                "model",
                "outputs_error",
                "peak_rss_bytes",
                "python",
                "roundtrip_psnr_db",
                "status"
            ]
        );
        assert_eq!(serde_json::from_value::<WorkerResult>(v).unwrap(), r);
        // A candle result (no context) reads back too.
        let empty = WorkerResult::empty(CaseStatus::Timeout, Some("t".into()), BTreeMap::new());
        let back: WorkerResult = serde_json::from_str(&serde_json::to_string(&empty).unwrap()).unwrap();
        assert_eq!(back, empty);
    }

    #[test]
    fn scratch_names_are_safe_unique_and_bounded() {
        let p = outputs_path(Path::new("/s"), "fp32-chunk1-a/b c");
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("fp32-chunk1-a_b_c-") && name.ends_with(".outputs.safetensors"),
            "{name}"
        );
        // Issue 30 item 5: ids that spell alike get their own files; long ones stay short.
        assert_ne!(file_stem("x/y"), file_stem("x_y"));
        let long = format!("fp32-{}", "v".repeat(400));
        assert!(result_path(Path::new("/s"), &long).file_name().unwrap().len() < 160);
        assert_ne!(file_stem(&long), file_stem(&format!("{long}w")));
    }
}
