//! Spawning one worker process per case, as the case's engine says
//! ([`crate::engine::WorkerKind`]): this binary's hidden `worker` subcommand, or the Python
//! worker ([`crate::engine::python`]) under the chosen interpreter; started in its own process group ([`crate::process`]) with the variant's variables (plus
//! a random-length padding variable, as hyperfine does) added to the environment, and with
//! `miopen_db = fresh` an empty per-case MIOpen database folder, removed afterwards. The
//! executor enforces the per-case timeout, kills the worker's whole group at the end of
//! every case (normal or not; a background child holding stderr open cannot hang the run:
//! the wait for stderr to close is bounded), keeps a tail of stderr bounded in lines and
//! bytes, checks every result against the spec, forwards phase markers, collects MIOpen's log lines ([`super::miopen`]), and
//! classifies a worker that died without a result. It owns the run's scratch folder: a
//! random name with our prefix, owner-only permissions (tempfile), a marker file held locked
//! while we run ([`FolderMark`]), removed when the executor is dropped; folders of runs that
//! died (SIGKILL, power loss) are removed by the next run ([`remove_stale_scratch`]). A SIGINT/SIGTERM
//! ([`super::interrupt`]) kills the worker in flight.
//!
//! Must not: know what a worker measures (it passes the spec through) or touch the report.
use std::collections::{BTreeMap, VecDeque};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::miopen::MiopenParser;
use crate::engine::protocol::{self, WorkerResult, WorkerSpec, PHASE_MARKER};
use crate::engine::python::{interpreter_problem, PythonWorker};
use crate::engine::WorkerKind;
use crate::lock::FolderMark;
use crate::report::{CaseStatus, MiopenLog};
use crate::values::MiopenDb;

/// Lines of worker stderr kept for the report.
pub const STDERR_TAIL_LINES: usize = 40;
/// Bytes kept of one stderr line (the rest of a longer line is dropped, marked `[...]`).
pub const STDERR_LINE_BYTES: usize = 1024;
/// How long the parent waits, once the worker's group is killed, for its stderr to close
/// (a process that left the group may hold it open); then the tail read so far is used.
const STDERR_CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Padding variable whose random length shifts the environment size between cases.
pub const PADDING_VAR: &str = "WAN_VAE_BENCH_ENV_PADDING";

/// The variables a `miopen_db = fresh` case points at its empty folder.
pub const MIOPEN_DB_VARS: [&str; 2] = ["MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR"];

/// Runs cases in worker processes.
pub struct Executor {
    /// The binary to re-invoke (normally this one).
    pub exe: PathBuf,
    /// Per-case limit.
    pub timeout: Duration,
    /// The run's scratch directory: result files and the cases' outputs
    /// (`<id>-<hash>.outputs.safetensors`, `protocol::file_stem`); removed when the executor is dropped unless `keep`.
    pub scratch: PathBuf,
    /// Keep the scratch directory (`run --keep-outputs`).
    pub keep: bool,
    /// Pass every stderr line of the workers on as [`WorkerEvent::Output`] (`run --show-output`).
    pub show_output: bool,
    /// Owns the scratch folder (removes it on drop); `None` once kept.
    dir: Option<tempfile::TempDir>,
    /// Our locked marker in the scratch folder, held while we run.
    _mark: FolderMark,
    /// The Python worker (in the scratch directory), once [`Executor::prepare_python`]
    /// wrote it.
    pub python: Option<PythonWorker>,
}

/// Name prefix of scratch folders in the temp directory.
pub const SCRATCH_PREFIX: &str = "wan-vae-bench-";
/// The marker file in a scratch folder, held locked by the owning run ([`FolderMark`]).
pub const SCRATCH_MARKER: &str = ".wan-vae-bench-owner";

impl Executor {
    /// An executor re-invoking the current binary, with a fresh scratch directory (after
    /// removing the scratch folders of dead runs).
    pub fn new(timeout: Duration) -> anyhow::Result<Executor> {
        let exe = std::env::current_exe()?;
        let tmp = std::env::temp_dir();
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
        Ok(Executor {
            exe,
            timeout,
            scratch: dir.path().to_path_buf(),
            keep: false,
            show_output: false,
            dir: Some(dir),
            _mark: mark,
            python: None,
        })
    }

    /// Write the Python worker into the scratch directory (once per run) for `interpreter`.
    pub fn prepare_python(&mut self, interpreter: String) -> anyhow::Result<()> {
        self.python = Some(PythonWorker::write(&self.scratch.join("python"), interpreter)?);
        Ok(())
    }

