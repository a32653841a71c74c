//! The models (Wan 2.1 and Wan 2.2) against the golden fixtures of the official
//! implementations, and the error paths of weight loading and input checking.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::util::cli::fixture;
use candle_core::{DType, Device, Tensor};
use wan_vae_bench::model::{ConvImpl, ModelKind, Precision, RunOptions, Tiling, WanVae};
use wan_vae_bench::run::validate::{check_output, read_cases, Case, Tolerance};
use wan_vae_bench::weights::{load, load_file, load_model, WeightsSource};

/// Both models, with the fixture file prefix of each.
const MODELS: [(ModelKind, &str); 2] = [(ModelKind::Wan21, "wan21"), (ModelKind::Wan22, "wan22")];

/// `<prefix>_tiny.<what>` of the model.
fn tiny_file(model: ModelKind, what: &str) -> PathBuf {
    let prefix = MODELS.iter().find(|(m, _)| *m == model).unwrap().1;
    fixture(&format!("{prefix}_tiny.{what}"))
}

fn cases_of(model: ModelKind) -> Vec<Case> {
    read_cases(&tiny_file(model, "cases.safetensors")).unwrap()
}

fn cases() -> Vec<Case> {
    cases_of(ModelKind::Wan21)
}

fn tiny_of(model: ModelKind, precision: Precision, conv: ConvImpl) -> WanVae {
    let w = load_file(&tiny_file(model, "weights.safetensors")).unwrap();
    assert_eq!(w.config.kind(), model);
    WanVae::new(&w.config, w.var_builder(precision, &Device::Cpu), conv).unwrap()
}

fn tiny(precision: Precision, conv: ConvImpl) -> WanVae {
    tiny_of(ModelKind::Wan21, precision, conv)
}

