//! The GPU check's verdicts that issue 65 added (scripts/gpu-check-report.py, read on
//! hand-written reports): a candle case on a GPU with a fallback plan, TF32 math in a
//! true-fp32 case, or no recorded convolution library FAILs and names the shape; a first
//! choice passed over for the workspace cap is said; bf16 is held to a PSNR floor against the
//! same engine's fp32; and conv-bench's per-shape check (scripts/conv-bench-torch.py makes
//! candle's probe tensors again with torch, on the CPU here, and measures candle's dumped
//! output against torch's `F.conv3d`).
use std::path::{Path, PathBuf};
use std::process::Command;

use wan_vae_bench::cli::conv_bench::{probe_value, B_SALT, B_SCALE, W_SALT, W_SCALE};

use crate::util::cli::{python, scratch, stderr, stdout, write};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(name)
}

/// The verdict lines of `gpu-check-report.py args`.
fn verdicts(args: &[&str]) -> Vec<(String, String)> {
    let out = Command::new("python3")
        .arg(script("gpu-check-report.py"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .filter_map(|l| {
            let (v, rest) = l.split_once(' ')?;
            Some((v.to_string(), rest.trim().to_string()))
        })
        .collect()
}

fn run_report(dir: &Path, device: &str, cases: &str) -> Vec<(String, String)> {
    let p = write(
        dir,
        "run.json",
        &format!(r#"{{"run": {{"device": "{device}"}}, "cases": [{cases}]}}"#),
    );
    verdicts(&[
        "run",
        "--name",
        "m",
        "--device",
        device,
        "--rc",
        "0",
        "--log",
        "/dev/null",
        p.to_str().unwrap(),
    ])
}

fn plan(input: &str, algorithm: &str, math: &str, passed_over: &str) -> String {
    format!(
        r#"{{"input": {input}, "weight": [96, 96, 3, 3, 3], "stride": [1, 1, 1], "padding": [0, 1, 1],
            "dtype": "f32", "algorithm": "{algorithm}", "family": "implicit-gemm/cudnn", "math": "{math}",
            "workspace_bytes": 0, "heuristic_rank": 0, "chosen_by": "heuristics", "calls": 2,
            "workspace_cap_bytes": 1073741824, "passed_over": "{passed_over}"}}"#
    )
}

fn candle_case(id: &str, tf32: &str, plans: &[String]) -> String {
    let lib = if plans.is_empty() {
        String::new()
    } else {
        format!(
            r#", "conv_library": {{"library": "cuDNN", "version": "9.19.0", "math": "fp32", "workspace_cap_bytes": 1,
                "workspace_bytes": 0, "plans": [{}]}}"#,
            plans.join(",")
        )
    };
    format!(
        r#"{{"id": "{id}", "engine": "candle", "precision": "fp32", "tf32": "{tf32}", "passes": "decode",
            "status": "ok", "decode": {{"median_s": 0.5}}, "device_memory_bytes": 1073741824{lib}}}"#
    )
}

