//! hipBLASLt's and rocBLAS's bench lines, one line at a time: the GEMMs a program ran, as
//! the libraries log them to replay (`HIPBLASLT_LOG_MASK=32`: `hipblaslt-bench --api_method c
//! -m 4096 -n 4096 -k 4096 ... --transA T --transB N --batch_count 1 --a_type f16_r ...`;
//! `ROCBLAS_LAYER=2`: `./rocblas-bench -f gemm_ex --transposeA N -m 4096 -n 1 -k 25088 ...`),
//! counted per distinct line and sorted by count, which is what AMD asks users of slow
//! ComfyUI runs for (ROCm/TheRock #2591), and what they made by hand with `sort | uniq -c`.
//! Flags a line leaves out take the bench tools' defaults (no transpose, batch 1).
//!
//! Must not: read files or processes (callers feed it lines).
use std::collections::HashMap;

use crate::report::{Gemm, HipblasltLog};

/// Distinct GEMM lines kept.
pub const MAX_GEMMS: usize = 1000;

/// Collects the GEMMs of bench lines.
#[derive(Debug, Default)]
pub struct HipblasltParser {
    gemms: Vec<Gemm>,
    at: HashMap<String, usize>,
    dropped: u64,
}

impl HipblasltParser {
    /// Take one line; true when it was a GEMM bench line.
    pub fn line(&mut self, line: &str) -> bool {
        let Some(gemm) = bench_line(line) else {
            return false;
        };
        // Real bench lines are under 1 KiB; a longer one is counted, not kept.
        if gemm.command.len() > super::miopen::MAX_COMMAND_BYTES {
            self.dropped += 1;
            return true;
        }
        match self.at.get(&gemm.command) {
            Some(&i) => self.gemms[i].count += 1,
            None if self.gemms.len() < MAX_GEMMS => {
                self.at.insert(gemm.command.clone(), self.gemms.len());
                self.gemms.push(Gemm { count: 1, ..gemm });
            }
            None => self.dropped += 1,
        }
        true
    }

    /// The GEMMs, most frequent first (ties in the order first seen); `None` when no bench
    /// line came.
    pub fn finish(self) -> Option<HipblasltLog> {
        let mut gemms = self.gemms;
        // A stable sort keeps first-seen order among equal counts.
        gemms.sort_by_key(|x| std::cmp::Reverse(x.count));
        (!gemms.is_empty() || self.dropped > 0).then_some(HipblasltLog {
            gemms,
            dropped: self.dropped,
        })
    }
}

/// One bench line's GEMM, its command from the tool's name on with spaces collapsed; `None`
/// for any other line, or a bench line without `-m`, `-n` and `-k` (a rocBLAS line of
/// another function than a GEMM).
pub fn bench_line(line: &str) -> Option<Gemm> {
    let (tool, at) = ["hipblaslt-bench", "rocblas-bench"]
        .iter()
        .find_map(|t| line.find(t).map(|at| (*t, at)))?;
    let words: Vec<&str> = line[at..].split_whitespace().collect();
    let mut flags: HashMap<&str, &str> = HashMap::new();
    let mut i = 1;
    while i < words.len() {
        let w = words[i];
        let takes_value = w.starts_with('-') && words.get(i + 1).is_some_and(|v| !is_flag(v));
        if takes_value {
            flags.insert(w.trim_start_matches('-'), words[i + 1]);
            i += 2;
        } else {
            i += 1;
        }
    }
    if tool == "rocblas-bench" && !flags.get("f").is_some_and(|f| f.starts_with("gemm")) {
        return None;
    }
    let number = |name: &str| flags.get(name).and_then(|v| v.parse::<u64>().ok());
    let text = |names: &[&str]| names.iter().find_map(|n| flags.get(n)).map(|v| v.to_string());
    Some(Gemm {
        command: words.join(" "),
        count: 0,
        tool: tool.to_string(),
        m: number("m")?,
        n: number("n")?,
        k: number("k")?,
        batch: number("batch_count").unwrap_or(1),
        trans_a: text(&["transA", "transposeA"]).unwrap_or_else(|| "N".into()),
        trans_b: text(&["transB", "transposeB"]).unwrap_or_else(|| "N".into()),
        a_type: text(&["a_type"]),
        b_type: text(&["b_type"]),
        c_type: text(&["c_type"]),
        d_type: text(&["d_type"]),
        compute_type: text(&["compute_type"]),
        solution_index: flags.get("solution_index").and_then(|v| v.parse().ok()),
    })
}

/// A flag, not a value: `-m`, `--any_stride`; `-1` and `-0.5` are values.
fn is_flag(word: &str) -> bool {
    word.starts_with('-') && !word[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')
}
