//! The in-process measurement of one case (the hidden `worker` subcommand): load the weights
//! (timed), build deterministic inputs, run the warmup passes, then `runs` timed encode and
//! decode passes with a device synchronization before each clock read; report the environment
//! it saw, peak RSS, device memory and the dtype that really ran.
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
    let weights = crate::weights::load(&source).map_err(classify)?;
    let vae = WanVae::new(&weights, spec.precision, &device).map_err(classify)?;
    sync(&device)?;
    let load_s = t0.elapsed().as_secs_f64();
    let cfg = weights.config;
    let model = WorkerModel {
        format: weights.format.clone(),
        on_disk_dtype: weights.dtype_summary(),
        params: weights.params,
        dim: cfg.dim,
        z_dim: cfg.z_dim,
    };
    drop(weights);

    phase("inputs");
    let video = synthetic_video(spec.frames, spec.width, spec.height, &device).map_err(classify)?;
    let opts = RunOptions {
        chunk: spec.chunk,
        tiling: spec.tile_px.map(|tile_px| Tiling {
            tile_px,
            overlap_px: spec.overlap_px.unwrap_or(0),
        }),
    };
    let (mut enc_warm, mut dec_warm, mut enc, mut dec) = (vec![], vec![], vec![], vec![]);
    let mut latent: Option<Tensor> = None;
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
        latent = Some(z);
        phase(&format!("decode {label}"));
        let z = latent.as_ref().expect("set above");
        sync(&device)?;
        let t = Instant::now();
        let out = vae.decode(z, &opts).map_err(classify)?;
        sync(&device)?;
        let d = t.elapsed().as_secs_f64();
        drop(out);
        if warm {
            enc_warm.push(e);
            dec_warm.push(d);
        } else {
            enc.push(e);
            dec.push(d);
        }
    }
    drop(latent);
    let (f, w, h) = (spec.frames, spec.width, spec.height);
    let out_frames = crate::model::frames_used(f).map_err(|e| classify(e.into()))?;
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

/// Deterministic video `[1,3,frames,height,width]` in [-1,1]: smooth sine patterns of the
/// indices (no RNG), different per channel and moving over time.
pub fn synthetic_video(frames: usize, width: usize, height: usize, device: &Device) -> anyhow::Result<Tensor> {
    let mut data = Vec::with_capacity(3 * frames * width * height);
    for c in 0..3 {
        for t in 0..frames {
            for y in 0..height {
                for x in 0..width {
                    let v = (0.13 * x as f32 + 0.07 * y as f32 + 0.5 * t as f32 + 1.3 * c as f32).sin()
                        * (0.05 * (x + 2 * y) as f32 + 0.3 * t as f32).cos();
                    data.push(0.95 * v);
                }
            }
        }
    }
    Tensor::from_vec(data, (1, 3, frames, height, width), device).context("building the input video")
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
        let a = synthetic_video(5, 16, 8, &Device::Cpu).unwrap();
        let b = synthetic_video(5, 16, 8, &Device::Cpu).unwrap();
        assert_eq!(a.dims(), &[1, 3, 5, 8, 16]);
        let va: Vec<f32> = a.flatten_all().unwrap().to_vec1().unwrap();
        let vb: Vec<f32> = b.flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(va, vb);
        assert!(va.iter().all(|v| (-1.0..=1.0).contains(v)));
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
