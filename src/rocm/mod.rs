//! Reading what ROCm's libraries log, as real ROCm stacks print it: MIOpen ([`miopen`]:
//! solvers, problems, kernels, version, find mode, cold databases; [`driver`]: one
//! `MIOpenDriver` command's problem) and hipBLASLt/rocBLAS ([`hipblaslt`]: the GEMMs of
//! their bench lines). One [`LogReader`] takes lines from anywhere (a worker's stderr in
//! `run`, any program's output in `wan-vae-bench logs`), and [`read_stream`] feeds it a file
//! or stdin in bounded pieces, so a log of hundreds of MB costs flat memory. Every form it
//! reads is tested on excerpts of real logs that ROCm users and AMD engineers published
//! (`tests/fixtures/rocm/`, each naming its source).
//!
//! Must not: run anything, or know about cases and reports beyond the records it fills
//! (`crate::report`'s `MiopenLog` and `HipblasltLog`).
use std::io::BufRead;

use crate::report::{HipblasltLog, MiopenLog};

pub mod bundle;
pub mod driver;
pub mod hipblaslt;
pub mod miopen;
pub mod render;
pub mod summary;
#[cfg(test)]
mod tests;

/// The longest piece of a line read at once; a longer line is read in pieces of this size
/// (each piece is read as a line of its own).
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What ROCm's libraries logged, fed one line at a time.
#[derive(Debug, Default)]
pub struct LogReader {
    pub miopen: miopen::MiopenParser,
    pub hipblaslt: hipblaslt::HipblasltParser,
    /// Lines (or parts of lines) read as MIOpen's or as GEMM bench lines.
    read: u64,
}

/// What a [`LogReader`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RocmLogs {
    pub miopen: Option<MiopenLog>,
    pub hipblaslt: Option<HipblasltLog>,
}

impl LogReader {
    /// Take one line (it may hold several, joined by a progress bar's `\r`); true when a
    /// part of it was MIOpen's or a GEMM bench line.
    pub fn line(&mut self, line: &str) -> bool {
        let mut any = false;
        for part in line.split('\r').filter(|p| !p.trim().is_empty()) {
            // Both: a hipBLASLt line never names MIOpen, and the reverse.
            let m = self.miopen.line(part);
            let hit = m || self.hipblaslt.line(part);
            self.read += u64::from(hit);
            any |= hit;
        }
        any
    }

    /// How many lines so far were ROCm's (MIOpen's, a driver command, or a GEMM bench line).
    pub fn rocm_lines(&self) -> u64 {
        self.read + self.miopen.version_lines()
    }

    /// One input ended (see [`miopen::MiopenParser::end_of_input`]).
    pub fn end_of_input(&mut self) {
        self.miopen.end_of_input();
    }

    pub fn finish(self) -> RocmLogs {
        RocmLogs {
            miopen: self.miopen.finish(),
            hipblaslt: self.hipblaslt.finish(),
        }
    }
}

/// Feed every line of `input` to `reader`, in pieces of at most [`MAX_LINE_BYTES`], bytes
/// that are not UTF-8 replaced; the number of lines read.
pub fn read_stream(input: impl std::io::Read, reader: &mut LogReader) -> std::io::Result<u64> {
    let mut input = std::io::BufReader::with_capacity(1 << 16, input);
    let mut buf = Vec::with_capacity(4096);
    let mut lines = 0;
    loop {
        buf.clear();
        let n = std::io::Read::take(&mut input, MAX_LINE_BYTES as u64).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += 1;
        let text = String::from_utf8_lossy(&buf);
        reader.line(text.trim_end_matches(['\n', '\r']));
    }
}
