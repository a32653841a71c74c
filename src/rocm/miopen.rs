//! MIOpen's log, one line at a time (`MIOPEN_ENABLE_LOGGING_CMD=1`, `MIOPEN_LOG_LEVEL=5`
//! or 6): the solver each convolution ran, the distinct problems of its `MIOpenDriver`
//! commands ([`super::driver`]), the kernels it launched, its version and find mode, and
//! whether its databases were cold. Lines start with `MIOpen(HIP): `, `MIOpen(OpenCL): ` or
//! `MIOpen: ` (MIOpen 3.6), wherever on the line ([`strip_prefix`]), e.g.
//!
//! ```text
//! MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 96 --in_d 6 -H 482 ...
//! MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 1179648
//! MIOpen(HIP): Info [FillFindReturnParameters] FW Chosen Algorithm: GemmFwdRest , 4718592000, 458.512
//! ```
//!
//! A solver counts as run only from a line that says MIOpen chose or ran it (a Find's `Chosen
//! Algorithm`, immediate mode's `[Convolution...Immediate] solver_id = NAME`, the execution
//! summary's `Solver="NAME"`, the driver's own `Solution: 84/NAME`); one only evaluated,
//! listed, estimated or turned down is kept apart ([`super::solver_lines`]). A solver line is
//! tied to the command logged just before it (by order), except in a `uniq -c` count file
//! ([`MiopenParser::record`] with a count): sorting took the lines apart, so its solvers are
//! counted, never tied to a command.
//!
//! Linear in the log's length, with flat memory: at most [`MAX_COMMANDS`] distinct commands
//! and problems, [`MAX_SOLVERS`] distinct solver names and kernels are kept; the rest are
//! counted in `dropped`.
//!
//! Must not: read files or processes (callers feed it lines).
use std::collections::{BTreeMap, HashMap, HashSet};

use super::driver;
use super::dropped::{Dropped, Why};
use super::solver_lines::{chosen_solver, evaluated_solver, immediate_solver, word_after};
use crate::report::{KernelCount, MiopenLog, UnreadCommand};

/// Distinct `MIOpenDriver` commands (and problems) kept.
pub const MAX_COMMANDS: usize = 1000;
/// Distinct solver names (and kernel names) counted.
pub const MAX_SOLVERS: usize = 200;
/// Lines kept as evidence of a cold database.
const MAX_EVIDENCE: usize = 8;
/// The longest command kept (real ones are a few hundred bytes); a longer one is counted
/// in `dropped`.
pub const MAX_COMMAND_BYTES: usize = 4096;
/// The longest solver or kernel name kept.
pub const MAX_NAME_BYTES: usize = 256;

/// A command a shell line continues with `\` on the next lines.
#[derive(Debug, Default)]
struct Continued {
    text: String,
    /// The `uniq -c` count of its first line.
    count: Option<u64>,
    /// It grew past [`MAX_COMMAND_BYTES`]: its lines are still taken (they are its flags),
    /// then it is counted in `dropped`, never read with the driver's defaults for the rest.
    overlong: bool,
}

/// The most distinct error lines kept.
pub const MAX_ERRORS: usize = 50;

/// What MIOpen said beside its problems and solvers, for `logs`: its errors (`MIOpen(HIP):
/// Error [EvaluateInvokers] ...: Invalid elapsed time detected in EvaluateInvokers, ...`),
/// counted by their text without the source path, and a missing or unreadable system
/// database (`Missing system database file: gfx1151_40.kdb Performance may degrade`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MiopenNotes {
    /// The lines that said a system database is missing or unreadable, as logged (the first
    /// few).
    pub system_db: Vec<String>,
    /// `[Where] message` -> how many times it was logged, in the order first seen.
    pub errors: Vec<(String, u64)>,
}

/// What one MIOpen reader found, all of it.
#[derive(Debug, Default)]
pub struct MiopenRead {
    pub log: Option<MiopenLog>,
    pub dropped: Dropped,
    pub notes: MiopenNotes,
}

/// Collects what MIOpen logged, one line at a time.
#[derive(Debug, Default)]
pub struct MiopenParser {
    log: MiopenLog,
    seen: HashSet<String>,
    problem_at: HashMap<String, usize>,
    unread_at: HashMap<String, usize>,
    kernels: BTreeMap<String, u64>,
    /// The last command logged and not yet tied to a solver line, and its problem.
    last_command: Option<(String, Option<usize>)>,
    /// A command a shell line continues with `\` on the next lines.
    continued: Option<Continued>,
    /// Lines noted but not consumed (they stay in a worker's stderr tail): versions, errors,
    /// a missing system database.
    noted_lines: u64,
    /// MIOpen's errors and its warnings of a missing system database.
    notes: MiopenNotes,
    error_at: HashMap<String, usize>,
    /// The `uniq -c` count of the line being read; `None` for a line logged once.
    counted: Option<u64>,
    /// What was not kept, and why (`log.dropped` is its total).
    dropped: Dropped,
}