    /// Where the worker of case `id` saves its outputs.
    pub fn outputs_path(&self, id: &str) -> PathBuf {
        protocol::outputs_path(&self.scratch, id)
    }

    /// Run one case; `on_phase` receives the worker's phase markers. Never fails: spawn
    /// errors, crashes and timeouts become a result with the matching status.
    pub fn run(
        &self,
        spec: &WorkerSpec,
        vars: &BTreeMap<String, String>,
        unset: &[String],
        on_event: &mut dyn FnMut(WorkerEvent<'_>),
    ) -> WorkerResult {
        let result_path = protocol::result_path(&self.scratch, &spec.id);
        let _ = std::fs::remove_file(&result_path);
        if let Some(outputs) = &spec.outputs {
            let _ = std::fs::remove_file(outputs);
        }
        let mut vars = vars.clone();
        // The fresh MIOpen folder lives as long as the case (removed when dropped).
        let _fresh_db = match self.fresh_db(spec, &mut vars) {
            Ok(d) => d,
            Err(msg) => return WorkerResult::empty(CaseStatus::Failed, Some(msg), vars),
        };
        let launch = match self.launch(spec) {
            Ok(l) => l,
            Err((status, msg)) => return WorkerResult::empty(status, Some(msg), vars),
        };
        let spec_json = serde_json::to_string(spec).expect("spec serializes");
        let Launch {
            mut cmd,
            cannot_start,
            spawn_failure,
        } = launch;
        cmd.arg("worker")
            .arg("--case-json")
            .arg(&spec_json)
            .arg("--result")
            .arg(&result_path)
            .envs(&vars)
            .env(PADDING_VAR, "X".repeat((crate::shuffle::fresh_u64() % 4096) as usize))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for name in unset {
            cmd.env_remove(name);
        }
        crate::process::isolate(&mut cmd);
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return WorkerResult::empty(spawn_failure, Some(format!("{cannot_start}: {e}")), vars),
        };
        let Some(watched) = self.watch(child, on_event) else {
            let msg = "interrupted: the run received a signal and stopped this worker".to_string();
            return WorkerResult::empty(CaseStatus::Failed, Some(msg), vars);
        };
        let tail_text = watched.tail.join("\n");
        let mut result = self.outcome(watched.timed_out, watched.status, &result_path, &tail_text, &vars);
        if let Err(why) = result.check(spec) {
            let msg = format!("the worker's result is not valid: {why}{}", stderr_suffix(&tail_text));
            result = WorkerResult::empty(CaseStatus::Failed, Some(msg), vars);
        }
        result.outcome.miopen = watched.miopen;
        result
    }

    /// With `miopen_db = fresh`, the case's empty MIOpen database folder, with the variables
    /// pointing at it added to `vars`.
    fn fresh_db(&self, spec: &WorkerSpec, vars: &mut BTreeMap<String, String>) -> Result<Option<FreshDir>, String> {
        if spec.settings.knobs.miopen_db != MiopenDb::Fresh {
            return Ok(None);
        }
        let d = FreshDir::new(&self.scratch, &spec.id)
            .map_err(|e| format!("cannot create the fresh MIOpen database folder: {e:#}"))?;
        for name in MIOPEN_DB_VARS {
            vars.insert(name.to_string(), d.0.display().to_string());
        }
        Ok(Some(d))
    }

    /// How the worker of the case's engine starts, or why it cannot.
    fn launch(&self, spec: &WorkerSpec) -> Result<Launch, (CaseStatus, String)> {
        let engine = spec.settings.engine;
        match crate::engine::spec(engine).worker {
            WorkerKind::ThisBinary => Ok(Launch {
                cmd: Command::new(&self.exe),
                cannot_start: format!("cannot start worker {}", self.exe.display()),
                spawn_failure: CaseStatus::Failed,
            }),
            WorkerKind::Python { .. } => {
                let Some(py) = &self.python else {
                    let msg = format!("engine {engine}: the Python worker was not prepared");
                    return Err((CaseStatus::Failed, msg));
                };
                if let Some(problem) = interpreter_problem(&py.interpreter) {
                    return Err((
                        CaseStatus::Unsupported,
                        format!("engine {engine} needs Python: {problem}"),
                    ));
                }
                // A runnable-looking interpreter that does not start (a broken venv link, a
                // bad `#!`) is `unsupported` too.
                Ok(Launch {
                    cmd: py.command(),
                    cannot_start: format!("engine {engine}: cannot run the Python interpreter {}", py.interpreter),
                    spawn_failure: CaseStatus::Unsupported,
                })
            }
        }
    }

