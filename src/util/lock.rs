//! Who owns what on disk, by kernel file locks (`std::fs::File::try_lock`, `flock(2)` on
//! Unix): the kernel releases a lock when its holder exits, however it exits, so a lock
//! that can be taken has no living owner. Two users:
//! - [`OutputLock`], the exclusive `<output>.lock` beside a report that `run` and `merge`
//!   hold while they write it. The file holds the holder's pid, for the message a second
//!   writer gets; a lock file left by a dead process is taken over; the file is removed
//!   when the lock is dropped (also after SIGINT/SIGTERM, which `run` turns into a normal
//!   return).
//! - [`FolderMark`], a marker file held locked inside a folder (the run's scratch folder)
//!   for as long as its owner runs; [`abandoned`] tells a later run that the owner is gone.
//!
//! Every command that writes a file honours an [`OutputLock`] another process holds:
//! [`check_free`] (called by `files::check_output`, so before anything runs and again as the
//! file is written) refuses an output whose lock is held, naming the holder; the locks this
//! process holds itself are known ([`HELD`]) and pass.
//!
//! Must not: write the output itself (that is `files`).
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::error::UserError;

/// How often [`OutputLock::acquire`] starts over when the lock file it opened was removed
/// (by its holder finishing) before it could lock it.
const ATTEMPTS: usize = 5;

/// The lock files this process holds through an [`OutputLock`] (device and inode): its own
/// outputs, which [`check_free`] lets it write.
static HELD: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// An exclusive lock on an output file, released (the lock file removed) on drop.
#[derive(Debug)]
pub struct OutputLock {
    path: PathBuf,
    /// Holds the kernel lock for as long as it is open.
    file: File,
}

impl OutputLock {
    /// `<output>.lock`.
    pub fn path_for(output: &Path) -> PathBuf {
        let mut name = output.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        output.with_file_name(name)
    }

    /// Take the lock on `output`, or fail at once naming the output and the holder's pid.
    /// The output's folder must exist (see `files::check_output`).
    pub fn acquire(output: &Path) -> Result<OutputLock, UserError> {
        let path = Self::path_for(output);
        for _ in 0..ATTEMPTS {
            check_plain_file(&path)?;
            let file =
                open_lock_file(&path).map_err(|e| UserError::file(&path, format!("cannot open the lock file: {e}")))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    let holder = match holder_pid(&path) {
                        Some(pid) => format!("pid {pid}"),
                        None => "pid unknown".to_string(),
                    };
                    return Err(UserError::file(
                        output,
                        format!(
                            "is being written by another process ({holder}; lock file {}); \
                             wait for it, or choose another output",
                            path.display()
                        ),
                    ));
                }
                Err(TryLockError::Error(e)) => {
                    return Err(UserError::file(&path, format!("cannot lock the lock file: {e}")))
                }
            }
            // The holder we waited on may have removed the file between our open and our
            // lock: then we hold a lock on a file nobody else can see; start over.
            if !is_same_file(&file, &path) {
                continue;
            }
            // Ours now (a dead holder's pid, if any, is replaced).
            let mut file = file;
            let written = file.set_len(0).and_then(|()| writeln!(file, "{}", std::process::id()));
            written.map_err(|e| UserError::file(&path, format!("cannot write the lock file: {e}")))?;
            if let (Some(id), Ok(mut held)) = (file_id(&file), HELD.lock()) {
                held.push(id);
            }
            return Ok(OutputLock { path, file });
        }
        Err(UserError::file(
            &path,
            format!(
                "cannot take the lock: the lock file was removed and re-created {ATTEMPTS} times while \
                 we took it (other runs are writing this output); wait for them, or choose another output"
            ),
        ))
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        if let (Some(id), Ok(mut held)) = (file_id(&self.file), HELD.lock()) {
            if let Some(at) = held.iter().position(|h| *h == id) {
                held.swap_remove(at);
            }
        }
        // Remove the file while still holding the lock (closing `file` releases it), and only
        // when the path is still our file (nobody else removes a held lock file, but a user may).
        if is_same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Refuse (exit 2) to write `output` while another process holds its [`OutputLock`]: a