impl MiopenParser {
    /// Take one line as logged; true when it was one of MIOpen's (or a driver command) and
    /// was read.
    pub fn line(&mut self, line: &str) -> bool {
        self.record(line, None)
    }

    /// Take one record, logged `count` times when a `uniq -c` count stood before it (see
    /// [`super::paste`]); true when it was read.
    pub fn record(&mut self, line: &str, count: Option<u64>) -> bool {
        if let Some(mut c) = self.continued.take() {
            // A shell continues a command with flags; anything else (a line of another tool,
            // a counted line, a MIOpen line) ends it and is read as itself. Past
            // MAX_COMMAND_BYTES its flags are still taken, not kept: it is dropped whole.
            if count.is_none() && is_flags(line) {
                let flags = line.trim().trim_end_matches('\\').trim();
                if c.overlong || c.text.len() + 1 + flags.len() > MAX_COMMAND_BYTES {
                    c.overlong = true;
                    c.text = String::new();
                } else {
                    c.text.push(' ');
                    c.text.push_str(flags);
                }
                if line.trim_end().ends_with('\\') {
                    self.continued = Some(c);
                } else {
                    self.end_command(c);
                }
                return true;
            }
            self.end_command(c);
        }
        self.counted = count;
        let read = self.read(line);
        if read && count.is_some() {
            self.log.counted_lines += 1;
        }
        read
    }

    fn read(&mut self, line: &str) -> bool {
        // MIOpenDriver's own report of what it ran: `MIOpen Forward Conv. Algorithm: 3,
        // Solution: 15/ConvBinWinogradRxS`.
        if line.contains("Conv. Algorithm:") {
            if let Some(id_name) = word_after(line, "Solution: ") {
                let (id, name) = id_name.split_once('/').unwrap_or(("", id_name));
                // `0/UNKNOWN`: the driver could not say which solver ran.
                if id != "0" && name != "UNKNOWN" {
                    self.ran(name);
                }
                return true;
            }
        }
        let Some(rest) = strip_prefix(line) else {
            // A command as typed, echoed or quoted, without MIOpen's prefix; or a find-db
            // record (`KEY-F=Solver:time,workspace,algo;...`).
            if let Some(cmd) = driver::find(line) {
                if cmd.ends_with('\\') && self.counted.is_none() {
                    let text = cmd.trim_end_matches('\\').trim_end().to_string();
                    self.continued = Some(Continued {
                        overlong: text.len() > MAX_COMMAND_BYTES,
                        text,
                        count: None,
                    });
                } else {
                    self.command(&cmd);
                }
                return true;
            }
            return self.find_db_record(line);
        };
        // Noted, not consumed; a failed search's error names a solver too (read below).
        self.note(rest);
        if rest.contains("[LogConvolutionExecution]") {
            // The one-line summary (ROCm/rocm-libraries PR #4346): the problem and its solver.
            if let (Some(cmd), Some(solver)) = (driver::find(rest), quoted(rest, "Solver=\"")) {
                self.command(&cmd);
                self.ran(solver);
                return true;
            }
        }
        if let Some(solver) = chosen_solver(rest).or_else(|| immediate_solver(rest)) {
            self.ran(solver);
            return true;
        }
        if let Some(solver) = evaluated_solver(rest) {
            let n = self.times();
            count(&mut self.log.evaluated_solvers, solver, n, &mut self.dropped);
            return true;
        }
        if let Some(mode) = word_after(rest, "MIOPEN_FIND_MODE = ") {
            push_new(&mut self.log.find_modes, mode, 16);
            return true;
        }
        if let Some(version) = word_after(rest, "MIOpen version ") {
            push_new(&mut self.log.versions, version.trim_end_matches(','), 16);
            self.noted_lines += 1;
            // The line may say more (`ROCm MD version ..., HIP version ...`): not consumed.
            return false;
        }
        if let Some(kernel) = word_after(rest, "kernel_name = ").filter(|_| rest.contains("[run]")) {
            let n = self.times();
            count(&mut self.kernels, kernel.trim_end_matches(','), n, &mut self.dropped);
            return true;
        }
        if rest.contains("Find-db regenerating") || (rest.contains("File is unreadable") && rest.contains("db")) {
            if self.log.cold_db.len() < MAX_EVIDENCE {
                self.log.cold_db.push(rest.trim().to_string());
            }
            return true;
        }
        if rest.contains("[LogCmd") {
            if let Some(cmd) = driver::find(rest) {
                self.command(&cmd);
                return true;
            }
        }
        self.find_db_record(rest)
    }