#[test]
fn a_candle_gpu_case_with_a_fallback_tf32_math_or_no_library_fails_naming_the_shape() {
    let dir = scratch();
    let big = "[1, 96, 6, 480, 832]";
    let small = "[1, 384, 3, 60, 104]";
    let fma = plan(big, "IMPLICIT_PRECOMP_GEMM", "FMA", "");
    let cases = [
        candle_case("exact", "n/a", std::slice::from_ref(&fma)),
        candle_case(
            "fallback",
            "n/a",
            &[fma.clone(), plan(small, "candle conv2d (fallback: cuDNN ranked no algorithm ...)", "FMA", "")],
        ),
        candle_case("tf32-math", "off", &[fma.clone(), plan(small, "IMPLICIT_GEMM", "DEFAULT", "")]),
        candle_case("tf32-allowed", "on", &[plan(small, "IMPLICIT_GEMM", "DEFAULT", "")]),
        candle_case("no-library", "n/a", &[]),
        candle_case(
            "capped",
            "n/a",
            &[plan(
                big,
                "IMPLICIT_PRECOMP_GEMM",
                "FMA",
                "heuristics's first choice FFT_TILING (FMA math, rank 0) wanted 3.00 GiB of workspace, over the cap of 1.00 GiB",
            )],
        ),
    ]
    .join(",");
    let v = run_report(dir.path(), "cuda:0", &cases);
    let of = |prefix: &str| -> Vec<&(String, String)> { v.iter().filter(|(_, r)| r.starts_with(prefix)).collect() };
    assert!(
        of("conv_plan m exact:").is_empty() && of("conv_library m exact:").iter().all(|x| x.0 == "INFO"),
        "{v:?}"
    );
    let fb = of("conv_plan m fallback:");
    assert_eq!(fb.len(), 1, "{v:?}");
    assert_eq!(fb[0].0, "FAIL");
    assert!(
        fb[0].1.contains("input [1, 384, 3, 60, 104] weight [96, 96, 3, 3, 3] stride [1, 1, 1] padding [0, 1, 1] f32: candle conv2d (fallback"),
        "names the shape: {v:?}"
    );
    let tf = of("conv_plan m tf32-math:");
    assert_eq!(tf.len(), 1, "{v:?}");
    assert_eq!(tf[0].0, "FAIL");
    assert!(
        tf[0].1.contains("input [1, 384, 3, 60, 104]") && tf[0].1.contains("under DEFAULT math in a true-fp32 case"),
        "{v:?}"
    );
    assert!(
        of("conv_plan m tf32-allowed:").is_empty(),
        "TF32 allowed by the case: {v:?}"
    );
    let none = of("conv_library m no-library:");
    assert_eq!(none.len(), 1, "{v:?}");
    assert_eq!(none[0].0, "FAIL");
    assert!(none[0].1.contains("no convolution library recorded"), "{v:?}");
    let capped = of("conv_plan m capped:");
    assert_eq!(capped.len(), 1, "{v:?}");
    assert_eq!(capped[0].0, "INFO");
    assert!(
        capped[0].1.contains("input [1, 96, 6, 480, 832]") && capped[0].1.contains("FFT_TILING"),
        "{v:?}"
    );
    // On the CPU candle has no library to check.
    let cpu = run_report(dir.path(), "cpu", &candle_case("no-library", "n/a", &[]));
    assert!(!cpu.iter().any(|(_, r)| r.starts_with("conv_")), "{cpu:?}");
}

fn bf16_case(id: &str, engine: &str, tile: &str, latent: f64, decoded: f64) -> String {
    format!(
        r#"{{"id": "{id}", "engine": "{engine}", "precision": "bf16", "passes": "both", "status": "ok", "chunk": 1,
            "tile_px": {tile}, "layout": "ncdhw", "conv3d": "native",
            "encode": {{"median_s": 0.2}}, "decode": {{"median_s": 0.3}}, "peak_rss_bytes": 1,
            "quality": {{"reference_id": "{engine}-fp32", "latent": {{"psnr_db": {latent}, "max_abs": 0.04, "identical": false}},
              "decoded": {{"psnr_db": {decoded}, "max_abs": 0.05, "identical": false}}}}}}"#
    )
}

