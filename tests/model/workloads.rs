//! The decode workloads of issue 12, on the tiny fixture weights: a decode-only run of
//! the fixtures' `latent0` (as .safetensors, as ComfyUI's `.latent`, as `.npy`) gives
//! `validate`'s expected video; `--passes decode` never times an encode; bad inputs exit 2
//! naming file, tensor and what is valid; temporal tiling stitches exactly and reports its
//! quality against untiled; budgets turn a run's exit code to 1 when broken.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use wan_vae_bench::report::{BudgetVerdict, CaseStatus, Report};

use crate::util::cli::*;

const WEIGHTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/wan21_tiny.weights.safetensors"
);
const CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/wan21_tiny.cases.safetensors"
);

/// The fixtures' `latent0` case: normalized latent [1,16,4,4,6] and its expected video.
fn latent0() -> (Tensor, Tensor) {
    let t = candle_core::safetensors::load(CASES, &Device::Cpu).unwrap();
    (t["latent0.input"].clone(), t["latent0.decoded"].clone())
}

/// The fixtures' Wan 2.1 latent mean and std, `[1,16,1,1,1]`.
fn mean_std() -> (Tensor, Tensor) {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(CASES.replace("cases.safetensors", "json")).unwrap()).unwrap();
    let v = |k: &str| -> Tensor {
        let vals: Vec<f32> = meta[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        Tensor::from_vec(vals, (1, 16, 1, 1, 1), &Device::Cpu).unwrap()
    };
    (v("latent_mean"), v("latent_std"))
}

/// Write `tensors` (name -> f32 tensor) as a safetensors file.
fn save(path: &Path, tensors: &[(&str, &Tensor)]) {
    let map: HashMap<String, Tensor> = tensors.iter().map(|(n, t)| (n.to_string(), (*t).clone())).collect();
    candle_core::safetensors::save(&map, path).unwrap();
}

/// `run` on the tiny weights, one timed run, in matrix order, scratch under `dir` (TMPDIR).
fn run_tiny(dir: &Path, args: &[&str]) -> (std::process::Output, PathBuf) {
    let report = dir.join("report.json");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = bench()
        .args(["run", "--quiet", "--weights", WEIGHTS, "--runs", "1", "--warmup", "0"])
        .args(["--order", "as-written"])
        .args(args)
        .arg("--output")
        .arg(&report)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    (out, report)
}

/// The decoded video a kept-outputs run saved for case `id`.
fn decoded_of(out: &std::process::Output, id: &str) -> Tensor {
    let text = stdout(out);
    let dir = text
        .lines()
        .find_map(|l| l.strip_prefix("outputs: "))
        .unwrap_or_else(|| panic!("no outputs line in {text}"));
    let path = wan_vae_bench::engine::protocol::outputs_path(Path::new(dir), id);
    let t = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    assert!(
        !t.contains_key("latent"),
        "a decode-only case saves no latent of its own"
    );
    t["decoded"].clone()
}

/// fp32 matches the fixture to 1e-4 x max(1, |expected|).
fn assert_matches(got: &Tensor, expected: &Tensor, what: &str) {
    assert_eq!(got.dims(), expected.dims(), "{what}");
    let bound = 1e-4
        * expected
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
            .max(1.0);
    let err = (got - expected)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap();
    let err = err.to_scalar::<f32>().unwrap();
    assert!(err <= bound, "{what}: max error {err} > {bound}");
}

const LATENT0_ID: &str = "fp32-chunk1-untiled-13x48x32-baseline-decode";

