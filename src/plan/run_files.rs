//! The files one `run` reads and writes, by flag, checked once before anything is written
//! ([`crate::util::files::check_distinct`]): the report and the exports must not be the weights
//! file, the `--input` file, the matrix file, this tool's own binary, the Python
//! interpreter, a file inside an engine's folder (`--comfyui DIR`), nor each other; the
//! `--export-trace` folder must be neither of them nor hold them.
//!
//! Must not: read or write any of them.
use std::path::Path;

use super::options::BenchOptions;
use crate::util::error::UserError;

/// Refuse (exit 2) a report or export path that is one of the run's inputs or another of
/// its outputs.
pub fn check(opts: &BenchOptions, report: &Path, exports: &[(&str, Option<&Path>)]) -> Result<(), UserError> {
    let weights = crate::weights::source::local_file(&opts.weights);
    let own = std::env::current_exe().ok();
    let python =
        crate::engine::python::interpreter_path(&crate::report::values::python_interpreter(opts.python.as_deref()));
    // Without -o the report goes to the default path, named as such in errors.
    let report_flag = if opts.output.is_some() {
        "-o"
    } else {
        "the default report path (give -o)"
    };
    let outputs = [&[(report_flag, Some(report))], exports].concat();
    crate::util::files::check_distinct(
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

/// Refuse (exit 2) an `--export-trace` folder that is the path of the report or an export, or
/// that holds one of them: the traces (`<stem>.<pass>.json`) are written there, and the
/// folder is created before the first case, so either would be replaced or fail at its end.
pub fn check_trace_dir(dir: &Path, report: &Path, exports: &[(&str, Option<&Path>)]) -> Result<(), UserError> {
    let Some(folder) = resolve(dir) else { return Ok(()) };
    let outputs = [&[("-o", Some(report))], exports].concat();
    for (flag, path) in outputs {
        let Some(path) = path else { continue };
        let Some(file) = resolve(path) else { continue };
        if file == folder {
            return Err(UserError::invalid(
                "--export-trace",
                dir.display().to_string(),
                format!("a folder of its own, not {flag}'s path"),
            ));
        }
        if file.starts_with(&folder) {
            return Err(UserError::file(
                path,
                format!(
                    "{flag} is inside the --export-trace folder {}, where the traces are written: give {flag} a \
                     path outside it, or --export-trace another folder",
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}

/// `path` with links followed: itself where it exists, else its parent's canonical path
/// joined with its name; `None` when neither can be told.
fn resolve(path: &Path) -> Option<std::path::PathBuf> {
    std::fs::canonicalize(path).ok().or_else(|| {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?))
    })
}

/// Whether `path` (existing or not, links followed) lies under `dir` (canonical).
fn inside(path: &Path, dir: &Path) -> bool {
    resolve(path).is_some_and(|p| p.starts_with(dir))
}