/// Encode (when the case has a latent) and decode every case of the VAE's model's fixtures;
/// (name, output, computed, expected).
fn run_cases(vae: &WanVae, opts: &RunOptions) -> Vec<(String, &'static str, Tensor, Tensor)> {
    let mut out = Vec::new();
    for c in cases_of(vae.config().kind()) {
        let z = match &c.latent {
            Some(expected) => {
                out.push((
                    c.name.clone(),
                    "latent",
                    vae.encode(&c.input, opts).unwrap(),
                    expected.clone(),
                ));
                expected.clone()
            }
            None => c.input.clone(),
        };
        out.push((
            c.name.clone(),
            "decoded",
            vae.decode(&z, opts).unwrap(),
            c.decoded.clone(),
        ));
    }
    out
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
    let a = a.to_dtype(DType::F32).unwrap();
    let b = b.to_dtype(DType::F32).unwrap();
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

fn assert_parity(vae: &WanVae, opts: &RunOptions, what: &str) {
    let tol = Tolerance::for_settings(Precision::Fp32, false);
    let results = run_cases(vae, opts);
    assert_eq!(results.len(), 7, "4 cases: 3 with latent + decoded, 1 decode-only");
    let model = vae.config().kind();
    for (case, output, got, expected) in results {
        let check = check_output(output, &got, &expected, tol).unwrap();
        println!(
            "{model} {what}: {case}.{output} max abs error {:.3e} (tolerance {:.3e})",
            check.max_abs_error, check.tolerance
        );
        assert!(
            check.pass,
            "{model} {what}: {case}.{output} max abs error {} > {}",
            check.max_abs_error, check.tolerance
        );
    }
}

#[test]
fn fp32_matches_every_fixture_case_from_safetensors() {
    for (model, _) in MODELS {
        assert_parity(
            &tiny_of(model, Precision::Fp32, ConvImpl::Auto),
            &RunOptions::default(),
            "safetensors",
        );
    }
}

#[test]
fn fp32_matches_every_fixture_case_from_pth() {
    for (model, _) in MODELS {
        let w = load_file(&tiny_file(model, "weights.pth")).unwrap();
        assert_eq!((w.format.as_str(), w.config.kind()), ("pth", model));
        let vae = WanVae::new(&w.config, w.var_builder(Precision::Fp32, &Device::Cpu), ConvImpl::Auto).unwrap();
        assert_parity(&vae, &RunOptions::default(), "pth");
    }
}

#[test]
fn candle_conv2d_path_matches_too() {
    for (model, _) in MODELS {
        assert_parity(
            &tiny_of(model, Precision::Fp32, ConvImpl::Candle),
            &RunOptions { chunk: 2, tiling: None },
            "candle conv2d",
        );
    }
}

#[test]
fn chunk_sizes_1_2_3_agree() {
    for (model, _) in MODELS {
        let vae = tiny_of(model, Precision::Fp32, ConvImpl::Auto);
        let by_chunk: Vec<_> = [1, 2, 3]
            .iter()
            .map(|&chunk| run_cases(&vae, &RunOptions { chunk, tiling: None }))
            .collect();
        for other in &by_chunk[1..] {
            for ((case, output, a, _), (_, _, b, _)) in by_chunk[0].iter().zip(other) {
                let d = max_abs_diff(a, b);
                assert!(
                    d <= 1e-5,
                    "{model} {case}.{output}: chunked result differs from chunk 1 by {d}"
                );
            }
        }
        // Each chunked run still meets the fixture tolerance.
        assert_parity(&vae, &RunOptions { chunk: 3, tiling: None }, "chunk 3");
    }
}

#[test]
fn bf16_and_fp16_run_and_report_distance_from_fp32() {
    for (model, _) in MODELS {
        bf16_and_fp16_distance(model);
    }
}

fn bf16_and_fp16_distance(model: ModelKind) {
    let reference = run_cases(&tiny_of(model, Precision::Fp32, ConvImpl::Auto), &RunOptions::default());
    for precision in [Precision::Bf16, Precision::Fp16] {
        let vae = tiny_of(model, precision, ConvImpl::Auto);
        assert!(
            vae.compute_dtype().starts_with(&precision.dtype().as_str().to_string()),
            "{}",
            vae.compute_dtype()
        );
        let tol = Tolerance::for_settings(precision, false);
        for ((case, output, got, _), (_, _, fp32, _)) in run_cases(&vae, &RunOptions::default()).iter().zip(&reference)
        {
            assert_eq!(got.dtype(), precision.dtype());
            let check = check_output(output, got, fp32, tol).unwrap();
            println!(
                "{model} {precision} {case}.{output}: max abs {:.3e}, mean abs {:.3e}, PSNR {:.1} dB vs fp32",
                check.max_abs_error,
                check.mean_abs_error,
                check.psnr_db.unwrap_or(f64::INFINITY)
            );
            assert!(
                check.pass,
                "{model} {precision} {case}.{output}: {} > {}",
                check.max_abs_error, check.tolerance
            );
            assert!(check.max_abs_error > 0.0, "{precision} should differ from fp32 at all");
        }
    }
}

/// A smooth clip (no noise) of `frames` x `size` x `size`.
fn clip(frames: usize, size: usize) -> Tensor {
    let n = 3 * frames * size * size;
    let x = Tensor::arange(0f32, n as f32, &Device::Cpu)
        .unwrap()
        .reshape((1, 3, frames, size, size))
        .unwrap();
    (x * 0.0005).unwrap().sin().unwrap()
}

#[test]
fn tiled_is_close_to_untiled() {
    for (model, _) in MODELS {
        tiled_close_to_untiled(model);
    }
}

fn tiled_close_to_untiled(model: ModelKind) {
    // Bound (stated in validate::Tolerance): mean abs error <= 0.2 x max(1, max|untiled|).
    // Measured here: Wan 2.1 latent mean abs ~0.085, decoded ~0.23 (max |decoded| ~2.4); Wan 2.2
    // (tiles of 3 latent positions) latent ~0.31, decoded ~0.37.
    let vae = tiny_of(model, Precision::Fp32, ConvImpl::Auto);
    let x = clip(5, 96);
    let z = vae.encode(&x, &RunOptions::default()).unwrap();
    let y = vae.decode(&z, &RunOptions::default()).unwrap();
    let tiled = RunOptions {
        chunk: 1,
        tiling: Some(Tiling::new(48, 16).unwrap()),
    };
    let zt = vae.encode(&x, &tiled).unwrap();
    let yt = vae.decode(&z, &tiled).unwrap();
    let tol = Tolerance::for_settings(Precision::Fp32, true);
    for (name, got, reference) in [("latent", &zt, &z), ("decoded", &yt, &y)] {
        assert_eq!(got.dims(), reference.dims());
        let check = check_output(name, got, reference, tol).unwrap();
        println!(
            "{model} tiled 48:16 {name}: mean abs {:.4}, max abs {:.4}",
            check.mean_abs_error, check.max_abs_error
        );
        assert!(
            check.pass,
            "{model} {name}: mean abs {} > {}",
            check.mean_abs_error, check.tolerance
        );
        assert!(
            check.max_abs_error > 0.0,
            "tiling a 96 px clip with 48 px tiles must change something"
        );
    }
    // A tile that covers the frame is the untiled computation.
    let whole = RunOptions {
        chunk: 1,
        tiling: Some(Tiling::new(96, 32).unwrap()),
    };
    assert_eq!(max_abs_diff(&vae.encode(&x, &whole).unwrap(), &z), 0.0);
}

#[test]
fn frames_not_1_plus_4k_use_the_leading_frames() {
    for (model, dims) in [
        (ModelKind::Wan21, [1, 16, 2, 4, 4]),
        (ModelKind::Wan22, [1, 48, 2, 2, 2]),
    ] {
        let vae = tiny_of(model, Precision::Fp32, ConvImpl::Auto);
        let x7 = clip(7, 32);
        let z7 = vae.encode(&x7, &RunOptions::default()).unwrap();
        let z5 = vae
            .encode(&x7.narrow(2, 0, 5).unwrap(), &RunOptions::default())
            .unwrap();
        assert_eq!(z7.dims(), &dims);
        assert_eq!(max_abs_diff(&z7, &z5), 0.0);
        // Decoding the latent gives the 1+4k frames back at full size.
        let y = vae.decode(&z7, &RunOptions::default()).unwrap();
        assert_eq!(y.dims(), &[1, 3, 5, 32, 32]);
    }
}

#[test]
fn wan22_sizes_must_be_multiples_of_16() {
    let vae = tiny_of(ModelKind::Wan22, Precision::Fp32, ConvImpl::Auto);
    let opts = RunOptions::default();
    // 40 is fine for Wan 2.1 (a multiple of 8), not for Wan 2.2.
    let x = Tensor::zeros((1, 3, 1, 32, 40), DType::F32, &Device::Cpu).unwrap();
    let err = vae.encode(&x, &opts).unwrap_err().to_string();
    assert!(
        err.contains("width") && err.contains("multiple of 16") && err.contains("Wan 2.2") && err.contains("32 or 48"),
        "{err}"
    );
    assert!(tiny(Precision::Fp32, ConvImpl::Auto).encode(&x, &opts).is_ok());
    let x = Tensor::zeros((1, 3, 1, 8, 32), DType::F32, &Device::Cpu).unwrap();
    let err = vae.encode(&x, &opts).unwrap_err().to_string();
    assert!(err.contains("height") && err.contains("nearest valid: 16)"), "{err}");
    // Tiles are cut on latent positions: 16 px for Wan 2.2.
    let tiled = RunOptions {
        chunk: 1,
        tiling: Some(Tiling::new(40, 8).unwrap()),
    };
    let x = clip(1, 64);
    let err = vae.encode(&x, &tiled).unwrap_err().to_string();
    assert!(err.contains("multiples of 16") && err.contains("Wan 2.2"), "{err}");
    let z = vae.encode(&x, &opts).unwrap();
    assert!(vae.decode(&z, &tiled).is_err());
}

#[test]
fn a_checkpoint_of_the_other_model_is_refused_by_name() {
    let wan21 = WeightsSource::File(fixture("wan21_tiny.weights.pth"));
    let wan22 = WeightsSource::File(fixture("wan22_tiny.weights.safetensors"));
    let err = load_model(&wan21, Some(ModelKind::Wan22)).err().unwrap().to_string();
    assert!(
        err.contains("wan21_tiny.weights.pth")
            && err.contains("holds the Wan 2.1 VAE")
            && err.contains("--model wan2.2"),
        "{err}"
    );
    let err = load_model(&wan22, Some(ModelKind::Wan21)).err().unwrap().to_string();
    assert!(
        err.contains("holds the Wan 2.2 VAE") && err.contains("not the Wan 2.1 VAE"),
        "{err}"
    );
    // Agreeing (or no) --model loads; the model comes from the shapes either way.
    assert_eq!(
        load_model(&wan22, Some(ModelKind::Wan22)).unwrap().config.kind(),
        ModelKind::Wan22
    );
    assert_eq!(load_model(&wan21, None).unwrap().config.kind(), ModelKind::Wan21);
}

#[test]
fn the_cli_refuses_a_model_mismatch_with_exit_2() {
    let bin = env!("CARGO_BIN_EXE_wan-vae-bench");
    for (weights, cases, model, holds) in [
        (
            "wan21_tiny.weights.pth",
            "wan21_tiny.cases.safetensors",
            "wan2.2",
            "Wan 2.1 VAE",
        ),
        (
            "wan22_tiny.weights.pth",
            "wan22_tiny.cases.safetensors",
            "wan2.1",
            "Wan 2.2 VAE",
        ),
    ] {
        let cases = fixture(cases).display().to_string();
        for cmd in [vec!["validate", "--cases", cases.as_str()], vec!["inspect"]] {
            let out = std::process::Command::new(bin)
                .args(&cmd)
                .args(["--weights", fixture(weights).to_str().unwrap(), "--model", model])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{cmd:?} {weights} --model {model}: {stderr}"
            );
            assert!(stderr.contains(&format!("holds the {holds}")), "{stderr}");
        }
    }
}