#[test]
fn decode_only_from_a_latent_file_matches_validate() {
    let dir = scratch();
    let (latent, expected) = latent0();
    let input = dir.path().join("latent0.safetensors");
    save(&input, &[("latent", &latent)]);
    let (out, report) = run_tiny(
        dir.path(),
        &[
            "--input",
            input.to_str().unwrap(),
            "--passes",
            "decode",
            "--precision",
            "fp32",
            "--keep-outputs",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), stdout(&out));
    let r = Report::load(&report).unwrap();
    assert_eq!(r.cases.len(), 1);
    let c = &r.cases[0];
    // Frames and size come from the file: 4 latent frames of 4x6 -> 13 frames at 48x32.
    assert_eq!(c.id, LATENT0_ID);
    assert!(c.outcome.encode.is_none() && c.outcome.decode.is_some(), "{c:?}");
    let i = r.run.input.as_ref().unwrap();
    assert_eq!(
        (i.tensor.as_str(), i.shape.as_slice(), i.dtype.as_str()),
        ("latent", &[1, 16, 4, 4, 6][..], "f32")
    );
    assert_eq!((i.kind.as_str(), i.normalization.as_str()), ("latent", "normalized"));
    assert_eq!(i.sha256.len(), 64);
    assert_matches(
        &decoded_of(&out, LATENT0_ID),
        &expected,
        "decode of latent0 (.safetensors)",
    );

    // The same latent as .npy (4-D, [z,t,h,w]) decodes the same.
    let npy = dir.path().join("latent0.npy");
    write_npy(&npy, &latent.squeeze(0).unwrap());
    let (out, _) = run_tiny(
        dir.path(),
        &[
            "--input",
            npy.to_str().unwrap(),
            "--passes",
            "decode",
            "--precision",
            "fp32",
            "--keep-outputs",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_matches(&decoded_of(&out, LATENT0_ID), &expected, "decode of latent0 (.npy)");
}

/// ComfyUI keeps the VAE's raw latent (`mu`); its `SaveLatent` writes it as `latent_tensor`
/// with an empty `latent_format_version_0` marker. Decoding it as ComfyUI's `VAEDecode`
/// would must give the fixture's video for the normalized latent `(mu - mean) / std`.
#[test]
fn a_comfyui_latent_decodes() {
    let dir = scratch();
    let (latent, expected) = latent0();
    let (mean, std) = mean_std();
    let raw = latent.broadcast_mul(&std).unwrap().broadcast_add(&mean).unwrap();
    let marker = Tensor::zeros(0, DType::F32, &Device::Cpu).unwrap();
    let input = dir.path().join("ComfyUI_00001_.latent");
    save(&input, &[("latent_tensor", &raw), ("latent_format_version_0", &marker)]);
    let (out, report) = run_tiny(
        dir.path(),
        &[
            "--input",
            input.to_str().unwrap(),
            "--passes",
            "decode",
            "--precision",
            "fp32",
            "--keep-outputs",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), stdout(&out));
    let r = Report::load(&report).unwrap();
    let i = r.run.input.unwrap();
    assert_eq!(
        (i.tensor.as_str(), i.normalization.as_str()),
        ("latent_tensor", "comfyui")
    );
    assert_matches(&decoded_of(&out, LATENT0_ID), &expected, "decode of a ComfyUI .latent");
}

#[test]
fn passes_decode_never_times_an_encode() {
    let dir = scratch();
    let (out, report) = run_tiny(
        dir.path(),
        &[
            "--frames",
            "5",
            "--size",
            "32x32",
            "--precision",
            "bf16",
            "--passes",
            "decode",
            "--control",
            "off",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), stdout(&out));
    let r = Report::load(&report).unwrap();
    // The bf16 case and its added fp32 reference; the untimed encode that prepared the
    // latent is no case.
    let ids: Vec<&str> = r.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "bf16-chunk1-untiled-5x32x32-baseline-decode",
            "fp32-chunk1-untiled-5x32x32-baseline-decode"
        ]
    );
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok);
        assert!(c.outcome.encode.is_none(), "{}: encode timed", c.id);
        assert_eq!(c.outcome.decode.as_ref().unwrap().samples_s.len(), 1);
    }
    // Both decoded the same prepared latent: bf16 is compared with fp32 on the video only.
    let q = r.cases[0].quality.as_ref().unwrap();
    assert!(q.latent.is_none() && q.decoded.is_some(), "{q:?}");
}

