//! CPU scaling benchmark: encode and decode (synthetic weights, real size) on 1 thread, 2
//! threads and all cores (where there are more), fp32 and bf16, with the speed-up over one
//! thread, the efficiency per thread (speed-up / threads), GFLOP/s, and GFLOP/s as a
//! fraction of the peak measured on the same threads by a register-only loop of the
//! instruction the conv kernels use (AVX-512 FMA for fp32, `vdpbf16ps` for bf16, 256-bit
//! FMA on the portable path).
//!
//! `cargo run --release --example cpu_scaling -- [--size WxH] [--frames N] [--reps N]`
//! `cargo run --release --example cpu_scaling -- --peak [--json FILE]` (peaks only, on
//! RAYON_NUM_THREADS or all cores).
use std::time::Instant;

use candle_core::{Device, Tensor};
use wan_vae_bench::model::flops::{decode_gflop, encode_gflop};
use wan_vae_bench::model::kernels::{peak_gflops, Isa, Operands};
use wan_vae_bench::model::{ConvImpl, Precision, RunOptions, WanVae};
use wan_vae_bench::weights::{load, WeightsSource};

/// Measured peaks (GFLOP/s) on `threads` threads, by name.
fn peaks(threads: usize) -> Vec<(&'static str, Option<f64>)> {
    vec![
        ("avx2_fma", peak_gflops(Isa::Portable, Operands::F32, threads)),
        ("avx512_fma", peak_gflops(Isa::Avx512, Operands::F32, threads)),
        ("avx512_bf16_dot", peak_gflops(Isa::Avx512Bf16, Operands::Bf16, threads)),
    ]
}

/// The peak the kernels for `precision` can reach on this CPU (see the module doc).
fn peak_for(peaks: &[(&str, Option<f64>)], precision: Precision) -> Option<f64> {
    let get = |name: &str| peaks.iter().find(|p| p.0 == name).and_then(|p| p.1);
    match (Isa::detect(), precision) {
        (Isa::Portable, _) => get("avx2_fma"),
        (Isa::Avx512Bf16, Precision::Bf16) => get("avx512_bf16_dot"),
        _ => get("avx512_fma"),
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.iter().any(|a| a == "--peak") {
        let threads = rayon::current_num_threads();
        let p = peaks(threads);
        let gflops: serde_json::Map<String, serde_json::Value> =
            p.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
        let json = serde_json::json!({ "threads": threads, "gflops": gflops });
        println!("{json}");
        if let Some(path) = value("--json") {
            std::fs::write(path, json.to_string())?;
        }
        return Ok(());
    }
    let (w, h) = match value("--size") {
        Some(s) => {
            let (a, b) = s
                .split_once('x')
                .ok_or_else(|| anyhow::anyhow!("--size must be WxH, got {s}"))?;
            (a.parse()?, b.parse()?)
        }
        None => (64, 64),
    };
    let frames: usize = value("--frames").map(|v| v.parse()).transpose()?.unwrap_or(5);
    let reps: usize = value("--reps").map(|v| v.parse()).transpose()?.unwrap_or(3);
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut counts = vec![1, 2.min(all)];
    if all > 2 {
        counts.push(all);
    }
    counts.dedup();
    let load_avg = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "CPU kernels: {} (hardware: {}); {frames} frames {w}x{h}; min of {reps} passes after 1 warmup; load average before: {}",
        Isa::detect().name(),
        Isa::hardware().name(),
        load_avg().trim()
    );
    let weights = load(&WeightsSource::Synthetic { seed: 0 })?;
    let n = 3 * frames * h * w;
    let video = (Tensor::arange(0f32, n as f32, &Device::Cpu)?.reshape((1, 3, frames, h, w))? * 0.001)?.sin()?;
    let opts = RunOptions::default();
    println!("| precision | pass | threads | min s | speed-up | efficiency per thread | GFLOP/s | % of peak |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for precision in [Precision::Fp32, Precision::Bf16] {
        let model = WanVae::new(
            &weights.config,
            weights.var_builder(precision, &Device::Cpu),
            ConvImpl::Auto,
        )?;
        let cfg = model.config().clone();
        let gflop = [encode_gflop(&cfg, frames, w, h), decode_gflop(&cfg, frames, w, h)];
        let mut one = [0f64; 2];
        for &threads in &counts {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
            let peak = peak_for(&peaks(threads), precision);
            let best = pool.install(|| -> anyhow::Result<[f64; 2]> {
                let mut best = [f64::INFINITY; 2];
                for _ in 0..=reps {
                    let t = Instant::now();
                    let z = model.encode(&video, &opts)?;
                    best[0] = best[0].min(t.elapsed().as_secs_f64());
                    let t = Instant::now();
                    std::hint::black_box(model.decode(&z, &opts)?);
                    best[1] = best[1].min(t.elapsed().as_secs_f64());
                }
                Ok(best)
            })?;
            if threads == 1 {
                one = best;
            }
            for (i, pass) in ["encode", "decode"].iter().enumerate() {
                let speedup = one[i] / best[i];
                let rate = gflop[i] / best[i];
                let frac = peak
                    .map(|p| format!("{:.0}%", 100.0 * rate / p))
                    .unwrap_or("n/a".into());
                println!(
                    "| {precision} | {pass} | {threads} | {:.3} | {speedup:.2} | {:.0}% | {rate:.1} | {frac} |",
                    best[i],
                    100.0 * speedup / threads as f64
                );
            }
        }
    }
    println!("load average after: {}", load_avg().trim());
    Ok(())
}
