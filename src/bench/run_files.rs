//! The files one `run` reads and writes, by flag, checked once before anything is written
//! ([`crate::files::check_distinct`]): the report and the exports must not be the weights
//! file, the `--input` file, the matrix file, nor each other.
//!
//! Must not: read or write any of them.
use std::path::Path;

use super::options::BenchOptions;
use crate::error::UserError;

/// Refuse (exit 2) a report or export path that is one of the run's inputs or another of
/// its outputs.
pub fn check(opts: &BenchOptions, report: &Path, exports: &[(&str, Option<&Path>)]) -> Result<(), UserError> {
    let weights = crate::weights::source::local_file(&opts.weights);
    crate::files::check_distinct(
        &[
            ("--weights", weights.as_deref()),
            ("--input", opts.input.as_deref()),
            ("--config", opts.config_path.as_deref()),
        ],
        &[&[("-o", Some(report))], exports].concat(),
    )
}