#[test]
fn wrong_inputs_exit_2_with_a_precise_message() {
    let dir = scratch();
    let fails = |args: &[&str], wanted: &[&str]| {
        let (out, report) = run_tiny(dir.path(), args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for w in wanted {
            assert!(err.contains(w), "{args:?}: expected {w:?} in {err}");
        }
        assert!(!report.exists(), "no report for unusable input");
    };
    // A Wan 2.2 (48-channel) latent given to a 16-channel model.
    let wan22 = dir.path().join("wan22.safetensors");
    save(
        &wan22,
        &[(
            "samples",
            &Tensor::zeros((1, 48, 3, 4, 4), DType::F32, &Device::Cpu).unwrap(),
        )],
    );
    let p = wan22.to_str().unwrap();
    fails(
        &["--input", p, "--passes", "decode"],
        &[
            p,
            "`samples`",
            "48 latent channels",
            "z_dim is 16",
            "[1,16,t,h,w]",
            "[1,3,T,H,W]",
        ],
    );
    // Wrong rank, several tensors without --input-tensor, an unknown --input-tensor.
    let flat = dir.path().join("flat.safetensors");
    save(
        &flat,
        &[("x", &Tensor::zeros((16, 4), DType::F32, &Device::Cpu).unwrap())],
    );
    fails(
        &["--input", flat.to_str().unwrap()],
        &["`x`", "2 dimensions", "[1,16,t,h,w]"],
    );
    let two = dir.path().join("two.safetensors");
    let z = Tensor::zeros((1, 16, 2, 4, 4), DType::F32, &Device::Cpu).unwrap();
    save(&two, &[("a", &z), ("b", &z)]);
    fails(
        &["--input", two.to_str().unwrap(), "--passes", "decode"],
        &["--input-tensor", "a, b"],
    );
    fails(
        &[
            "--input",
            two.to_str().unwrap(),
            "--input-tensor",
            "c",
            "--passes",
            "decode",
        ],
        &["\"c\"", "a, b"],
    );
    // Integer dtype.
    let ints = dir.path().join("ints.safetensors");
    save(&ints, &[("z", &z.to_dtype(DType::U8).unwrap())]);
    fails(
        &["--input", ints.to_str().unwrap(), "--passes", "decode"],
        &["`z`", "U8", "f32, f16, bf16 or f64"],
    );
    // Frames and size come from the file: a conflicting flag names both.
    let one = dir.path().join("one.safetensors");
    save(&one, &[("latent", &z)]);
    let o = one.to_str().unwrap();
    fails(
        &["--input", o, "--passes", "decode", "--frames", "9"],
        &["--frames 9", "5 frames at 32x32", o],
    );
    fails(
        &["--input", o, "--passes", "decode", "--size", "64x64"],
        &["--size 64x64", "5 frames at 32x32"],
    );
    // A latent cannot be encoded.
    fails(&["--input", o], &["can only be decoded", "--passes decode"]);
    // A video out of [-1, 1].
    let video = dir.path().join("video.safetensors");
    save(
        &video,
        &[(
            "v",
            &(Tensor::ones((1, 3, 5, 32, 32), DType::F32, &Device::Cpu).unwrap() * 3.0).unwrap(),
        )],
    );
    fails(
        &["--input", video.to_str().unwrap()],
        &["`v`", "[1, 3, 5, 32, 32]", "[3, 3]", "[-1, 1]"],
    );
}

/// Temporal tiling: stitching a pointwise map is exact through the public API, and a
/// tiled run reports its quality against the untiled reference.
#[test]
fn temporal_tiling_is_exact_on_a_pointwise_map_and_reports_quality() {
    use wan_vae_bench::model::temporal_tiling::tiled_decode;
    use wan_vae_bench::model::TemporalTiling;
    // Nearest "decoder" in time: latent frame 0 -> 1 frame, every later one -> 4.
    let up = |t: &Tensor| -> candle_core::Result<Tensor> {
        let f = t.dim(2)?;
        let idx: Vec<u32> = (0..1 + 4 * (f - 1)).map(|i| i.div_ceil(4) as u32).collect();
        t.contiguous()?.index_select(&Tensor::new(idx, t.device())?, 2)
    };
    let vals: Vec<f32> = (0..2 * 23 * 2 * 2)
        .map(|i| 2f32.powi(i % 11 - 5) * if i % 3 == 0 { -1.0 } else { 1.0 })
        .collect();
    let z = Tensor::from_vec(vals, (1, 2, 23, 2, 2), &Device::Cpu).unwrap();
    let whole = up(&z).unwrap();
    for (t, o) in [(8, 4), (16, 8), (28, 8), (64, 8)] {
        let tiled = tiled_decode(&z, TemporalTiling::new(t, o).unwrap(), 4, up).unwrap();
        let diff = (&tiled - &whole)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap();
        assert_eq!(diff.to_scalar::<f32>().unwrap(), 0.0, "{t}:{o}");
    }

    let dir = scratch();
    let (latent, _) = latent0();
    let input = dir.path().join("latent0.safetensors");
    save(&input, &[("latent", &latent)]);
    let (out, report) = run_tiny(
        dir.path(),
        &[
            "--input",
            input.to_str().unwrap(),
            "--passes",
            "decode",
            "--precision",
            "fp32",
            "--temporal-tile",
            "none,8:4",
            "--tile",
            "none,16:8",
            "--control",
            "off",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), stdout(&out));
    let r = Report::load(&report).unwrap();
    assert_eq!(r.cases.len(), 4);
    let both = r
        .cases
        .iter()
        .find(|c| c.id == "fp32-chunk1-tile16o8-ttile8o4-13x48x32-baseline-decode")
        .unwrap();
    let q = both.quality.as_ref().unwrap();
    assert_eq!(q.reference_id, LATENT0_ID);
    let d = q.decoded.as_ref().unwrap();
    assert!(
        !d.identical && d.max_abs > 0.0,
        "tiling in time changes the output: {d:?}"
    );
    assert_eq!(both.settings.temporal_tile.unwrap().tile_frames, 8);
}

#[test]
fn a_broken_budget_exits_1_and_a_generous_one_0() {
    let dir = scratch();
    let run_with = |budgets: &str| {
        let cfg = write(
            dir.path(),
            "budgets.toml",
            &format!("[matrix]\nframes = [5]\nsize = [\"32x32\"]\npasses = [\"decode\"]\n{budgets}"),
        );
        run_tiny(dir.path(), &["--config", cfg.to_str().unwrap()])
    };
    let (out, report) = run_with(
        "[budgets]\npeak_rss_gb = 1000\n[[budgets.case]]\nframes = 5\nsize = \"32x32\"\ndecode_median_s = 1e-9",
    );
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stderr(&out), stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("budget broken: fp32-chunk1-untiled-5x32x32-baseline-decode: decode_median_s"),
        "{text}"
    );
    let r = Report::load(&report).unwrap();
    let b = &r.cases[0].budgets;
    assert_eq!(b.len(), 2);
    assert_eq!((b[0].budget.as_str(), b[0].verdict), ("peak_rss_gb", BudgetVerdict::Ok));
    assert_eq!(
        (b[1].budget.as_str(), b[1].verdict),
        ("decode_median_s", BudgetVerdict::Broken)
    );
    assert_eq!(b[1].scope, "frames = 5, size = 32x32");

    let (out, report) = run_with("[budgets]\ndecode_median_s = 1000\npeak_rss_gb = 1000");
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), stdout(&out));
    let r = Report::load(&report).unwrap();
    assert!(r.cases[0].budgets.iter().all(|b| b.verdict == BudgetVerdict::Ok));
    assert!(stdout(&out).contains("budgets:"));
}

