//! Writing files the same way everywhere: [`check_output`] (may we write this output at
//! all?), [`write_new`] (create the parent folder, then write) for exports, and
//! [`write_atomic`] / [`write_atomic_with`] (temp file beside the target, then rename) for
//! anything another process may read while we write it (reports, worker results, worker
//! outputs). Errors name the file.
//!
//! The rule for an output path that already exists (see also the README):
//! - a symbolic link is followed: the file it points to is checked and written, the link
//!   stays a link;
//! - anything but a regular file (a device such as `/dev/null`, a FIFO, a socket, a folder)
//!   is refused, never replaced;
//! - a regular file we may not write (e.g. `chmod 444`) is refused, never replaced;
//! - a regular file we may write is replaced through a temp file and a rename, and the new
//!   file gets the old one's permission bits (the mode never changes).
//!
//! Commands call [`check_output`] on every output before the first case runs, so a bad
//! path costs nothing; the writers check again, because the file may change meanwhile.
//!
//! Must not: know what is written (JSON, SVG, safetensors are the callers' business).
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::error::UserError;

/// Create `path`'s parent folder when it has one and it is missing.
pub fn create_parent(path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(())
}

/// The file a write to `path` really changes: `path` itself, or where its symlink points.
fn real_target(path: &Path) -> Result<PathBuf, UserError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)
            .map_err(|e| UserError::file(path, format!("is a symbolic link that cannot be followed ({e})"))),
        _ => Ok(path.to_path_buf()),
    }
}

/// Check that `path` (what: `report`, `--export-svg`, ...) may be written under the rule of
/// the module docs: creates the missing parent folder, refuses an existing non-regular file
/// or one we may not write, and a folder we may not write into.
pub fn check_output(path: &Path, what: &str) -> Result<(), UserError> {
    let target = real_target(path)?;
    let refuse = |why: String| UserError::file(path, format!("cannot be the {what}: {why}"));
    match std::fs::metadata(&target) {
        Ok(m) if !m.is_file() => {
            return Err(refuse(format!(
                "it exists and is not a regular file ({}); refusing to replace it",
                kind(&m)
            )))
        }
        Ok(m) => {
            if !writable(&target) {
                return Err(refuse(format!(
                    "it exists and we may not write it (mode {}); refusing to replace it",
                    mode_text(&m)
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(refuse(format!("cannot inspect it: {e}"))),
    }
    create_parent(&target).map_err(|e| refuse(format!("{e:#}")))?;
    let dir = match target.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    if !writable(&dir) {
        return Err(refuse(format!(
            "we may not create files in the folder {}",
            dir.display()
        )));
    }
    Ok(())
}

fn kind(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

#[cfg(unix)]
fn mode_text(m: &std::fs::Metadata) -> String {
    use std::os::unix::fs::PermissionsExt;
    format!("{:o}", m.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn mode_text(m: &std::fs::Metadata) -> String {
    if m.permissions().readonly() {
        "read-only"
    } else {
        "writable"
    }
    .to_string()
}

/// Whether this process may write `path` (the kernel's answer, so root may write a 444 file).
#[cfg(unix)]
fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(not(unix))]
fn writable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.permissions().readonly())
}

/// Check `path`, create the parent folder, then write `contents` (see [`write_atomic`]).
pub fn write_new(path: &Path, contents: impl AsRef<[u8]>) -> anyhow::Result<()> {
    write_atomic(path, contents)
}

/// Write `contents` so that readers never see a half-written `path`: see [`write_atomic_with`].
pub fn write_atomic(path: &Path, contents: impl AsRef<[u8]>) -> anyhow::Result<()> {
    write_atomic_with(path, |tmp| {
        std::fs::write(tmp, contents.as_ref()).with_context(|| format!("cannot write {}", tmp.display()))
    })
}

/// Check `path` ([`check_output`]), let `write` fill a temp file beside the real target
/// (same folder, so the rename is atomic; the name carries our pid so two processes never
/// share it), give it the old file's permissions, then rename it over the target. The temp
/// file is removed when `write` fails.
pub fn write_atomic_with(path: &Path, write: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    check_output(path, "output")?;
    let target = real_target(path)?;
    let old_permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let tmp = temp_beside(&target);
    let result = write(&tmp).and_then(|()| match old_permissions {
        Some(p) => {
            std::fs::set_permissions(&tmp, p).with_context(|| format!("cannot set the mode of {}", tmp.display()))
        }
        None => Ok(()),
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &target).with_context(|| format!("cannot rename {} to {}", tmp.display(), target.display()))
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

    #[cfg(unix)]
    #[test]
    fn mode_and_links_survive_a_rewrite_and_folders_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.json");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        write_atomic(&link, "new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o640);
        let e = check_output(dir.path(), "report").unwrap_err().to_string();
        assert!(e.contains("not a regular file (a folder)"), "{e}");
    }
}
