//! The answer's advice against what the engines really ran (issue 38): diffusers'
//! `enable_tiling` keywords and ComfyUI's nodes as recorded by their workers, the ComfyUI
//! node limits refused up front, temporal tiles that do nothing on encode-only cases left
//! unplanned, and budgets that bind the references a run adds. The advice's text per engine
//! and setting is unit-tested in `src/analysis/answer/apply/tests.rs`.
use std::path::Path;

use crate::need;
use crate::util::cli::*;
use wan_vae_bench::analysis::answer::apply::apply;
use wan_vae_bench::report::{CaseStatus, Report};

/// `run` of diffusers on a tiny fixture model, fp32, one timed pass, 1 frame at 64x64.
fn diffusers_run(dir: &Path, python: &Path, weights: &str, tile: &str) -> Report {
    let w = fixture(weights);
    let (out, path) = run(
        dir,
        &[
            "--engine",
            "diffusers",
            "--weights",
            w.to_str().unwrap(),
            "--python",
            python.to_str().unwrap(),
            "--frames",
            "1",
            "--size",
            "64x64",
            "--tile",
            tile,
            "--warmup",
            "0",
            "--runs",
            "1",
        ],
    );
    assert!(path.is_file(), "{}", stderr(&out));
    load(&path)
}

/// diffusers' advice is the `enable_tiling` call each pass ran with: Wan 2.2's encode in
/// patchified pixels (half), its decode not; Wan 2.1's both the same, with no halving said.
#[test]
fn diffusers_tiling_advice_is_the_call_each_pass_ran() {
    let py = need!(python());
    for (weights, tile, encode, decode) in [
        ("wan22_tiny.weights.safetensors", "32:16", 16, 32),
        ("wan21_tiny.weights.safetensors", "32:16", 32, 32),
    ] {
        let dir = scratch();
        let r = diffusers_run(dir.path(), &py, weights, &format!("none,{tile}"));
        let tiled = r
            .cases
            .iter()
            .find(|c| c.settings.tiling.is_some())
            .expect("the tiled case");
        assert_eq!(tiled.outcome.status, CaseStatus::Ok, "{:?}", tiled.outcome.error);
        let rec = &tiled.outcome.engine_case.as_ref().expect("engine_case")["enable_tiling"];
        assert_eq!(rec["encode"]["tile_sample_min_height"], encode, "{weights}: {rec}");
        assert_eq!(rec["decode"]["tile_sample_min_height"], decode, "{weights}: {rec}");
        let steps = apply(&r, tiled, None).steps.join("\n");
        let call = |n: u64| format!("vae.enable_tiling(tile_sample_min_height={n}, ");
        if encode == decode {
            assert!(
                steps.contains(&call(decode)) && !steps.contains("half"),
                "{weights}: {steps}"
            );
        } else {
            assert!(steps.contains(&format!("before encode: {}", call(encode))), "{steps}");
            assert!(steps.contains(&format!("before decode: {}", call(decode))), "{steps}");
            assert!(steps.contains("half the decoder's"), "{steps}");
        }
    }
}

/// A ComfyUI tile under the nodes' minimum is refused before anything runs (exit 2),
/// naming the nodes and their minimum; other engines take it.
#[test]
fn comfyui_tiles_the_nodes_refuse_exit_2_before_anything_runs() {
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    let out = bench()
        .args(["run", "--engine", "comfyui", "--tile", "32:16", "--comfyui"])
        .arg(&folder)
        .args(["--frames", "1", "--size", "64x64", "--output"])
        .arg(dir.path().join("r.json"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("VAEEncodeTiled and VAEDecodeTiled") && err.contains("smaller than min of 64"),
        "{err}"
    );
    assert!(!dir.path().join("r.json").exists());
    let out = bench()
        .args([
            "run", "--list", "--engine", "candle", "--tile", "32:16", "--frames", "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Temporal tiling splits the decode only: an encode-only case with a temporal tile would
/// time the untiled encode again, so it is not planned, and the run says so once.
#[test]
fn temporal_tiles_are_not_planned_for_encode_only_cases() {
    let out = bench()
        .args([
            "run",
            "--list",
            "--precision",
            "fp32",
            "--passes",
            "encode,decode",
            "--temporal-tile",
            "none,8:4",
            "--control",
            "off",
        ])
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    let ids: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.contains("-5x"))
        .collect();
    assert_eq!(
        ids,
        [
            "fp32-chunk1-untiled-5x64x64-baseline-encode",
            "fp32-chunk1-untiled-5x64x64-baseline-decode",
            "fp32-chunk1-untiled-ttile8o4-5x64x64-baseline-decode",
        ],
        "{text}"
    );
    assert_eq!(err.matches("does not act on encode-only cases").count(), 1, "{err}");
}

/// A budget binds the reference the run adds too: the answer never names a case that
/// breaks one, though the added case does not fail the run (it is not the user's).
#[test]
fn added_references_obey_the_budgets() {
    let dir = scratch();
    let cfg = write(
        dir.path(),
        "m.toml",
        "[run]\nwarmup = 0\nruns = 1\n[matrix]\nframes = [1]\nsize = [\"64x64\"]\nprecision = [\"fp32\"]\n\
         tile = [\"32:16\"]\n[[budgets.case]]\ntile = \"none\"\npeak_rss_gb = 0.001\n",
    );
    let (out, path) = run(dir.path(), &["--config", cfg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = load(&path);
    let added = r
        .cases
        .iter()
        .find(|c| c.added_as_reference)
        .expect("the added reference");
    assert_eq!(added.id, "fp32-chunk1-untiled-1x64x64-baseline");
    assert!(
        added
            .budgets
            .iter()
            .any(|b| b.budget == "peak_rss_gb" && b.verdict == wan_vae_bench::report::BudgetVerdict::Broken),
        "{:?}",
        added.budgets
    );
    let a = &r.summary.as_ref().unwrap().answers[0];
    assert!(!a.baseline_qualified, "{a:?}");
    assert_eq!(
        a.fastest.as_ref().map(|f| f.id.as_str()),
        Some("fp32-chunk1-tile32o16-1x64x64-baseline")
    );
    assert!(!a.sentence.contains("keep it"), "{}", a.sentence);
}
