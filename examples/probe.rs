//! Quick timing probe: synthetic weights, encode + decode of a small clip, per-stage time.
use candle_core::{DType, Device, Tensor};
use std::time::Instant;
use wan_vae_bench::model::{ConvImpl, Precision, RunOptions, WanVae};
use wan_vae_bench::weights::{load, WeightsSource};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let prec: Precision = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(Precision::Fp32);
    let conv = if args.get(2).map(|s| s == "candle").unwrap_or(false) {
        ConvImpl::Candle
    } else {
        ConvImpl::Auto
    };
    let size: usize = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(64);
    let t0 = Instant::now();
    let w = load(&WeightsSource::Synthetic { seed: 0 })?;
    println!("synthetic weights: {:.2}s", t0.elapsed().as_secs_f64());
    let vae = WanVae::with_conv_impl(&w, prec, &Device::Cpu, conv)?;
    let x = (Tensor::arange(0f32, (3 * 5 * size * size) as f32, &Device::Cpu)?.reshape((1, 3, 5, size, size))?
        * 0.001)?
        .sin()?;
    let opts = RunOptions::default();
    for i in 0..2 {
        let t = Instant::now();
        let z = vae.encode(&x, &opts)?;
        let te = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let y = vae.decode(&z, &opts)?;
        let td = t.elapsed().as_secs_f64();
        let yf = y.to_dtype(DType::F32)?;
        let m = yf.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        println!(
            "run {i}: encode {te:.3}s ({:.1} GFLOP/s)  decode {td:.3}s ({:.1} GFLOP/s)  max|y|={m:.3} z={:?}",
            wan_vae_bench::model::flops::encode_gflop(vae.config(), 5, size, size) / te,
            wan_vae_bench::model::flops::decode_gflop(vae.config(), 5, size, size) / td,
            z.dims()
        );
    }
    Ok(())
}
