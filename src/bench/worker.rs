//! The in-process measurement of one case (the hidden `worker` subcommand): load the weights
//! (timed), build deterministic inputs, run the warmup passes, then `runs` timed encode and
//! decode passes with a device synchronization before each clock read; report the environment
//! it saw, peak RSS, device memory and the dtype that really ran.
//!
//! Quality: the input is a deterministic structured clip ([`structured_clip`], a function of
//! frames and size only), each pass decodes the latent its own encode produced, and the
//! outputs of the last timed pass (latent and decoded video, f32) are saved to
//! [`WorkerSpec::outputs`] for the parent to compare with the reference case's. With real
//! weights (not `synthetic`) the worker also reports the round-trip PSNR of that last pass:
//! `PSNR(clip, clamp(decode(encode(clip)), -1, 1))`.
//!
//! Testing hook: `WAN_VAE_BENCH_FAULT` (set by an env variant) makes the worker `crash`
//! (abort after writing to stderr), `oom` (abort with an allocation-failure message), `hang`
//! (sleep forever), `fail` (report an error), `unsupported` (report an unsupported setting)
//! or `fake` (skip the model and report tiny made-up timings), so the orchestration can be
//! tested without a model.
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::model::{Precision, RunOptions, Tiling, WanVae};
use crate::report::{CaseStatus, PassStats};
use crate::weights::WeightsSource;

/// Prefix of the stderr lines through which the worker tells the parent its current phase.
pub const PHASE_MARKER: &str = "@@wan-vae-bench-phase ";

/// Environment variable that injects a fault (testing hook).
pub const FAULT_VAR: &str = "WAN_VAE_BENCH_FAULT";

/// Prefixes of the variables a worker reports besides those its variant set.
pub const REPORTED_ENV_PREFIXES: &[&str] = &[
    "MIOPEN_",
    "HSA_",
    "HIP_",
    "ROCM_",
    "ROCBLAS_",
    "HIPBLASLT_",
    "PYTORCH_",
    "TORCH_",
    "CUDA_",
    "CUBLAS_",
    "CUDNN_",
    "RAYON_",
    "OMP_",
    "CANDLE_",
];

/// What the parent asks one worker to measure.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkerSpec {
    pub id: String,
    /// `synthetic` or a local weights file.
    pub weights: String,
    /// The model of synthetic weights (Wan 2.1 when absent); a file must agree with it.
    #[serde(default)]
    pub model: Option<crate::model::ModelKind>,
    pub device: String,
    pub precision: Precision,
    pub chunk: usize,
    pub tile_px: Option<usize>,
    pub overlap_px: Option<usize>,
    pub frames: usize,
    pub width: usize,
    pub height: usize,
    pub warmup: usize,
    pub runs: usize,
    /// Names of the variables the env variant set (always reported).
    pub variant_vars: Vec<String>,
    /// Where to save the last timed pass's outputs (safetensors, f32 tensors `latent` and
    /// `decoded`); nothing is saved when `None`.
    #[serde(default)]
    pub outputs: Option<std::path::PathBuf>,
}

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
    pub status: CaseStatus,
    pub error: Option<String>,
    pub compute_dtype: Option<String>,
    pub encode: Option<PassStats>,
    pub decode: Option<PassStats>,
    pub load_s: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    pub device_memory_bytes: Option<u64>,
    pub env: BTreeMap<String, String>,
    pub model: Option<WorkerModel>,
    /// PSNR (dB) of the last timed pass's decode(encode(clip)), clamped to [-1, 1], against
    /// the clip; real weights only (null with synthetic weights, or when identical).
    #[serde(default)]
    pub roundtrip_psnr_db: Option<f64>,
    /// Why the outputs could not be saved (the timings are still valid).
    #[serde(default)]
    pub outputs_error: Option<String>,
}

impl WorkerResult {
    /// A result with nothing measured.
    pub fn empty(status: CaseStatus, error: Option<String>, env: BTreeMap<String, String>) -> Self {
        WorkerResult {
            status,
            error,
            compute_dtype: None,
            encode: None,
            decode: None,
            load_s: None,
            peak_rss_bytes: None,
            device_memory_bytes: None,
            env,
            model: None,
            roundtrip_psnr_db: None,
            outputs_error: None,
        }
    }
}

/// An error with the status it should be recorded as.
struct Classified(CaseStatus, anyhow::Error);

