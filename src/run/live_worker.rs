//! One worker process that runs cases one after another (issue 31): started with
//! `worker --session`, it reads one line per case on stdin (the spec file's path, a tab, the
//! result file's path), acknowledges it with the start marker naming the case (before any
//! work: issue 37), runs it, writes the result file and prints the done marker on stderr; it
//! prints the ready marker once, when it is ready for its first case, and ends at the end of
//! stdin. [`LiveWorker`] owns the process, its stdin, and a thread that reads its
//! stderr into lines ([`Line`]); [`LiveWorker::watch_case`] waits for one case to end (done,
//! the process gone, the timeout, a signal), keeping that case's stderr tail and MIOpen log.
//!
//! Must not: decide which cases share a worker, or read results (the executor does both).
use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::engine::protocol::{DONE_MARKER, PHASE_MARKER, READY_MARKER, START_MARKER};
use crate::report::MiopenLog;
use crate::rocm::miopen::MiopenParser;

/// Lines of worker stderr kept for the report, per case.
pub const STDERR_TAIL_LINES: usize = 40;
/// Bytes kept of one stderr line (the rest of a longer line is dropped, marked `[...]`).
pub const STDERR_LINE_BYTES: usize = 1024;

/// What a running worker tells the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEvent<'a> {
    /// The case was sent to the worker process with this id (again, if a reused worker
    /// that never took it was replaced).
    Started(u32),
    /// A phase marker (`load`, `encode 2/3`, ...).
    Phase(&'a str),
    /// A line of its stderr, with `Executor::show_output`.
    Output(&'a str),
    /// The worker said the case is done (its result file is written; it is still alive).
    Done,
}

/// How long the parent waits, once a worker is gone, for its stderr to close (a process
/// that left the group may hold it open); then the tail read so far is used.
pub const STDERR_CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How long a worker asked to end (its stdin closed) may take before its group is killed.
const END_WAIT: Duration = Duration::from_secs(3);

/// A stderr line as the reader thread passes it on.
enum Line {
    Ready,
    /// The worker took a case (its id).
    Start(String),
    Done,
    Phase(String),
    Text(String),
}

/// How a case's wait ended.
pub enum CaseEnd {
    /// The worker said the case is done (its result file is written); it is still running.
    Done,
    /// The process ended before saying so.
    Exited(Option<ExitStatus>),
    /// Past the case's deadline: the process was killed.
    TimedOut,
    /// The worker did not acknowledge the case by the acknowledgement deadline: the
    /// process was killed before it started the case.
    NoAck,
    /// A signal stopped the run: the process was killed.
    Interrupted,
    /// The worker's start marker named another case (this id): a protocol failure; the
    /// process was killed and nothing it wrote is taken as the case's.
    WrongAck(String),
}

/// What watching one case gave besides how it ended.
pub struct Watched {
    pub end: CaseEnd,
    /// Whether the worker acknowledged the case (its start marker named the case's id):
    /// an end before that is the worker's, not the case's.
    pub acked: bool,
    /// The case's id.
    pub id: String,
    /// The case's last [`STDERR_TAIL_LINES`] stderr lines that were neither markers nor
    /// MIOpen log lines.
    pub tail: Vec<String>,
    pub miopen: Option<MiopenLog>,
}

/// A running worker process.
pub struct LiveWorker {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Line>,
    spawned: Instant,
    /// Seconds from the spawn to the ready marker, once seen.
    pub spawn_to_ready_s: Option<f64>,
    /// Cases this process has run (finished or not).
    pub cases_run: usize,
    /// The grouping key it was started for (`pool::worker_key`).
    pub key: String,
    /// The id in the last start marker it printed (the case it acknowledged).
    started: Option<String>,
}

impl LiveWorker {
    /// Take over a freshly spawned worker (stdin and stderr piped).
    pub fn new(mut child: Child, spawned: Instant, key: String) -> LiveWorker {
        // Another worker's end (`process::kill_inherited`) must not take this one with it.
        crate::util::process::spare(child.id());
        let stdin = child.stdin.take();
        let stderr = child.stderr.take().expect("stderr piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_stderr(stderr, &tx));
        LiveWorker {
            child,
            stdin,
            rx,
            spawned,
            spawn_to_ready_s: None,
            cases_run: 0,
            key,
            started: None,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// When it was spawned (with its pid, which worker process this is).
    pub fn spawned(&self) -> Instant {
        self.spawned
    }

    /// How the process ended, once it has (`None` while it runs).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Whether the process is still running (a worker that died between cases takes no
    /// further case).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Ask the worker for one case. `Err` when its stdin is closed (the process is gone).
    /// What it printed since its last case ended (between cases) is dropped first, so that
    /// the case's tail holds only its own lines.
    pub fn send(&mut self, spec_path: &Path, result_path: &Path) -> std::io::Result<()> {
        while let Ok(line) = self.rx.try_recv() {
            if matches!(line, Line::Ready) {
                self.spawn_to_ready_s
                    .get_or_insert(self.spawned.elapsed().as_secs_f64());
            }
        }
        let stdin = self.stdin.as_mut().ok_or(std::io::ErrorKind::BrokenPipe)?;
        let line = format!("{}\t{}\n", spec_path.display(), result_path.display());
        stdin.write_all(line.as_bytes())?;
        stdin.flush()
    }

    /// Wait for the case `id` just sent to end: forward its phase markers (and, with `show`,
    /// its other lines), keep its tail, kill the whole group at `deadline`, on a signal, or
    /// at `ack_by` when the worker has not acknowledged the case by then.
    pub fn watch_case(
        &mut self,
        id: &str,
        deadline: Instant,
        ack_by: Option<Instant>,
        show: bool,
        on_event: &mut dyn FnMut(WorkerEvent<'_>),
    ) -> Watched {
        self.cases_run += 1;
        let mut tail = VecDeque::new();
        let mut miopen = MiopenParser::default();
        let mut closed = false;
        self.started = None;
        let acked = |w: &LiveWorker| w.started.as_deref() == Some(id);
        let end = loop {
            match self.rx.recv_timeout(Duration::from_millis(5)) {
                // A worker that prints without pause still meets the checks below (its
                // deadline, a signal): no `continue` here.
                Ok(line) => {
                    let done = self.take(line, show, &mut tail, &mut miopen, on_event);
                    // Ids are compared exactly: a worker that names another case is not
                    // working on this one, whatever it writes next.
                    if let Some(other) = self.started.as_deref().filter(|s| *s != id) {
                        let other = other.to_string();
                        self.kill();
                        break CaseEnd::WrongAck(other);
                    }
                    if done {
                        break CaseEnd::Done;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => closed = true,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // What it printed before it ended, up to the done marker, counts; and a
                // start marker naming another case, read only now (the exit was seen before
                // the line: a busy machine), fails the case as it would have on time.
                let done = self.drain(show, &mut tail, &mut miopen, on_event);
                if let Some(other) = self.started.as_deref().filter(|s| *s != id) {
                    break CaseEnd::WrongAck(other.to_string());
                }
                break if done {
                    CaseEnd::Done
                } else {
                    CaseEnd::Exited(Some(status))
                };
            }
            if crate::util::interrupt::received().is_some() {
                self.kill();
                break CaseEnd::Interrupted;
            }
            // The acknowledgement deadline first: a deaf worker is the worker's failure even
            // when the case's own deadline is as short.
            if !acked(self) && ack_by.is_some_and(|t| Instant::now() >= t) {
                self.kill();
                break CaseEnd::NoAck;
            }
            if Instant::now() >= deadline {
                self.kill();
                break CaseEnd::TimedOut;
            }
            if closed {
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        Watched {
            end,
            acked: acked(self),
            id: id.to_string(),
            tail: tail.into_iter().collect(),
            miopen: miopen.finish(),
        }
    }

    /// Handle one line; `true` for the done marker.
    fn take(
        &mut self,
        line: Line,
        show: bool,
        tail: &mut VecDeque<String>,
        miopen: &mut MiopenParser,
        on_event: &mut dyn FnMut(WorkerEvent<'_>),
    ) -> bool {
        match line {
            Line::Ready => {
                self.spawn_to_ready_s
                    .get_or_insert(self.spawned.elapsed().as_secs_f64());
            }
            Line::Done => {
                on_event(WorkerEvent::Done);
                return true;
            }
            Line::Start(id) => self.started = Some(id),
            Line::Phase(p) => on_event(WorkerEvent::Phase(&p)),
            Line::Text(t) => {
                if show {
                    on_event(WorkerEvent::Output(&t));
                }
                // A progress bar's `\r` may glue MIOpen's lines to its own: each part is read.
                let mut consumed = false;
                for part in t.split('\r').filter(|p| !p.trim().is_empty()) {
                    consumed |= miopen.line(part);
                }
                if !consumed {
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(t);
                }
            }
        }
        false
    }

    /// The lines of a process that ended, until its stderr closes (at most
    /// [`STDERR_CLOSE_WAIT`]); `true` when they hold the done marker.
    fn drain(
        &mut self,
        show: bool,
        tail: &mut VecDeque<String>,
        miopen: &mut MiopenParser,
        on_event: &mut dyn FnMut(WorkerEvent<'_>),
    ) -> bool {
        // Nothing it started outlives it (a background child holding stderr open would
        // otherwise keep the reader waiting).
        self.kill();
        let until = Instant::now() + STDERR_CLOSE_WAIT;
        let mut done = false;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(line) => done |= self.take(line, show, tail, miopen, on_event),
                Err(_) => break,
            }
        }
        done
    }

    /// Kill the worker's group and reap it, and any child of ours that left the group.
    fn kill(&mut self) {
        crate::util::process::kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        crate::util::process::unspare(self.child.id());
        crate::util::process::kill_inherited();
    }

    /// End the worker: close its stdin (it ends at the end of its input), wait a little,
    /// then kill whatever of its group is left.
    pub fn end(mut self) {
        self.stdin = None;
        let until = Instant::now() + END_WAIT;
        while Instant::now() < until {
            if !matches!(self.child.try_wait(), Ok(None)) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill();
    }

    /// End a worker whose case failed or timed out, collecting what is left of its stderr
    /// (its tail after it was killed); the process is gone afterwards.
    pub fn finish_dead(mut self, watched: &mut Watched) {
        let mut tail: VecDeque<String> = std::mem::take(&mut watched.tail).into();
        let mut miopen = MiopenParser::default();
        self.drain(false, &mut tail, &mut miopen, &mut |_| {});
        watched.tail = tail.into_iter().collect();
        // A start marker read only now (printed just before the end) still counts.
        watched.acked |= self.started.as_deref() == Some(watched.id.as_str());
    }
}

/// Read a worker's stderr to its end, line by line (each capped at [`STDERR_LINE_BYTES`]),
/// sending markers and text to the watcher; the channel closes at the end.
fn read_stderr(stderr: impl std::io::Read, lines_out: &mpsc::Sender<Line>) {
    let mut lines = std::io::BufReader::new(stderr);
    let mut buf = Vec::new();
    while matches!(read_line_capped(&mut lines, &mut buf, STDERR_LINE_BYTES), Ok(n) if n > 0) {
        // Only the line's end goes: a case id may end in a space (`--env-var 'X=a '`).
        let text = String::from_utf8_lossy(&buf);
        let line = text
            .strip_suffix('\n')
            .map_or(&*text, |l| l.strip_suffix('\r').unwrap_or(l))
            .to_string();
        buf.clear();
        let msg = if line == READY_MARKER {
            Line::Ready
        } else if line == DONE_MARKER {
            Line::Done
        } else if let Some(id) = line.strip_prefix(START_MARKER) {
            Line::Start(id.to_string())
        } else if let Some(p) = line.strip_prefix(PHASE_MARKER) {
            Line::Phase(p.to_string())
        } else {
            Line::Text(line)
        };
        if lines_out.send(msg).is_err() {
            return;
        }
    }
}

/// Read one line (through `\n`) into `buf`, keeping at most `cap` bytes of it (a longer
/// line ends in `[...]`); the number of bytes consumed, 0 at the end.
pub fn read_line_capped(r: &mut impl BufRead, buf: &mut Vec<u8>, cap: usize) -> std::io::Result<usize> {
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
