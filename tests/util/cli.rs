//! Helpers of the `bench_*` tests: run the binary, read its report.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use wan_vae_bench::report::Report;

pub const BIN: &str = env!("CARGO_BIN_EXE_wan-vae-bench");

/// A file of the repository's `tests/fixtures` (copied unmodified from `../shared`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// The text of a file of the repository (`file` relative to its root: the README, a doc, a
/// config).
pub fn repo_text(file: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
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

/// Something a test reads from outside the repository that is not there: what, and how to
/// supply it. [`need!`](crate::need) turns it into a skip, or a failure under `CI=true`.
pub struct Missing(pub String);

impl Missing {
    /// Report this test as skipped: one line on the terminal (written past libtest's output
    /// capture, so it shows for a passing test) and one in `WAN_VAE_BENCH_SKIP_LOG` when
    /// `scripts/test.sh` set it, for its summary. Under `CI=true` the test fails instead:
    /// CI must never skip a test silently.
    pub fn skip(self) {
        let test = std::thread::current().name().unwrap_or("?").to_string();
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{} (CI=true: a test may not skip there)", self.0);
        }
        let line = format!("SKIPPED {test}: {}\n", self.0);
        use std::io::Write;
        let _ = std::io::stderr().write_all(line.as_bytes());
        if let Some(log) = std::env::var_os("WAN_VAE_BENCH_SKIP_LOG") {
            if let Ok(mut f) = std::fs::OpenOptions::new().append(true).create(true).open(log) {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }
}

/// `need!(python())`: the value, or the test ends here as skipped (see [`Missing::skip`]).
#[macro_export]
macro_rules! need {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(m) => {
                $crate::util::cli::Missing::skip(m);
                return;
            }
        }
    };
}

/// The Python with torch, diffusers and ComfyUI's VAE packages that the engine tests use:
/// `WAN_VAE_BENCH_TEST_PYTHON`, else `<repo>/.venv-torch/bin/python` (`scripts/test.sh`
/// creates it).
pub fn python() -> Result<PathBuf, Missing> {
    if let Some(p) = std::env::var_os("WAN_VAE_BENCH_TEST_PYTHON") {
        let p = PathBuf::from(p);
        return match p.exists() {
            true => Ok(p),
            false => Err(Missing(format!(
                "WAN_VAE_BENCH_TEST_PYTHON={} does not exist",
                p.display()
            ))),
        };
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-torch/bin/python");
    match venv.exists() {
        true => Ok(venv),
        false => Err(Missing(format!(
            "no Python with torch: {} is absent (scripts/test.sh creates it; or set \
             WAN_VAE_BENCH_TEST_PYTHON)",
            venv.display()
        ))),
    }
}

/// The ComfyUI 0.3.64 source tarball (GPL-3.0 test data: nothing of it is in the project):
/// `WAN_VAE_BENCH_COMFYUI_TARBALL`, else `../shared/comfyui/ComfyUI-0.3.64-a125cd8.tar.xz`
/// beside the repository.
pub fn comfyui_tarball() -> Result<PathBuf, Missing> {
    let (tarball, from) = match std::env::var_os("WAN_VAE_BENCH_COMFYUI_TARBALL") {
        Some(p) => (PathBuf::from(p), "WAN_VAE_BENCH_COMFYUI_TARBALL"),
        None => (
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/comfyui/ComfyUI-0.3.64-a125cd8.tar.xz"),
            "the default path; set WAN_VAE_BENCH_COMFYUI_TARBALL to another",
        ),
    };
    match tarball.is_file() {
        true => Ok(tarball),
        false => Err(Missing(format!(
            "no ComfyUI test data: {} is not a file ({from})",
            tarball.display()
        ))),
    }
}

/// `py -c code DIR`, DIR being the shipped Python worker's folder (`src/engine/python`, for
/// `sys.path`): its stdout, the run checked successful.
pub fn python_code(py: &Path, code: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/python");
    let out = Command::new(py).args(["-c", code]).arg(&dir).output().unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    text
}

/// ComfyUI unpacked into `dir` from [`comfyui_tarball`]; returns its folder (the tarball's
/// `comfyui/`).
pub fn comfyui(dir: &Path) -> Result<PathBuf, Missing> {
    let tarball = comfyui_tarball()?;
    let ok = Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .status()
        .unwrap();
    assert!(ok.success(), "tar -xJf {}", tarball.display());
    let d = dir.join("comfyui");
    assert!(
        d.join("comfy/sd.py").is_file(),
        "{} has no comfyui/comfy/sd.py",
        tarball.display()
    );
    Ok(d)
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