#[test]
fn bf16_is_held_to_a_psnr_floor_against_the_same_engines_fp32() {
    let dir = scratch();
    let cases = [
        // torch's as measured on the H200 (results/gpu-2026-11-26-h200): 53.2 / 45.9 dB.
        bf16_case("torch-bf16", "torch", "null", 53.2, 45.9),
        // Wrong but finite: a decode 20 dB off.
        bf16_case("bad", "candle", "null", 52.0, 27.5),
        bf16_case("latent-just-under", "candle", "null", 39.9, 46.0),
        // Tiled: its reference is untiled, so the tiling's own error is in it (19 dB measured).
        bf16_case("tiled", "torch", "256", 26.8, 19.0),
    ]
    .join(",");
    let v = run_report(dir.path(), "cpu", &cases);
    let of = |id: &str, what: &str| {
        v.iter()
            .find(|(_, r)| r.starts_with(&format!("bf16 m {id}: {what}")))
            .unwrap_or_else(|| panic!("{id} {what}: {v:?}"))
    };
    assert_eq!(of("torch-bf16", "latent").0, "PASS");
    assert_eq!(of("torch-bf16", "decoded").0, "PASS");
    assert!(
        of("torch-bf16", "decoded").1.contains("PSNR 45.9 dB") && of("torch-bf16", "decoded").1.contains("floor 40 dB")
    );
    assert_eq!(of("bad", "decoded").0, "FAIL");
    assert!(of("bad", "decoded").1.contains("under the floor of 40 dB"), "{v:?}");
    assert_eq!(of("bad", "latent").0, "PASS");
    assert_eq!(of("latent-just-under", "latent").0, "FAIL");
    assert_eq!(of("tiled", "decoded").0, "INFO");
    assert!(of("tiled", "decoded").1.contains("not judged"), "{v:?}");
}

/// A naive 3-D cross-correlation of the probe tensors (what cuDNN computes), f32.
fn probe_conv(x: [usize; 5], w: [usize; 5], stride: [usize; 3], pad: [usize; 3]) -> (Vec<f32>, [usize; 5]) {
    let xv: Vec<f32> = (0..x.iter().product::<usize>() as u64)
        .map(|i| probe_value(i, 0))
        .collect();
    let wv: Vec<f32> = (0..w.iter().product::<usize>() as u64)
        .map(|i| probe_value(i, W_SALT) * W_SCALE)
        .collect();
    let bv: Vec<f32> = (0..w[0] as u64).map(|i| probe_value(i, B_SALT) * B_SCALE).collect();
    let od: Vec<usize> = (0..3)
        .map(|d| (x[2 + d] + 2 * pad[d] - w[2 + d]) / stride[d] + 1)
        .collect();
    let out = [x[0], w[0], od[0], od[1], od[2]];
    let mut y = vec![0f32; out.iter().product()];
    let mut k = 0;
    for (o, &bias) in bv.iter().enumerate() {
        for t in 0..od[0] {
            for h in 0..od[1] {
                for ww in 0..od[2] {
                    let mut acc = f64::from(bias);
                    for c in 0..x[1] {
                        for (dt, dh, dw) in
                            (0..w[2]).flat_map(|a| (0..w[3]).flat_map(move |b| (0..w[4]).map(move |e| (a, b, e))))
                        {
                            let (ti, hi, wi) = (
                                (t * stride[0] + dt) as isize - pad[0] as isize,
                                (h * stride[1] + dh) as isize - pad[1] as isize,
                                (ww * stride[2] + dw) as isize - pad[2] as isize,
                            );
                            if ti < 0
                                || hi < 0
                                || wi < 0
                                || ti >= x[2] as isize
                                || hi >= x[3] as isize
                                || wi >= x[4] as isize
                            {
                                continue;
                            }
                            let xi = ((c * x[2] + ti as usize) * x[3] + hi as usize) * x[4] + wi as usize;
                            let wi_ = (((o * w[1] + c) * w[2] + dt) * w[3] + dh) * w[4] + dw;
                            acc += f64::from(xv[xi]) * f64::from(wv[wi_]);
                        }
                    }
                    y[k] = acc as f32;
                    k += 1;
                }
            }
        }
    }
    (y, out)
}

