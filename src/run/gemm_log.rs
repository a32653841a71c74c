//! hipBLASLt's log for a case. Only a case whose worker may call hipBLASLt has one: an engine
//! that can (`EngineSpec::calls_hipblaslt`: PyTorch's, never candle) on a GPU device of a
//! machine with an AMD GPU (never the CPU); any other case records no GEMM, whatever the
//! file holds or another process writes into it. Such a case of a variant that sets
//! `HIPBLASLT_LOG_MASK` (32: the bench lines
//! that replay each GEMM) gets `HIPBLASLT_LOG_FILE` pointed into the run's scratch folder as
//! `hipblaslt-HASH-%i.log`, unless the variant or `run`'s environment names one (the user's
//! file, read the same way): hipBLASLt puts the process id for `%i` and opens the file
//! truncated, once per process, so each worker writes a file of its own (HASH names the
//! engine and environment). Each case reads, through `crate::rocm::hipblaslt`, into its
//! `hipblaslt` record, what its worker wrote while it ran:
//! - what a case reads is tied to the worker that ran it ([`WorkerId`]: its pid and start),
//!   not to the file's length: a worker's first case reads the file from its start (the
//!   worker truncated it, whatever an earlier process left there, however long), each later
//!   case from where the worker's previous case stopped ([`GemmReads`]); a case reads whole
//!   lines only (to the file's last `\n`): a line half flushed when it ended is the next
//!   case's, read whole;
//! - a file that did not change while the case ran (the same inode, length and modification
//!   time as when it started) is not the case's: nothing is read;
//! - only a regular file is read, opened without waiting (`O_NONBLOCK`): a FIFO, a device
//!   or a socket at that name is not read (a FIFO would block `run` beyond any deadline);
//! - a file named without `%i` is one every process that logs writes into (each truncating
//!   it as it starts): what another process writes there while the case runs cannot be told
//!   from the worker's lines (hipBLASLt's lines carry no process id); the run says so once,
//!   and `%i` in the name gives each worker a file of its own.
//!
//! Must not: start workers (the executor does) or read MIOpen's lines (stderr's, `crate::rocm`).
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use crate::report::HipblasltLog;

/// hipBLASLt's variables this reads.
pub const MASK_VAR: &str = "HIPBLASLT_LOG_MASK";
pub use crate::report::env::HIPBLASLT_FILE_VAR as FILE_VAR;
/// What hipBLASLt replaces by the process id in `HIPBLASLT_LOG_FILE`.
const PID: &str = "%i";

/// One worker process: its pid and when it was started (a pid may be reused by a later one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkerId {
    pub pid: u32,
    pub started: Instant,
}

/// A file's identity and state: device, inode, length, modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileState {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileState {
    fn of(m: &std::fs::Metadata) -> FileState {
        let (dev, ino) = crate::util::files::identity(m).unwrap_or((0, 0));
        FileState {
            dev,
            ino,
            len: m.len(),
            modified: m.modified().ok(),
        }
    }
}

/// Where each worker's reading of each log file stopped: (file, worker) -> (the file's
/// device and inode, the offset read to). Kept by the executor for the whole run.
#[derive(Debug, Default)]
pub struct GemmReads(HashMap<(PathBuf, WorkerId), (u64, u64, u64)>);

/// The log of one case: the file name (with `%i`) and the state of each of its existing
/// files when the case started.
#[derive(Debug)]
pub struct GemmLog {
    pattern: PathBuf,
    before: BTreeMap<PathBuf, FileState>,
}

/// Whether a case of `engine` on `device` runs in a worker that may call hipBLASLt: the
/// engine may ([`crate::engine::EngineSpec::calls_hipblaslt`]), on a GPU (`cuda:N`, which
/// ROCm's PyTorch names its devices too) of a machine with an AMD GPU.
pub fn may_call_hipblaslt(engine: crate::report::values::Engine, device: &str) -> bool {
    crate::engine::spec(engine).calls_hipblaslt
        && device.trim().to_ascii_lowercase().starts_with("cuda")
        && crate::machine::system::has_amd_gpu()
}

impl GemmLog {
    /// For a case (`spec`) whose worker may call hipBLASLt ([`may_call_hipblaslt`]) and
    /// whose environment `vars` (on top of `run`'s, less `unset`) sets `HIPBLASLT_LOG_MASK`:
    /// the log file name (the variant's `HIPBLASLT_LOG_FILE`, else `run`'s own, else one in
    /// `scratch`, added to `vars`), and the state of each of its files now. `None` for any
    /// other case: it records no GEMM.
    pub fn start(
        scratch: &Path,
        spec: &crate::engine::protocol::WorkerSpec,
        vars: &mut BTreeMap<String, String>,
        unset: &[String],
    ) -> Option<GemmLog> {
        vars.get(MASK_VAR)?;
        if !may_call_hipblaslt(spec.settings.engine, &spec.run.device) {
            return None;
        }
        Self::open(scratch, spec.settings.engine.name(), vars, unset)
    }

