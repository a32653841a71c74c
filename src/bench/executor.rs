//! Running cases in worker processes ([`super::live_worker`]): one per group of cases that may share one
//! ([`worker_key`]; one per case with `run --isolate case` or `miopen_db = fresh`), as the case's engine says
//! ([`crate::engine::WorkerKind`]): this binary's hidden `worker` subcommand, or the Python
//! worker ([`crate::engine::python`]) under the chosen interpreter; started in its own process group ([`crate::process`]) with the variant's variables (plus
//! a random-length padding variable, as hyperfine does) added to the environment, and with
//! `miopen_db = fresh` an empty per-case MIOpen database folder, removed afterwards. The
//! executor enforces the per-case timeout, kills a worker's whole group when the worker ends
//! (its group is over, its case failed or timed out, or the run stops; a background child
//! holding stderr open cannot hang the run: the wait for stderr to close is bounded), keeps a
//! worker for the next case of its group only after an `ok` case, keeps a tail of stderr bounded in lines and
//! bytes, checks every result against the spec, forwards phase markers, collects MIOpen's log lines ([`super::miopen`]), and
//! classifies a worker that died without a result. It owns the run's scratch folder: a
//! random name with our prefix, owner-only permissions (tempfile), a marker file held locked
//! while we run ([`FolderMark`]), removed when the executor is dropped; folders of runs that
//! died (SIGKILL, power loss) are removed by the next run ([`remove_stale_scratch`]). A SIGINT/SIGTERM
//! ([`super::interrupt`]) kills the worker in flight.
//!
//! Must not: know what a worker measures (it passes the spec through) or touch the report.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::live_worker::{CaseEnd, LiveWorker};
pub use super::live_worker::{WorkerEvent, STDERR_LINE_BYTES, STDERR_TAIL_LINES};
use crate::engine::protocol::{self, WorkerResult, WorkerSpec};
use crate::engine::python::{interpreter_problem, PythonWorker};
use crate::engine::WorkerKind;
use crate::lock::FolderMark;
use crate::report::{CaseStatus, WorkerUse};
use crate::values::MiopenDb;

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
    /// `run --isolate case`: every case in a worker of its own (else cases with the same
    /// [`worker_key`] share one).
    pub isolate_cases: bool,
    /// The worker kept for the next case of its group.
    live: Option<LiveWorker>,
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
        // The case lines on a worker's stdin are `SPEC<TAB>RESULT<NEWLINE>`: paths must hold neither.
        if dir.path().to_string_lossy().contains(['\t', '\n']) {
            anyhow::bail!(
                "the temp folder {:?} holds a tab or a newline, which the workers' case lines cannot carry; \
                 set TMPDIR to another folder",
                tmp.display().to_string()
            );
        }
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
            isolate_cases: false,
            live: None,
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

    /// Run one case; `on_event` receives the worker's phase markers. Never fails: spawn
    /// errors, crashes and timeouts become a result with the matching status. The case
    /// runs in the live worker when it was started for the same [`worker_key`] (and the run
    /// shares workers), else in a new one; a worker that crashed, hung or was killed is
    /// gone, and the next case starts another.
    pub fn run(
        &mut self,
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
        // The fresh MIOpen folder lives as long as the case (removed when dropped), and so
        // does its worker (`worker_key`: such a case never shares one).
        let fresh_db = match self.fresh_db(spec, &mut vars) {
            Ok(d) => d,
            Err(msg) => return WorkerResult::empty(CaseStatus::Failed, Some(msg), vars),
        };
        let key = worker_key(spec.settings.engine, &vars, unset);
        let shared = !self.isolate_cases && fresh_db.is_none();
        if let Some(mut w) = self.live.take() {
            // A worker that died between cases is not blamed on this one: a new one starts.
            if shared && w.key == key && w.alive() {
                self.live = Some(w);
            } else {
                w.end();
            }
        }
        let mut worker = match self.live.take() {
            Some(w) => w,
            None => match self.start(spec, &vars, unset, key) {
                Ok(w) => w,
                Err((status, msg)) => return WorkerResult::empty(status, Some(msg), vars),
            },
        };
        let spec_path = protocol::spec_path(&self.scratch, &spec.id);
        let written = serde_json::to_string(spec)
            .map_err(anyhow::Error::from)
            .and_then(|json| crate::files::write_atomic(&spec_path, json));
        if let Err(e) = written {
            worker.end();
            let msg = format!("cannot write the case's spec file {}: {e:#}", spec_path.display());
            return WorkerResult::empty(CaseStatus::Failed, Some(msg), vars);
        }
        let cases_before = worker.cases_run;
        // A worker that already died cannot take the case (its stdin is closed): watching it
        // then gives its exit status, the case's outcome.
        let _ = worker.send(&spec_path, &result_path);
        let mut watched = worker.watch_case(Instant::now() + self.timeout, self.show_output, on_event);
        let _ = std::fs::remove_file(&spec_path);
        let mut used = WorkerUse {
            process: if cases_before == 0 { "fresh" } else { "reused" }.to_string(),
            pid: Some(worker.pid()),
            cases_before,
            spawn_to_ready_s: (cases_before == 0).then_some(worker.spawn_to_ready_s).flatten(),
            ..WorkerUse::default()
        };
        // A worker that finished its case stays for the next one only when its case is `ok`
        // (after an error, an out-of-memory or a bad result its state is not trusted).
        let mut finished = None;
        let (timed_out, status) = match watched.end {
            CaseEnd::Done if shared => {
                finished = Some(worker);
                (false, None)
            }
            CaseEnd::Done => {
                worker.end();
                (false, None)
            }
            CaseEnd::Interrupted => {
                worker.finish_dead(&mut watched);
                let msg = "interrupted: the run received a signal and stopped this worker".to_string();
                return WorkerResult::empty(CaseStatus::Failed, Some(msg), vars);
            }
            CaseEnd::TimedOut => {
                worker.finish_dead(&mut watched);
                (true, None)
            }
            CaseEnd::Exited(status) => {
                worker.finish_dead(&mut watched);
                (false, status)
            }
        };
        drop(fresh_db);
        let tail_text = watched.tail.join("\n");
        let mut result = self.outcome(timed_out, status, &result_path, &tail_text, &vars);
        if let Err(why) = result.check(spec) {
            let msg = format!("the worker's result is not valid: {why}{}", stderr_suffix(&tail_text));
            result = WorkerResult::empty(CaseStatus::Failed, Some(msg), vars);
        }
        if let Some(own) = result.outcome.worker.take() {
            used.import_s = own.import_s;
            used.model_reused = own.model_reused;
        }
        let parts = [used.spawn_to_ready_s, used.import_s, result.outcome.load_s];
        if parts.iter().any(Option::is_some) {
            used.startup_s = Some(parts.iter().flatten().sum());
        }
        result.outcome.worker = Some(used);
        result.outcome.miopen = watched.miopen;
        if let Some(mut w) = finished {
            if result.outcome.status == CaseStatus::Ok && w.alive() {
                self.live = Some(w);
            } else {
                w.end();
            }
        }
        result
    }

    /// Start a worker for the case's engine with the case's environment, or say why not.
    fn start(
        &self,
        spec: &WorkerSpec,
        vars: &BTreeMap<String, String>,
        unset: &[String],
        key: String,
    ) -> Result<LiveWorker, (CaseStatus, String)> {
        let Launch {
            mut cmd,
            cannot_start,
            spawn_failure,
        } = self.launch(spec)?;
        // The scratch folder on its command line names the run it belongs to (`ps`).
        cmd.arg("worker")
            .arg("--session")
            .arg(&self.scratch)
            .envs(vars)
            .env(PADDING_VAR, "X".repeat((crate::shuffle::fresh_u64() % 4096) as usize))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for name in unset {
            cmd.env_remove(name);
        }
        crate::process::isolate(&mut cmd);
        let spawned = Instant::now();
        match cmd.spawn() {
            Ok(child) => Ok(LiveWorker::new(child, spawned, key)),
            Err(e) => Err((spawn_failure, format!("{cannot_start}: {e}"))),
        }
    }

    /// End the live worker, if any (the run is over, or the next case needs another).
    pub fn end_worker(&mut self) {
        if let Some(w) = self.live.take() {
            w.end();
        }
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

/// Which cases may share a worker process: those of the same engine (and so interpreter and
/// folder: a run has one of each per engine) with the same environment (the variant's
/// variables, those it removes) on the run's one device. MIOpen, ROCm and torch read their
/// variables once per process, so an env variant never shares a process with another.
/// Precision, tiling, chunk, knobs, size, frames and passes are set per case. (A `miopen_db
/// = fresh` case never shares: the executor gives it a worker of its own.) The scheduler
/// groups its cases by the same key ([`super::scheduler::group_by_worker`]).
pub fn worker_key(engine: crate::values::Engine, vars: &BTreeMap<String, String>, unset: &[String]) -> String {
    serde_json::json!([engine.name(), vars, unset]).to_string()
}

/// How a case's worker starts: its command, and what a failure to start it says and is
/// recorded as.
struct Launch {
    cmd: Command,
    /// The error's start, naming the program (`cannot start worker PATH`).
    cannot_start: String,
    spawn_failure: CaseStatus,
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
        self.end_worker();
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