#[test]
fn conv_bench_measures_each_shape_against_torch_and_names_a_wrong_one() {
    let py = crate::need!(python());
    let dir = scratch();
    let d = dir.path();
    let (x, w, stride, pad) = ([1, 3, 4, 5, 6], [2, 3, 3, 3, 3], [1, 1, 1], [0, 1, 1]);
    let (y, out) = probe_conv(x, w, stride, pad);
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|f| f.to_le_bytes()).collect() };
    std::fs::write(d.join("right.bin"), bytes(&y)).unwrap();
    let mut wrong = y.clone();
    wrong[7] += 0.01;
    std::fs::write(d.join("wrong.bin"), bytes(&wrong)).unwrap();
    let shape = |file: &str| {
        format!(
            r#"{{"input": {x:?}, "weight": {w:?}, "stride": {stride:?}, "padding": {pad:?}, "dtype": "f32",
                "algorithm": "IMPLICIT_PRECOMP_GEMM", "family": "implicit-gemm/cudnn", "math": "FMA",
                "workspace_bytes": 0, "heuristic_rank": 0, "chosen_by": "heuristics", "calls": 3,
                "calls_per_decode": 3, "fallback": false, "median_ms": 1.0, "min_ms": 0.9, "output": {out:?},
                "output_file": "{}", "output_dtype": "f32"}}"#,
            d.join(file).display()
        )
    };
    let fallback = r#"{"input": [1, 384, 3, 60, 104], "weight": [384, 384, 3, 3, 3], "stride": [1, 1, 1], "padding": [0, 1, 1],
            "dtype": "f32", "algorithm": "candle conv2d (fallback: no algorithm)", "family": "gemm+im2col", "math": "",
            "workspace_bytes": 0, "heuristic_rank": 0, "chosen_by": "", "calls": 1, "calls_per_decode": 1,
            "fallback": true, "median_ms": null, "min_ms": null, "output": [1, 384, 1, 60, 104],
            "output_file": null, "output_dtype": "f32"}"#;
    let bench = write(
        d,
        "candle-fp32.json",
        &format!(
            r#"{{"tool": "t", "model": "wan2.1", "size": "6x5", "frames": 4, "precision": "fp32", "device": "cpu",
                "library": "cuDNN", "version": "9", "math": "fp32: FMA math (no TF32)", "runs": 2, "first_decode_s": 1.0,
                "probe": {{"x_salt": 0, "w_salt": {W_SALT}, "w_scale": {W_SCALE}, "b_salt": {B_SALT}, "b_scale": {B_SCALE}}},
                "shapes": [{}, {}, {fallback}]}}"#,
            shape("right.bin"),
            shape("wrong.bin")
        ),
    );
    let both = d.join("both.json");
    let out = Command::new(&py)
        .arg(script("conv-bench-torch.py"))
        .arg(&bench)
        .arg("--json")
        .arg(&both)
        .arg("--delete-dumps")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("| max abs error |"), "{}", stdout(&out));
    assert!(
        !d.join("right.bin").exists() && !d.join("wrong.bin").exists(),
        "the dumps are deleted"
    );
    let v = verdicts(&["conv-bench", "--name", "fp32", both.to_str().unwrap()]);
    assert_eq!(v.len(), 3, "{v:?}");
    assert_eq!(v[0].0, "PASS", "the same probe tensors in Rust and torch: {v:?}");
    assert!(
        v[0].1
            .starts_with("conv-bench fp32 shape 0: input [1, 3, 4, 5, 6] weight [2, 3, 3, 3, 3]"),
        "{v:?}"
    );
    let err: f64 = v[0]
        .1
        .split("max_abs_error ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(err < 1e-5, "{v:?}");
    assert_eq!(v[1].0, "FAIL", "{v:?}");
    let err: f64 = v[1]
        .1
        .split("max_abs_error ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.0099..0.0101).contains(&err), "the one wrong value, found: {v:?}");
    assert_eq!(v[2].0, "FAIL", "{v:?}");
    assert!(
        v[2].1.contains("input [1, 384, 3, 60, 104]") && v[2].1.contains("candle conv2d (fallback"),
        "{v:?}"
    );
}
