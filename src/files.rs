//! Writing files the same way everywhere: [`write_new`] (create the parent folder, then
//! write) for exports, and [`write_atomic`] / [`write_atomic_with`] (temp file beside the
//! target, then rename) for anything another process may read while we write it (reports,
//! worker results, worker outputs). Errors name the file.
//!
//! Must not: know what is written (JSON, SVG, safetensors are the callers' business).
use std::path::{Path, PathBuf};

use anyhow::Context;

/// Create `path`'s parent folder when it has one and it is missing.
pub fn create_parent(path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(())
}

/// Create the parent folder, then write `contents` to `path`.
pub fn write_new(path: &Path, contents: impl AsRef<[u8]>) -> anyhow::Result<()> {
    create_parent(path)?;
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

/// Write `contents` so that readers never see a half-written `path`: see [`write_atomic_with`].
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> anyhow::Result<()> {
    write_atomic_with(path, |tmp| {
        std::fs::write(tmp, contents.as_ref()).with_context(|| format!("cannot write {}", tmp.display()))
    })
}

/// Create the parent folder, let `write` fill a temp file beside `path` (same folder, so the
/// rename is atomic; the name carries our pid so two processes never share it), then rename
/// it over `path`. The temp file is removed when `write` fails.
pub fn write_atomic_with(path: &Path, write: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    create_parent(path)?;
    let tmp = temp_beside(path);
    if let Err(e) = write(&tmp) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
}

/// `NAME.tmpPID` beside `path`.
fn temp_beside(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_creates_the_folder_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/report.json");
        write_atomic(&path, "{}").unwrap();
        write_atomic(&path, "[1]").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[1]");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
        let failed = write_atomic_with(&dir.path().join("x"), |_| anyhow::bail!("no"));
        assert!(failed.is_err());
        assert!(!dir.path().join("x").exists());
    }
}