#[test]
fn synthetic_weights_have_the_real_layout_and_stay_finite() {
    let t = std::time::Instant::now();
    let w = load(&WeightsSource::Synthetic { seed: 7 }).unwrap();
    let built_s = t.elapsed().as_secs_f64();
    assert!(built_s < 20.0, "synthetic weights took {built_s:.1}s");
    let keys: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixture("wan21_vae_keys.json")).unwrap()).unwrap();
    assert_eq!(w.tensors.len(), keys.len());
    for (name, shape) in &keys {
        let shape: Vec<usize> = serde_json::from_value(shape.clone()).unwrap();
        assert_eq!(w.tensors[name].dims(), shape.as_slice(), "{name}");
    }
    assert_eq!(w.params, 126_892_531);
    assert_eq!((w.config.dim, w.config.z_dim), (96, 16));
    // Same seed, same values; another seed, other values.
    let again = load(&WeightsSource::Synthetic { seed: 7 }).unwrap();
    let other = load(&WeightsSource::Synthetic { seed: 8 }).unwrap();
    let k = "decoder.upsamples.3.resample.1.weight";
    assert_eq!(max_abs_diff(&w.tensors[k], &again.tensors[k]), 0.0);
    assert!(max_abs_diff(&w.tensors[k], &other.tensors[k]) > 0.0);
    // Activations stay finite and of sane size through the whole network.
    let vae = WanVae::new(&w.config, w.var_builder(Precision::Fp32, &Device::Cpu), ConvImpl::Auto).unwrap();
    let z = vae.encode(&clip(5, 16), &RunOptions::default()).unwrap();
    let y = vae.decode(&z, &RunOptions::default()).unwrap();
    for t in [&z, &y] {
        let v = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert!(v.iter().all(|x| x.is_finite()));
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        assert!(max > 1e-3 && max < 1e3, "activation scale {max}");
    }
}

