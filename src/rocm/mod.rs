//! Reading what ROCm's libraries log, as real ROCm stacks print it and as people hand it over:
//! MIOpen ([`miopen`]: solvers, problems, kernels, version, find mode, cold databases;
//! [`driver`]: one `MIOpenDriver` command's problem; [`solver_lines`]: the lines that name a
//! solver) and hipBLASLt/rocBLAS ([`hipblaslt`]: the GEMMs of their bench lines, of
//! hipBLASLt's trace lines ([`gemm_trace`]) and of the bench tools' result rows
//! ([`bench_result`])). [`paste`] undoes what a paste adds (`grep -n` numbers, `uniq -c`
//! counts, records joined by `;`) before any reader sees a line. One [`LogReader`] takes
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

pub mod bench_result;
pub mod bundle;
pub mod driver;
pub mod gemm_trace;
pub mod hipblaslt;
pub mod miopen;
pub mod paste;
pub mod render;
pub mod solver_lines;
pub mod summary;
#[cfg(test)]
mod tests;

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
}

/// What a [`LogReader`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RocmLogs {
    pub miopen: Option<MiopenLog>,
    pub hipblaslt: Option<HipblasltLog>,
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
            paste::records(part, |record| any |= self.record(record));
        }
        self.hit |= any;
        any
    }

    /// One record: MIOpen's, else a GEMM's (a hipBLASLt line never names MIOpen, and the
    /// reverse).
    fn record(&mut self, record: paste::Record<'_>) -> bool {
        let count = match record.count {
            paste::Count::Once => None,
            paste::Count::Counted(n) => Some(n),
            // `0 hipblaslt-bench ...` or a count past 64 bits: a ROCm record not read, counted
            // as dropped; any other line is no one's.
            paste::Count::Unreadable if record.text.contains("MIOpen") => {
                self.miopen.drop_record();
                return true;
            }
            paste::Count::Unreadable if record.text.contains("-bench") => {
                self.hipblaslt.drop_record();
                return true;
            }
            paste::Count::Unreadable => return false,
        };
        let versions = self.miopen.version_lines();
        self.miopen.record(record.text, count)
            || self.hipblaslt.record(record.text, count)
            || self.miopen.version_lines() > versions
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
        self.miopen.end_of_input();
        self.hipblaslt.end_of_input();
    }

    pub fn finish(self) -> RocmLogs {
        RocmLogs {
            miopen: self.miopen.finish(),
            hipblaslt: self.hipblaslt.finish(),
        }
    }
}

/// Feed every line of `input` to `reader`, bytes that are not UTF-8 replaced; the number of
/// lines read (newlines, and a last line without one). A line longer than
/// [`MAX_LINE_BYTES`] is read in pieces that end at its last `\r` (the rest is carried into
/// the next piece), so memory stays under twice that size and time linear.
pub fn read_stream(input: impl std::io::Read, reader: &mut LogReader) -> std::io::Result<u64> {
    let mut input = std::io::BufReader::with_capacity(1 << 16, input);
    // The carried part of a long line, then the piece read after it.
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut lines = 0;
    // Whether pieces of the line being read were read already.
    let mut in_line = false;
    loop {
        let carried = buf.len();
        let n = std::io::Read::take(&mut input, MAX_LINE_BYTES as u64).read_until(b'\n', &mut buf)?;
        let ended = buf.last() == Some(&b'\n') || n == 0;
        if ended {
            if !buf.is_empty() || in_line {
                lines += 1;
                let text = String::from_utf8_lossy(&buf);
                reader.piece(text.trim_end_matches(['\n', '\r']));
                reader.end_line();
            }
            if n == 0 {
                return Ok(lines);
            }
            buf.clear();
            in_line = false;
            continue;
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