    /// Wait for the worker: forward its phase markers, keep its stderr tail and MIOpen log
    /// lines, kill its group at the timeout. `None` when a signal stopped the run (the
    /// worker is killed).
    fn watch(&self, mut child: std::process::Child, on_event: &mut dyn FnMut(WorkerEvent<'_>)) -> Option<Watched> {
        let stderr = child.stderr.take().expect("stderr piped");
        let (tx, rx) = mpsc::channel::<Line>();
        let (done_tx, done_rx) = mpsc::channel();
        let show = self.show_output;
        std::thread::spawn(move || {
            let _ = done_tx.send(read_stderr(stderr, &tx, show));
        });
        let forward = |rx: &mpsc::Receiver<Line>, on_event: &mut dyn FnMut(WorkerEvent<'_>)| {
            while let Ok(line) = rx.try_recv() {
                match &line {
                    Line::Phase(p) => on_event(WorkerEvent::Phase(p)),
                    Line::Output(o) => on_event(WorkerEvent::Output(o)),
                }
            }
        };
        let deadline = Instant::now() + self.timeout;
        let mut timed_out = false;
        let status = loop {
            forward(&rx, on_event);
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(_) => break None,
            }
            if super::interrupt::received().is_some() {
                crate::process::kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                crate::process::kill_group(child.id());
                let _ = child.kill();
                break child.wait().ok();
            }
            std::thread::sleep(Duration::from_millis(25));
        };
        // The case is over, however it ended: nothing the worker started outlives it (a
        // background child holding stderr open would otherwise keep the reader waiting).
        crate::process::kill_group(child.id());
        // And what left the group (`setsid`): with the worker reaped, any child of ours is one.
        crate::process::kill_inherited();
        let (tail, miopen) = done_rx.recv_timeout(STDERR_CLOSE_WAIT).unwrap_or_default();
        forward(&rx, on_event);
        Some(Watched {
            timed_out,
            status,
            tail,
            miopen,
        })
    }

    /// The case's result: the worker's file, or what its death says.
    fn outcome(
        &self,
        timed_out: bool,
        status: Option<ExitStatus>,
        result_path: &Path,
        tail_text: &str,
        vars: &BTreeMap<String, String>,
    ) -> WorkerResult {
        if timed_out {
            let msg = format!(
                "timed out after {}; worker killed{}",
                crate::format::seconds(self.timeout.as_secs_f64()),
                stderr_suffix(tail_text)
            );
            return WorkerResult::empty(CaseStatus::Timeout, Some(msg), vars.clone());
        }
        match read_result(result_path) {
            Some(Ok(mut result)) => {
                let _ = std::fs::remove_file(result_path);
                let o = &mut result.outcome;
                if o.status != CaseStatus::Ok && !tail_text.is_empty() {
                    let base = o.error.take().unwrap_or_default();
                    o.error = Some(format!("{base}{}", stderr_suffix(tail_text)));
                }
                result
            }
            Some(Err(why)) => {
                let _ = std::fs::remove_file(result_path);
                let msg = format!(
                    "the worker's result file is not a valid result: {why}{}",
                    stderr_suffix(tail_text)
                );
                WorkerResult::empty(CaseStatus::Failed, Some(msg), vars.clone())
            }
            None => {
                let (status, why) = classify_death(status, tail_text);
                WorkerResult::empty(status, Some(format!("{why}{}", stderr_suffix(tail_text))), vars.clone())
            }
        }
    }
}

/// How a case's worker starts: its command, and what a failure to start it says and is
/// recorded as.
struct Launch {
    cmd: Command,
    /// The error's start, naming the program (`cannot start worker PATH`).
    cannot_start: String,
    spawn_failure: CaseStatus,
}