#[test]
fn wan22_synthetic_weights_have_the_real_layout_and_stay_finite() {
    let t = std::time::Instant::now();
    let w = load_model(&WeightsSource::Synthetic { seed: 7 }, Some(ModelKind::Wan22)).unwrap();
    let built_s = t.elapsed().as_secs_f64();
    println!("Wan 2.2 synthetic weights built in {built_s:.2} s");
    assert!(built_s < 30.0, "synthetic weights took {built_s:.1}s");
    let keys: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixture("wan22_vae_keys.json")).unwrap()).unwrap();
    assert_eq!((w.tensors.len(), keys.len()), (196, 196));
    for (name, shape) in &keys {
        let shape: Vec<usize> = serde_json::from_value(shape.clone()).unwrap();
        assert_eq!(w.tensors[name].dims(), shape.as_slice(), "{name}");
    }
    assert_eq!(w.params, 704_688_668);
    assert_eq!(w.config.kind(), ModelKind::Wan22);
    assert_eq!((w.config.dim, w.config.dec_dim, w.config.z_dim), (160, 256, 48));
    // Activations stay finite and of sane size through the whole network, encoder and
    // decoder, over the first call and a cached one. candle's conv shares the weights'
    // memory (the im2col path would hold a second, f32 copy of 2.8 GB).
    let vae = WanVae::new(
        &w.config,
        w.var_builder(Precision::Fp32, &Device::Cpu),
        ConvImpl::Candle,
    )
    .unwrap();
    let z = vae.encode(&clip(5, 32), &RunOptions::default()).unwrap();
    assert_eq!(z.dims(), &[1, 48, 2, 2, 2]);
    let y = vae.decode(&z, &RunOptions::default()).unwrap();
    assert_eq!(y.dims(), &[1, 3, 5, 32, 32]);
    for t in [&z, &y] {
        let v = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        assert!(v.iter().all(|x| x.is_finite()));
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        println!("max |activation| {max}");
        assert!(max > 1e-3 && max < 1e3, "activation scale {max}");
    }
}

