//! Reading what ROCm's libraries log, as real ROCm stacks print it and as people hand it over:
//! MIOpen ([`miopen`]: solvers, problems, kernels, version, find mode, cold databases, errors;
//! [`driver`]: one `MIOpenDriver` command's problem; [`solver_lines`]: the lines that name a
//! solver) and hipBLASLt/rocBLAS ([`hipblaslt`]: the GEMMs of their bench lines
//! ([`bench_line`]), of hipBLASLt's trace lines ([`gemm_trace`]), of rocBLAS's trace lines
//! ([`rocblas_trace`], paired with their calls' bench lines) and of the bench tools' result
//! rows ([`bench_result`])). [`paste`] undoes what a paste adds (`grep -n` numbers, `uniq -c`
//! counts, records joined by `;`, a diff's markers, Markdown, `<br>`) before any reader sees a
//! line, and [`wrapped`] joins back a command a narrow terminal cut into lines; [`dropped`] says what was not kept and why; [`conclusion`] what a log shows; [`summary`] reads a set of
//! logs into [`logs_json`]'s records. One [`LogReader`] takes
//! lines from anywhere (a worker's stderr in `run`, any program's output in `wan-vae-bench
//! logs`), and [`read_stream`] feeds it a file or stdin in bounded pieces, so a log of
//! hundreds of MB costs flat memory and linear time. Every form it reads is tested on
//! excerpts of real logs that ROCm users and AMD engineers published (`tests/fixtures/rocm/`,
//! each naming its source).
//!
//! Must not: run anything, or know about cases and reports beyond the records it fills
//! (`crate::report`'s `MiopenLog` and `HipblasltLog`).
use std::io::BufRead;

use crate::report::{HipblasltLog, MiopenLog};

pub mod bench_line;
pub mod bench_result;
pub mod bundle;
pub mod conclusion;
pub mod driver;
pub mod dropped;
pub mod gemm_trace;
pub mod hipblaslt;
pub mod logs_json;
pub mod miopen;
pub mod paste;
pub mod render;
pub mod rocblas_trace;
pub mod solver_lines;
pub mod summary;
#[cfg(test)]
mod tests;
pub mod wrapped;

/// The longest piece of a line read at once; a longer line is read in pieces of this size,
/// each ending at a `\r` where it has one (a progress line's part is never cut in two, up to
/// this size).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What ROCm's libraries logged, fed one line at a time.
#[derive(Debug, Default)]
pub struct LogReader {
    pub miopen: miopen::MiopenParser,
    pub hipblaslt: hipblaslt::HipblasltParser,
    /// Lines that held a record of MIOpen's or a GEMM.
    rocm_lines: u64,
    /// Whether the line being read (in pieces) held one.
    hit: bool,
    /// The diff or code block a pasted log is in.
    markup: paste::Markup,
    /// Lines a pasted diff removed (`-`), not read.
    removed_lines: u64,
    /// Physical lines joined to the command a terminal cut them from ([`wrapped`]).
    rejoined_lines: u64,
}

/// What a [`LogReader`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RocmLogs {
    pub miopen: Option<MiopenLog>,
    pub hipblaslt: Option<HipblasltLog>,
    /// What MIOpen's reader did not keep, and why (`miopen.dropped` is its total).
    pub miopen_dropped: dropped::Dropped,
    /// What the GEMM reader did not keep, and why (`hipblaslt.dropped` is its total).
    pub hipblaslt_dropped: dropped::Dropped,
    /// MIOpen's errors and a missing system database.
    pub miopen_notes: miopen::MiopenNotes,
}

impl LogReader {
    /// Take one whole line (it may hold several parts joined by a progress bar's `\r`, and
    /// several pasted records); true when a record in it was MIOpen's or a GEMM.
    pub fn line(&mut self, line: &str) -> bool {
        let any = self.piece(line);
        self.end_line();
        any
    }

    /// Take a piece of a line (a whole line, or a long line's part up to a `\r`).
    fn piece(&mut self, text: &str) -> bool {
        let mut any = false;
        for part in text.split('\r').filter(|p| !p.trim().is_empty()) {
            let part = match self.markup.line(part) {
                paste::Marked::Keep(part) => part,
                paste::Marked::Removed => {
                    self.removed_lines += 1;
                    continue;
                }
                paste::Marked::Markup => continue,
            };
            if part.contains('<') {
                for line in paste::html_lines(&part) {
                    paste::records(line, |record| any |= self.record(record));
                }
            } else {
                paste::records(&part, |record| any |= self.record(record));
            }
        }
        self.hit |= any;
        any
    }

    /// How many lines so far a pasted diff removed (`-`): not read.
    pub fn removed_lines(&self) -> u64 {
        self.removed_lines
    }