    /// A record whose `uniq -c` count cannot be one: not read, counted as dropped.
    pub fn drop_record(&mut self, record: &str) {
        self.dropped.add(Why::UnreadableCount, Some(record));
    }

    /// What was not kept so far, and why.
    pub fn dropped(&self) -> &Dropped {
        &self.dropped
    }

    /// How many times the line being read was logged.
    fn times(&self) -> u64 {
        self.counted.unwrap_or(1)
    }

    /// The lines read that were not consumed (versions, errors, a missing system database).
    pub fn noted_lines(&self) -> u64 {
        self.noted_lines
    }

    /// An error, or a warning that a system database is missing or unreadable: noted.
    fn note(&mut self, rest: &str) {
        if rest.contains("system database file") {
            if self.notes.system_db.len() < MAX_EVIDENCE && !self.notes.system_db.iter().any(|l| l == rest.trim()) {
                self.notes.system_db.push(rest.trim().to_string());
            }
            self.noted_lines += 1;
            return;
        }
        let Some(error) = rest.strip_prefix("Error ") else {
            return;
        };
        self.noted_lines += 1;
        let text = error_text(error);
        let n = self.times();
        match self.error_at.get(&text) {
            Some(&i) => add(&mut self.notes.errors[i].1, n, &mut self.dropped),
            None if text.len() > MAX_COMMAND_BYTES => self.dropped.add(Why::TooLong, None),
            None if self.notes.errors.len() < MAX_ERRORS => {
                self.error_at.insert(text.clone(), self.notes.errors.len());
                self.notes.errors.push((text, n));
            }
            None => self.dropped.add(Why::Capped, None),
        }
    }

    /// A file ended: a command of one file is never tied to a solver line of the next.
    pub fn end_of_input(&mut self) {
        if let Some(c) = self.continued.take() {
            self.end_command(c);
        }
        self.last_command = None;
    }

    /// A continued command ended: read, or counted in `dropped` when it grew too long.
    fn end_command(&mut self, c: Continued) {
        if c.overlong {
            self.dropped.add(Why::TooLong, None);
            self.last_command = None;
        } else {
            self.counted = c.count;
            self.command(&c.text);
        }
    }

    /// A command line: kept once (to replay), its problem counted (or, when the driver could
    /// not take a value of it, the command counted as unread), and remembered for the solver
    /// line of its call (not in a count file: its solver lines are elsewhere).
    fn command(&mut self, text: &str) {
        if text.len() > MAX_COMMAND_BYTES {
            self.dropped.add(Why::TooLong, None);
            self.last_command = None;
            return;
        }
        let n = self.times();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !self.seen.contains(&text) {
            if self.seen.len() < MAX_COMMANDS {
                self.seen.insert(text.clone());
                self.log.driver_commands.push(text.clone());
            } else {
                self.dropped.add(Why::Capped, None);
            }
        }
        let problem = match driver::problem(&text) {
            Ok(p) => {
                let key = driver::key(&p);
                match self.problem_at.get(&key) {
                    Some(&i) => Some(i),
                    None if self.log.problems.len() < MAX_COMMANDS => {
                        self.problem_at.insert(key, self.log.problems.len());
                        self.log.problems.push(p);
                        Some(self.log.problems.len() - 1)
                    }
                    None => None,
                }
            }
            Err(reason) => {
                self.unread(&text, reason, n);
                None
            }
        };
        if let Some(i) = problem {
            add(&mut self.log.problems[i].count, n, &mut self.dropped);
        }
        self.last_command = self.counted.is_none().then_some((text, problem));
    }

    /// A command the driver could not take: kept as logged with what could not be read.
    fn unread(&mut self, text: &str, reason: String, n: u64) {
        match self.unread_at.get(text) {
            Some(&i) => add(&mut self.log.unread_commands[i].count, n, &mut self.dropped),
            None if self.log.unread_commands.len() < MAX_COMMANDS => {
                self.unread_at.insert(text.to_string(), self.log.unread_commands.len());
                self.log.unread_commands.push(UnreadCommand {
                    command: text.to_string(),
                    count: n,
                    reason,
                });
            }
            None => self.dropped.add(Why::Capped, None),
        }
    }