/// What a running worker tells the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEvent<'a> {
    /// A phase marker (`load`, `encode 2/3`, ...).
    Phase(&'a str),
    /// A line of its stderr, with [`Executor::show_output`].
    Output(&'a str),
}

/// A stderr line as the reader thread passes it on.
enum Line {
    Phase(String),
    Output(String),
}

/// What watching a worker to its end gave.
struct Watched {
    timed_out: bool,
    status: Option<ExitStatus>,
    /// The last [`STDERR_TAIL_LINES`] lines of stderr that were neither phase markers nor
    /// MIOpen log lines.
    tail: Vec<String>,
    miopen: Option<MiopenLog>,
}

/// Read a worker's stderr to its end: phase markers go to `phases`, MIOpen's solver and
/// command lines to the log (not the tail: MIOpen logs a lot at level 5, which would push
/// the real error out of the tail), the rest to the tail.
fn read_stderr(
    stderr: impl std::io::Read,
    lines_out: &mpsc::Sender<Line>,
    show: bool,
) -> (Vec<String>, Option<MiopenLog>) {
    let mut tail = VecDeque::new();
    let mut miopen = MiopenParser::default();
    let mut lines = std::io::BufReader::new(stderr);
    let mut buf = Vec::new();
    while matches!(read_line_capped(&mut lines, &mut buf, STDERR_LINE_BYTES), Ok(n) if n > 0) {
        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
        buf.clear();
        if let Some(p) = line.strip_prefix(PHASE_MARKER) {
            let _ = lines_out.send(Line::Phase(p.to_string()));
            continue;
        }
        if show {
            let _ = lines_out.send(Line::Output(line.clone()));
        }
        if miopen.line(&line) {
            continue;
        }
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
    (tail.into_iter().collect(), miopen.finish())
}

/// Read one line (through `\n`) into `buf`, keeping at most `cap` bytes of it (a longer
/// line ends in `[...]`); the number of bytes consumed, 0 at the end.
fn read_line_capped(r: &mut impl BufRead, buf: &mut Vec<u8>, cap: usize) -> std::io::Result<usize> {
    let mut consumed = 0;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(consumed);
        }
        let (take, end) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        if take > room && !buf.ends_with(b"[...]") {
            buf.extend_from_slice(b"[...]");
        }
        r.consume(take);
        consumed += take;
        if end {
            return Ok(consumed);
        }
    }
}

/// A case's empty MIOpen database folder, removed when dropped.
struct FreshDir(PathBuf);

impl FreshDir {
    fn new(scratch: &Path, id: &str) -> anyhow::Result<FreshDir> {
        let dir = scratch.join(format!("miopen-{}", protocol::file_stem(id)));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(FreshDir(dir))
    }
}

impl Drop for FreshDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Executor {
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
        if is_file && crate::lock::abandoned(&marker) && std::fs::remove_dir_all(&path).is_ok() {
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

fn stderr_suffix(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("\n--- worker stderr (last {STDERR_TAIL_LINES} lines) ---\n{tail}")
    }
}

/// Largest result file read (a result is a few kilobytes).
const RESULT_MAX_BYTES: u64 = 64 << 20;

/// `None` when there is no result file; `Some(Err)` when it is not a valid result (too
/// large, not UTF-8, not JSON, or JSON of another shape).
fn read_result(path: &Path) -> Option<Result<WorkerResult, String>> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > RESULT_MAX_BYTES {
        return Some(Err(format!(
            "{} bytes, more than the {RESULT_MAX_BYTES} a result may be",
            meta.len()
        )));
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return Some(Err(format!("cannot read it: {e}"))),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Some(Err("it is not valid UTF-8".into()));
    };
    Some(serde_json::from_str(&text).map_err(|e| format!("it is not a result in JSON: {e}")))
}

/// Status and message for a worker that exited without writing a result: out-of-memory
/// when stderr says so or the kernel's SIGKILL ended it (we did not: that is a timeout),
/// otherwise failed.
pub fn classify_death(status: Option<ExitStatus>, stderr_tail: &str) -> (CaseStatus, String) {
    let lower = stderr_tail.to_ascii_lowercase();
    let oom_text = lower.contains("memory allocation of") || lower.contains("out of memory");
    let how = match status {
        None => "worker vanished (no exit status)".to_string(),
        Some(s) => describe_exit(s),
    };
    if oom_text {
        return (CaseStatus::Oom, format!("out of memory: {how}"));
    }
    if signal_of(status) == Some(9) {
        return (CaseStatus::Oom, format!("{how}; probably the out-of-memory killer"));
    }
    (CaseStatus::Failed, format!("{how} without writing a result"))
}

fn describe_exit(s: ExitStatus) -> String {
    if let Some(code) = s.code() {
        return format!("worker exited with code {code}");
    }
    match signal_of(Some(s)) {
        Some(sig) => format!("worker killed by signal {sig} ({})", signal_name(sig)),
        None => format!("worker ended: {s}"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        4 => "SIGILL",
        7 => "SIGBUS",
        8 => "SIGFPE",
        _ => "signal",
    }
}

#[cfg(unix)]
fn signal_of(status: Option<ExitStatus>) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.and_then(|s| s.signal())
}

#[cfg(not(unix))]
fn signal_of(_status: Option<ExitStatus>) -> Option<i32> {
    None
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
