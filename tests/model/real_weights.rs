//! Issue 28: the user's own VAE is found in their ComfyUI folder (`models/vae/`,
//! `extra_model_paths.yaml`), per model, printed and recorded; quality on synthetic weights
//! is labelled in the table, CSV and summary, and a tiled case it cannot judge is named
//! "quality not known on synthetic weights" with the command that would judge it; with a
//! weights file the answer gates on the floor as before.
use std::path::{Path, PathBuf};

use crate::util::cli::*;
use wan_vae_bench::report::Report;

/// A ComfyUI folder whose `models/vae/` holds `files` (name, fixture to copy).
fn comfy_folder(root: &Path, files: &[(&str, &str)]) -> PathBuf {
    let dir = root.join("ComfyUI");
    let vae = dir.join("models/vae");
    std::fs::create_dir_all(&vae).unwrap();
    for (name, fixture_name) in files {
        std::fs::copy(fixture(fixture_name), vae.join(name)).unwrap();
    }
    dir
}

/// One tiny candle case with `--comfyui DIR` and no weights: (stderr, report).
fn run_with_folder(dir: &Path, comfy: &Path, extra: &[&str]) -> (String, Report) {
    run_with_folder_env(dir, comfy, extra, &[])
}

/// [`run_with_folder`] with `env` set for the run.
fn run_with_folder_env(dir: &Path, comfy: &Path, extra: &[&str], env: &[(&str, &Path)]) -> (String, Report) {
    let report = dir.join(format!("r{}.json", extra.len()));
    let out = bench()
        .envs(env.iter().copied())
        .args(["run", "--engine", "candle", "--comfyui"])
        .arg(comfy)
        .args([
            "--frames",
            "1",
            "--size",
            "16x16",
            "--precision",
            "fp32",
            "--warmup",
            "0",
            "--runs",
            "1",
        ])
        .args(extra)
        .arg("-o")
        .arg(&report)
        .env_remove("WAN_VAE_BENCH_COMFYUI")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (stderr(&out), load(&report))
}

#[test]
fn the_comfyui_folders_own_vae_is_found_per_model_and_recorded() {
    let dir = scratch();
    let comfy = comfy_folder(
        dir.path(),
        &[
            ("wan_2.1_vae.safetensors", "wan21_tiny.weights.safetensors"),
            ("wan2.2_vae.safetensors", "wan22_tiny.weights.safetensors"),
            ("notes.txt", "wan21_tiny.json"),
        ],
    );
    let (err, r) = run_with_folder(dir.path(), &comfy, &[]);
    let chosen = comfy.join("models/vae/wan_2.1_vae.safetensors");
    assert!(
        err.contains(&format!(
            "weights: {} (Wan 2.1 VAE, found in the ComfyUI folder",
            chosen.display()
        )),
        "{err}"
    );
    assert!(!err.contains("weights: synthetic"), "{err}");
    assert_eq!(r.model.local_path.as_deref(), Some(chosen.to_str().unwrap()));
    assert!(r.model.sha256.is_some() && r.model.params > 0, "{:?}", r.model);
    let (err, r) = run_with_folder(dir.path(), &comfy, &["--model", "wan2.2"]);
    let chosen = comfy.join("models/vae/wan2.2_vae.safetensors");
    assert!(
        err.contains(&format!("weights: {} (Wan 2.2 VAE", chosen.display())),
        "{err}"
    );
    assert_eq!(r.model.local_path.as_deref(), Some(chosen.to_str().unwrap()));
    // --weights wins over the folder.
    let (err, r) = run_with_folder(dir.path(), &comfy, &["--weights", "synthetic"]);
    assert!(
        !err.contains("found in the ComfyUI folder") && err.contains("weights: synthetic"),
        "{err}"
    );
    assert!(r.model.is_synthetic());
}

