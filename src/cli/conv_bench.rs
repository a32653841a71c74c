//! `wan-vae-bench conv-bench` (hidden; a benchmark, not a test): the time of each distinct
//! convolution of one decode through the device's convolution library, as candle runs it.
//! It decodes once (synthetic weights of the real layout, a random latent) to learn the
//! shapes the library gets (after the explicit padding: the same tensor torch's
//! `F.conv3d` would get, with the library's symmetric padding), then times each shape
//! alone: `--runs` calls, the device synchronized around each, median and minimum. A shape
//! the library did not run (candle's fallback) is listed as such, untimed.
//!
//! Each shape runs on probe tensors ([`probe_value`]: exact in f32 and bf16, made from the
//! element index alone), so that `scripts/conv-bench-torch.py` makes the very same input,
//! weight and bias with torch; with `--dump DIR` the output of each shape is written there
//! (raw, little-endian, in the precision it was computed) for that script to measure its
//! max abs error against torch's `F.conv3d` (and delete). It times the same shapes with torch
//! and prints both side by side (docs/gpu.md).
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
    /// Write each shape's output here (`shape-N-PRECISION.bin`), for
    /// `scripts/conv-bench-torch.py` to compare with torch's.
    #[arg(long)]
    pub dump: Option<PathBuf>,
}

/// The probe salts and scales: input `probe(i, 0)`, weight `probe(i, W_SALT) * W_SCALE`, bias
/// `probe(i, B_SALT) * B_SCALE` (powers of two: every value stays exact in bf16).
pub const W_SALT: u64 = 1 << 20;
pub const W_SCALE: f32 = 1.0 / 32.0;
pub const B_SALT: u64 = 2 << 20;
pub const B_SCALE: f32 = 1.0 / 4.0;

/// Element `i` of a probe tensor salted with `salt`: the top 8 bits of `(i + salt) x
/// 2654435761 mod 2^32`, less 128, over 128: a multiple of 1/128 in [-1, 1), exact in f32 and
/// bf16, the same in torch's int64 arithmetic for any tensor under 2^31 elements.
pub fn probe_value(i: u64, salt: u64) -> f32 {
    let h = i.wrapping_add(salt).wrapping_mul(2_654_435_761) & 0xffff_ffff;
    ((h >> 24) as f32 - 128.0) / 128.0
}

/// A probe tensor of `dims` on `device` in `dtype`, times `scale`.
fn probe(
    dims: &[usize],
    salt: u64,
    scale: f32,
    dtype: candle_core::DType,
    device: &candle_core::Device,
) -> candle_core::Result<Tensor> {
    use rayon::prelude::*;
    let n: usize = dims.iter().product();
    let v: Vec<f32> = (0..n as u64)
        .into_par_iter()
        .map(|i| probe_value(i, salt) * scale)
        .collect();
    Tensor::from_vec(v, dims, &candle_core::Device::Cpu)?
        .to_device(device)?
        .to_dtype(dtype)
}

/// `y` as raw little-endian bytes of its dtype (f32 or bf16).
fn raw_bytes(y: &Tensor) -> anyhow::Result<Vec<u8>> {
    let y = y.flatten_all()?;
    Ok(match y.dtype() {
        candle_core::DType::BF16 => y
            .to_vec1::<half::bf16>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        _ => y
            .to_dtype(candle_core::DType::F32)?
            .to_vec1::<f32>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    })
}

/// One shape's times.
#[derive(Debug, Serialize)]
struct ShapeTime {
    #[serde(flatten)]
    plan: ConvPlanRecord,
    /// Calls of this shape in one decode.
    calls_per_decode: u64,
    /// The library did not run it (candle's path did: `algorithm` says why); untimed.
    fallback: bool,
    median_ms: Option<f64>,
    min_ms: Option<f64>,
    /// `[B, O, To, Ho, Wo]`.
    output: Vec<usize>,
    /// Where its output on the probe tensors is (`--dump`), `f32` or `bf16` raw.
    output_file: Option<PathBuf>,
    output_dtype: String,
}

