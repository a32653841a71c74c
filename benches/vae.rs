//! Criterion benches: the causal conv3d (our im2col+gemm against candle's conv2d path),
//! encode and decode of 5 frames at 64x64 (synthetic weights, real size), and a 2048x2048
//! f32 matmul as the machine's reference throughput in the same run.
//!
//! Throughput is declared in FLOP, so criterion's "Gelem/s" reads as GFLOP/s; a summary
//! table with GFLOP/s and the fraction of the matmul's rate is printed at the end.
use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use wan_vae_bench::model::conv::{Conv3d, ConvImpl, Pad};
use wan_vae_bench::model::flops::{decode_gflop, encode_gflop};
use wan_vae_bench::model::{Precision, RunOptions, WanVae};
use wan_vae_bench::weights::{load, WeightsSource};

/// (group, id, GFLOP per iteration) of every bench, for the summary.
const COSTS: &[(&str, &str, f64)] = &[
    ("matmul", "f32_2048", 2.0 * 2048.0 * 2048.0 * 2048.0 / 1e9),
    ("conv3d_96x96x3x3x3_4x64x64", "im2col_gemm", CONV_GFLOP),
    ("conv3d_96x96x3x3x3_4x64x64", "candle_conv2d", CONV_GFLOP),
    ("vae_5x64x64_fp32", "encode", 109.25),
    ("vae_5x64x64_fp32", "decode", 182.40),
];

/// 96 -> 96 channels, 3x3x3 kernel, 4 output frames of 64x64.
const CONV_GFLOP: f64 = 2.0 * 96.0 * 96.0 * 27.0 * 4.0 * 64.0 * 64.0 / 1e9;

fn input(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    (Tensor::arange(0f32, n as f32, &Device::Cpu)
        .unwrap()
        .reshape(shape)
        .unwrap()
        * 0.001)
        .unwrap()
        .sin()
        .unwrap()
}

fn matmul(c: &mut Criterion) {
    let a = input(&[2048, 2048]);
    let b = input(&[2048, 2048]);
    let mut g = c.benchmark_group("matmul");
    g.sample_size(10)
        .throughput(Throughput::Elements((COSTS[0].2 * 1e9) as u64));
    g.bench_function("f32_2048", |bench| bench.iter(|| a.matmul(&b).unwrap()));
    g.finish();
}

fn conv3d(c: &mut Criterion) {
    let mut map = HashMap::new();
    map.insert("weight".to_string(), (input(&[96, 96, 3, 3, 3]) * 0.02).unwrap());
    map.insert("bias".to_string(), Tensor::zeros(96, DType::F32, &Device::Cpu).unwrap());
    let vb = VarBuilder::from_tensors(map, DType::F32, &Device::Cpu);
    // Causal time padding of 2 zero frames + 2 cached frames = 4 output frames.
    let x = input(&[1, 96, 4, 64, 64]);
    let pad = Pad {
        t_front: 2,
        top: 1,
        bottom: 1,
        left: 1,
        right: 1,
    };
    let mut g = c.benchmark_group("conv3d_96x96x3x3x3_4x64x64");
    g.sample_size(10)
        .throughput(Throughput::Elements((CONV_GFLOP * 1e9) as u64));
    for (name, imp) in [("im2col_gemm", ConvImpl::Auto), ("candle_conv2d", ConvImpl::Candle)] {
        let conv = Conv3d::new(vb.clone(), 96, 96, [3, 3, 3], imp).unwrap();
        g.bench_function(name, |bench| bench.iter(|| conv.forward(&x, [1, 1, 1], pad).unwrap()));
    }
    g.finish();
}

fn vae(c: &mut Criterion) {
    let weights = load(&WeightsSource::Synthetic { seed: 0 }).unwrap();
    let model = WanVae::new(
        &weights.config,
        weights.var_builder(Precision::Fp32, &Device::Cpu),
        ConvImpl::Auto,
    )
    .unwrap();
    let video = input(&[1, 3, 5, 64, 64]);
    let opts = RunOptions::default();
    let latent = model.encode(&video, &opts).unwrap();
    let cfg = model.config().clone();
    let mut g = c.benchmark_group("vae_5x64x64_fp32");
    g.sample_size(10);
    g.throughput(Throughput::Elements((encode_gflop(&cfg, 5, 64, 64) * 1e9) as u64));
    g.bench_function(BenchmarkId::from_parameter("encode"), |b| {
        b.iter(|| model.encode(&video, &opts).unwrap())
    });
    g.throughput(Throughput::Elements((decode_gflop(&cfg, 5, 64, 64) * 1e9) as u64));
    g.bench_function(BenchmarkId::from_parameter("decode"), |b| {
        b.iter(|| model.decode(&latent, &opts).unwrap())
    });
    g.finish();
}

criterion_group!(benches, matmul, conv3d, vae);

/// Median seconds of a bench from criterion's saved estimates.
fn median_s(group: &str, id: &str) -> Option<f64> {
    let dir = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| format!("{}/target", env!("CARGO_MANIFEST_DIR")));
    let path = Path::new(&dir)
        .join("criterion")
        .join(group)
        .join(id)
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    Some(v["median"]["point_estimate"].as_f64()? / 1e9)
}

fn summary() {
    let Some(matmul_s) = median_s(COSTS[0].0, COSTS[0].1) else {
        return;
    };
    let peak = COSTS[0].2 / matmul_s;
    println!(
        "\n{:<30} {:<14} {:>10} {:>9} {:>13}",
        "group", "bench", "median_s", "GFLOP/s", "vs_matmul"
    );
    for (group, id, gflop) in COSTS {
        if let Some(s) = median_s(group, id) {
            let rate = gflop / s;
            println!(
                "{group:<30} {id:<14} {s:>10.4} {rate:>9.1} {:>12.0}%",
                100.0 * rate / peak
            );
        }
    }
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
