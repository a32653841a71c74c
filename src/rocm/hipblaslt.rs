//! hipBLASLt's and rocBLAS's GEMMs, one line at a time: the bench lines the libraries log
//! to replay ([`super::bench_line`]; `HIPBLASLT_LOG_MASK=32`: `hipblaslt-bench --api_method c
//! -m 4096 ...`; `ROCBLAS_LAYER=2`: `./rocblas-bench -f gemm_ex --transposeA N -m 4096 ...`),
//! hipBLASLt's trace lines ([`super::gemm_trace`]), rocBLAS's trace lines
//! ([`super::rocblas_trace`], `ROCBLAS_LAYER=1` or 3) and the bench tools' result rows
//! ([`super::bench_result`]), counted per distinct GEMM and sorted by count, which is what AMD
//! asks users of slow ComfyUI runs for (ROCm/TheRock #2591), and what they make with `sort |
//! uniq -c`.
//!
//! - Two bench lines on one physical line (two processes writing one log) are two calls.
//! - rocBLAS writes a call's trace line, then (with `ROCBLAS_LAYER=3`) its bench line: a
//!   bench line of the same call right after a trace line (no GEMM line between) is that
//!   call, counted once, and the GEMM takes the bench line's text (it replays). In a `uniq -c`
//!   file the two were sorted apart: a call's count is the larger of its trace and bench
//!   counts. So a log counts the same whether its trace lines, its bench lines or both are
//!   there.
//! - A result row after a bench command of the same shape is that command's measured
//!   figures, not a second GEMM.
//!
//! Must not: read files or processes (callers feed it lines).
use std::collections::HashMap;

use super::bench_line::{self, BenchLine};
use super::dropped::{Dropped, Why};
use super::rocblas_trace::{self, Trace};
use super::{bench_result, gemm_trace};
use crate::report::{BenchResult, Gemm, HipblasltLog};

/// Distinct GEMMs kept.
pub const MAX_GEMMS: usize = 1000;
/// Result rows kept per GEMM.
pub const MAX_RESULTS: usize = 64;

/// Collects the GEMMs of bench, trace and result lines.
#[derive(Debug, Default)]
pub struct HipblasltParser {
    gemms: Vec<Gemm>,
    /// Each GEMM's identity, its text -> index.
    at: HashMap<String, usize>,
    /// A rocBLAS call's identity ([`rocblas_trace::Call`]) -> the GEMM its first line made:
    /// how a trace line finds the GEMM of its call's bench line, and the reverse.
    call_at: HashMap<String, usize>,
    /// Per GEMM, the `uniq -c` counts of its rocBLAS trace lines and of its bench lines,
    /// added (the larger) when reading ends.
    counted: HashMap<usize, (u64, u64)>,
    dropped: Dropped,
    /// A result header seen, for the rows after it.
    header: Option<bench_result::Header>,
    /// The last bench command read, waiting for its result row.
    awaiting: Option<usize>,
    /// The last rocBLAS trace line's GEMM, waiting for the bench line of the same call.
    traced: Option<usize>,
}

/// Where a line of a GEMM comes from, for the pairing of rocBLAS's two lines of one call.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    RocblasTrace,
    RocblasBench,
    Other,
}

impl HipblasltParser {
    /// Take one line as logged; true when it held a GEMM.
    pub fn line(&mut self, line: &str) -> bool {
        self.record(line, None)
    }

    /// Take one record, logged `count` times when a `uniq -c` count stood before it.
    pub fn record(&mut self, line: &str, count: Option<u64>) -> bool {
        if let Some(header) = &self.header {
            if let Some((gemm, result)) = bench_result::row(header, line) {
                self.traced = None;
                self.result(gemm, result, count.unwrap_or(1));
                return true;
            }
        }
        if let Some(header) = bench_result::header(line) {
            self.header = Some(header);
            return true;
        }
        self.header = None;
        if let Some(gemm) = gemm_trace::gemm(line) {
            self.traced = None;
            self.add(gemm, None, Form::Other, count);
            return true;
        }
        match rocblas_trace::gemm(line) {
            Some(Trace::Gemm(read)) => {
                let (gemm, call) = *read;
                let i = self.add(gemm, Some(call.key()), Form::RocblasTrace, count);
                self.traced = i.filter(|_| count.is_none());
                return true;
            }
            Some(Trace::Unread(why)) => {
                self.traced = None;
                self.dropped.add(why, Some(line));
                return true;
            }
            None => {}
        }
        let mut any = false;
        for segment in bench_line::segments(line) {
            match bench_line::read(segment) {
                Some(BenchLine::Gemm(read)) => {
                    let (gemm, call) = *read;
                    let form = if call.is_some() {
                        Form::RocblasBench
                    } else {
                        Form::Other
                    };
                    self.awaiting = self.add(gemm, call.map(|c| c.key()), form, count);
                    any = true;
                }
                Some(BenchLine::Unread(why)) => {
                    self.traced = None;
                    self.dropped.add(why, Some(segment));
                    any = true;
                }
                None => {}
            }
        }
        any
    }

    /// A record whose `uniq -c` count cannot be one: not read, counted as dropped.
    pub fn drop_record(&mut self, record: &str) {
        self.dropped.add(Why::UnreadableCount, Some(record));
    }

