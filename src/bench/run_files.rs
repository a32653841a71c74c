//! The files one `run` reads and writes, by flag, checked once before anything is written
//! ([`crate::files::check_distinct`]): the report and the exports must not be the weights
//! file, the `--input` file, the matrix file, this tool's own binary, the Python
//! interpreter, a file inside an engine's folder (`--comfyui DIR`), nor each other.
//!
//! Must not: read or write any of them.
use std::path::Path;

use super::options::BenchOptions;
use crate::error::UserError;

/// Refuse (exit 2) a report or export path that is one of the run's inputs or another of
/// its outputs.
pub fn check(opts: &BenchOptions, report: &Path, exports: &[(&str, Option<&Path>)]) -> Result<(), UserError> {
    let weights = crate::weights::source::local_file(&opts.weights);
    let own = std::env::current_exe().ok();
    let python = crate::engine::python::interpreter_path(&crate::values::python_interpreter(opts.python.as_deref()));
    // Without -o the report goes to the default path, named as such in errors.
    let report_flag = if opts.output.is_some() {
        "-o"
    } else {
        "the default report path (give -o)"
    };
    let outputs = [&[(report_flag, Some(report))], exports].concat();
    crate::files::check_distinct(
        &[
            ("--weights", weights.as_deref()),
            ("--input", opts.input.as_deref()),
            ("--config", opts.config_path.as_deref()),
            ("this tool's own binary", own.as_deref()),
            ("--python", python.as_deref()),
        ],
        &outputs,
    )?;
    // Nothing inside a folder of the user's own install (its files are the engine's code).
    for (engine, dir) in opts.engine_dirs.iter() {
        let Ok(dir) = std::fs::canonicalize(dir) else { continue };
        for (flag, path) in &outputs {
            let Some(path) = path else { continue };
            if inside(path, &dir) {
                return Err(UserError::file(
                    path,
                    format!(
                        "{flag} is inside the {engine} engine's folder {}: refusing to write into the install it runs; \
                         give {flag} a path outside it",
                        dir.display()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether `path` (existing or not, links followed) lies under `dir` (canonical).
fn inside(path: &Path, dir: &Path) -> bool {
    let resolved = std::fs::canonicalize(path).ok().or_else(|| {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?))
    });
    resolved.is_some_and(|p| p.starts_with(dir))
}