#[test]
fn extra_model_paths_are_followed_and_several_or_none_are_said() {
    let dir = scratch();
    // models/vae holds only Wan 2.2; a Wan 2.1 file sits in a folder of extra_model_paths.yaml.
    let comfy = comfy_folder(
        dir.path(),
        &[("wan2.2_vae.safetensors", "wan22_tiny.weights.safetensors")],
    );
    let extra = dir.path().join("shared-models/vae/wan");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::copy(fixture("wan21_tiny.weights.safetensors"), extra.join("b.safetensors")).unwrap();
    std::fs::copy(fixture("wan21_tiny.weights.pth"), extra.join("a.pth")).unwrap();
    write(
        &comfy,
        "extra_model_paths.yaml",
        "other:\n  base_path: ../shared-models\n  vae: vae/\n",
    );
    let (err, r) = run_with_folder(dir.path(), &comfy, &[]);
    let first = extra.join("a.pth");
    let norm = |p: &Path| std::path::absolute(p).unwrap();
    let chosen = PathBuf::from(r.model.local_path.clone().unwrap());
    assert_eq!(
        std::fs::canonicalize(&chosen).unwrap(),
        std::fs::canonicalize(norm(&first)).unwrap(),
        "{err}"
    );
    assert!(
        err.contains("also there: ") && err.contains("b.safetensors") && err.contains("--weights FILE"),
        "{err}"
    );
    // No Wan 2.1 file at all: a warning, synthetic weights, the run goes on.
    let lonely = scratch();
    let comfy = comfy_folder(
        lonely.path(),
        &[("wan2.2_vae.safetensors", "wan22_tiny.weights.safetensors")],
    );
    let (err, r) = run_with_folder(lonely.path(), &comfy, &[]);
    assert!(err.contains("warning: no Wan 2.1 VAE in the ComfyUI folder"), "{err}");
    assert!(err.contains("wan2.2_vae.safetensors, of the other Wan VAE"), "{err}");
    assert!(err.contains("weights: synthetic") && r.model.is_synthetic(), "{err}");
}

#[test]
fn extra_model_paths_yaml_is_read_as_comfyui_reads_it() {
    // Issue 37 item 9: `$NAME` in base_path, a merge key, `is_default: yes` and an entry given
    // twice (the last wins), as ComfyUI (PyYAML, os.path) reads them: the Wan 2.1 file there
    // is found, not synthetic weights.
    let dir = scratch();
    let comfy = comfy_folder(
        dir.path(),
        &[("wan2.2_vae.safetensors", "wan22_tiny.weights.safetensors")],
    );
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(shared.join("vae")).unwrap();
    std::fs::copy(
        fixture("wan21_tiny.weights.safetensors"),
        shared.join("vae/wan21.safetensors"),
    )
    .unwrap();
    let yaml = "defaults: &shared\n  base_path: $WVB_SHARED_MODELS\n  is_default: yes\n\
                mine:\n  vae: nowhere\nmine:\n  <<: *shared\n  vae: vae\n";
    write(&comfy, "extra_model_paths.yaml", yaml);
    let (err, r) = run_with_folder_env(dir.path(), &comfy, &[], &[("WVB_SHARED_MODELS", &shared)]);
    let chosen = shared.join("vae/wan21.safetensors");
    assert!(
        err.contains(&format!(
            "weights: {} (Wan 2.1 VAE, found in the ComfyUI folder",
            chosen.display()
        )),
        "{err}"
    );
    assert_eq!(r.model.local_path.as_deref(), Some(chosen.to_str().unwrap()));

    // A base_path ComfyUI's expanduser raises on: refused before anything runs, naming the
    // file, the entry and the value.
    write(
        &comfy,
        "extra_model_paths.yaml",
        "mine:\n  base_path: 2024\n  vae: vae\n",
    );
    let out = run_refused(dir.path(), &comfy);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("extra_model_paths.yaml")
            && e.contains("entry `mine`: base_path is the number 2024, not a string")
            && e.contains("ComfyUI would not start with it either"),
        "{e}"
    );
    assert!(!dir.path().join("refused.json").exists());
}

/// A candle run with the ComfyUI folder `comfy` whose `extra_model_paths.yaml` is to be
/// refused, its report at `dir/refused.json`.
fn run_refused(dir: &Path, comfy: &Path) -> std::process::Output {
    bench()
        .args(["run", "--engine", "candle", "--comfyui"])
        .arg(comfy)
        .arg("-o")
        .arg(dir.join("refused.json"))
        .env_remove("WAN_VAE_BENCH_COMFYUI")
        .output()
        .unwrap()
}

#[test]
fn an_extra_model_paths_yaml_too_deep_or_too_large_is_refused_naming_it() {
    // Issue 48: 10,000 nested `[` overflowed the stack (exit 134), nested mappings took
    // memory quadratic in the depth, and the file was read whole whatever its size.
    let dir = scratch();
    let comfy = comfy_folder(
        dir.path(),
        &[("wan2.2_vae.safetensors", "wan22_tiny.weights.safetensors")],
    );
    let big = format!("mine:\n  vae: vae\n#{}\n", "x".repeat(2 << 20));
    for (yaml, why) in [
        ("[".repeat(10_000) + &"]".repeat(10_000), "nested deeper than 32 levels"),
        (
            "{b: ".repeat(10_000) + "1" + &"}".repeat(10_000),
            "nested deeper than 32 levels",
        ),
        (big, "limit of"),
    ] {
        write(&comfy, "extra_model_paths.yaml", &yaml);
        let out = run_refused(dir.path(), &comfy);
        let e = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{why}: {e}");
        assert!(e.contains("extra_model_paths.yaml") && e.contains(why), "{why}: {e}");
        assert!(!dir.path().join("refused.json").exists());
    }
}