    /// [`GemmLog::start`] for a case of `engine` that may call hipBLASLt.
    fn open(scratch: &Path, engine: &str, vars: &mut BTreeMap<String, String>, unset: &[String]) -> Option<GemmLog> {
        vars.get(MASK_VAR)?;
        let inherited = || {
            (!unset.iter().any(|n| n == FILE_VAR))
                .then(|| std::env::var(FILE_VAR).ok())
                .flatten()
                .filter(|p| !p.is_empty())
        };
        let pattern = match vars.get(FILE_VAR).cloned().or_else(inherited) {
            Some(p) => PathBuf::from(p),
            None => {
                use sha2::Digest;
                let env: String = vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
                let digest = sha2::Sha256::digest(format!("{engine}\n{env}").as_bytes());
                let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
                let p = scratch.join(format!("hipblaslt-{hash}-{PID}.log"));
                vars.insert(FILE_VAR.to_string(), p.display().to_string());
                p
            }
        };
        if !pattern.to_string_lossy().contains(PID) {
            shared_file_note(&pattern);
        }
        let before = existing(&pattern)
            .into_iter()
            .filter_map(|p| Some((p.clone(), FileState::of(&std::fs::metadata(&p).ok()?))))
            .collect();
        Some(GemmLog { pattern, before })
    }

    /// The GEMMs `worker` logged while the case ran; `None` when none, when no worker ran
    /// it, or when the file is missing, unchanged or not a regular file (see the module).
    pub fn read(self, worker: Option<WorkerId>, reads: &mut GemmReads) -> Option<HipblasltLog> {
        let worker = worker?;
        let path = match self.pattern.to_str() {
            Some(p) if p.contains(PID) => PathBuf::from(p.replacen(PID, &worker.pid.to_string(), 1)),
            _ => self.pattern.clone(),
        };
        let mut file = open_regular(&path)?;
        let now = FileState::of(&file.metadata().ok()?);
        if self.before.get(&path) == Some(&now) {
            return None;
        }
        let key = (path, worker);
        let offset = match reads.0.get(&key) {
            Some(&(dev, ino, end)) if (dev, ino) == (now.dev, now.ino) && end <= now.len => end,
            // The worker's first case, or a file replaced or cut since: all of it.
            _ => 0,
        };
        // Whole lines only: a line the worker had not finished writing (no `\n` yet) is left
        // for the next case, which reads it whole from here.
        let end = last_line_end(&mut file, offset, now.len).ok()?;
        reads.0.insert(key, (now.dev, now.ino, end));
        file.seek(SeekFrom::Start(offset)).ok()?;
        let mut reader = crate::rocm::LogReader::default();
        crate::rocm::read_stream(file.take(end - offset), &mut reader).ok()?;
        reader.finish().hipblaslt
    }
}

/// Say once per run that a log file named without `%i` is shared by every process that
/// logs (see the module).
fn shared_file_note(pattern: &Path) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        crate::errln!(
            "note: {FILE_VAR}={} has no %i: every process that logs hipBLASLt lines writes there, so a case \
             records what was written there while it ran, whoever wrote it; put %i in the name (hipBLASLt \
             puts the process id there) for a file per worker",
            pattern.display()
        );
    }
}

