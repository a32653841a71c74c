//! Reading the user's files with a bound, the same way everywhere: [`bytes`] and [`text`]
//! read a whole file, [`check_file`] checks one that another program will read (the Python
//! worker). Errors name the file, what it is and the limit.
//!
//! The rules:
//! - a regular file is read when its size (from its metadata, before reading) is within the
//!   limit; it is read with the same bound, in case it grows meanwhile;
//! - a FIFO (`compare <(cat a.json) b.json`, `--input /dev/stdin` in a pipe) is read once, and
//!   refused as soon as it sends more than the limit;
//! - anything else (a device such as `/dev/zero` or `/dev/urandom`, a folder, a socket) is
//!   refused before it is opened: it may never end.
//!
//! The limits: [`MAX_REPORT_BYTES`] (256 MiB) for a report; for a tensor file read into
//! memory (`run --input`, `validate --cases`, see [`tensor_file`]) the smaller of
//! [`MAX_TENSOR_FILE_BYTES`] (16 GiB: a clip of 241 frames at 1920x1080 in f32 is 6 GiB, twice
//! that in f64) and half the memory this process may still use, since its values are copied
//! once more after reading.
//!
//! Must not: parse what it reads (JSON, safetensors, .npy are the callers' business).
use std::io::Read;
use std::path::Path;

use crate::util::error::UserError;

/// Largest report `compare`, `merge` and `plot` read (a report of 10,000 cases is ~50 MiB).
pub const MAX_REPORT_BYTES: u64 = 256 << 20;

/// Largest tensor file read into memory: `run --input`, `validate --cases`.
pub const MAX_TENSOR_FILE_BYTES: u64 = 16 << 30;

/// How `path` may be read: `Some(size)` for a regular file within `limit`, `None` for a
/// FIFO when `fifo` allows it; anything else is refused, naming `what` (e.g. `report`).
fn readable(path: &Path, what: &str, limit: u64, fifo: bool) -> Result<Option<u64>, UserError> {
    let meta = std::fs::metadata(path).map_err(|e| UserError::file(path, format!("cannot read the {what}: {e}")))?;
    if meta.is_file() {
        if meta.len() > limit {
            return Err(too_big(path, what, &format!("is {}", size_text(meta.len())), limit));
        }
        return Ok(Some(meta.len()));
    }
    if fifo && is_fifo(&meta) {
        return Ok(None);
    }
    let allowed = if fifo {
        "a regular file or a FIFO"
    } else {
        "a regular file"
    };
    let endless = if meta.is_dir() { "" } else { " (it may never end)" };
    Err(UserError::file(
        path,
        format!(
            "the {what} is {}, not a regular file; refusing to read it{endless}: expected {allowed}",
            kind(&meta)
        ),
    ))
}

fn too_big(path: &Path, what: &str, size: &str, limit: u64) -> UserError {
    UserError::file(
        path,
        format!(
            "the {what} {size}, over the limit of {} for a {what}; refusing to read it",
            size_text(limit)
        ),
    )
}