    /// A solver MIOpen chose or ran: counted, and tied to the command logged before it.
    fn ran(&mut self, solver: &str) {
        let n = self.times();
        count(&mut self.log.solvers, solver, n, &mut self.dropped);
        // A counted solver line was sorted away from its command: never tied.
        let counted = self.counted.is_some();
        let Some((command, problem)) = self.last_command.take().filter(|_| !counted) else {
            return;
        };
        // The per-problem and per-command maps take only names the global map kept, so they
        // are bounded by it.
        if !self.log.solvers.contains_key(solver) {
            return;
        }
        if let Some(i) = problem {
            *self.log.problems[i].solvers.entry(solver.to_string()).or_default() += 1;
        }
        let full = self.log.solver_by_command.len() >= MAX_COMMANDS;
        let slot = match self.log.solver_by_command.get_mut(&command) {
            Some(m) => Some(m),
            None if !full => Some(self.log.solver_by_command.entry(command).or_default()),
            None => None,
        };
        if let Some(m) = slot {
            *m.entry(solver.to_string()).or_default() += 1;
        }
    }

    /// A find-db record lists every solver a Find timed, `KEY=NAME:ms,workspace,algo;...`
    /// (or the older `content inserted: algo:NAME,ms,...`): evaluated, not run.
    fn find_db_record(&mut self, text: &str) -> bool {
        let body = if let Some(at) = text.find("content inserted: ") {
            &text[at + "content inserted: ".len()..]
        } else {
            match text.split_once('=') {
                Some((key, body)) if key.ends_with("-F") || key.ends_with("-B") || key.ends_with("-W") => body,
                _ => return false,
            }
        };
        if !body.contains("miopenConvolution") {
            return false;
        }
        let n = self.times();
        for record in body.split(';') {
            // `NAME:ms,ws,algo` or `algo:NAME,ms,...`.
            let (a, b) = record.split_once(':').unwrap_or((record, ""));
            let name = if a.starts_with("miopenConvolution") {
                b.split(',').next()
            } else {
                Some(a)
            };
            if let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) {
                count(&mut self.log.evaluated_solvers, name, n, &mut self.dropped);
            }
        }
        true
    }

    /// What was seen; `None` when no line of MIOpen's came and nothing was dropped.
    pub fn finish(self) -> Option<MiopenLog> {
        self.finish_log().0
    }

    /// [`Self::finish`], what was dropped, by reason, and what was noted.
    pub fn finish_with_reasons(self) -> MiopenRead {
        let notes = self.notes.clone();
        let (log, dropped) = self.finish_log();
        MiopenRead { log, dropped, notes }
    }

    fn finish_log(mut self) -> (Option<MiopenLog>, Dropped) {
        if let Some(c) = self.continued.take() {
            self.end_command(c);
        }
        self.log.dropped = self.dropped.total();
        settle(&mut self.log.problems, &mut []);
        let mut kernels: Vec<KernelCount> = self
            .kernels
            .into_iter()
            .map(|(name, count)| KernelCount {
                family: crate::report::profile::kernels::family(&name).to_string(),
                name,
                count,
            })
            .collect();
        settle(&mut [], &mut kernels);
        self.log.kernels = kernels;
        let l = &self.log;
        let any = l.dropped > 0
            || !l.solvers.is_empty()
            || !l.evaluated_solvers.is_empty()
            || !l.driver_commands.is_empty()
            || !l.find_modes.is_empty()
            || !l.versions.is_empty()
            || !l.kernels.is_empty()
            || !l.cold_db.is_empty();
        (any.then_some(self.log), self.dropped)
    }
}

/// An error's text without the source file it names (`.../solver_finders.cpp:373:`, a
/// runner's `HOST:C:/.../handlehip.cpp:161:`, an elided `...:`), words joined by one space,
/// so one error logged from two builds is one: `[Where] message`.
fn error_text(error: &str) -> String {
    let is_path = |w: &str| {
        w == "...:"
            || [".cpp:", ".hpp:", ".h:", ".c:"].iter().any(|ext| {
                w.rfind(ext).is_some_and(|at| {
                    let after = &w[at + ext.len()..];
                    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
                    digits > 0 && &after[digits..] == ":"
                })
            })
    };
    error
        .split_whitespace()
        .filter(|w| !is_path(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A continuation of a shell command: the line starts with a flag (`-n 1`, `--in_d 6`).
fn is_flags(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with('-') && t[1..].starts_with(|c: char| !c.is_ascii_digit() && !c.is_whitespace())
}

/// What counts give, once the counts are final (one log read, or several cases' summed):
/// each problem's solver, the one its calls ran most often (ties: the first by name), and
/// that solver's family; the kernels most launched first (ties by name).
pub fn settle(problems: &mut [crate::report::ConvProblem], kernels: &mut [KernelCount]) {
    for p in problems {
        let best = p.solvers.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)));
        p.solver = best.map(|(name, _)| name.clone());
        p.solver_family = p
            .solver
            .as_deref()
            .map(|s| crate::report::profile::kernels::family(s).to_string());
    }
    kernels.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
}

