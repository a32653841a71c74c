//! `run --profile` and `--export-trace DIR`: the run-wide profiling option (never an axis:
//! an axis would change the case ids), checked before anything runs.
//!
//! Must not: run or read profiles.
use std::path::PathBuf;

use crate::util::error::UserError;

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
                // A new file under a random name (O_CREAT | O_EXCL), removed when dropped: the
                // probe never opens what is already there (a fixed name could be the user's
                // symlink, whose target the write truncated).
                tempfile::Builder::new()
                    .prefix(".wan-vae-bench-probe-")
                    .tempfile_in(dir)
                    .map_err(|e| bad(e.to_string()))?;
                Some(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()))
            }
        };
        Ok(Some(Profiling { trace_dir }))
    }
}

/// A case id as a trace file's stem: the outputs files' rule ([`crate::util::files::file_stem`]),
/// bounded and unique: ids that differ only in characters mapped to `_` (`X=a b`, `X=a_b`)
/// get their own traces, and a 260-character id still gives a name a file system takes.
pub fn file_name(id: &str) -> String {
    crate::util::files::file_stem(id)
}

/// The trace of one pass (`encode`, `decode`) of a profiled case whose trace prefix is
/// `prefix` (`DIR/<stem>`, [`file_name`]): `<prefix>.<pass>.json`, as every engine writes it.
pub fn trace_file(prefix: &std::path::Path, pass: &str) -> PathBuf {
    PathBuf::from(format!("{}.{pass}.json", prefix.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_names_are_unique_and_bounded() {
        assert_ne!(file_name("X=a b"), file_name("X=a_b"));
        let long = "x".repeat(260);
        assert!(file_name(&long).len() + ".decode.json".len() < 255);
    }

    #[test]
    fn the_write_probe_leaves_what_is_in_the_folder_alone() {
        // Issue 48: a symlink named as the old fixed probe pointed at the user's file, whose
        // content the probe's write truncated.
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join("notes.txt");
        std::fs::write(&mine, "mine").unwrap();
        let traces = dir.path().join("traces");
        std::fs::create_dir(&traces).unwrap();
        std::os::unix::fs::symlink(&mine, traces.join(".wan-vae-bench-probe")).unwrap();
        let args = ProfileArgs {
            profile: false,
            export_trace: Some(traces.clone()),
        };
        assert!(args.request().unwrap().unwrap().trace_dir.is_some());
        assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
        let left: Vec<_> = std::fs::read_dir(&traces)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, [".wan-vae-bench-probe"], "the probe removed itself");
    }
}