/// Read all of `path` (a regular file or a FIFO), at most `limit` bytes.
pub fn bytes(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, UserError> {
    let size = readable(path, what, limit, true)?;
    let cannot = |e: std::io::Error| UserError::file(path, format!("cannot read the {what}: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    // The file opened may not be the one checked (a rename in between): check it again.
    let meta = file.metadata().map_err(cannot)?;
    if !(meta.is_file() || is_fifo(&meta)) {
        return Err(UserError::file(
            path,
            format!("the {what} is {}, not a regular file; refusing to read it", kind(&meta)),
        ));
    }
    let mut data = Vec::new();
    if let Some(n) = size.filter(|_| meta.is_file()) {
        // A hint only; `try_reserve` so that an unusual size is an error, not an abort.
        data.try_reserve_exact(n.min(meta.len()) as usize).map_err(|e| {
            UserError::file(
                path,
                format!("cannot read the {what}: no memory for {}: {e}", size_text(n)),
            )
        })?;
    }
    file.take(limit + 1).read_to_end(&mut data).map_err(cannot)?;
    if data.len() as u64 > limit {
        let how = if meta.is_file() {
            "grew past"
        } else {
            "(a FIFO) went on past"
        };
        return Err(UserError::file(
            path,
            format!(
                "the {what} {how} the limit of {} for a {what}; refusing to read more",
                size_text(limit)
            ),
        ));
    }
    Ok(data)
}

/// The bound for a tensor file read into memory: the smaller of [`MAX_TENSOR_FILE_BYTES`] and
/// half of [`crate::util::memory::memory_headroom`], with the phrase that explains it.
pub fn tensor_limit() -> (u64, String) {
    match crate::util::memory::memory_headroom() {
        Some((room, what)) if room / 2 < MAX_TENSOR_FILE_BYTES => {
            (room / 2, format!("half of the {} {what}", size_text(room)))
        }
        _ => (MAX_TENSOR_FILE_BYTES, "the most the tool reads".to_string()),
    }
}

/// Read a tensor file (`what`: `input file`, `cases file`) with [`bytes`], bounded by
/// [`tensor_limit`]: a FIFO that never ends stops there, not when memory runs out.
pub fn tensor_file(path: &Path, what: &str) -> Result<Vec<u8>, UserError> {
    let (limit, why) = tensor_limit();
    bytes(path, what, limit).map_err(|e| match e {
        UserError::File { path, message } if message.contains("limit of") => {
            UserError::file(path, format!("{message} ({why})"))
        }
        e => e,
    })
}

/// Read `path` as UTF-8 text (see [`bytes`]).
pub fn text(path: &Path, what: &str, limit: u64) -> Result<String, UserError> {
    String::from_utf8(bytes(path, what, limit)?).map_err(|e| {
        UserError::file(
            path,
            format!(
                "the {what} is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Check that `path` is a regular file within `limit` that another program (the Python
/// worker) may read: a FIFO is refused too (it could be read only once).
pub fn check_file(path: &Path, what: &str, limit: u64) -> Result<(), UserError> {
    readable(path, what, limit, false).map(|_| ())
}

#[cfg(unix)]
fn is_fifo(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::Metadata) -> bool {
    false
}

/// What a file that is not a regular file is, in words.
pub fn kind(m: &std::fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
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

/// `300 MiB`, `16 GiB`, `1.5 KiB`, `12 bytes`.
pub fn size_text(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if n >= unit {
            let v = n as f64 / unit as f64;
            return if n.is_multiple_of(unit) {
                format!("{} {name}", n / unit)
            } else {
                format!("{v:.1} {name}")
            };
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_within_the_limit_and_refused_beyond() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "0123456789").unwrap();
        assert_eq!(bytes(&p, "report", 10).unwrap(), b"0123456789");
        let e = bytes(&p, "report", 9).unwrap_err().to_string();
        assert!(
            e.contains("a.json") && e.contains("is 10 bytes") && e.contains("limit of 9 bytes"),
            "{e}"
        );
        let e = text(dir.path(), "report", 9).unwrap_err().to_string();
        assert!(e.contains("is a folder, not a regular file"), "{e}");
        std::fs::write(&p, [b'a', 0xff]).unwrap();
        let e = text(&p, "report", 9).unwrap_err().to_string();
        assert!(e.contains("not UTF-8 text (invalid byte at offset 1)"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_refused_before_reading() {
        let e = bytes(Path::new("/dev/zero"), "cases file", 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("is a character device, not a regular file"),
            "{e}"
        );
        let e = check_file(Path::new("/dev/null"), "cases file", 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a regular file"), "{e}");
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size_text(256 << 20), "256 MiB");
        assert_eq!(size_text(300 << 20), "300 MiB");
        assert_eq!(size_text(1536), "1.5 KiB");
        assert_eq!(size_text(131072), "128 KiB");
        assert_eq!(size_text(7), "7 bytes");
    }
}
