//! How the comfyui engine finds its folder and interpreter, and what it refuses, without
//! running ComfyUI's VAE: `--comfyui DIR` before a matrix file's `[model] comfyui` before
//! `WAN_VAE_BENCH_COMFYUI`; the folder's own venv when `--python` is absent; a folder that
//! is not ComfyUI, a ComfyUI too old for the model, and an interpreter without ComfyUI's
//! packages are `unsupported`, naming the cause.
use std::path::Path;

use crate::need;
use crate::util::cli::*;
use wan_vae_bench::report::{CaseStatus, Report};

/// The comfyui case's error of a run that must not get as far as timing anything.
fn refused(r: &Report) -> String {
    let c = r
        .cases
        .iter()
        .find(|c| c.settings.engine.name() == "comfyui")
        .expect("a comfyui case");
    assert_eq!(c.outcome.status, CaseStatus::Unsupported, "{:?}", c.outcome.error);
    c.outcome.error.clone().unwrap()
}

fn run_comfyui(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> (std::process::Output, Report) {
    let report = dir.join("report.json");
    let mut cmd = bench();
    cmd.env_remove("WAN_VAE_BENCH_COMFYUI");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .arg("run")
        .args(args)
        .args([
            "--size", "32x32", "--frames", "1", "--warmup", "0", "--runs", "1", "--quiet", "--output",
        ])
        .arg(&report)
        .output()
        .unwrap();
    assert!(report.is_file(), "{}", stderr(&out));
    (out, load(&report))
}

#[test]
fn the_folder_comes_from_the_flag_the_matrix_file_or_the_environment() {
    let dir = scratch();
    for name in ["from-file", "from-flag", "from-env"] {
        std::fs::create_dir(dir.path().join(name)).unwrap();
    }
    let py = need!(python());
    let py = py.to_str().unwrap();
    // `[model] comfyui`, relative to the matrix file's folder.
    let matrix = write(
        dir.path(),
        "m.toml",
        "[model]\ncomfyui = \"from-file\"\n[matrix]\nengine = [\"comfyui\"]\n",
    );
    let m = matrix.to_str().unwrap();
    let env_dir = dir.path().join("from-env");
    let (_, r) = run_comfyui(
        dir.path(),
        &["-c", m, "--python", py],
        &[("WAN_VAE_BENCH_COMFYUI", &env_dir)],
    );
    let e = refused(&r);
    let expected = dir.path().join("from-file");
    assert!(
        e.contains(&format!("{} is not a ComfyUI checkout", expected.display())),
        "{e}"
    );
    // The flag wins over the file.
    let flag_dir = dir.path().join("from-flag");
    let (_, r) = run_comfyui(
        dir.path(),
        &["-c", m, "--python", py, "--comfyui", flag_dir.to_str().unwrap()],
        &[],
    );
    assert!(refused(&r).contains("from-flag is not a ComfyUI checkout"));
    // Without both, the environment.
    let (_, r) = run_comfyui(
        dir.path(),
        &["--engine", "comfyui", "--python", py],
        &[("WAN_VAE_BENCH_COMFYUI", &env_dir)],
    );
    assert!(refused(&r).contains("from-env is not a ComfyUI checkout"));

    // A key of [model] that is not a folder key is refused up front, naming it.
    let bad = write(dir.path(), "bad.toml", "[model]\ncomfy = \"from-file\"\n");
    let out = bench().args(["run", "--list", "-c"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("comfy") && e.contains("torch_precision, comfyui"), "{e}");
    // None of the three: exit 2 before anything runs, saying each way to give it.
    let out = bench()
        .env_remove("WAN_VAE_BENCH_COMFYUI")
        .args(["run", "--engine", "comfyui", "--output"])
        .arg(dir.path().join("none.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("--comfyui DIR") && e.contains("[model]") && e.contains("WAN_VAE_BENCH_COMFYUI"),
        "{e}"
    );
    assert!(!dir.path().join("none.json").exists());
}

#[test]
fn the_folders_own_venv_is_the_interpreter_without_python() {
    let py = need!(python());
    let dir = scratch();
    let folder = dir.path().join("not-comfy-with-venv");
    std::fs::create_dir_all(folder.join("venv/bin")).unwrap();
    let marker = dir.path().join("venv-python-ran");
    let venv_python = executable(
        &folder.join("venv/bin"),
        "python",
        &format!(
            "#!/bin/sh\ntouch '{}'\nexec '{}' \"$@\"\n",
            marker.display(),
            py.display()
        ),
    );
    let (_, r) = run_comfyui(
        dir.path(),
        &["--engine", "comfyui", "--comfyui", folder.to_str().unwrap()],
        &[],
    );
    assert!(refused(&r).contains("is not a ComfyUI checkout"));
    assert!(marker.exists(), "the folder's venv ran the worker");
    assert_eq!(r.run.python.as_deref(), Some(venv_python.to_str().unwrap()));
}

#[test]
fn a_comfyui_too_old_or_without_its_packages_is_unsupported() {
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    let f = folder.to_str().unwrap();
    let py = need!(python());
    let py = py.to_str().unwrap();
    // Before the Wan 2.2 VAE.
    std::fs::remove_file(folder.join("comfy/ldm/wan/vae2_2.py")).unwrap();
    let (_, r) = run_comfyui(
        dir.path(),
        &[
            "--engine",
            "comfyui",
            "--model",
            "wan2.2",
            "--comfyui",
            f,
            "--python",
            py,
        ],
        &[],
    );
    let e = refused(&r);
    assert!(
        e.contains("ComfyUI 0.3.64") && e.contains("too old for Wan 2.2") && e.contains("vae2_2.py"),
        "{e}"
    );

    // An interpreter with torch but without einops (one of ComfyUI's requirements).
    let site = dir.path().join("no-einops");
    std::fs::create_dir(&site).unwrap();
    write(&site, "sitecustomize.py", "import sys\nsys.modules['einops'] = None\n");
    let wrapper = executable(
        dir.path(),
        "python-without-einops",
        &format!("#!/bin/sh\nPYTHONPATH='{}' exec '{py}' \"$@\"\n", site.display()),
    );
    // Back in place (empty) so the import gets as far as einops.
    std::fs::write(folder.join("comfy/ldm/wan/vae2_2.py"), "").unwrap();
    let (_, r) = run_comfyui(
        dir.path(),
        &[
            "--engine",
            "comfyui",
            "--comfyui",
            f,
            "--python",
            wrapper.to_str().unwrap(),
        ],
        &[],
    );
    let e = refused(&r);
    assert!(
        e.contains("ComfyUI 0.3.64") && e.contains("einops") && e.contains("requirements.txt"),
        "{e}"
    );

    // Before the Wan 2.1 VAE.
    std::fs::remove_file(folder.join("comfy/ldm/wan/vae.py")).unwrap();
    let (_, r) = run_comfyui(
        dir.path(),
        &["--engine", "comfyui", "--comfyui", f, "--python", py],
        &[],
    );
    let e = refused(&r);
    assert!(
        e.contains("ComfyUI 0.3.64") && e.contains("too old") && e.contains("comfy/ldm/wan/vae.py"),
        "{e}"
    );
}
