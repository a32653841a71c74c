//! Running one case in a worker process ([`super::live_worker`]), leased from the run's
//! [`Pool`] for its [`Purpose`] (a measured case may reuse the worker of the last measured
//! case of its group; one per case with `run --isolate case` or `miopen_db = fresh`), as the
//! case's engine says ([`crate::engine::WorkerKind`]): this binary's hidden `worker`
//! subcommand, or the Python worker ([`crate::engine::python`]) under the chosen interpreter;
//! started in its own process group ([`crate::util::process`]) with the variant's variables (plus a
//! random-length padding variable, drawn once per worker process, as hyperfine does per
//! command) added to the environment, and with `miopen_db = fresh` an empty per-case MIOpen
//! database folder, removed afterwards. The executor enforces the per-case timeout, forwards
//! phase markers, collects MIOpen's log lines ([`super::miopen`]) and checks every result
//! against the spec.
//!
//! A worker acknowledges each case (the start marker with its id) before any work. A reused
//! worker that ends, or does not acknowledge within [`ACK_WAIT`], never started the case: the
//! worker is blamed, the case runs again in a fresh worker and `worker.replaced` says why.
//! An end after the acknowledgement is the case's ([`super::blame`]). The run's scratch
//! folder is [`super::scratch::Scratch`]'s; a SIGINT/SIGTERM ([`super::interrupt`]) kills the
//! worker in flight.
//!
//! Must not: know what a worker measures (it passes the spec through) or touch the report.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::gemm_log::{GemmReads, WorkerId};
use super::live_worker::{CaseEnd, LiveWorker, Watched};
pub use super::live_worker::{WorkerEvent, STDERR_LINE_BYTES, STDERR_TAIL_LINES};
pub use super::pool::{worker_key, Purpose};
use super::pool::{Lease, Pool};
use super::scratch::Scratch;
use crate::engine::protocol::{self, WorkerResult, WorkerSpec};
use crate::engine::python::{interpreter_problem, PythonWorker};
use crate::engine::WorkerKind;
use crate::report::values::MiopenDb;
use crate::report::{CaseStatus, WorkerUse};

/// Padding variable whose random length shifts the environment size between worker
/// processes (drawn once per process: the cases a worker runs share its environment).
pub const PADDING_VAR: &str = "WAN_VAE_BENCH_ENV_PADDING";

/// The variables a `miopen_db = fresh` case points at its empty folder.
pub use crate::report::env::FRESH_DB_VARS as MIOPEN_DB_VARS;

/// How long a reused worker, idle and reading its stdin, may take to acknowledge a case
/// before it is taken for dead (it only reads a small spec file first).
pub const ACK_WAIT: Duration = Duration::from_secs(30);

/// With `run --fault-hooks`: the reused worker's acknowledgement wait in ms (testing hook).
pub const ACK_WAIT_MS_VAR: &str = "WAN_VAE_BENCH_ACK_WAIT_MS";

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
    /// Owns the scratch folder (removed on drop unless `keep`).
    folder: Scratch,
    /// The Python worker (in the scratch directory), once [`Executor::prepare_python`]
    /// wrote it.
    pub python: Option<PythonWorker>,
    /// `run --isolate case`: every case in a worker of its own (else cases with the same
    /// [`worker_key`] share one).
    pub isolate_cases: bool,
    /// The workers.
    pool: Pool,
    /// How long a reused worker may take to acknowledge a case ([`ACK_WAIT`]).
    pub ack_wait: Duration,
    /// Where each worker's reading of its hipBLASLt log stopped.
    gemm_reads: GemmReads,
}

impl Executor {
    /// An executor re-invoking the current binary, with a fresh scratch directory (after
    /// removing the scratch folders of dead runs).
    pub fn new(timeout: Duration) -> anyhow::Result<Executor> {
        let exe = std::env::current_exe()?;
        let folder = Scratch::new()?;
        Ok(Executor {
            exe,
            timeout,
            scratch: folder.path.clone(),
            keep: false,
            show_output: false,
            folder,
            python: None,
            isolate_cases: false,
            pool: Pool::default(),
            ack_wait: ACK_WAIT,
            gemm_reads: GemmReads::default(),
        })
    }

