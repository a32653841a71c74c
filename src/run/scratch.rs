//! The run's scratch folder: a random name with our prefix in the temp folder, owner-only
//! permissions (tempfile), a marker file held locked while the run lives ([`FolderMark`]),
//! removed when [`Scratch`] is dropped (its marker last, so a folder that cannot be emptied
//! stays collectable); folders of runs that died (SIGKILL, power loss) are removed by the next
//! run ([`remove_stale_scratch`]). The temp folder's path must be text without a tab or a
//! newline: the workers' case lines carry it (`SPEC<TAB>RESULT<NEWLINE>`, UTF-8).
//!
//! Must not: know what is written in the folder.
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::util::error::UserError;
use crate::util::lock::FolderMark;

/// Name prefix of scratch folders in the temp directory (the report's readers know it: the
/// tool's own paths are left out of a case's `env`).
pub use crate::report::env::SCRATCH_PREFIX;
/// The marker file in a scratch folder, held locked by the owning run ([`FolderMark`]).
pub const SCRATCH_MARKER: &str = ".wan-vae-bench-owner";

/// The run's scratch folder, removed on drop unless kept.
pub struct Scratch {
    /// Its path.
    pub path: PathBuf,
    /// Keep it (`run --keep-outputs`): then only the marker goes.
    pub keep: bool,
    /// Owns the folder; `None` once dropped.
    dir: Option<tempfile::TempDir>,
    /// Our locked marker in it, held while we run.
    _mark: FolderMark,
}

impl Scratch {
    /// A fresh scratch folder in the temp folder (after removing those of dead runs). A temp
    /// folder whose path is not UTF-8 text or holds a tab or a newline is refused (exit 2,
    /// naming TMPDIR): the workers' case lines could not carry it.
    pub fn new() -> anyhow::Result<Scratch> {
        let tmp = std::env::temp_dir();
        check_temp_folder(&tmp)?;
        remove_stale_scratch(&tmp);
        // tempfile: a random name, created exclusively (mkdir fails on anything planted
        // there), so nobody can predict it; mode 0700 so nobody else can read it.
        let mut builder = tempfile::Builder::new();
        builder.prefix(SCRATCH_PREFIX);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let dir = builder
            .tempdir_in(&tmp)
            .with_context(|| format!("cannot create a scratch folder in {}", tmp.display()))?;
        let mark = FolderMark::create(&dir.path().join(SCRATCH_MARKER))
            .with_context(|| format!("cannot write in {}", dir.path().display()))?;
        Ok(Scratch {
            path: dir.path().to_path_buf(),
            keep: false,
            dir: Some(dir),
            _mark: mark,
        })
    }
}

/// The temp folder must be UTF-8 text without a tab or a newline (the workers' case lines
/// are `SPEC<TAB>RESULT<NEWLINE>` in UTF-8); else a user error naming TMPDIR.
pub fn check_temp_folder(tmp: &Path) -> Result<(), UserError> {
    let why = match tmp.to_str() {
        None => "is not valid UTF-8",
        Some(t) if t.contains(['\t', '\n']) => "holds a tab or a newline",
        Some(_) => return Ok(()),
    };
    Err(UserError::Other(format!(
        "TMPDIR: the temp folder {:?} {why}, which the workers' case lines cannot carry; \
         set TMPDIR to another folder",
        tmp.display().to_string()
    )))
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            let path = dir.keep();
            if self.keep {
                let _ = std::fs::remove_file(path.join(SCRATCH_MARKER));
            } else {
                remove_scratch(&path);
            }
        }
    }
}

/// Remove a scratch folder with its ownership marker last: when something in it cannot be
/// removed (a child still writing), the marker stays, so the next run removes the folder
/// once this one is gone (`remove_stale_scratch`). Links are removed, never followed.
fn remove_scratch(path: &Path) {
    remove_scratch_with(path, |p| {
        let dir = std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_dir());
        if dir {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        }
    });
}

/// [`remove_scratch`] with `remove` for each entry but the marker.
fn remove_scratch_with(path: &Path, remove: impl Fn(&Path) -> std::io::Result<()>) {
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            if e.file_name() != SCRATCH_MARKER {
                let _ = remove(&e.path());
            }
        }
    }
    let emptied =
        std::fs::read_dir(path).is_ok_and(|mut e| e.all(|e| e.is_ok_and(|e| e.file_name() == SCRATCH_MARKER)));
    if emptied {
        let _ = std::fs::remove_file(path.join(SCRATCH_MARKER));
        let _ = std::fs::remove_dir(path);
    }
}

/// Remove the scratch folders in `tmp` whose run is gone: only entries named with our
/// prefix that are real folders (never a symlink) owned by this user and holding our
/// marker, no longer locked by a running process. Returns how many were removed.
pub fn remove_stale_scratch(tmp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(SCRATCH_PREFIX) {
            continue;
        }
        let path = entry.path();
        // symlink_metadata: a planted link is not followed, it is left alone.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_dir() || !owned_by_me(&meta) {
            continue;
        }
        let marker = path.join(SCRATCH_MARKER);
        let is_file = std::fs::symlink_metadata(&marker).is_ok_and(|m| m.file_type().is_file());
        if is_file && crate::util::lock::abandoned(&marker) && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(unix)]
fn owned_by_me(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    meta.uid() == unsafe { libc::geteuid() }
}

#[cfg(not(unix))]
fn owned_by_me(_meta: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_marker_goes_last_so_a_stuck_folder_stays_collectable() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("wan-vae-bench-x");
        std::fs::create_dir_all(d.join("busy")).unwrap();
        std::fs::write(d.join(SCRATCH_MARKER), b"").unwrap();
        std::fs::write(d.join("a.json"), b"{}").unwrap();
        // A child still writing in `busy`: its removal fails; the marker must stay.
        remove_scratch_with(&d, |p| match p.ends_with("busy") {
            true => Err(std::io::Error::other("busy")),
            false => std::fs::remove_file(p),
        });
        assert!(d.join(SCRATCH_MARKER).is_file() && !d.join("a.json").exists());
        remove_scratch(&d);
        assert!(!d.exists());
    }
}
