//! `wan-vae-bench conv-bench` (hidden; a benchmark, not a test): the time of each distinct
//! convolution of one decode through the device's convolution library, as candle runs it.
//! It decodes once (synthetic weights of the real layout, a random latent) to learn the
//! shapes the library gets (after the explicit padding: the same tensor torch's
//! `F.conv3d` would get, with the library's symmetric padding), then times each shape
//! alone: `--runs` calls, the device synchronized around each, median and minimum.
//! `scripts/conv-bench-torch.py` times the same shapes with torch and prints both side by
//! side (docs/gpu.md).
//!
//! Must not: write a report or compare engines (the script does).
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use candle_core::Tensor;
use serde::Serialize;

use crate::model::conv::device::{self, ConvPlanRecord};
use crate::model::{ModelKind, Precision, RunOptions, WanVae};
use crate::util::error::UserError;

/// Arguments of the hidden `conv-bench` command.
#[derive(Debug, clap::Args)]
pub struct ConvBenchArgs {
    /// `wan2.1` or `wan2.2`.
    #[arg(long, default_value = "wan2.1")]
    pub model: ModelKind,
    /// Video size of the decode, `WxH`.
    #[arg(long, default_value = "832x480")]
    pub size: String,
    /// Video frames of the decode (`1+4k`).
    #[arg(long, default_value_t = 21)]
    pub frames: usize,
    /// `fp32` (true fp32) or `bf16`.
    #[arg(long, default_value = "fp32")]
    pub precision: Precision,
    /// A CUDA device of a `--features cudnn` build.
    #[arg(long, default_value = "cuda:0")]
    pub device: String,
    /// Timed calls per shape (after two untimed ones).
    #[arg(long, default_value_t = 10)]
    pub runs: usize,
    /// Where the JSON goes (stdout when absent).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// One shape's times.
#[derive(Debug, Serialize)]
struct ShapeTime {
    #[serde(flatten)]
    plan: ConvPlanRecord,
    /// Calls of this shape in one decode.
    calls_per_decode: u64,
    median_ms: f64,
    min_ms: f64,
}

#[derive(Debug, Serialize)]
struct Output {
    tool: String,
    model: String,
    size: String,
    frames: usize,
    precision: String,
    device: String,
    library: String,
    version: String,
    math: String,
    runs: usize,
    /// The decode's own time, seconds (one untimed-warmup-free pass: plans built inside).
    first_decode_s: f64,
    shapes: Vec<ShapeTime>,
}

/// `wan-vae-bench conv-bench`.
pub fn command(args: ConvBenchArgs) -> anyhow::Result<i32> {
    let device = crate::machine::device::parse(&args.device)?;
    let Some(library) = device::backend_for(&device) else {
        return Err(UserError::invalid(
            "--device",
            &args.device,
            "a CUDA device of a `--features cudnn` build (the convolution library's times)",
        )
        .into());
    };
    if !matches!(args.precision, Precision::Fp32 | Precision::Bf16) || args.runs == 0 {
        return Err(UserError::invalid("--precision/--runs", args.precision.name(), "fp32 or bf16, runs >= 1").into());
    }
    let (w, h) = crate::report::values::parse_size("--size", &args.size)?;
    let cfg = args.model.config();
    cfg.check_size(w, h)?;
    let frames = cfg.frames_used(args.frames)?;
    let weights = crate::weights::load_model(&crate::weights::WeightsSource::Synthetic { seed: 0 }, Some(args.model))?;
    let vae = WanVae::new(
        &weights.config,
        weights.var_builder(args.precision, &device),
        Default::default(),
    )?;
    let (sc, tc) = (cfg.spatial_compression(), cfg.temporal_compression());
    let latent = Tensor::randn(
        0f32,
        1.0,
        (1, cfg.z_dim, (frames - 1) / tc + 1, h / sc, w / sc),
        &device,
    )?;
    crate::model::conv::release_caches();
    let sync = || crate::machine::device::synchronize(&device);
    sync()?;
    let t0 = Instant::now();
    vae.decode(&latent, &RunOptions::default())
        .context("the decode that finds the shapes")?;
    sync()?;
    let first_decode_s = t0.elapsed().as_secs_f64();
    let record = library
        .library()
        .context("the decode ran no convolution through the library")?;
    let dtype = args.precision.dtype();
    let mut shapes = Vec::new();
    for plan in record.plans.iter().filter(|p| !p.algorithm.starts_with("candle")) {
        let x = Tensor::randn(0f32, 1.0, plan.input.as_slice(), &device)?.to_dtype(dtype)?;
        let wt = (Tensor::randn(0f32, 1.0, plan.weight.as_slice(), &device)? * 0.05)?.to_dtype(dtype)?;
        let b = Tensor::zeros(plan.weight[0], dtype, &device)?;
        let stride = [plan.stride[0], plan.stride[1], plan.stride[2]];
        let pad = [plan.padding[0], plan.padding[1], plan.padding[2]];
        let mut ms = Vec::with_capacity(args.runs);
        for i in 0..args.runs + 2 {
            sync()?;
            let t = Instant::now();
            let y = library
                .conv(&x, &wt, &b, stride, pad)?
                .context("the library refused a shape it ran")?;
            sync()?;
            if i >= 2 {
                ms.push(t.elapsed().as_secs_f64() * 1e3);
            }
            drop(y);
        }
        ms.sort_by(f64::total_cmp);
        shapes.push(ShapeTime {
            calls_per_decode: plan.calls,
            median_ms: ms[ms.len() / 2],
            min_ms: ms[0],
            plan: plan.clone(),
        });
    }
    let out = Output {
        tool: {
            let t = crate::machine::tool::this_tool();
            format!(
                "{} {} ({})",
                t.name,
                t.version,
                t.git_commit.as_deref().unwrap_or("commit unknown")
            )
        },
        model: args.model.name().to_string(),
        size: format!("{w}x{h}"),
        frames,
        precision: args.precision.to_string(),
        device: args.device.clone(),
        library: record.library,
        version: record.version,
        math: record.math,
        runs: args.runs,
        first_decode_s,
        shapes,
    };
    let text = serde_json::to_string_pretty(&out)?;
    match &args.json {
        Some(path) => crate::util::files::write_atomic(path, text)?,
        None => println!("{text}"),
    }
    Ok(0)
}