    /// What was not kept so far, and why.
    pub fn dropped(&self) -> &Dropped {
        &self.dropped
    }

    /// One input ended: its last command takes no result row of the next, its last trace
    /// line no bench line of the next.
    pub fn end_of_input(&mut self) {
        self.awaiting = None;
        self.header = None;
        self.traced = None;
    }

    /// Count `gemm`, logged `count` times (`None`: once, as logged; `Some`: a `uniq -c`
    /// count); `call` a rocBLAS line's call identity. Its index when kept. A GEMM is its
    /// text; a rocBLAS trace line is the GEMM of its call (the first line of it read), and a
    /// bench line whose text is new takes over a GEMM known only by its call's trace lines
    /// (it replays). A bench line right after the trace line of the same call is that call:
    /// not counted again.
    fn add(&mut self, gemm: Gemm, call: Option<String>, form: Form, count: Option<u64>) -> Option<usize> {
        let traced = std::mem::take(&mut self.traced);
        // Real lines are under 1 KiB; a longer one is counted, not kept.
        if gemm.command.len() > super::miopen::MAX_COMMAND_BYTES {
            self.dropped.add(Why::TooLong, None);
            return None;
        }
        let by_call = call.as_ref().and_then(|c| self.call_at.get(c).copied());
        let known = match form {
            Form::RocblasTrace => by_call,
            Form::RocblasBench => self
                .at
                .get(&gemm.command)
                .copied()
                .or_else(|| by_call.filter(|&i| self.gemms[i].form == "trace")),
            Form::Other => self.at.get(&gemm.command).copied(),
        };
        let i = match known {
            Some(i) => i,
            None if self.gemms.len() < MAX_GEMMS => {
                self.gemms.push(Gemm {
                    count: 0,
                    ..gemm.clone()
                });
                self.gemms.len() - 1
            }
            None => {
                self.dropped.add(Why::Capped, None);
                return None;
            }
        };
        if let Some(c) = call {
            self.call_at.entry(c).or_insert(i);
        }
        // A GEMM known by its trace line takes the text of its bench line (it replays).
        if form == Form::RocblasBench && self.gemms[i].form == "trace" {
            let kept = std::mem::take(&mut self.gemms[i]);
            self.gemms[i] = Gemm {
                count: kept.count,
                results: kept.results,
                ..gemm
            };
        }
        if form != Form::RocblasTrace {
            self.at.entry(self.gemms[i].command.clone()).or_insert(i);
        }
        let paired = form == Form::RocblasBench && count.is_none() && traced == Some(i);
        match (count, form) {
            (None, _) if paired => {}
            (None, _) => super::miopen::add(&mut self.gemms[i].count, 1, &mut self.dropped),
            (Some(n), Form::RocblasTrace) => {
                let t = self.counted.entry(i).or_default();
                t.0 = t.0.saturating_add(n);
            }
            (Some(n), Form::RocblasBench) => {
                let t = self.counted.entry(i).or_default();
                t.1 = t.1.saturating_add(n);
            }
            (Some(n), Form::Other) => super::miopen::add(&mut self.gemms[i].count, n, &mut self.dropped),
        }
        Some(i)
    }

    /// A result row: the figures of the bench command read before it when that has the same
    /// shape (one GEMM, not two; a run over many solutions prints a row each), else a GEMM of
    /// its own.
    fn result(&mut self, gemm: Gemm, result: BenchResult, n: u64) {
        let target = match self.awaiting {
            Some(i) if same_shape(&self.gemms[i], &gemm) => Some(i),
            _ => {
                self.awaiting = None;
                self.add(gemm, None, Form::Other, Some(n))
            }
        };
        if let Some(i) = target {
            if self.gemms[i].results.len() < MAX_RESULTS {
                self.gemms[i].results.push(result);
            } else {
                self.dropped.add(Why::ResultRows, None);
            }
        }
    }

    /// The GEMMs, most frequent first (ties by their text, so a log and its `sort | uniq -c`
    /// list them alike); `None` when none came and nothing was dropped.
    pub fn finish(self) -> Option<HipblasltLog> {
        self.finish_with_reasons().0
    }

    /// [`Self::finish`], and what was dropped, by reason.
    pub fn finish_with_reasons(mut self) -> (Option<HipblasltLog>, Dropped) {
        let mut counted: Vec<(usize, (u64, u64))> = self.counted.drain().collect();
        counted.sort_unstable();
        for (i, (trace, bench)) in counted {
            super::miopen::add(&mut self.gemms[i].count, trace.max(bench), &mut self.dropped);
        }
        let mut gemms = self.gemms;
        sort(&mut gemms);
        let dropped = self.dropped.total();
        let log = (!gemms.is_empty() || dropped > 0).then_some(HipblasltLog { gemms, dropped });
        (log, self.dropped)
    }
}

/// The same m, n, k, and the same transposes where both say.
fn same_shape(a: &Gemm, b: &Gemm) -> bool {
    let same = |x: &Option<String>, y: &Option<String>| x.is_none() || y.is_none() || x == y;
    (a.m, a.n, a.k) == (b.m, b.n, b.k) && same(&a.trans_a, &b.trans_a) && same(&a.trans_b, &b.trans_b)
}

/// GEMMs most frequent first, ties by their text.
pub fn sort(gemms: &mut [Gemm]) {
    gemms.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.command.cmp(&b.command)));
}