#[test]
fn validate_passes_every_wan22_case_from_both_formats() {
    let bin = env!("CARGO_BIN_EXE_wan-vae-bench");
    for weights in ["wan22_tiny.weights.safetensors", "wan22_tiny.weights.pth"] {
        let out = std::process::Command::new(bin)
            .args([
                "validate",
                "--json",
                "--weights",
                fixture(weights).to_str().unwrap(),
                "--cases",
            ])
            .arg(fixture("wan22_tiny.cases.safetensors"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            (report["pass"].as_bool(), report["model"].as_str()),
            (Some(true), Some("wan2.2"))
        );
        let outputs: usize = report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["outputs"].as_array().unwrap().len())
            .sum();
        assert_eq!(outputs, 7);
    }
}

#[test]
fn inspect_names_the_model_from_the_shapes() {
    let bin = env!("CARGO_BIN_EXE_wan-vae-bench");
    for (weights, model, dims) in [
        ("wan21_tiny.weights.safetensors", "wan2.1", (8, 8, 16)),
        ("wan22_tiny.weights.pth", "wan2.2", (8, 16, 48)),
    ] {
        let out = std::process::Command::new(bin)
            .args(["inspect", "--json", "--weights", fixture(weights).to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["model"], model);
        assert_eq!(
            (j["dim"].as_u64(), j["dec_dim"].as_u64(), j["z_dim"].as_u64()),
            (Some(dims.0), Some(dims.1), Some(dims.2))
        );
    }
    let out = std::process::Command::new(bin)
        .args([
            "inspect",
            "--weights",
            fixture("wan22_tiny.weights.safetensors").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("model:          Wan 2.2 VAE (TI2V-5B) [wan2.2]"),
        "{text}"
    );
}

#[test]
fn the_wan22_matrix_file_fits_the_wan22_rules() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/wan22-ti2v.toml");
    let opts = wan_vae_bench::plan::config::load(&path).unwrap();
    assert_eq!(opts.weights, "wan2.2");
    let cfg = ModelKind::Wan22.config();
    let cases = wan_vae_bench::plan::matrix::expand(&opts);
    assert_eq!(cases.len(), 3 * 2 * 2 * 2);
    for case in &cases {
        cfg.check_size(case.settings.width, case.settings.height).unwrap();
        if let Some(t) = &case.settings.tiling {
            cfg.check_tiling(t).unwrap();
        }
    }
}

fn tiny_tensors() -> HashMap<String, Tensor> {
    candle_core::safetensors::load(fixture("wan21_tiny.weights.safetensors"), &Device::Cpu).unwrap()
}

fn load_err(tensors: &HashMap<String, Tensor>) -> (String, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.safetensors");
    candle_core::safetensors::save(tensors, &path).unwrap();
    let err = load_file(&path).err().expect("loading must fail").to_string();
    (err, path)
}

#[test]
fn a_missing_key_is_named() {
    let mut t = tiny_tensors();
    t.remove("decoder.upsamples.3.time_conv.bias").unwrap();
    let (err, path) = load_err(&t);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("missing key decoder.upsamples.3.time_conv.bias"), "{err}");
}

#[test]
fn an_extra_key_is_named() {
    let mut t = tiny_tensors();
    t.insert(
        "decoder.extra.weight".into(),
        Tensor::zeros(3, DType::F32, &Device::Cpu).unwrap(),
    );
    let (err, _) = load_err(&t);
    assert!(err.contains("unexpected key decoder.extra.weight"), "{err}");
}

#[test]
fn a_wrong_shape_is_named() {
    let mut t = tiny_tensors();
    t.insert(
        "encoder.middle.1.proj.weight".into(),
        Tensor::zeros((16, 32, 1, 1), DType::F32, &Device::Cpu).unwrap(),
    );
    let (err, _) = load_err(&t);
    assert!(
        err.contains("key encoder.middle.1.proj.weight has shape [16, 32, 1, 1], expected [32, 32, 1, 1]"),
        "{err}"
    );
}