/// How the probe tensors are made ([`probe_value`]), for the torch script.
#[derive(Debug, Serialize)]
struct ProbeRule {
    rule: &'static str,
    x_salt: u64,
    w_salt: u64,
    w_scale: f32,
    b_salt: u64,
    b_scale: f32,
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
    probe: ProbeRule,
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
    if let Some(dir) = &args.dump {
        std::fs::create_dir_all(dir).with_context(|| format!("--dump {}", dir.display()))?;
    }
    let mut shapes = Vec::new();
    for (n, plan) in record.plans.iter().enumerate() {
        let stride = [plan.stride[0], plan.stride[1], plan.stride[2]];
        let pad = [plan.padding[0], plan.padding[1], plan.padding[2]];
        let output = crate::model::cuda::choice::out_dims(
            plan.input.as_slice().try_into().context("a 5-D input")?,
            plan.weight.as_slice().try_into().context("a 5-D weight")?,
            stride,
            pad,
        )
        .map(Vec::from)
        .unwrap_or_default();
        let mut shape = ShapeTime {
            calls_per_decode: plan.calls,
            fallback: plan.algorithm.starts_with("candle"),
            median_ms: None,
            min_ms: None,
            output,
            output_file: None,
            output_dtype: if args.precision == Precision::Bf16 {
                "bf16"
            } else {
                "f32"
            }
            .to_string(),
            plan: plan.clone(),
        };
        if shape.fallback {
            shapes.push(shape);
            continue;
        }
        let x = probe(&plan.input, 0, 1.0, dtype, &device)?;
        let wt = probe(&plan.weight, W_SALT, W_SCALE, dtype, &device)?;
        let b = probe(&plan.weight[..1], B_SALT, B_SCALE, dtype, &device)?;
        let mut ms = Vec::with_capacity(args.runs);
        let mut last = None;
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
            last = Some(y);
        }
        ms.sort_by(f64::total_cmp);
        shape.median_ms = Some(ms[ms.len() / 2]);
        shape.min_ms = Some(ms[0]);
        if let (Some(dir), Some(y)) = (&args.dump, last) {
            let path = dir.join(format!("shape-{n}-{}.bin", args.precision));
            std::fs::write(&path, raw_bytes(&y)?).with_context(|| format!("writing {}", path.display()))?;
            shape.output_file = Some(path);
        }
        shapes.push(shape);
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
        probe: ProbeRule {
            rule:
                "element i of a tensor salted s: (((i + s) * 2654435761 mod 2^32) >> 24) - 128) / 128, times the scale",
            x_salt: 0,
            w_salt: W_SALT,
            w_scale: W_SCALE,
            b_salt: B_SALT,
            b_scale: B_SCALE,
        },
        shapes,
    };
    let text = serde_json::to_string_pretty(&out)?;
    match &args.json {
        Some(path) => crate::util::files::write_atomic(path, text)?,
        None => println!("{text}"),
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_values_are_exact_in_bf16_and_spread_over_the_range() {
        // The torch script makes these same numbers (tests/engine/conv_bench_check.rs).
        let first: Vec<f32> = (0..6).map(|i| probe_value(i, 0) * 128.0).collect();
        assert_eq!(first, [-128.0, 30.0, -68.0, 90.0, -8.0, -105.0]);
        let n = 1 << 16;
        let mut seen = [0usize; 256];
        for i in 0..n {
            for (salt, scale) in [(0, 1.0), (W_SALT, W_SCALE), (B_SALT, B_SCALE)] {
                let v = probe_value(i, salt) * scale;
                assert_eq!(half::bf16::from_f32(v).to_f32(), v, "exact in bf16: {v}");
            }
            seen[(probe_value(i, 0) * 128.0 + 128.0) as usize] += 1;
        }
        // Every one of the 256 values, none more than twice its share.
        assert!(seen.iter().all(|&c| c > 0 && c < 2 * n as usize / 256), "{seen:?}");
    }
}