fn classify(err: anyhow::Error) -> Classified {
    let text = format!("{err:#}").to_ascii_lowercase();
    let status = if text.contains("out of memory") || text.contains("memory allocation of") {
        CaseStatus::Oom
    } else if text.contains("not supported") || text.contains("unsupported") || text.contains("not available") {
        CaseStatus::Unsupported
    } else {
        CaseStatus::Failed
    };
    Classified(status, err)
}

/// Tell the parent which phase is running (a marker line on stderr).
pub fn phase(name: &str) {
    eprintln!("{PHASE_MARKER}{name}");
}

/// Run one case in this process. Never panics on a model error: it becomes the result.
pub fn run(spec: &WorkerSpec) -> WorkerResult {
    let env = seen_env(&spec.variant_vars);
    let mut result = match inject_fault(spec) {
        Some(r) => r,
        None => match measure(spec) {
            Ok(r) => r,
            Err(Classified(status, err)) => WorkerResult::empty(status, Some(format!("{err:#}")), BTreeMap::new()),
        },
    };
    result.env = env;
    result.peak_rss_bytes = result.peak_rss_bytes.or_else(peak_rss_bytes);
    if spec.device.starts_with("cuda") {
        result.device_memory_bytes = cuda_memory_used_bytes();
    }
    result
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

fn inject_fault(spec: &WorkerSpec) -> Option<WorkerResult> {
    let fault = std::env::var(FAULT_VAR).ok()?;
    let empty = |status, msg: &str| Some(WorkerResult::empty(status, Some(msg.to_string()), BTreeMap::new()));
    match fault.as_str() {
        "" => None,
        "crash" => {
            eprintln!("wan-vae-bench worker: injected crash ({FAULT_VAR}=crash)");
            std::process::abort();
        }
        "oom" => {
            eprintln!("memory allocation of 1099511627776 bytes failed ({FAULT_VAR}=oom)");
            std::process::abort();
        }
        "hang" => {
            phase("hang");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        "fail" => empty(CaseStatus::Failed, "injected failure (WAN_VAE_BENCH_FAULT=fail)"),
        "unsupported" => empty(
            CaseStatus::Unsupported,
            "injected unsupported setting (WAN_VAE_BENCH_FAULT=unsupported)",
        ),
        "fake" => Some(fake(spec)),
        other => empty(
            CaseStatus::Failed,
            &format!("unknown {FAULT_VAR} value {other:?} (crash, oom, hang, fail, unsupported, fake)"),
        ),
    }
}

/// Made-up but well-formed timings (a few milliseconds of sleep per pass).
fn fake(spec: &WorkerSpec) -> WorkerResult {
    let pass = |ms: u64, phase_name: &str| {
        let mut warm = Vec::new();
        let mut samples = Vec::new();
        for i in 0..spec.warmup {
            phase(&format!("warmup {phase_name} {}/{}", i + 1, spec.warmup));
            warm.push(timed(|| std::thread::sleep(Duration::from_millis(2 * ms))));
        }
        for i in 0..spec.runs {
            phase(&format!("{phase_name} {}/{}", i + 1, spec.runs));
            samples.push(timed(|| std::thread::sleep(Duration::from_millis(ms))));
        }
        pass_stats(samples, warm, spec.frames, 0.0)
    };
    let encode = pass(5, "encode");
    let decode = pass(10, "decode");
    WorkerResult {
        compute_dtype: Some("fake".into()),
        encode: Some(encode),
        decode: Some(decode),
        load_s: Some(0.0),
        ..WorkerResult::empty(CaseStatus::Ok, None, BTreeMap::new())
    }
}

fn timed(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// Load, warm up and measure. Errors carry the status they should be recorded as.
fn measure(spec: &WorkerSpec) -> Result<WorkerResult, Classified> {
    phase("device");
    // A device this build lacks, or one that cannot be opened, is `unsupported` here.
    let device = crate::device::parse(&spec.device).map_err(|e| Classified(CaseStatus::Unsupported, e.into()))?;
    let source = if spec.weights == "synthetic" {
        WeightsSource::Synthetic { seed: 0 }
    } else {
        WeightsSource::File(spec.weights.clone().into())
    };
    phase("load");
    let sync = |d: &Device| crate::device::synchronize(d).map_err(classify);
    let t0 = Instant::now();
    let weights = crate::weights::load_model(&source, spec.model).map_err(classify)?;
    let vae = WanVae::new(
        &weights.config,
        weights.var_builder(spec.precision, &device),
        crate::model::ConvImpl::Auto,
    )
    .map_err(classify)?;
    sync(&device)?;
    let load_s = t0.elapsed().as_secs_f64();
    let cfg = weights.config.clone();
    let model = WorkerModel {
        format: weights.format.clone(),
        on_disk_dtype: weights.dtype_summary(),
        params: weights.params,
        dim: cfg.dim,
        z_dim: cfg.z_dim,
    };
    drop(weights);

    phase("inputs");
    let video = structured_clip(spec.frames, spec.width, spec.height, &device).map_err(classify)?;
    let opts = RunOptions {
        chunk: spec.chunk,
        tiling: spec.tile_px.map(|tile_px| Tiling {
            tile_px,
            overlap_px: spec.overlap_px.unwrap_or(0),
        }),
    };
    let (mut enc_warm, mut dec_warm, mut enc, mut dec) = (vec![], vec![], vec![], vec![]);
    let mut last: Option<(Tensor, Tensor)> = None;
    let total = spec.warmup + spec.runs;
    for i in 0..total {
        let warm = i < spec.warmup;
        let label = if warm {
            format!("warmup {}/{}", i + 1, spec.warmup)
        } else {
            format!("run {}/{}", i + 1 - spec.warmup, spec.runs)
        };
        phase(&format!("encode {label}"));
        sync(&device)?;
        let t = Instant::now();
        let z = vae.encode(&video, &opts).map_err(classify)?;
        sync(&device)?;
        let e = t.elapsed().as_secs_f64();
        phase(&format!("decode {label}"));
        sync(&device)?;
        let t = Instant::now();
        let out = vae.decode(&z, &opts).map_err(classify)?;
        sync(&device)?;
        let d = t.elapsed().as_secs_f64();
        // Keep only the last pass's outputs (the previous ones are dropped here).
        last = (i + 1 == total).then_some((z, out));
        if warm {
            enc_warm.push(e);
            dec_warm.push(d);
        } else {
            enc.push(e);
            dec.push(d);
        }
    }
    let (mut roundtrip_psnr_db, mut outputs_error) = (None, None);
    if let Some((latent, decoded)) = last {
        phase("outputs");
        let latent = latent
            .to_dtype(candle_core::DType::F32)
            .map_err(|e| classify(e.into()))?;
        let decoded = decoded
            .to_dtype(candle_core::DType::F32)
            .map_err(|e| classify(e.into()))?;
        if roundtrip_applies(&spec.weights) {
            roundtrip_psnr_db = roundtrip_psnr(&video, &decoded).map_err(classify)?;
        }
        if let Some(path) = &spec.outputs {
            if let Err(e) = save_outputs(path, &latent, &decoded) {
                outputs_error = Some(format!("{e:#}"));
            }
        }
    }
    drop(video);
    let (f, w, h) = (spec.frames, spec.width, spec.height);
    let out_frames = cfg.frames_used(f).map_err(|e| classify(e.into()))?;
    let encode = pass_stats(enc, enc_warm, f, crate::model::flops::encode_gflop(&cfg, f, w, h));
    let decode = pass_stats(
        dec,
        dec_warm,
        out_frames,
        crate::model::flops::decode_gflop(&cfg, f, w, h),
    );
    Ok(WorkerResult {
        compute_dtype: Some(vae.compute_dtype()),
        encode: Some(encode),
        decode: Some(decode),
        load_s: Some(load_s),
        model: Some(model),
        roundtrip_psnr_db,
        outputs_error,
        ..WorkerResult::empty(CaseStatus::Ok, None, BTreeMap::new())
    })
}

/// Statistics of one pass kind: `frames` processed per pass, `gflop` per pass.
pub fn pass_stats(samples: Vec<f64>, warmup: Vec<f64>, frames: usize, gflop: f64) -> PassStats {
    let s = crate::stats::summarize(&samples).unwrap_or(crate::stats::Summary {
        min: 0.0,
        median: 0.0,
        mean: 0.0,
        stddev: 0.0,
        max: 0.0,
        outliers: 0,
    });
    let per_s = |x: f64| if s.median > 0.0 { x / s.median } else { 0.0 };
    PassStats {
        samples_s: samples,
        min_s: s.min,
        median_s: s.median,
        mean_s: s.mean,
        stddev_s: s.stddev,
        max_s: s.max,
        warmup_s: warmup,
        frames_per_s: per_s(frames as f64),
        gflop,
        gflop_per_s: per_s(gflop),
        outliers: s.outliers,
    }
}

/// Whether the round-trip PSNR means anything: real weights only (random synthetic weights
/// reconstruct nothing).
pub fn roundtrip_applies(weights: &str) -> bool {
    weights != "synthetic"
}

/// PSNR (dB, [-1,1] range) of `clamp(decoded, -1, 1)` against the frames of `clip` the model
/// used (`1+4k`); `None` when identical.
pub fn roundtrip_psnr(clip: &Tensor, decoded: &Tensor) -> anyhow::Result<Option<f64>> {
    let used = decoded.dim(2)?;
    let clip: Vec<f32> = clip
        .narrow(2, 0, used)?
        .flatten_all()?
        .to_dtype(candle_core::DType::F32)?
        .to_vec1()?;
    let out: Vec<f32> = decoded
        .clamp(-1f32, 1f32)?
        .flatten_all()?
        .to_dtype(candle_core::DType::F32)?
        .to_vec1()?;
    if clip.len() != out.len() {
        anyhow::bail!(
            "decoded video {:?} does not match the clip's {} values",
            decoded.dims(),
            clip.len()
        );
    }
    Ok(crate::quality::psnr_db(&clip, &out))
}

/// Save `latent` and `decoded` (f32, on the CPU) as a safetensors file, atomically.
pub fn save_outputs(path: &std::path::Path, latent: &Tensor, decoded: &Tensor) -> anyhow::Result<()> {
    let cpu =
        |t: &Tensor| -> anyhow::Result<Tensor> { Ok(t.to_dtype(candle_core::DType::F32)?.to_device(&Device::Cpu)?) };
    let tensors = std::collections::HashMap::from([
        ("latent".to_string(), cpu(latent)?),
        ("decoded".to_string(), cpu(decoded)?),
    ]);
    let tmp = path.with_extension("safetensors.tmp");
    candle_core::safetensors::save(&tensors, &tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The benchmark input and round-trip test clip, `[1,3,frames,height,width]` in [-1,1]: a
/// deterministic function of frames and size only (no RNG): smooth colour gradients that
/// drift over time, a disc moving left to right on a sine path and a square moving
/// diagonally, both with anti-aliased (1.5 px) edges. Structured like video, not noise.
pub fn structured_clip(frames: usize, width: usize, height: usize, device: &Device) -> anyhow::Result<Tensor> {
    let (wf, hf) = (width as f32, height as f32);
    let size = wf.min(hf);
    // Coverage of a shape edge at signed distance `d` (px, negative inside): 1 inside, 0 outside.
    let cover = |d: f32| (0.5 - d / 1.5).clamp(0.0, 1.0);
    let mut data = vec![0f32; 3 * frames * width * height];
    let plane = width * height;
    for t in 0..frames {
        let phase = t as f32 / frames.max(2) as f32;
        // Disc: radius a fifth of the smaller side, left to right, bobbing vertically.
        let (dr, dx, dy) = (
            0.2 * size,
            (0.2 + 0.6 * phase) * wf,
            (0.5 + 0.2 * (std::f32::consts::TAU * phase).sin()) * hf,
        );
        // Square: half-side an eighth of the smaller side, top-left to bottom-right.
        let (sh, sx, sy) = (0.125 * size, (0.75 - 0.5 * phase) * wf, (0.25 + 0.5 * phase) * hf);
        for y in 0..height {
            for x in 0..width {
                let (u, v) = ((x as f32 + 0.5) / wf, (y as f32 + 0.5) / hf);
                let (px, py) = (x as f32 + 0.5, y as f32 + 0.5);
                let disc = cover(((px - dx).powi(2) + (py - dy).powi(2)).sqrt() - dr);
                let square = cover((px - sx).abs().max((py - sy).abs()) - sh);
                let background = [
                    0.8 * (2.0 * u - 1.0) + 0.1 * phase,
                    0.6 * (2.0 * v - 1.0) * (1.0 - 0.3 * phase),
                    0.5 * (std::f32::consts::PI * (u + v + phase)).cos(),
                ];
                let disc_rgb = [0.9, 0.7, -0.6];
                let square_rgb = [-0.8, 0.2, 0.9];
                for c in 0..3 {
                    let mut val = background[c];
                    val += disc * (disc_rgb[c] - val);
                    val += square * (square_rgb[c] - val);
                    data[(c * frames + t) * plane + y * width + x] = val.clamp(-1.0, 1.0);
                }
            }
        }
    }
    Tensor::from_vec(data, (1, 3, frames, height, width), device).context("building the input clip")
}

/// Peak resident memory of this process (VmHWM in `/proc/self/status`), bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Device memory this process holds on NVIDIA GPUs (nvidia-smi), bytes.
fn cuda_memory_used_bytes() -> Option<u64> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])
        .output()
        .ok()?;
    let pid = std::process::id().to_string();
    let text = String::from_utf8_lossy(&out.stdout);
    let mib: u64 = text
        .lines()
        .filter_map(|l| l.split_once(','))
        .filter(|(p, _)| p.trim() == pid)
        .filter_map(|(_, m)| m.trim().parse::<u64>().ok())
        .sum();
    (mib > 0).then_some(mib * 1024 * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn video_is_deterministic_and_bounded() {
        let a = structured_clip(5, 16, 8, &Device::Cpu).unwrap();
        let b = structured_clip(5, 16, 8, &Device::Cpu).unwrap();
        assert_eq!(a.dims(), &[1, 3, 5, 8, 16]);
        let va: Vec<f32> = a.flatten_all().unwrap().to_vec1().unwrap();
        let vb: Vec<f32> = b.flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(va, vb);
        assert!(va.iter().all(|v| (-1.0..=1.0).contains(v)));
        // Structured, not flat: a real spread of values, and the frames differ (motion).
        let (lo, hi) = va.iter().fold((1f32, -1f32), |(l, h), &v| (l.min(v), h.max(v)));
        assert!(hi - lo > 1.0, "{lo}..{hi}");
        let plane = 16 * 8;
        assert_ne!(va[..plane], va[plane..2 * plane]);
    }

    #[test]
    fn roundtrip_only_with_real_weights() {
        assert!(!roundtrip_applies("synthetic"));
        assert!(roundtrip_applies("/models/Wan2.1_VAE.safetensors"));
    }

    #[test]
    fn roundtrip_psnr_clamps_and_uses_the_decoded_frames() {
        let clip = structured_clip(6, 8, 8, &Device::Cpu).unwrap();
        // Decoded has 5 frames (1+4k): the 6th clip frame is ignored; identical -> None.
        let same = clip.narrow(2, 0, 5).unwrap();
        assert_eq!(roundtrip_psnr(&clip, &same).unwrap(), None);
        // Values past the range are clamped back before comparing.
        let edge = Tensor::new(&[1f32, -1.0, 0.5], &Device::Cpu)
            .unwrap()
            .reshape((1, 3, 1, 1, 1))
            .unwrap();
        let over = Tensor::new(&[1.5f32, -3.0, 0.5], &Device::Cpu)
            .unwrap()
            .reshape((1, 3, 1, 1, 1))
            .unwrap();
        assert_eq!(roundtrip_psnr(&edge, &over).unwrap(), None);
        // Off by 0.02 everywhere: 40 dB.
        let off = (same + 0.02).unwrap().clamp(-0.98f32, 0.98f32).unwrap();
        let p = roundtrip_psnr(&clip, &off).unwrap().unwrap();
        assert!(p > 35.0 && p < 45.0, "{p}");
    }

    #[test]
    fn outputs_round_trip_through_safetensors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.outputs.safetensors");
        let latent = structured_clip(1, 8, 8, &Device::Cpu)
            .unwrap()
            .to_dtype(candle_core::DType::BF16)
            .unwrap();
        let decoded = structured_clip(5, 16, 8, &Device::Cpu).unwrap();
        save_outputs(&path, &latent, &decoded).unwrap();
        let back = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
        assert_eq!(back["latent"].dtype(), candle_core::DType::F32);
        assert_eq!(back["decoded"].dims(), &[1, 3, 5, 8, 16]);
    }

    #[test]
    fn vmhwm_is_read() {
        assert!(peak_rss_bytes().unwrap() > 1024 * 1024);
    }

    #[test]
    fn pass_stats_derive_rates() {
        let p = pass_stats(vec![2.0, 1.0, 3.0], vec![5.0], 5, 100.0);
        assert_eq!(p.median_s, 2.0);
        assert_eq!(p.frames_per_s, 2.5);
        assert_eq!(p.gflop_per_s, 50.0);
        assert_eq!(p.warmup_s, vec![5.0]);
    }
}
