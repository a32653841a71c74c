//! Criterion benches: the causal conv3d on each CPU path (AVX-512 f32 and AVX512-BF16 where
//! the CPU has them, the portable gemm-crate path, candle's conv2d path), encode and decode
//! of 5 frames at 64x64 in fp32 and bf16 (synthetic weights, real size), and a 2048x2048 f32
//! matmul (candle) for reference.
//!
//! Throughput is declared in FLOP, so criterion's "Gelem/s" reads as GFLOP/s; a summary
//! table at the end gives GFLOP/s and the fraction of the peak measured in the same run by
//! a register-only loop of the instruction each bench relies on (`kernels::peak_gflops`).
use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use wan_vae_bench::model::conv::{Conv3d, ConvImpl, Isa, Pad};
use wan_vae_bench::model::flops::{decode_gflop, encode_gflop};
use wan_vae_bench::model::kernels::{peak_gflops, Operands};
use wan_vae_bench::model::{Precision, RunOptions, WanVae};
use wan_vae_bench::weights::{load, WeightsSource};

/// (group, id, GFLOP per iteration, bf16 operands) of every bench, for the summary.
const COSTS: &[(&str, &str, f64, bool)] = &[
    ("matmul", "f32_2048", 2.0 * 2048.0 * 2048.0 * 2048.0 / 1e9, false),
    ("conv3d_96x96x3x3x3_4x64x64", "avx512_f32", CONV_GFLOP, false),
    ("conv3d_96x96x3x3x3_4x64x64", "avx512_bf16", CONV_GFLOP, true),
    ("conv3d_96x96x3x3x3_4x64x64", "portable_gemm", CONV_GFLOP, false),
    ("conv3d_96x96x3x3x3_4x64x64", "candle_conv2d", CONV_GFLOP, false),
    ("vae_5x64x64_fp32", "encode", 109.25, false),
    ("vae_5x64x64_fp32", "decode", 182.40, false),
    ("vae_5x64x64_bf16", "encode", 109.25, true),
    ("vae_5x64x64_bf16", "decode", 182.40, true),
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
    let w = vb.get((96, 96, 3, 3, 3), "weight").unwrap();
    let b = vb.get(96, "bias").unwrap();
    let hw = Isa::hardware();
    let paths = [
        ("avx512_f32", ConvImpl::Auto, Isa::Avx512, DType::F32),
        ("avx512_bf16", ConvImpl::Auto, Isa::Avx512Bf16, DType::BF16),
        ("portable_gemm", ConvImpl::Auto, Isa::Portable, DType::F32),
        ("candle_conv2d", ConvImpl::Candle, Isa::Portable, DType::F32),
    ];
    for (name, imp, isa, dtype) in paths {
        if isa > hw {
            continue;
        }
        let (w, b, x) = (
            w.to_dtype(dtype).unwrap(),
            b.to_dtype(dtype).unwrap(),
            x.to_dtype(dtype).unwrap(),
        );
        let conv = Conv3d::with_isa(w, b, imp, isa).unwrap();
        g.bench_function(name, |bench| bench.iter(|| conv.forward(&x, [1, 1, 1], pad).unwrap()));
    }
    g.finish();
}

fn vae(c: &mut Criterion) {
    let weights = load(&WeightsSource::Synthetic { seed: 0 }).unwrap();
    let video = input(&[1, 3, 5, 64, 64]);
    let opts = RunOptions::default();
    for precision in [Precision::Fp32, Precision::Bf16] {
        let model = WanVae::new(
            &weights.config,
            weights.var_builder(precision, &Device::Cpu),
            ConvImpl::Auto,
        )
        .unwrap();
        let latent = model.encode(&video, &opts).unwrap();
        let cfg = model.config().clone();
        let mut g = c.benchmark_group(format!("vae_5x64x64_{precision}"));
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
    let threads = rayon::current_num_threads();
    let isa = Isa::detect();
    // The instruction each bench's kernels rely on (see `kernels::peak_gflops`).
    let fma = peak_gflops(isa.min(Isa::Avx512), Operands::F32, threads);
    let bf16 = peak_gflops(isa, Operands::Bf16, threads).or(fma);
    let portable = peak_gflops(Isa::Portable, Operands::F32, threads);
    println!(
        "\nmeasured peaks on {threads} threads (GFLOP/s): conv kernels f32 {}, bf16 {}, 256-bit FMA {}",
        fmt(fma),
        fmt(bf16),
        fmt(portable)
    );
    println!(
        "{:<30} {:<14} {:>10} {:>9} {:>10}",
        "group", "bench", "median_s", "GFLOP/s", "% of peak"
    );
    for (group, id, gflop, is_bf16) in COSTS {
        let Some(s) = median_s(group, id) else {
            continue;
        };
        let peak = match *id {
            "portable_gemm" | "candle_conv2d" | "f32_2048" => portable,
            _ if *is_bf16 => bf16,
            _ => fma,
        };
        let rate = gflop / s;
        let frac = peak
            .map(|p| format!("{:.0}%", 100.0 * rate / p))
            .unwrap_or("n/a".into());
        println!("{group:<30} {id:<14} {s:>10.4} {rate:>9.1} {frac:>10}");
    }
}

fn fmt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0}")).unwrap_or("n/a".into())
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
