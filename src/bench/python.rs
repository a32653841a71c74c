//! The Python worker of the `torch` and `diffusers` engines, shipped inside the binary:
//! its files (`src/engines/python/*.py`, see `docs/worker-protocol.md`, section 9), written
//! once into a folder (the run's scratch directory) and run with the chosen interpreter, and
//! the checks that turn a missing interpreter into a clear `unsupported` message.
//!
//! Must not: decide which interpreter to use (that is `values::python_interpreter`) or
//! measure anything (the Python files do).
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

/// Every file of the Python worker, by name; they must sit in one folder.
pub const FILES: &[(&str, &str)] = &[
    ("wan_worker.py", include_str!("../engines/python/wan_worker.py")),
    ("wan_validate.py", include_str!("../engines/python/wan_validate.py")),
    ("wan_runtime.py", include_str!("../engines/python/wan_runtime.py")),
    ("wan_common.py", include_str!("../engines/python/wan_common.py")),
    ("wan_torch.py", include_str!("../engines/python/wan_torch.py")),
    ("wan21_torch.py", include_str!("../engines/python/wan21_torch.py")),
    ("wan22_torch.py", include_str!("../engines/python/wan22_torch.py")),
    (
        "diffusers_engine.py",
        include_str!("../engines/python/diffusers_engine.py"),
    ),
    ("wan_weights.py", include_str!("../engines/python/wan_weights.py")),
    ("wan_flops.py", include_str!("../engines/python/wan_flops.py")),
    ("wan_clip.py", include_str!("../engines/python/wan_clip.py")),
];

/// The entry point among [`FILES`].
pub const ENTRY: &str = "wan_worker.py";

/// Write the worker's files into `dir` (created if needed); returns the entry script's path.
pub fn write_worker(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, text) in FILES {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(dir.join(ENTRY))
}

/// `interpreter SCRIPT ARGS...`: a command running the worker script.
pub fn command(interpreter: &str, script: &Path) -> Command {
    let mut c = Command::new(interpreter);
    // -u: stderr lines (phases, MIOpen logs) reach the parent as they happen.
    c.arg("-u").arg(script);
    // torch creates `$TMPDIR/torchinductor_$USER` on import; point it into the folder that
    // holds the script (the run's scratch folder), so nothing is left behind, unless the
    // user chose a folder.
    if std::env::var_os("TORCHINDUCTOR_CACHE_DIR").is_none() {
        if let Some(dir) = script.parent() {
            c.env("TORCHINDUCTOR_CACHE_DIR", dir.join("torchinductor"));
        }
    }
    c
}

/// Why `interpreter` cannot be started, or `None` when it looks runnable: a path that does
/// not exist or is not an executable file, or a bare name not found on `PATH`.
pub fn interpreter_problem(interpreter: &str) -> Option<String> {
    let path = Path::new(interpreter);
    let found = if path.components().count() > 1 {
        Some(path.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(path)).find(|c| c.is_file()))
    };
    let Some(file) = found else {
        return Some(format!(
            "Python interpreter `{interpreter}` not found on PATH (set --python, [model] python or {})",
            crate::values::PYTHON_ENV_VAR
        ));
    };
    match std::fs::metadata(&file) {
        Err(e) => Some(format!("Python interpreter {} cannot be used: {e}", file.display())),
        Ok(m) if !m.is_file() => Some(format!("Python interpreter {} is not a file", file.display())),
        Ok(m) if !is_executable(&m) => Some(format!("Python interpreter {} is not executable", file.display())),
        Ok(_) => None,
    }
}

#[cfg(unix)]
fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_m: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_non_executable_interpreters_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-python");
        let m = interpreter_problem(missing.to_str().unwrap()).unwrap();
        assert!(m.contains("no-python"), "{m}");
        let plain = dir.path().join("python");
        std::fs::write(&plain, "").unwrap();
        let m = interpreter_problem(plain.to_str().unwrap()).unwrap();
        assert!(
            m.contains("not executable") && m.contains(plain.to_str().unwrap()),
            "{m}"
        );
        assert!(interpreter_problem("surely-no-such-python-xyz")
            .unwrap()
            .contains("not found on PATH"));
        assert_eq!(interpreter_problem("sh"), None);
    }

    #[test]
    fn every_python_file_of_the_worker_ships() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engines/python");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".py") {
                assert!(FILES.iter().any(|(n, _)| *n == name), "{name} is not in python::FILES");
            }
        }
    }

    #[test]
    fn every_file_is_written_next_to_the_entry_point() {
        let dir = tempfile::tempdir().unwrap();
        let entry = write_worker(dir.path()).unwrap();
        assert_eq!(entry, dir.path().join(ENTRY));
        for (name, text) in FILES {
            assert_eq!(&std::fs::read_to_string(dir.path().join(name)).unwrap(), text);
        }
    }
}
