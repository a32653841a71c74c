//! Writing files the same way everywhere: [`check_output`] (may we write this output at
//! all?), [`write_new`] (create the parent folder, then write) for exports, and
//! [`write_atomic`] / [`write_atomic_with`] (temp file beside the target, then rename) for
//! anything another process may read while we write it (reports, worker results, worker
//! outputs); [`create_new`] (never replacing a file, never seen half written) for a folder's
//! files that must not replace one that appeared meanwhile (a ROCm bundle). Errors name the
//! file. [`identity`] is the one "same file" test (device and inode).
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
//! path costs nothing; the writers check again, because the file may change meanwhile. An
//! output another process holds locked (`util::lock::OutputLock`: a running `run`'s report)
//! is refused by both ([`crate::util::lock::check_free`]).
//! They also call [`check_distinct`] once with all their inputs and outputs: an output that
//! is the same file as an input or as another output (the same path however spelled, or
//! through a symbolic or a hard link) is refused before anything is written; and
//! [`check_outside`] with the folders they fill (`--export-trace`, a ROCm bundle): no output
//! inside one, nor one folder inside another. Both compare paths as the file system resolves
//! them ([`resolve`]: symbolic links, dangling ones too, and `..`), never as written.
//!
//! Must not: know what is written (JSON, SVG, safetensors are the callers' business).
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::util::error::UserError;

/// The folders [`create_parent`] created in this process, outermost first: a command that
/// then ends with exit 2 removes those still empty ([`remove_created_empty_folders`]).
static CREATED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Create `path`'s parent folder when it has one and it is missing (remembered, see
/// [`CREATED`]).
pub fn create_parent(path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let missing: Vec<PathBuf> = dir
            .ancestors()
            .filter(|d| !d.as_os_str().is_empty())
            .take_while(|d| std::fs::symlink_metadata(d).is_err())
            .map(Path::to_path_buf)
            .collect();
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        if let Ok(mut created) = CREATED.lock() {
            created.extend(missing.into_iter().rev());
        }
    }
    Ok(())
}