/// The order problems are shown in (a table, a bundle's replay file): the most command lines
/// first; ties by direction, data type, then the shape's numbers (n, c, k, input, filter,
/// pad, stride, dilation, groups), smaller first: never by where a line stood, so a log and
/// its `sort | uniq -c` show the same order.
pub fn problem_order(a: &crate::report::ConvProblem, b: &crate::report::ConvProblem) -> std::cmp::Ordering {
    let shape = |p: &crate::report::ConvProblem| {
        (
            p.direction.clone(),
            p.dtype.clone(),
            p.spatial_dims,
            (p.n, p.c, p.k),
            (p.input, p.filter, p.pad, p.stride, p.dilation),
            (p.groups, p.transposed, p.layout.clone()),
        )
    };
    b.count.cmp(&a.count).then_with(|| shape(a).cmp(&shape(b)))
}

/// Add `n` to `total`; an overflow (counts of a hostile file) is counted in `dropped`.
pub fn add(total: &mut u64, n: u64, dropped: &mut Dropped) {
    match total.checked_add(n) {
        Some(t) => *total = t,
        None => dropped.add(Why::CountOverflow, None),
    }
}

/// Count `name` `n` times in `map`, within [`MAX_SOLVERS`] distinct names (the rest in
/// `dropped`).
fn count(map: &mut BTreeMap<String, u64>, name: &str, n: u64, dropped: &mut Dropped) {
    if name.len() > MAX_NAME_BYTES {
        dropped.add(Why::TooLong, None);
        return;
    }
    let full = map.len() >= MAX_SOLVERS;
    match map.get_mut(name) {
        Some(total) => add(total, n, dropped),
        None if !full => {
            map.insert(name.to_string(), n);
        }
        None => dropped.add(Why::Capped, None),
    }
}

fn push_new(list: &mut Vec<String>, value: &str, cap: usize) {
    if list.len() < cap && !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

/// The text between `marker` (ending in a quote) and the next quote.
fn quoted<'a>(rest: &'a str, marker: &str) -> Option<&'a str> {
    let s = &rest[rest.find(marker)? + marker.len()..];
    let name = &s[..s.find('"')?];
    (!name.is_empty()).then_some(name)
}

/// The text after MIOpen's own prefix, wherever it starts on the line: `MIOpen(HIP): `,
/// `MIOpen(OpenCL): `, `MIOpen: ` (MIOpen 3.6), with `MIOPEN_ENABLE_LOGGING_ELAPSED_TIME`'s
/// seconds (`MIOpen(HIP)   0.001: `), behind a tool's `INFO - `, or glued after a progress
/// bar's output (`0/6 [00:00<?, ?it/s]MIOpen(HIP): Info ...`). Each `MIOpen` word is looked
/// at a bounded distance ahead, so a line of many costs linear time.
pub fn strip_prefix(line: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(at) = line[from..].find("MIOpen") {
        let start = from + at;
        if let Some(rest) = after_prefix(&line[start + "MIOpen".len()..]) {
            return Some(rest);
        }
        from = start + "MIOpen".len();
    }
    None
}

/// `(BACKEND)` (a short word), then optional elapsed seconds after spaces, then `:`; the
/// rest, trimmed at its start.
fn after_prefix(s: &str) -> Option<&str> {
    let s = match s.strip_prefix('(') {
        Some(r) => &r[r.bytes().take(16).position(|b| b == b')')? + 1..],
        None => s,
    };
    let rest = match s.strip_prefix(':') {
        Some(rest) => rest,
        None => {
            let b = s.as_bytes();
            let spaces = b.iter().take(32).take_while(|c| c.is_ascii_whitespace()).count();
            let seconds = b[spaces..]
                .iter()
                .take(32)
                .take_while(|c| c.is_ascii_digit() || **c == b'.')
                .count();
            if seconds == 0 || b.get(spaces + seconds) != Some(&b':') {
                return None;
            }
            &s[spaces + seconds + 1..]
        }
    };
    let rest = rest.trim_start();
    // `MIOpenDriver: conv ...` (an old driver's echo) is a command, not a log line.
    (!rest.is_empty()).then_some(rest)
}
