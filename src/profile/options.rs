//! `run --profile` and `--export-trace DIR`: the run-wide profiling option (never an axis:
//! an axis would change the case ids), checked before anything runs.
//!
//! Must not: run or read profiles.
use std::path::PathBuf;

use crate::error::UserError;

/// The profiling flags of `run`.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct ProfileArgs {
    /// After each `ok` case, run one extra profiled pass of each pass it times and record a
    /// per-layer breakdown (`profile` in the report; never in the timing statistics).
    #[arg(long)]
    pub profile: bool,
    /// Also write each profiled pass as a Chrome/Perfetto trace into DIR (implies --profile).
    #[arg(long = "export-trace", value_name = "DIR")]
    pub export_trace: Option<PathBuf>,
}

/// What the run profiles (`None` from [`ProfileArgs::request`]: nothing).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Profiling {
    /// Where the traces go (created, checked writable), if anywhere.
    pub trace_dir: Option<PathBuf>,
}

impl ProfileArgs {
    /// The run's profiling, with `--export-trace`'s folder created and checked writable;
    /// a folder that cannot be is a user error (exit 2) before any case runs.
    pub fn request(&self) -> Result<Option<Profiling>, UserError> {
        if !self.profile && self.export_trace.is_none() {
            return Ok(None);
        }
        let trace_dir = match &self.export_trace {
            None => None,
            Some(dir) => {
                let bad = |why: String| {
                    UserError::invalid(
                        "--export-trace",
                        dir.display().to_string(),
                        format!("a folder this user can write ({why})"),
                    )
                };
                std::fs::create_dir_all(dir).map_err(|e| bad(e.to_string()))?;
                let probe = dir.join(".wan-vae-bench-probe");
                std::fs::write(&probe, b"").map_err(|e| bad(e.to_string()))?;
                let _ = std::fs::remove_file(&probe);
                Some(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()))
            }
        };
        Ok(Some(Profiling { trace_dir }))
    }
}

/// A case id as a file name: anything but ASCII letters, digits, `-`, `_` and `.` becomes `_`.
pub fn file_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