    /// `run --fault-hooks`: the testing hooks of the executor itself ([`ACK_WAIT_MS_VAR`]).
    pub fn use_fault_hooks(&mut self) {
        let ms = std::env::var(ACK_WAIT_MS_VAR).ok().and_then(|v| v.parse::<u64>().ok());
        if let Some(ms) = ms {
            self.ack_wait = Duration::from_millis(ms);
        }
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

    /// Run one case for `purpose`; `on_event` receives the worker's phase markers. Never
    /// fails: spawn errors, crashes and timeouts become a result with the matching status.
    /// A measured case runs in the worker the last measured case of its group left (when
    /// the run shares workers), else in a new one; a preparation always in a new one, ended
    /// afterwards. A reused worker that dies or goes deaf before acknowledging the case is
    /// replaced by a fresh one, once.
    pub fn run(
        &mut self,
        spec: &WorkerSpec,
        place: &Placement<'_>,
        purpose: Purpose,
        on_event: &mut dyn FnMut(WorkerEvent<'_>),
    ) -> WorkerResult {
        let (given, unset) = (place.vars, place.unset);
        if let Some(outputs) = &spec.outputs {
            let _ = std::fs::remove_file(outputs);
        }
        let mut vars = given.clone();
        // The fresh MIOpen folder lives as long as the case (removed when dropped), and so
        // does its worker (such a case never shares one).
        let fresh_db = match self.fresh_db(spec, &mut vars) {
            Ok(d) => d,
            Err(msg) => return WorkerResult::empty(CaseStatus::Failed, Some(msg), vars),
        };
        // hipBLASLt's bench lines go to a file of the run's scratch, read back after the case.
        let gemm_log = super::gemm_log::GemmLog::start(&self.scratch, spec, &mut vars, unset);
        // The tool's own paths (those two) are not the user's stack: not in the case's `env`.
        let own: BTreeMap<String, String> = vars
            .iter()
            .filter(|(k, v)| given.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let shared = !self.isolate_cases && fresh_db.is_none();
        let timeout = place.timeout.unwrap_or(self.timeout);
        let how = How {
            purpose,
            shared,
            lane: place.lane,
            timeout,
        };
        let (mut result, worker) = self.run_in_worker(spec, &vars, unset, &how, on_event);
        drop(fresh_db);
        result.outcome.hipblaslt = gemm_log.and_then(|log| log.read(worker, &mut self.gemm_reads));
        result.outcome.env.retain(|k, v| own.get(k) != Some(v));
        result
    }

    /// [`Executor::run`] once the case's variables are set: lease a worker, send it the
    /// case, watch it; the result, and which worker ran it (none when none started).
    fn run_in_worker(
        &mut self,
        spec: &WorkerSpec,
        vars: &BTreeMap<String, String>,
        unset: &[String],
        how: &How<'_>,
        on_event: &mut dyn FnMut(WorkerEvent<'_>),
    ) -> (WorkerResult, Option<WorkerId>) {
        let (purpose, shared, timeout) = (how.purpose, how.shared, how.timeout);
        let result_path = protocol::result_path(&self.scratch, &spec.id);
        let key = worker_key(spec.settings.engine, vars, unset, how.lane);
        let spec_path = protocol::spec_path(&self.scratch, &spec.id);
        let written = serde_json::to_string(spec)
            .map_err(anyhow::Error::from)
            .and_then(|json| crate::util::files::write_atomic(&spec_path, json));
        if let Err(e) = written {
            let msg = format!("cannot write the case's spec file {}: {e:#}", spec_path.display());
            return (WorkerResult::empty(CaseStatus::Failed, Some(msg), vars.clone()), None);
        }
        let mut replaced = None;
        let (lease, watched) = loop {
            // The pool is taken out while it starts a worker through `self`.
            let mut pool = std::mem::take(&mut self.pool);
            let lease = pool.lease(&key, purpose, shared, || self.start(spec, vars, unset, key.clone()));
            self.pool = pool;
            let mut lease = match lease {
                Ok(l) => l,
                Err((status, msg)) => {
                    let _ = std::fs::remove_file(&spec_path);
                    return (WorkerResult::empty(status, Some(msg), vars.clone()), None);
                }
            };
            let reused = lease.reused();
            if let Some(why) = lease.replaced.take() {
                replaced = Some(why);
            }
            // Nothing a worker that never took the case wrote may pass for its result.
            let _ = std::fs::remove_file(&result_path);
            // A worker that already died cannot take the case (its stdin is closed): watching
            // it then tells how it ended.
            let _ = lease.worker.send(&spec_path, &result_path);
            on_event(WorkerEvent::Started(lease.worker.pid()));
            let ack_by = reused.then(|| Instant::now() + self.ack_wait.min(timeout));
            let deadline = Instant::now() + timeout;
            let watched = lease
                .worker
                .watch_case(&spec.id, deadline, ack_by, self.show_output, on_event);
            match never_started(&lease, &watched, self.ack_wait) {
                Some(why) if replaced.is_none() => {
                    let pid = lease.worker.pid();
                    let mut watched = watched;
                    lease.worker.finish_dead(&mut watched);
                    replaced = Some(format!(
                        "the reused worker (pid {pid}) never acknowledged this case: it {why}; \
                         the case ran in a fresh worker"
                    ));
                }
                _ => break (lease, watched),
            }
        };
        let _ = std::fs::remove_file(&spec_path);
        let worker = WorkerId {
            pid: lease.worker.pid(),
            started: lease.worker.spawned(),
        };
        let result = self.finish(spec, lease, watched, &result_path, vars, how, replaced);
        (result, Some(worker))
    }

    /// The case's result from how its watch ended; the worker is given back to the pool
    /// (kept only after an `ok` measured case).
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        spec: &WorkerSpec,
        lease: Lease,
        mut watched: Watched,
        result_path: &Path,
        vars: &BTreeMap<String, String>,
        how: &How<'_>,
        replaced: Option<String>,
    ) -> WorkerResult {
        let shared = how.shared;
        let cases_before = lease.cases_before;
        let mut used = WorkerUse {
            process: if cases_before == 0 { "fresh" } else { "reused" }.to_string(),
            pid: Some(lease.worker.pid()),
            cases_before,
            spawn_to_ready_s: (cases_before == 0).then_some(lease.worker.spawn_to_ready_s).flatten(),
            replaced,
            ..WorkerUse::default()
        };
        let mut alive = None;
        let (timed_out, status) = match watched.end {
            CaseEnd::Done => {
                alive = Some(lease);
                (false, None)
            }
            CaseEnd::WrongAck(ref other) => {
                let other = other.clone();
                lease.worker.finish_dead(&mut watched);
                let msg = format!(
                    "worker protocol failure: the worker acknowledged case {other:?}, not {:?}, the case it was \
                     sent; it was stopped and nothing it wrote is taken as this case's",
                    watched.id
                );
                return WorkerResult::empty(CaseStatus::Failed, Some(msg), vars.clone());
            }
            CaseEnd::Interrupted => {
                lease.worker.finish_dead(&mut watched);
                let msg = "interrupted: the run received a signal and stopped this worker".to_string();
                return WorkerResult::empty(CaseStatus::Failed, Some(msg), vars.clone());
            }
            // `NoAck` only ends a reused worker's watch, which is then replaced; should it
            // reach here, the case did not start in the time it had.
            CaseEnd::TimedOut | CaseEnd::NoAck => {
                lease.worker.finish_dead(&mut watched);
                (true, None)
            }
            CaseEnd::Exited(status) => {
                lease.worker.finish_dead(&mut watched);
                (false, status)
            }
        };
        let tail_text = watched.tail.join("\n");
        let mut result = super::blame::outcome(how.timeout, timed_out, status, result_path, &tail_text, vars);
        super::blame::explain_timeout(&mut result, spec);
        if let Err(why) = result.check(spec) {
            let msg = format!(
                "the worker's result is not valid: {why}{}",
                super::blame::stderr_suffix(&tail_text)
            );
            result = WorkerResult::empty(CaseStatus::Failed, Some(msg), vars.clone());
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
        if let Some(lease) = alive {
            let ok = result.outcome.status == CaseStatus::Ok;
            self.pool.give_back(lease, shared, ok);
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
            .env(
                PADDING_VAR,
                "X".repeat((crate::util::shuffle::fresh_u64() % 4096) as usize),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for name in unset {
            cmd.env_remove(name);
        }
        crate::util::process::isolate(&mut cmd);
        let spawned = Instant::now();
        match cmd.spawn() {
            Ok(child) => Ok(LiveWorker::new(child, spawned, key)),
            Err(e) => Err((spawn_failure, format!("{cannot_start}: {e}"))),
        }
    }

    /// End the kept workers (the run is over).
    pub fn end_worker(&mut self) {
        self.pool.end();
    }

    /// Keep up to `n` workers alive between cases (one per setting of a workload in a run
    /// of rounds; 1 in blocks).
    pub fn keep_workers(&mut self, n: usize) {
        self.pool.capacity = n.max(1);
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
}

/// Why a lease's worker never started the case, when it did not: a reused worker that
/// ended, or missed its acknowledgement deadline, before acknowledging. (A fresh worker's
/// end before the acknowledgement is still the case's: a new one would fail the same way.)
fn never_started(lease: &Lease, watched: &Watched, ack_wait: Duration) -> Option<String> {
    if !lease.reused() || watched.acked {
        return None;
    }
    match &watched.end {
        // The case's own deadline can come first only when it is as short as the wait.
        CaseEnd::TimedOut => Some("did not read it before the case's deadline".to_string()),
        CaseEnd::Exited(status) => Some(match status {
            Some(s) => format!("ended ({s})"),
            None => "ended".to_string(),
        }),
        CaseEnd::NoAck => Some(format!(
            "did not read it within {}",
            crate::util::format::seconds(ack_wait.as_secs_f64())
        )),
        _ => None,
    }
}

/// Where a case runs: the variables its env variant sets and removes, its lane (what else
/// keeps it from sharing a worker: `super::rounds::lane`), and its time limit when not the
/// run's (a case's later visits in a run of rounds get what its earlier ones left).
pub struct Placement<'a> {
    pub vars: &'a BTreeMap<String, String>,
    pub unset: &'a [String],
    pub lane: &'a str,
    pub timeout: Option<Duration>,
}

/// How one lease is run: its purpose, whether its worker may be shared, its lane and limit.
struct How<'a> {
    purpose: Purpose,
    shared: bool,
    lane: &'a str,
    timeout: Duration,
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
        self.folder.keep = self.keep;
    }
}