/// A little-endian f32 `.npy` file (format 1.0), as `numpy.save` writes one.
fn write_npy(path: &Path, t: &Tensor) {
    let shape: Vec<String> = t.dims().iter().map(|d| d.to_string()).collect();
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}",
        shape.join(", ")
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in t.flatten_all().unwrap().to_vec1::<f32>().unwrap() {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// A video input replaces the clip: its encode gives the fixture's latent, and the round
/// trip (real weights, both passes) is measured against that video.
#[test]
fn a_video_input_is_encoded_and_round_tripped() {
    let dir = scratch();
    let cases = candle_core::safetensors::load(CASES, &Device::Cpu).unwrap();
    let input = dir.path().join("video1.safetensors");
    save(&input, &[("video", &cases["video1.input"])]);
    let (out, report) = run_tiny(
        dir.path(),
        &[
            "--input",
            input.to_str().unwrap(),
            "--precision",
            "fp32",
            "--keep-outputs",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), stdout(&out));
    let r = Report::load(&report).unwrap();
    assert_eq!(r.run.input.as_ref().unwrap().kind, "video");
    let c = &r.cases[0];
    assert_eq!(c.id, "fp32-chunk1-untiled-5x32x32-baseline");
    assert!(c.outcome.encode.is_some() && c.outcome.decode.is_some());
    assert!(
        c.quality.as_ref().unwrap().roundtrip_psnr_db.is_some(),
        "{:?}",
        c.quality
    );
    let text = stdout(&out);
    let dir_out = text.lines().find_map(|l| l.strip_prefix("outputs: ")).unwrap();
    let saved = candle_core::safetensors::load(
        wan_vae_bench::engine::protocol::outputs_path(Path::new(dir_out), &c.id),
        &Device::Cpu,
    )
    .unwrap();
    assert_matches(&saved["latent"], &cases["video1.latent"], "encode of the input video");
    assert_matches(&saved["decoded"], &cases["video1.decoded"], "decode of its latent");
}