/// A tiny run whose untiled cases break a memory budget (the reason users tile), so a tiled
/// case is the fastest that may be recommended; `weights` as given.
fn tiled_run(dir: &Path, weights: &str) -> (std::process::Output, Report) {
    let cfg = write(
        dir,
        "m.toml",
        &format!(
            "[model]\nweights = \"{weights}\"\n[run]\nwarmup = 0\nruns = 2\n[matrix]\nframes = [5]\n\
             size = [\"32x32\"]\nprecision = [\"fp32\"]\ntile = [\"none\", \"16:8\"]\n\
             [[budgets.case]]\ntile = \"none\"\npeak_rss_gb = 0.001\n"
        ),
    );
    let csv = dir.join("cases.csv");
    let (out, report) = run(
        dir,
        &["--config", cfg.to_str().unwrap(), "--export-csv", csv.to_str().unwrap()],
    );
    (out, load(&report))
}

#[test]
fn on_synthetic_weights_a_tiled_case_is_not_judged_and_everything_says_so() {
    let dir = scratch();
    let (out, r) = tiled_run(dir.path(), "synthetic");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the memory budget is broken: {}",
        stderr(&out)
    );
    let tiled = r.cases.iter().find(|c| c.settings.tiling.is_some()).unwrap();
    let psnr = tiled
        .quality
        .as_ref()
        .unwrap()
        .decoded
        .as_ref()
        .unwrap()
        .psnr_db
        .unwrap();
    assert!(psnr < 40.0, "random weights make large seams: {psnr}");
    let s = r.summary.as_ref().unwrap();
    assert!(s.quality_on_synthetic_weights);
    let a = &s.answers[0];
    let f = a.fastest.as_ref().expect("the tiled case is named");
    assert_eq!(f.id, tiled.id);
    assert_eq!(f.quality, "not_known_on_synthetic_weights");
    assert!(
        a.sentence.contains("quality not known on synthetic weights"),
        "{}",
        a.sentence
    );
    let cmd = a.rerun_with_weights.as_deref().unwrap();
    assert!(
        cmd.starts_with("wan-vae-bench run --config ") && cmd.ends_with(" --weights FILE"),
        "{cmd}"
    );
    assert!(a.sentence.contains(cmd), "{}", a.sentence);
    // The table, the CSV and the answer block carry the label.
    let text = stdout(&out);
    assert!(
        text.contains("PSNR dB†") && text.contains("† PSNR on synthetic weights"),
        "{text}"
    );
    let csv = std::fs::read_to_string(dir.path().join("cases.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "quality_weights").unwrap();
    let labels: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(col).unwrap()).collect();
    assert!(labels.iter().all(|l| *l == "synthetic"), "{csv}");
}

#[test]
fn with_a_weights_file_the_floor_decides_as_before() {
    let dir = scratch();
    let weights = fixture("wan21_tiny.weights.safetensors");
    let (out, r) = tiled_run(dir.path(), weights.to_str().unwrap());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let tiled = r.cases.iter().find(|c| c.settings.tiling.is_some()).unwrap();
    let psnr = tiled
        .quality
        .as_ref()
        .unwrap()
        .decoded
        .as_ref()
        .unwrap()
        .psnr_db
        .unwrap();
    let s = r.summary.as_ref().unwrap();
    assert!(!s.quality_on_synthetic_weights);
    let a = &s.answers[0];
    assert!(a.rerun_with_weights.is_none());
    if psnr < 40.0 {
        // Below the floor and the default over its budget: nothing to recommend.
        assert!(a.fastest.is_none(), "{a:?}");
        assert!(a.sentence.contains("nothing to recommend"), "{}", a.sentence);
    } else {
        assert_eq!(a.fastest.as_ref().unwrap().quality, "psnr");
    }
    let text = stdout(&out);
    assert!(text.contains("PSNR dB") && !text.contains("PSNR dB†"), "{text}");
    let csv = std::fs::read_to_string(dir.path().join("cases.csv")).unwrap();
    assert!(csv.contains(",file,") || csv.trim_end().ends_with(",file"), "{csv}");
}