/// Remove the folders this process created for its outputs that are still empty, innermost
/// first: a command refused with exit 2 leaves nothing behind. A folder something was
/// written into stays (removing a non-empty folder fails).
pub fn remove_created_empty_folders() {
    let created = CREATED.lock().map(|mut c| std::mem::take(&mut *c)).unwrap_or_default();
    for dir in created.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
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
    let refuse = |why: String| UserError::file(path, format!("cannot be the {what}: {why}"));
    // `-` is stdout only where a command says so (`run -o -`); elsewhere it would become a
    // file named `-`.
    if path.as_os_str() == "-" {
        return Err(refuse(
            "`-` (standard output) is not supported here; give a file path (./- for a file named -)".into(),
        ));
    }
    let target = real_target(path)?;
    // Another process's report while it writes it (`run`, `merge`, `plot` hold its lock).
    crate::util::lock::check_free(path)?;
    match std::fs::metadata(&target) {
        Ok(m) if !m.is_file() => {
            return Err(refuse(format!(
                "it exists and is not a regular file ({}); refusing to replace it",
                crate::util::read::kind(&m)
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

/// A file a command reads or writes, with the flag or argument that names it (`-o`,
/// `--weights`, `input report 2`); `None` when not given.
pub type Named<'a> = (&'a str, Option<&'a Path>);

/// Refuse (exit 2) any output that is the same file as one of `inputs`, or as an earlier
/// output: the same path however spelled, through a symbolic link, or a hard link (same
/// device and inode). An output that does not exist yet is compared by its canonical folder
/// and file name. The error names both flags and both paths.
pub fn check_distinct(inputs: &[Named], outputs: &[Named]) -> Result<(), UserError> {
    let given = |list: &[Named<'_>]| -> Vec<(String, PathBuf, FileId)> {
        list.iter()
            .filter_map(|(flag, p)| p.map(|p| (flag.to_string(), p.to_path_buf(), FileId::of(p))))
            .collect()
    };
    let inputs = given(inputs);
    let outputs = given(outputs);
    for (i, (flag, path, id)) in outputs.iter().enumerate() {
        let earlier = inputs
            .iter()
            .map(|x| (x, true))
            .chain(outputs[..i].iter().map(|x| (x, false)));
        for ((other_flag, other_path, other_id), is_input) in earlier {
            let Some(how) = id.same_as(other_id) else {
                continue;
            };
            let why = if is_input {
                format!("refusing to write over an input: give {flag} another path")
            } else {
                format!("each output needs its own file: give {flag} another path")
            };
            return Err(UserError::file(
                path,
                format!(
                    "{flag} and {other_flag} {} are the same file{how}; {why}",
                    other_path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// What makes two paths the same file: where it is (canonical), and its device and inode.
#[derive(Debug)]
struct FileId {
    canonical: Option<PathBuf>,
    inode: Option<(u64, u64)>,
    symlink: bool,
}

impl FileId {
    fn of(path: &Path) -> FileId {
        let symlink = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        match std::fs::metadata(path) {
            Ok(m) => FileId {
                canonical: std::fs::canonicalize(path).ok(),
                inode: identity(&m),
                symlink,
            },
            Err(_) => FileId {
                canonical: resolve(path),
                inode: None,
                symlink,
            },
        }
    }

    /// `None` when different files, else how they are the same (for the message).
    fn same_as(&self, other: &FileId) -> Option<&'static str> {
        let same_inode = self.inode.is_some() && self.inode == other.inode;
        let same_place = self.canonical.is_some() && self.canonical == other.canonical;
        if !same_inode && !same_place {
            return None;
        }
        Some(if self.symlink || other.symlink {
            " (through a symbolic link)"
        } else if !same_place {
            " (hard links to one file)"
        } else {
            ""
        })
    }
}

pub use super::file_id::identity;

/// Create `path` with `contents`, never replacing a file: written to a temp file beside it
/// (created new), then linked to its name (a link never replaces), so no reader sees it half
/// written; where links are not supported, created new and written in place (removed again
/// when the write fails: no half-written file is left). An existing `path` is
/// `AlreadyExists`.
pub fn create_new(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(contents).and_then(|()| f.sync_all()));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(e),
        // No hard links here (some network or FAT file systems).
        Err(_) => {
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
            let written = f.write_all(contents).and_then(|()| f.sync_all());
            if written.is_err() {
                drop(f);
                // Created by this call just now: ours to remove.
                let _ = std::fs::remove_file(path);
            }
            written
        }
    }
}

/// Where `path` is as the file system resolves it, whether or not it exists: each existing
/// symbolic link followed (a dangling one too: a write creates its target), `..` taken
/// after what precedes it is resolved (as the kernel does: `link/..` is the parent of the
/// link's target), `.` dropped, and the missing rest appended as written. `None` for a
/// link loop (more than 40 links) or an unreadable link.
pub fn resolve(path: &Path) -> Option<PathBuf> {
    use std::collections::VecDeque;
    use std::path::Component;
    let absolute = std::path::absolute(path).ok()?;
    let mut todo: VecDeque<PathBuf> = absolute.components().map(|c| PathBuf::from(c.as_os_str())).collect();
    let mut real = PathBuf::new();
    let mut links = 0;
    while let Some(part) = todo.pop_front() {
        match part.components().next() {
            Some(Component::Prefix(_) | Component::RootDir) => real.push(&part),
            Some(Component::ParentDir) => {
                real.pop();
            }
            Some(Component::Normal(name)) => {
                let next = real.join(name);
                match std::fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        links += 1;
                        if links > 40 {
                            return None;
                        }
                        let target = std::fs::read_link(&next).ok()?;
                        // An absolute target starts again at its root; a relative one from
                        // the link's folder (`real`, unchanged).
                        for c in target.components().rev() {
                            todo.push_front(PathBuf::from(c.as_os_str()));
                        }
                    }
                    _ => real = next,
                }
            }
            Some(Component::CurDir) | None => {}
        }
    }
    Some(real)
}

/// Whether files can be created in the folder `dir`, tried rather than asked (`access(2)`
/// says yes to root where the kernel then refuses: `/proc`, `/sys`, a read-only mount): a
/// missing `dir` is made with its missing parents, a probe file is created in it and
/// removed, and the folders made are removed again (innermost first), so the check leaves
/// nothing behind. For a folder a command fills later (a ROCm bundle), before it reads or
/// runs anything.
pub fn check_can_fill(dir: &Path) -> std::io::Result<()> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .filter(|d| !d.as_os_str().is_empty())
        .take_while(|d| std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    let probe = dir.join(format!(".wan-vae-bench-probe-{}", std::process::id()));
    let tried = std::fs::create_dir_all(dir).and_then(|()| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map(drop)
    });
    if tried.is_ok() {
        let _ = std::fs::remove_file(&probe);
    }
    for d in &missing {
        let _ = std::fs::remove_dir(d);
    }
    tried
}

/// An output folder a command fills with files of its own (`--export-trace`, a ROCm
/// bundle): its flag, what to call it in errors (`bundle folder`), its path.
pub struct OutFolder<'a> {
    pub flag: &'a str,
    pub what: &'a str,
    pub path: &'a Path,
}

/// Refuse (exit 2) an output file that is one of the output `folders` or lies inside one
/// (its files would replace it, or it would turn the folder's path into a file), and two
/// folders one inside the other, all compared as the file system resolves them
/// ([`resolve`]: through symbolic links and `..`). The error names both flags and paths.
pub fn check_outside(folders: &[OutFolder], outputs: &[Named]) -> Result<(), UserError> {
    let lexical = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    for (i, folder) in folders.iter().enumerate() {
        let Some(dir) = resolve(folder.path) else { continue };
        // The later folders, then the files (a file has no `what`).
        let others = folders[i + 1..]
            .iter()
            .map(|f| (f.flag, f.path, Some(f.what)))
            .chain(outputs.iter().filter_map(|(flag, p)| Some((*flag, (*p)?, None))));
        for (flag, path, what) in others {
            let Some(other) = resolve(path) else { continue };
            let (l, ld) = (lexical(path), lexical(folder.path));
            // Said when only the file system's resolution shows it.
            let how = if l.starts_with(&ld) || ld.starts_with(&l) {
                ""
            } else {
                " (through a symbolic link or `..`)"
            };
            let way_out =
                |inner: &str, outer: &str| format!("give {inner} a path outside it, or {outer} another folder");
            if other == dir {
                return Err(UserError::invalid(
                    folder.flag,
                    folder.path.display().to_string(),
                    format!("a folder of its own, not {flag}'s path {}{how}", path.display()),
                ));
            }
            if other.starts_with(&dir) {
                return Err(UserError::file(
                    path,
                    format!(
                        "{flag} is inside the {} {}{how}, where its files are written: {}",
                        folder.what,
                        folder.path.display(),
                        way_out(flag, folder.flag)
                    ),
                ));
            }
            if dir.starts_with(&other) {
                let message = match what {
                    Some(what) => format!(
                        "{} is inside the {what} {}{how}, where its files are written: {}",
                        folder.flag,
                        path.display(),
                        way_out(folder.flag, flag)
                    ),
                    None => format!(
                        "{} is inside {flag} {}{how}, which is written as a file: give one of them another path",
                        folder.flag,
                        path.display()
                    ),
                };
                return Err(UserError::file(folder.path, message));
            }
        }
    }
    Ok(())
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

/// A file name for case `id`, unique and bounded: its first 120 characters with every one
/// other than ASCII letters, digits and `-` replaced by `_`, then `-` and 16 hex digits of
/// the SHA-256 of the whole id. Ids that spell alike (`x/y` and `x_y`) or share a long
/// prefix (a 240-character env value) still get their own files, within the 255 bytes a
/// file name may have.
pub fn file_stem(id: &str) -> String {
    use sha2::Digest;
    let readable: String = id
        .chars()
        .take(120)
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .collect();
    let hash = sha2::Sha256::digest(id.as_bytes());
    let hex: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{readable}-{hex}")
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

    #[cfg(unix)]
    #[test]
    fn the_same_file_is_found_however_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let input = d.join("in.json");
        std::fs::write(&input, "x").unwrap();
        std::fs::hard_link(&input, d.join("hard.json")).unwrap();
        std::os::unix::fs::symlink(&input, d.join("soft.json")).unwrap();
        let spelled = d.join("sub/../in.json");
        std::fs::create_dir(d.join("sub")).unwrap();
        let refused = |out: &Path| {
            check_distinct(&[("--input", Some(input.as_path()))], &[("-o", Some(out))])
                .unwrap_err()
                .to_string()
        };
        assert!(refused(&input).contains("-o and --input"), "{}", refused(&input));
        assert!(refused(&spelled).contains("same file;"), "{}", refused(&spelled));
        assert!(refused(&d.join("hard.json")).contains("(hard links to one file)"));
        assert!(refused(&d.join("soft.json")).contains("(through a symbolic link)"));
        // Outputs that do not exist yet: the same path through different spellings.
        let new = d.join("new/a.md");
        let also = d.join("new/./b/../a.md");
        let e = check_distinct(
            &[],
            &[("-o", Some(new.as_path())), ("--export-markdown", Some(also.as_path()))],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--export-markdown and -o") && e.contains("each output needs its own file"),
            "{e}"
        );
        // Different files, and flags not given, pass.
        let other = d.join("other.json");
        check_distinct(
            &[("--input", Some(input.as_path())), ("--config", None)],
            &[
                ("-o", Some(other.as_path())),
                ("--export-svg", None),
                ("--export-markdown", Some(new.as_path())),
            ],
        )
        .unwrap();
    }

    #[test]
    fn a_folder_is_tried_and_nothing_is_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        check_can_fill(&d.join("a/b/c")).unwrap();
        assert!(!d.join("a").exists(), "the folders made for the try are removed");
        std::fs::create_dir(d.join("empty")).unwrap();
        check_can_fill(&d.join("empty")).unwrap();
        assert_eq!(std::fs::read_dir(d.join("empty")).unwrap().count(), 0);
        // Under a file, or where the kernel makes nothing (even for root).
        std::fs::write(d.join("f"), "x").unwrap();
        assert!(check_can_fill(&d.join("f/x")).is_err());
        #[cfg(target_os = "linux")]
        assert!(check_can_fill(Path::new("/proc/wan-vae-bench-no/x")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn paths_are_resolved_as_the_file_system_does_and_folders_hold_no_output() {
        let dir = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(d.join("real")).unwrap();
        std::os::unix::fs::symlink(d.join("real"), d.join("lnk")).unwrap();
        // A dangling link: a write through it creates its target.
        std::os::unix::fs::symlink("later", d.join("dangling")).unwrap();
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert_eq!(resolve(&d.join("lnk/a.json")), Some(d.join("real/a.json")));
        assert_eq!(resolve(&d.join("lnk/../x")), Some(d.join("x")));
        assert_eq!(resolve(&d.join("no/such/../../real/./b")), Some(d.join("real/b")));
        assert_eq!(resolve(&d.join("dangling/c.json")), Some(d.join("later/c.json")));
        assert_eq!(resolve(&d.join("loop/x")), None);
        let bundle = OutFolder {
            flag: "--bundle",
            what: "bundle folder",
            path: &d.join("real"),
        };
        let refused =
            |folders: &[OutFolder], out: &Path| check_outside(folders, &[("-o", Some(out))]).unwrap_err().to_string();
        let e = refused(std::slice::from_ref(&bundle), &d.join("lnk/summary.json"));
        assert!(
            e.contains("-o is inside the bundle folder") && e.contains("(through a symbolic link or `..`)"),
            "{e}"
        );
        let e = refused(std::slice::from_ref(&bundle), &d.join("lnk"));
        assert!(e.contains("a folder of its own, not -o's path"), "{e}");
        let e = refused(std::slice::from_ref(&bundle), &d.join("lnk/../real/x/../y.json"));
        assert!(e.contains("inside the bundle folder"), "{e}");
        // A file output above the folder, and one folder inside the other.
        let e = refused(std::slice::from_ref(&bundle), &d);
        assert!(e.contains("--bundle is inside -o"), "{e}");
        let trace = OutFolder {
            flag: "--export-trace",
            what: "--export-trace folder",
            path: &d.join("dangling"),
        };
        let inner = OutFolder {
            flag: "--bundle",
            what: "bundle folder",
            path: &d.join("later/b"),
        };
        let e = check_outside(&[trace, inner], &[]).unwrap_err().to_string();
        assert!(e.contains("--bundle is inside the --export-trace folder"), "{e}");
        // Apart, they pass.
        check_outside(
            std::slice::from_ref(&bundle),
            &[("-o", Some(d.join("r.json").as_path())), ("--x", None)],
        )
        .unwrap();
    }
}
