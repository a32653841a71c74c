//! How far tiled encode/decode is from untiled, on a smooth clip, for a few tile sizes.
use candle_core::{DType, Device, Tensor};
use wan_vae_bench::model::{ConvImpl, Precision, RunOptions, Tiling, WanVae};
use wan_vae_bench::weights::{load, WeightsSource};
fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or("tests/fixtures/wan21_tiny.weights.safetensors".into());
    let size: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(96);
    let src = if path == "synthetic" {
        WeightsSource::Synthetic { seed: 0 }
    } else {
        WeightsSource::File(path.into())
    };
    let w = load(&src)?;
    let vae = WanVae::new(&w.config, w.var_builder(Precision::Fp32, &Device::Cpu), ConvImpl::Auto)?;
    let n = 3 * 5 * size * size;
    let x = (Tensor::arange(0f32, n as f32, &Device::Cpu)?.reshape((1, 3, 5, size, size))? * 0.0005)?.sin()?;
    let z = vae.encode(&x, &RunOptions::default())?;
    let y = vae.decode(&z, &RunOptions::default())?;
    let st = |a: &Tensor, b: &Tensor| -> anyhow::Result<String> {
        let a = a.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        let b = b.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        let s = wan_vae_bench::report::quality::error_stats(&a, &b);
        let mx = a.iter().fold(0f32, |m, v| m.max(v.abs()));
        Ok(format!(
            "max_abs {:.4} mean_abs {:.5} psnr {:.2} (max|ref| {mx:.3})",
            s.max_abs,
            s.mean_abs,
            s.psnr_db.unwrap_or(f64::INFINITY)
        ))
    };
    for (t, o) in [(64, 32), (64, 16), (48, 16), (32, 16)] {
        let opts = RunOptions {
            chunk: 1,
            tiling: Some(Tiling::new(t, o)?),
        };
        let zt = vae.encode(&x, &opts)?;
        let yt = vae.decode(&z, &opts)?;
        println!("tile {t}:{o}  latent {}  decoded {}", st(&z, &zt)?, st(&y, &yt)?);
    }
    Ok(())
}