#[test]
fn a_wrong_shape_names_both_shapes() {
    let mut t = tiny_tensors();
    t.insert(
        "decoder.head.2.weight".into(),
        Tensor::zeros((3, 8, 3, 3, 1), DType::F32, &Device::Cpu).unwrap(),
    );
    let (err, _) = load_err(&t);
    assert!(
        err.contains("key decoder.head.2.weight has shape [3, 8, 3, 3, 1], expected [3, 8, 3, 3, 3]"),
        "{err}"
    );
}

#[test]
fn an_unreadable_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["garbage.safetensors", "garbage.pth"] {
        let path = dir.path().join(name);
        std::fs::write(&path, b"this is not a checkpoint").unwrap();
        let err = load_file(&path).err().unwrap().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
    }
    let missing = dir.path().join("nope.pth");
    let err = load_file(&missing).err().unwrap().to_string();
    assert!(err.contains("nope.pth") && err.contains("cannot read"), "{err}");
}

#[test]
fn sixteen_bit_checkpoints_load_and_convert() {
    let t: HashMap<String, Tensor> = tiny_tensors()
        .into_iter()
        .map(|(k, v)| (k, v.to_dtype(DType::BF16).unwrap()))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-bf16.safetensors");
    candle_core::safetensors::save(&t, &path).unwrap();
    let w = load_file(&path).unwrap();
    assert_eq!(w.dtype_summary(), "bf16");
    // bf16 weights computed in fp32 stay close to the fp32 fixtures.
    let vae = WanVae::new(&w.config, w.var_builder(Precision::Fp32, &Device::Cpu), ConvImpl::Auto).unwrap();
    let c = cases().into_iter().find(|c| c.name == "video1").unwrap();
    let z = vae.encode(&c.input, &RunOptions::default()).unwrap();
    assert!(max_abs_diff(&z, c.latent.as_ref().unwrap()) < 0.1);
}

#[test]
fn bad_inputs_are_errors() {
    let vae = tiny(Precision::Fp32, ConvImpl::Auto);
    let opts = RunOptions::default();
    let zero = Tensor::zeros((1, 3, 0, 16, 16), DType::F32, &Device::Cpu).unwrap();
    let err = vae.encode(&zero, &opts).unwrap_err().to_string();
    assert!(err.contains("frames") && err.contains("at least 1"), "{err}");
    let odd = Tensor::zeros((1, 3, 1, 20, 16), DType::F32, &Device::Cpu).unwrap();
    let err = vae.encode(&odd, &opts).unwrap_err().to_string();
    assert!(err.contains("height") && err.contains("16 or 24"), "{err}");
    let err = vae
        .encode(&clip(1, 16), &RunOptions { chunk: 0, tiling: None })
        .unwrap_err()
        .to_string();
    assert!(err.contains("chunk"), "{err}");
    assert!("250:64"
        .parse::<Tiling>()
        .unwrap_err()
        .to_string()
        .contains("multiples of 8"));
    assert!("64:64"
        .parse::<Tiling>()
        .unwrap_err()
        .to_string()
        .contains("smaller than the tile"));
    assert_eq!("256:64".parse::<Tiling>().unwrap(), Tiling::DIFFUSERS_DEFAULT);
    assert!("fp8"
        .parse::<Precision>()
        .unwrap_err()
        .to_string()
        .contains("fp32, bf16, fp16"));
}

#[test]
fn devices_this_build_lacks_are_errors_not_panics() {
    assert!(wan_vae_bench::machine::device::parse("cpu").is_ok());
    if !cfg!(feature = "cuda") {
        let err = wan_vae_bench::machine::device::parse("cuda:0").unwrap_err().to_string();
        assert!(
            err.contains("no CUDA support") && err.contains("--features cuda"),
            "{err}"
        );
    }
    if !cfg!(feature = "metal") {
        assert!(wan_vae_bench::machine::device::parse("metal")
            .unwrap_err()
            .to_string()
            .contains("no Metal support"));
    }
    assert!(wan_vae_bench::machine::device::parse("tpu:0")
        .unwrap_err()
        .to_string()
        .contains("cpu, cuda:N or metal:N"));
}
