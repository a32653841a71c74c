//! Helpers of the `bench_*` tests: run the binary, read its report.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use wan_vae_bench::report::Report;

pub const BIN: &str = env!("CARGO_BIN_EXE_wan-vae-bench");

/// A file of the repository's `tests/fixtures` (copied unmodified from `../shared`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A scratch directory for one test.
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// Write `text` as `name` in `dir`.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The binary, quiet, without fault hooks leaking from the caller's environment.
pub fn bench() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("WAN_VAE_BENCH_FAULT");
    c
}

/// Run `wan-vae-bench run ARGS --output DIR/report.json --quiet`.
pub fn run(dir: &Path, args: &[&str]) -> (Output, PathBuf) {
    let report = dir.join("report.json");
    let out = bench()
        .arg("run")
        .args(args)
        .arg("--output")
        .arg(&report)
        .arg("--quiet")
        .output()
        .expect("run the binary");
    (out, report)
}

pub fn load(path: &Path) -> Report {
    Report::load(path).expect("report parses")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The Python with torch, diffusers and ComfyUI's VAE packages that the engine tests use.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("WAN_VAE_BENCH_TEST_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-torch/bin/python");
    assert!(
        venv.exists(),
        "no Python with torch for the engine tests: set WAN_VAE_BENCH_TEST_PYTHON to one, or create {} with \
         `python3 -m venv .venv-torch && .venv-torch/bin/pip install torch diffusers` (`.ci/run` does this)",
        venv.display()
    );
    venv
}

/// ComfyUI 0.3.64 unpacked into `dir` from `../shared/comfyui/` (GPL-3.0 test data: nothing
/// of it is in the project); returns its folder (the tarball's `comfyui/`).
pub fn comfyui(dir: &Path) -> PathBuf {
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/comfyui/ComfyUI-0.3.64-a125cd8.tar.xz");
    assert!(
        tarball.is_file(),
        "{} is missing (the ComfyUI test data)",
        tarball.display()
    );
    let ok = Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .status()
        .unwrap();
    assert!(ok.success());
    let d = dir.join("comfyui");
    assert!(d.join("comfy/sd.py").is_file());
    d
}

/// An executable script `name` in `dir` with `body` (its first line the `#!`).
pub fn executable(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = write(dir, name, body);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The names in `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
