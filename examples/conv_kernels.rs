//! Time one conv3d on each CPU path (gemm crate, AVX-512 f32, AVX512-BF16) at the model's
//! shapes, single- or multi-threaded (RAYON_NUM_THREADS), as process CPU time and wall time
//! (minimum of `--reps`), with GFLOP/s and the fraction of the measured peak.
//!
//! `cargo run --release --example conv_kernels -- [--reps N] [--size S] [--path ISA] [--conv NAME]`
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use wan_vae_bench::model::conv::{Conv3d, ConvImpl, Isa, Pad};
use wan_vae_bench::model::kernels::{peak_gflops, Operands};

/// `sin(0.001 * i)` (built from integers: an f32 `arange` stalls past 2^24 elements).
fn input(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| (0.001 * i as f64).sin() as f32).collect();
    Tensor::from_vec(v, shape, &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

fn cpu_time() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer for clock_gettime.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: usize| -> usize {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let reps = arg("--reps", 5);
    let s = arg("--size", 128);
    let text = |name: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_default()
    };
    let (only_path, only_conv) = (text("--path"), text("--conv"));
    let threads = rayon::current_num_threads();
    // (name, in, out, kernel, frames in, spatial size, front pad, spatial pad)
    let shapes = [
        ("dec 384->384 3^3 lat", 384, 384, [3, 3, 3], 3, s / 8, 1, 1),
        ("dec 192->192 3^3 s/2", 192, 192, [3, 3, 3], 4, s / 2, 0, 1),
        ("dec 96->96 3^3 full", 96, 96, [3, 3, 3], 6, s, 0, 1),
        ("enc 3->96 3^3 full", 3, 96, [3, 3, 3], 6, s, 0, 1),
        ("dec 96->3 3^3 head", 96, 3, [3, 3, 3], 6, s, 0, 1),
        ("enc 96->192 1^3 shortcut", 96, 192, [1, 1, 1], 2, s / 2, 0, 0),
    ];
    let hw = Isa::hardware();
    let peaks: Vec<(Isa, DType, Option<f64>)> = [
        (Isa::Portable, DType::F32),
        (Isa::Avx512, DType::F32),
        (Isa::Avx512Bf16, DType::BF16),
    ]
    .into_iter()
    .filter(|(isa, _)| *isa <= hw && (only_path.is_empty() || isa.name() == only_path))
    .map(|(isa, dt)| {
        let ops = if dt == DType::BF16 {
            Operands::Bf16
        } else {
            Operands::F32
        };
        (isa, dt, peak_gflops(isa, ops, threads))
    })
    .collect();
    println!(
        "threads {threads}, reps {reps}; peaks (GFLOP/s): {:?}",
        peaks
            .iter()
            .map(|p| (p.0.name(), p.2.map(|v| v.round())))
            .collect::<Vec<_>>()
    );
    println!(
        "{:<26} {:<12} {:>9} {:>9} {:>9} {:>7}",
        "conv", "path", "cpu_ms", "wall_ms", "GFLOP/s", "%peak"
    );
    for (name, cin, cout, k, t, hw_, front, p) in shapes {
        if !name.contains(&only_conv) {
            continue;
        }
        let w = (input(&[cout, cin, k[0], k[1], k[2]], DType::F32) * 0.05).unwrap();
        let b = input(&[cout], DType::F32);
        let pad = Pad {
            t_front: front,
            top: p,
            bottom: p,
            left: p,
            right: p,
        };
        let to = t + front + 1 - k[0];
        let gflop = 2.0 * (cin * cout * k.iter().product::<usize>() * to * hw_ * hw_) as f64 / 1e9;
        for (isa, dt, peak) in &peaks {
            let conv =
                Conv3d::with_isa(w.to_dtype(*dt).unwrap(), b.to_dtype(*dt).unwrap(), ConvImpl::Auto, *isa).unwrap();
            let x = input(&[1, cin, t, hw_, hw_], *dt);
            let (mut best_cpu, mut best_wall) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..reps + 1 {
                let (c0, w0) = (cpu_time(), Instant::now());
                std::hint::black_box(conv.forward(&x, [1, 1, 1], pad).unwrap());
                best_wall = best_wall.min(w0.elapsed().as_secs_f64());
                best_cpu = best_cpu.min(cpu_time() - c0);
            }
            let rate = gflop / best_wall;
            let label = format!("{}/{}", isa.name(), dt.as_str());
            let frac = peak.map(|p| format!("{:.0}%", 100.0 * rate / p)).unwrap_or_default();
            println!(
                "{name:<26} {label:<12} {:>9.2} {:>9.2} {rate:>9.1} {frac:>7}",
                best_cpu * 1e3,
                best_wall * 1e3
            );
        }
    }
}