/// Where the last whole line of `file` between `from` and `to` ends (just after its `\n`);
/// `from` when none ends there. Read backwards from `to`, a piece at a time.
fn last_line_end(file: &mut std::fs::File, from: u64, to: u64) -> std::io::Result<u64> {
    const PIECE: u64 = 64 * 1024;
    let mut buf = vec![0; PIECE as usize];
    let mut end = to;
    while end > from {
        let start = end.saturating_sub(PIECE).max(from);
        let piece = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(piece)?;
        if let Some(at) = piece.iter().rposition(|&b| b == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(from)
}

/// `path` opened for reading if it is a regular file (links followed), never waiting: a
/// FIFO opened with `O_NONBLOCK` returns at once, and is then refused as not a file.
fn open_regular(path: &Path) -> Option<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The files `pattern` names now: itself, or with `%i` every file of its folder whose name
/// has its prefix and suffix.
fn existing(pattern: &Path) -> Vec<PathBuf> {
    let name = pattern.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let Some((prefix, suffix)) = name.split_once(PID) else {
        return vec![pattern.to_path_buf()];
    };
    let dir = pattern
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.len() > prefix.len() + suffix.len() && n.starts_with(prefix) && n.ends_with(suffix)
        })
        .map(|e| e.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEMM: &str = "hipblaslt-bench --api_method c -m 4096 -n 4096 -k 4096 --lda 4096 --ldb 4096 --ldc 4096 \
                        --ldd 4096  --transA T --transB T --batch_count 1 --a_type f16_r --b_type f16_r \
                        --c_type f16_r --d_type f16_r --compute_type f32_r --algo_method index \
                        --solution_index 2010";

    fn lines(n: usize) -> String {
        format!("{GEMM}\n").repeat(n)
    }

    fn start(file: &Path) -> GemmLog {
        let mut vars = BTreeMap::from([
            (MASK_VAR.to_string(), "32".to_string()),
            (FILE_VAR.to_string(), file.display().to_string()),
        ]);
        GemmLog::open(Path::new("/nonexistent"), "torch", &mut vars, &[]).unwrap()
    }

    fn count(log: Option<HipblasltLog>) -> u64 {
        log.map_or(0, |l| l.gemms.iter().map(|g| g.count).sum())
    }

    #[test]
    fn a_rewritten_file_is_read_whole_and_each_case_gets_its_workers_lines() {
        // Issue 58, item 3: the user's file held an earlier run's 3 lines; the new worker
        // truncated it and wrote 6: the case read from the old end and kept only 3.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.log");
        std::fs::write(&file, lines(3)).unwrap();
        let mut reads = GemmReads::default();
        let log = start(&file);
        let worker = WorkerId {
            pid: 4242,
            started: Instant::now(),
        };
        std::fs::write(&file, lines(6)).unwrap(); // truncated and rewritten, same inode
        assert_eq!(count(log.read(Some(worker), &mut reads)), 6);
        // The worker's next case: only what it appended since.
        let log = start(&file);
        std::fs::write(&file, lines(8)).unwrap();
        assert_eq!(count(log.read(Some(worker), &mut reads)), 2);
        // A case during which nothing was written reads nothing.
        let log = start(&file);
        assert_eq!(count(log.read(Some(worker), &mut reads)), 0);
        // A new worker (the same pid, a later start) truncates the file: read whole again.
        let next = WorkerId {
            pid: 4242,
            started: Instant::now() + std::time::Duration::from_millis(1),
        };
        let log = start(&file);
        std::fs::write(&file, lines(1)).unwrap();
        assert_eq!(count(log.read(Some(next), &mut reads)), 1);
        // A worker that never wrote leaves an earlier process's lines unread.
        let log = start(&file);
        let other = WorkerId {
            pid: 7,
            started: Instant::now(),
        };
        assert_eq!(count(log.read(Some(other), &mut reads)), 0);
    }

    #[test]
    fn a_line_half_flushed_when_a_case_ends_is_read_whole_by_the_next() {
        // Second reading of issues 58/55, 1.6: the case read to the file's length, the cut
        // line's first half was its GEMM (marked incomplete), its second half the next's.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.log");
        let worker = WorkerId {
            pid: 4242,
            started: Instant::now(),
        };
        let mut reads = GemmReads::default();
        let log = start(&file);
        let cut = GEMM.find("--transA").unwrap();
        std::fs::write(&file, format!("{}{}", lines(1), &GEMM[..cut])).unwrap();
        let first = log.read(Some(worker), &mut reads).unwrap();
        assert_eq!(first.gemms.len(), 1);
        assert_eq!(first.gemms[0].count, 1);
        assert!(!first.gemms[0].incomplete, "{first:?}");
        let log = start(&file);
        std::fs::write(&file, format!("{}{GEMM}\n", lines(1))).unwrap();
        let second = log.read(Some(worker), &mut reads).unwrap();
        assert_eq!(count(Some(second.clone())), 1, "{second:?}");
        assert!(!second.gemms[0].incomplete, "{second:?}");
        assert_eq!(second.gemms[0].solution_index, Some(2010));
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_not_read_and_never_waited_for() {
        // Issue 58, item 2: reading a FIFO blocked `run` forever after the case.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.log");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let log = start(&fifo);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let worker = WorkerId {
                pid: 1,
                started: Instant::now(),
            };
            let _ = tx.send(count(log.read(Some(worker), &mut GemmReads::default())));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(got, Ok(0), "reading the FIFO must not block");
    }
}