/// running `run`, `merge` or `plot` whose file it is (replaced now, its cases would be lost
/// should that process then be killed). The lock file beside the path as given and beside
/// the file it leads to (through a symbolic link) are both asked; a lock this process holds
/// passes. Taking a shared lock without waiting asks the kernel; it is let go at once.
pub fn check_free(output: &Path) -> Result<(), UserError> {
    let mut outputs = vec![output.to_path_buf()];
    if let Ok(real) = std::fs::canonicalize(output) {
        outputs.push(real);
    }
    for out in &outputs {
        let path = OutputLock::path_for(out);
        let Ok(file) = open_to_ask(&path) else {
            continue; // no lock file: nobody writes it
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            continue; // `OutputLock::acquire` refuses such a path for the writer
        }
        if file_id(&file).is_some_and(|id| HELD.lock().is_ok_and(|held| held.contains(&id))) {
            continue;
        }
        if let Err(TryLockError::WouldBlock) = file.try_lock_shared() {
            let holder = match holder_pid(&path) {
                Some(pid) => format!("pid {pid}"),
                None => "pid unknown".to_string(),
            };
            return Err(UserError::file(
                output,
                format!(
                    "is being written by another process ({holder}; lock file {}), which would lose \
                     what it measured if this replaced it; wait for it, or choose another output",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Open a lock file only to ask about its lock: read-only, never through a symbolic link,
/// never waiting (a FIFO planted there).
fn open_to_ask(path: &Path) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    opts.open(path)
}

/// The device and inode of an open file.
fn file_id(file: &File) -> Option<(u64, u64)> {
    super::file_id::identity(&file.metadata().ok()?)
}

/// A marker file held locked inside a folder while its owner runs (the owner's pid is
/// written in it, for people). Dropping it releases the lock and leaves the file.
#[derive(Debug)]
pub struct FolderMark {
    _file: File,
}

impl FolderMark {
    /// Create the marker at `path`, already locked: it is written and locked under a
    /// temporary name and renamed into place, so no other process ever sees it unlocked
    /// while we run.
    pub fn create(path: &Path) -> std::io::Result<FolderMark> {
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        let locked = match file.try_lock() {
            Ok(()) => Ok(()),
            Err(TryLockError::WouldBlock) => Err(std::io::Error::other("a new file is locked by someone else")),
            Err(TryLockError::Error(e)) => Err(e),
        };
        let ready = locked
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = ready {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(FolderMark { _file: file })
    }
}

/// Whether the marker file at `marker` (made by [`FolderMark::create`]) has lost its owner:
/// it can be opened and locked. `false` when it is held, missing or cannot be checked.
pub fn abandoned(marker: &Path) -> bool {
    let Ok(file) = File::open(marker) else {
        return false;
    };
    // Dropping `file` releases the lock we took to check.
    file.try_lock().is_ok()
}

/// A lock path that exists must be a regular file: not a folder, a symlink (we would write
/// through it) or a device.
fn check_plain_file(path: &Path) -> Result<(), UserError> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(()); // absent: it is created
    };
    let what = if meta.is_dir() {
        "is a directory, not a lock file"
    } else if meta.file_type().is_symlink() {
        "is a symbolic link, not a lock file"
    } else if !meta.is_file() {
        "is not a regular file, so it cannot be a lock file"
    } else {
        return Ok(());
    };
    Err(UserError::file(
        path,
        format!("{what}; remove it, or choose another output"),
    ))
}

/// Open (creating) the lock file without truncating it (a holder's pid stays readable) and
/// without following a symlink planted between the check and the open.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW);
    }
    opts.open(path)
}

/// The pid written in a held lock file. The holder writes it right after taking the lock,
/// so an empty file is read again for a moment.
fn holder_pid(path: &Path) -> Option<u32> {
    for _ in 0..20 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // The first word: also reads the `PID START` files of earlier versions.
        if let Some(pid) = text.split_whitespace().next().and_then(|w| w.parse().ok()) {
            return Some(pid);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// Whether `path` names the file `file` has open (the same [`super::file_id::identity`]:
/// device and inode); where the platform has no such identity, whether `path` is a file.
fn is_same_file(file: &File, path: &Path) -> bool {
    use super::file_id::identity;
    let (Ok(a), Ok(b)) = (file.metadata(), std::fs::symlink_metadata(path)) else {
        return cfg!(not(unix)) && path.is_file();
    };
    match (identity(&a), identity(&b)) {
        (Some(a), Some(b)) => a == b,
        _ => path.is_file(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_fails_naming_the_holder_and_stale_locks_are_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let lock = OutputLock::acquire(&out).unwrap();
        let text = std::fs::read_to_string(OutputLock::path_for(&out)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
        let e = OutputLock::acquire(&out).unwrap_err().to_string();
        assert!(
            e.contains(&format!("pid {}", std::process::id())) && e.contains("r.json"),
            "{e}"
        );
        drop(lock);
        assert!(!OutputLock::path_for(&out).exists());
        // A lock file left by a process that is gone (nobody holds its lock), longer than ours.
        std::fs::write(OutputLock::path_for(&out), "999999999 123456789\n").unwrap();
        let lock = OutputLock::acquire(&out).unwrap();
        let text = std::fs::read_to_string(OutputLock::path_for(&out)).unwrap();
        assert_eq!(
            text,
            format!("{}\n", std::process::id()),
            "the dead holder's pid is replaced"
        );
        drop(lock);
        assert!(!OutputLock::path_for(&out).exists());
    }

    #[test]
    fn a_lock_path_that_is_a_directory_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        std::fs::create_dir(OutputLock::path_for(&out)).unwrap();
        let e = OutputLock::acquire(&out).unwrap_err().to_string();
        assert!(e.contains("r.json.lock") && e.contains("is a directory"), "{e}");
        assert!(OutputLock::path_for(&out).is_dir(), "the folder is left alone");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_lock_path_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        std::os::unix::fs::symlink(&victim, OutputLock::path_for(&out)).unwrap();
        let e = OutputLock::acquire(&out).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    }

    #[test]
    fn a_lock_held_elsewhere_refuses_writers_and_our_own_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        check_free(&out).unwrap();
        // A stale lock file (nobody holds it) does not refuse.
        std::fs::write(OutputLock::path_for(&out), "999999999\n").unwrap();
        check_free(&out).unwrap();
        // Our own lock: we write through it.
        let lock = OutputLock::acquire(&out).unwrap();
        check_free(&out).unwrap();
        drop(lock);
        // Held through another open file (as another process holds it), with its pid written.
        let other = File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(OutputLock::path_for(&out))
            .unwrap();
        other.try_lock().unwrap();
        std::fs::write(OutputLock::path_for(&out), "4242\n").unwrap();
        let e = check_free(&out).unwrap_err().to_string();
        assert!(
            e.contains("r.json") && e.contains("pid 4242") && e.contains("another process"),
            "{e}"
        );
        // Also through a symbolic link to the output.
        std::fs::write(&out, "{}").unwrap();
        let link = dir.path().join("link.json");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&out, &link).unwrap();
            let e = check_free(&link).unwrap_err().to_string();
            assert!(e.contains("link.json") && e.contains("r.json.lock"), "{e}");
        }
        drop(other);
        check_free(&out).unwrap();
    }

    #[test]
    fn a_folder_mark_is_held_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join(".owner");
        assert!(!abandoned(&marker), "a missing marker is not abandoned");
        let mark = FolderMark::create(&marker).unwrap();
        assert!(!abandoned(&marker), "held by us");
        assert_eq!(
            std::fs::read_to_string(&marker).unwrap().trim(),
            std::process::id().to_string()
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left");
        drop(mark);
        assert!(abandoned(&marker), "released");
        // A marker nobody ever locked (e.g. one an earlier version wrote) is abandoned too.
        std::fs::write(dir.path().join(".old"), "999999999 1\n").unwrap();
        assert!(abandoned(&dir.path().join(".old")));
    }
}
