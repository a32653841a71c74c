//! `validate` and `inspect` from the command line: exit codes, JSON, saved outputs.
use crate::util::cli::fixture;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wan-vae-bench"))
}

fn validate(extra: &[&str]) -> std::process::Output {
    bin()
        .arg("validate")
        .arg("--weights")
        .arg(fixture("wan21_tiny.weights.pth"))
        .arg("--cases")
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn validate_passes_with_json_and_saves_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("ours.safetensors");
    let out = validate(&["--json", "--chunk", "2", "--save-outputs", saved.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["pass"], true);
    assert_eq!(report["chunk"], 2);
    assert_eq!(report["compute_dtype"], "f32");
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        for o in case["outputs"].as_array().unwrap() {
            assert!(o["max_abs_error"].as_f64().unwrap() <= o["tolerance"].as_f64().unwrap());
            assert!(o["psnr_db"].as_f64().unwrap() > 100.0);
        }
    }
    let tensors = candle_core::safetensors::load(&saved, &candle_core::Device::Cpu).unwrap();
    let mut names: Vec<_> = tensors.keys().cloned().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "latent0.decoded",
            "video0.decoded",
            "video0.latent",
            "video1.decoded",
            "video1.latent",
            "video2.decoded",
            "video2.latent"
        ]
    );
    assert_eq!(tensors["video2.latent"].dims(), &[1, 16, 3, 3, 5]);
}

#[test]
fn validate_prints_a_table_and_the_precision_bound() {
    let out = validate(&["--precision", "bf16"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        // The conv computes bf16 products where the CPU has AVX512-BF16, in f32 elsewhere.
        text.contains("computes bf16 (conv, attention and norms in f32)")
            || text.contains(
                "computes bf16 (conv: bf16 products, f32 accumulation (AVX512-BF16); attention and norms in f32)"
            ),
        "{text}"
    );
    assert!(text.contains("max_abs_error <= 1e-1 x max(1, max|expected|)"), "{text}");
    assert!(
        text.contains("video2") && text.contains("decoded") && text.contains("psnr_db"),
        "{text}"
    );
}

#[test]
fn validate_exits_1_when_outputs_are_wrong() {
    let out = bin()
        .args(["validate", "--weights", "synthetic", "--cases"])
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .output()
        .unwrap();
    // Synthetic weights are a different (dim 96) model: it runs, but cannot match.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL"));
}

#[test]
fn validate_exits_2_on_unusable_input() {
    let missing = bin()
        .args(["validate", "--weights", "/no/such/file.pth", "--cases"])
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/file.pth"));

    let out = bin()
        .args(["validate", "--weights"])
        .arg(fixture("wan21_tiny.weights.pth"))
        .arg("--cases")
        .arg(fixture("wan21_tiny.weights.safetensors"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("wan21_tiny.weights.safetensors") && err.contains("expected input, latent or decoded"),
        "{err}"
    );

    let out = validate(&["--device", "cuda:0"]);
    if !cfg!(feature = "cuda") {
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("no CUDA support"));
    }
    let out = validate(&["--tile", "100:10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("multiples of 8"));
}

#[test]
fn inspect_json_lists_every_tensor() {
    let out = bin()
        .args(["inspect", "--json", "--weights"])
        .arg(fixture("wan21_tiny.weights.safetensors"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["params"], 924_491);
    assert_eq!(v["dim"], 8);
    assert_eq!(v["z_dim"], 16);
    let tensors = v["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), 194);
    assert_eq!(tensors[0]["name"], "encoder.conv1.weight");
    assert_eq!(tensors[0]["shape"], serde_json::json!([8, 3, 3, 3, 3]));
    assert_eq!(tensors[0]["dtype"], "f32");

    let out = bin().args(["inspect", "--weights", "synthetic"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("126892531") && text.contains("dim=96 z_dim=16"), "{text}");
}

#[test]
fn validate_accepts_the_tile_values_run_accepts() {
    // `none` means untiled, as in `run --tile none` (the JSON's `tile` is then null).
    let out = validate(&["--json", "--tile", "none"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tile"], serde_json::Value::Null);
    let out = validate(&["--tile", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tile"));
}
