//! `logs --bundle DIR`: what AMD asks users who see slow ComfyUI runs on Strix Halo and
//! RDNA4 to attach (ROCm/TheRock #2591), made from the logs read: the unique hipBLASLt (and
//! rocBLAS) bench lines and the unique `MIOpenDriver` commands, each sorted by count as
//! `sort | uniq -c | sort -rn` would, the system context, the summary as JSON, and a README
//! saying what is in it. DIR must be new or empty: nothing the user owns is overwritten.
//!
//! Must not: read logs.
use std::fmt::Write;
use std::path::Path;

use super::LogsJson;
use crate::error::UserError;

/// The files a bundle holds.
pub const FILES: [&str; 5] = [
    "README.md",
    "hipblaslt-gemms.txt",
    "miopen-commands.txt",
    "summary.json",
    "system.json",
];

/// DIR is usable: absent (made), or an empty folder.
pub fn check(dir: &Path) -> Result<(), UserError> {
    match std::fs::symlink_metadata(dir) {
        Err(_) => Ok(()),
        Ok(m) if m.is_dir() => match std::fs::read_dir(dir).map(|mut e| e.next().is_none()) {
            Ok(true) => Ok(()),
            Ok(false) => Err(UserError::Other(format!(
                "--bundle {}: the folder is not empty; give a new or empty folder (nothing in it is overwritten)",
                dir.display()
            ))),
            Err(e) => Err(UserError::Other(format!("--bundle {}: {e}", dir.display()))),
        },
        Ok(_) => Err(UserError::Other(format!(
            "--bundle {}: not a folder; give a new or empty folder",
            dir.display()
        ))),
    }
}

/// Write the bundle into `dir` (checked by [`check`]).
pub fn write(dir: &Path, json: &LogsJson) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| UserError::Other(format!("--bundle {}: {e}", dir.display())))?;
    let mut gemms = String::new();
    for g in &json.hipblaslt.gemms {
        let _ = writeln!(gemms, "{:>7} {}", g.count, g.command);
    }
    let mut problems: Vec<_> = json.miopen.problems.iter().collect();
    problems.sort_by(|a, b| b.count.cmp(&a.count));
    let mut commands = String::new();
    for p in problems {
        let _ = writeln!(commands, "{:>7} {}", p.count, p.command);
    }
    let system = crate::system::collect();
    crate::files::write_atomic(&dir.join("hipblaslt-gemms.txt"), gemms)?;
    crate::files::write_atomic(&dir.join("miopen-commands.txt"), commands)?;
    crate::files::write_atomic(&dir.join("summary.json"), serde_json::to_string_pretty(json)? + "\n")?;
    crate::files::write_atomic(&dir.join("system.json"), serde_json::to_string_pretty(&system)? + "\n")?;
    crate::files::write_atomic(&dir.join("README.md"), readme(json))?;
    Ok(())
}

fn readme(json: &LogsJson) -> String {
    let files: Vec<String> = json.files.iter().map(|f| format!("`{}`", f.path)).collect();
    format!(
        "# ROCm logs, summarized by wan-vae-bench {}\n\n\
         Made by `wan-vae-bench logs --bundle` from {}, for an issue such as ROCm/TheRock #2591.\n\n\
         - `hipblaslt-gemms.txt`: the unique hipBLASLt (and rocBLAS) bench lines (`HIPBLASLT_LOG_MASK=32`), \
         each with how many times it was logged, most frequent first ({} lines). Each line replays its GEMM \
         with `hipblaslt-bench`.\n\
         - `miopen-commands.txt`: one `MIOpenDriver` command per distinct convolution problem, with how many \
         command lines named it, most frequent first ({} problems). Each replays its convolution.\n\
         - `summary.json`: everything `logs --json` reports: MIOpen's version and find mode, whether its \
         database was cold, each problem with the solver MIOpen ran it with, the kernels, the GEMMs.\n\
         - `system.json`: the machine, GPU, driver and ROCm this summary was made on (the machine that \
         ran `logs`, which may not be the one that wrote the logs).\n",
        env!("CARGO_PKG_VERSION"),
        files.join(", "),
        json.hipblaslt.gemms.len(),
        json.miopen.problems.len(),
    )
}
