//! The shipped Python worker (the Python engines: `torch`, `diffusers`, `comfyui`): its files
//! (the common ones here, beside this module, see `docs/worker-protocol.md`, section 9; each
//! engine's own modules listed in its [`super::ENGINES`] entry, with the one that makes it),
//! written once into a folder (the run's scratch directory) and run with the chosen
//! interpreter, and the checks that turn a missing interpreter into a clear `unsupported`
//! message. The common files name no engine: the worker imports the module the spec names.
//!
//! Must not: decide which interpreter to use (that is `values::python_interpreter`) or
//! measure anything (the Python files do).
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

/// One file of the Python worker: its name and text (shipped inside the binary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyFile {
    pub name: &'static str,
    pub text: &'static str,
}

impl PyFile {
    pub const fn new(name: &'static str, text: &'static str) -> PyFile {
        PyFile { name, text }
    }
}

/// The files every Python engine uses: the entry point, the validate mode, the runtime,
/// the rules shared with candle, weights, FLOPs (and the checkpoint widths they read), the
/// levers (`layout`, `conv3d`) and the clip.
pub const COMMON: &[PyFile] = &[
    PyFile::new("wan_worker.py", include_str!("wan_worker.py")),
    PyFile::new("wan_validate.py", include_str!("wan_validate.py")),
    PyFile::new("wan_runtime.py", include_str!("wan_runtime.py")),
    PyFile::new("wan_common.py", include_str!("wan_common.py")),
    PyFile::new("wan_weights.py", include_str!("wan_weights.py")),
    PyFile::new("wan_flops.py", include_str!("wan_flops.py")),
    PyFile::new("wan_configs.py", include_str!("wan_configs.py")),
    PyFile::new("wan_levers.py", include_str!("wan_levers.py")),
    PyFile::new("wan_clip.py", include_str!("wan_clip.py")),
    PyFile::new("wan_profile.py", include_str!("wan_profile.py")),
];

/// Every file of the Python worker: [`COMMON`] and each Python engine's modules (each once);
/// they must sit in one folder.
pub fn files() -> Vec<PyFile> {
    let mut files = COMMON.to_vec();
    for spec in super::ENGINES {
        if let super::WorkerKind::Python { modules, .. } = spec.worker {
            for m in modules {
                if !files.iter().any(|f| f.name == m.name) {
                    files.push(*m);
                }
            }
        }
    }
    files
}

/// The entry point among [`files`].
pub const ENTRY: &str = "wan_worker.py";

/// Write the worker's files into `dir` (created if needed); returns the entry script's path.
pub fn write_worker(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for f in files() {
        let path = dir.join(f.name);
        std::fs::write(&path, f.text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(dir.join(ENTRY))
}

/// The Python worker as written into a folder, and its interpreter.
#[derive(Debug, Clone)]
pub struct PythonWorker {
    /// The interpreter as given (a path or a name on `PATH`).
    pub interpreter: String,
    /// The entry script ([`ENTRY`]) in that folder.
    pub script: PathBuf,
}

impl PythonWorker {
    /// Write the worker's files into `dir` ([`write_worker`]), to run under `interpreter`.
    pub fn write(dir: &Path, interpreter: String) -> anyhow::Result<PythonWorker> {
        let script = write_worker(dir)?;
        Ok(PythonWorker { interpreter, script })
    }

    /// A command running the worker ([`command`]).
    pub fn command(&self) -> Command {
        command(&self.interpreter, &self.script)
    }
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

/// The file `interpreter` names: itself when it is a path, else the first match on `PATH`.
pub fn interpreter_path(interpreter: &str) -> Option<std::path::PathBuf> {
    let path = Path::new(interpreter);
    if path.components().count() > 1 {
        Some(path.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(path)).find(|c| c.is_file()))
    }
}

/// Why `interpreter` cannot be started, or `None` when it looks runnable: a path that does
/// not exist or is not an executable file, or a bare name not found on `PATH`.
pub fn interpreter_problem(interpreter: &str) -> Option<String> {
    let found = interpreter_path(interpreter);
    let Some(file) = found else {
        return Some(format!(
            "Python interpreter `{interpreter}` not found on PATH (set --python, [model] python or {})",
            crate::report::values::PYTHON_ENV_VAR
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
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/python");
        let files = files();
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".py") {
                assert!(
                    files.iter().any(|f| f.name == name),
                    "{name} is neither in python::COMMON nor in an engine's modules"
                );
            }
        }
        assert!(files.iter().any(|f| f.name == ENTRY));
    }

    #[test]
    fn every_file_is_written_next_to_the_entry_point() {
        let dir = tempfile::tempdir().unwrap();
        let entry = write_worker(dir.path()).unwrap();
        assert_eq!(entry, dir.path().join(ENTRY));
        for f in files() {
            assert_eq!(std::fs::read_to_string(dir.path().join(f.name)).unwrap(), f.text);
        }
    }
}
