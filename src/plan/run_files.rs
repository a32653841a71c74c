//! The files one `run` reads and writes, by flag, checked once before anything is written
//! ([`crate::util::files::check_distinct`]): the report and the exports must not be the weights
//! file, the `--input` file, the matrix file, this tool's own binary, the Python
//! interpreter, a file inside an engine's folder (`--comfyui DIR`), nor each other; the
//! folders it fills (`--export-trace`, `--export-rocm-bundle`) must be neither of them nor
//! hold them, nor one the other ([`folders`]).
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

/// Refuse (exit 2) an output folder (`--export-trace`, `--export-rocm-bundle`) that is the
/// report's or an export's path, holds one of them, or holds the other folder, as the file
/// system resolves them ([`crate::util::files::check_outside`]): the folder's files would replace
/// them, or it would fail at the end of the run.
pub fn folders(
    trace: Option<&Path>,
    bundle: Option<&Path>,
    report: &Path,
    exports: &[(&str, Option<&Path>)],
) -> Result<(), UserError> {
    use crate::util::files::OutFolder;
    let trace = trace.map(|path| OutFolder {
        flag: "--export-trace",
        what: "--export-trace folder",
        path,
    });
    let bundle = bundle.map(|path| OutFolder {
        flag: "--export-rocm-bundle",
        what: "bundle folder",
        path,
    });
    let folders: Vec<OutFolder> = trace.into_iter().chain(bundle).collect();
    crate::util::files::check_outside(&folders, &[&[("-o", Some(report))], exports].concat())
}

/// Whether `path` (existing or not, links followed) lies under `dir` (canonical).
fn inside(path: &Path, dir: &Path) -> bool {
    crate::util::files::resolve(path).is_some_and(|p| p.starts_with(dir))
}