    /// How many physical lines so far [`read_stream`] joined to the command a narrow
    /// terminal cut them from ([`wrapped`]).
    pub fn rejoined_lines(&self) -> u64 {
        self.rejoined_lines
    }

    /// One record: MIOpen's, else a GEMM's (a hipBLASLt line never names MIOpen, and the
    /// reverse).
    fn record(&mut self, record: paste::Record<'_>) -> bool {
        let count = match record.count {
            paste::Count::Once => None,
            paste::Count::Counted(n) => Some(n),
            // `0 hipblaslt-bench ...` or a count past 64 bits: a ROCm record not read, counted
            // as dropped with its reason; any other line is no one's.
            paste::Count::Unreadable if record.text.contains("MIOpen") || driver::find(record.text).is_some() => {
                self.miopen.drop_record(record.text);
                return true;
            }
            paste::Count::Unreadable
                if record.text.contains("-bench") || rocblas_trace::gemm(record.text).is_some() =>
            {
                self.hipblaslt.drop_record(record.text);
                return true;
            }
            paste::Count::Unreadable => return false,
        };
        let noted = self.miopen.noted_lines();
        self.miopen.record(record.text, count)
            || self.hipblaslt.record(record.text, count)
            || self.miopen.noted_lines() > noted
    }

    /// The line being read ended.
    fn end_line(&mut self) {
        self.rocm_lines += u64::from(std::mem::take(&mut self.hit));
    }

    /// How many lines so far held a record of MIOpen's (a version line included) or a GEMM.
    pub fn rocm_lines(&self) -> u64 {
        self.rocm_lines
    }

    /// One input ended (see [`miopen::MiopenParser::end_of_input`]).
    pub fn end_of_input(&mut self) {
        self.markup = paste::Markup::default();
        self.miopen.end_of_input();
        self.hipblaslt.end_of_input();
    }

    pub fn finish(self) -> RocmLogs {
        let miopen = self.miopen.finish_with_reasons();
        let (hipblaslt, hipblaslt_dropped) = self.hipblaslt.finish_with_reasons();
        RocmLogs {
            miopen: miopen.log,
            hipblaslt,
            miopen_dropped: miopen.dropped,
            hipblaslt_dropped,
            miopen_notes: miopen.notes,
        }
    }
}

/// Feed every line of `input` to `reader`, bytes that are not UTF-8 replaced; the number of
/// lines read (newlines, and a last line without one: physical lines, whatever
/// [`wrapped::Rejoin`] joins before the reader sees them). A line longer than
/// [`MAX_LINE_BYTES`] is read in pieces that end at its last `\r` (the rest is carried into
/// the next piece), so memory stays under twice that size and time linear.
pub fn read_stream(input: impl std::io::Read, reader: &mut LogReader) -> std::io::Result<u64> {
    let mut input = std::io::BufReader::with_capacity(1 << 16, input);
    // The carried part of a long line, then the piece read after it.
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut lines = 0;
    // Whether pieces of the line being read were read already.
    let mut in_line = false;
    let mut rejoin = wrapped::Rejoin::default();
    fn whole(text: &str, reader: &mut LogReader) {
        reader.piece(text);
        reader.end_line();
    }
    loop {
        let carried = buf.len();
        let n = std::io::Read::take(&mut input, MAX_LINE_BYTES as u64).read_until(b'\n', &mut buf)?;
        let ended = buf.last() == Some(&b'\n') || n == 0;
        if ended {
            if !buf.is_empty() || in_line {
                lines += 1;
                let text = String::from_utf8_lossy(&buf);
                let text = text.trim_end_matches(['\n', '\r']);
                if in_line {
                    // The end of a long line read in pieces: never a terminal's cut.
                    reader.piece(text);
                    reader.end_line();
                } else {
                    rejoin.push(text, &mut |t: &str| whole(t, reader));
                }
            }
            if n == 0 {
                rejoin.finish(&mut |t: &str| whole(t, reader));
                reader.rejoined_lines += rejoin.rejoined();
                return Ok(lines);
            }
            buf.clear();
            in_line = false;
            continue;
        }
        if !in_line {
            rejoin.finish(&mut |t: &str| whole(t, reader));
        }
        in_line = true;
        // A long line's piece: read up to its last `\r`, carry the rest, unless that rest is
        // itself longer than a piece (then it is read as it is).
        match buf[carried..].iter().rposition(|b| *b == b'\r').map(|i| carried + i) {
            Some(cr) if buf.len() - cr <= MAX_LINE_BYTES => {
                reader.piece(&String::from_utf8_lossy(&buf[..cr]));
                buf.drain(..=cr);
            }
            _ => {
                reader.piece(&String::from_utf8_lossy(&buf));
                buf.clear();
            }
        }
    }
}
