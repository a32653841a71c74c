//! hipBLASLt's and rocBLAS's GEMMs, one line at a time: the bench lines the libraries log
//! to replay (`HIPBLASLT_LOG_MASK=32`: `hipblaslt-bench --api_method c -m 4096 -n 4096 -k
//! 4096 ... --transA T --transB N --batch_count 1 --a_type f16_r ...`; `ROCBLAS_LAYER=2`:
//! `./rocblas-bench -f gemm_ex --transposeA N -m 4096 -n 1 -k 25088 ...`), hipBLASLt's trace
//! lines ([`super::gemm_trace`]) and the bench tools' result rows ([`super::bench_result`]),
//! counted per distinct GEMM and sorted by count, which is what AMD asks users of slow
//! ComfyUI runs for (ROCm/TheRock #2591), and what they make with `sort | uniq -c`.
//!
//! - Two bench lines on one physical line (two processes writing one log) are two calls.
//! - hipBLASLt always logs the transposes and `--a_type` ... `--compute_type`: a logged line
//!   (`--api_method`) without them was cut by whoever pasted it, one call of the shape it
//!   names, marked incomplete, its missing fields unknown. A command a user typed (no
//!   `--api_method`) takes the bench tools' defaults for what it leaves out (no transpose,
//!   batch 1), as the tool does; `-r s|d|h|c|z` (`--precision`) names its types.
//! - A result row after a bench command of the same shape is that command's measured
//!   figures, not a second GEMM.
//!
//! Must not: read files or processes (callers feed it lines).
use std::collections::HashMap;

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
    at: HashMap<String, usize>,
    dropped: u64,
    /// A result header seen, for the rows after it.
    header: Option<bench_result::Header>,
    /// The last bench command read, waiting for its result row.
    awaiting: Option<usize>,
}

impl HipblasltParser {
    /// Take one line as logged; true when it held a GEMM.
    pub fn line(&mut self, line: &str) -> bool {
        self.record(line, None)
    }

    /// Take one record, logged `count` times when a `uniq -c` count stood before it.
    pub fn record(&mut self, line: &str, count: Option<u64>) -> bool {
        let n = count.unwrap_or(1);
        if let Some(header) = &self.header {
            if let Some((gemm, result)) = bench_result::row(header, line) {
                self.result(gemm, result, n);
                return true;
            }
        }
        if let Some(header) = bench_result::header(line) {
            self.header = Some(header);
            return true;
        }
        self.header = None;
        if let Some(gemm) = gemm_trace::gemm(line) {
            self.add(gemm, n);
            return true;
        }
        let mut any = false;
        for segment in bench_segments(line) {
            if let Some(gemm) = bench_line(segment) {
                self.awaiting = self.add(gemm, n);
                any = true;
            }
        }
        any
    }

    /// A record whose `uniq -c` count cannot be one: not read, counted as dropped.
    pub fn drop_record(&mut self) {
        self.dropped += 1;
    }

    /// One input ended: its last command takes no result row of the next.
    pub fn end_of_input(&mut self) {
        self.awaiting = None;
        self.header = None;
    }

    /// Count `gemm` `n` times; its index when kept.
    fn add(&mut self, gemm: Gemm, n: u64) -> Option<usize> {
        // Real lines are under 1 KiB; a longer one is counted, not kept.
        if gemm.command.len() > super::miopen::MAX_COMMAND_BYTES {
            self.dropped += 1;
            return None;
        }
        match self.at.get(&gemm.command) {
            Some(&i) => {
                match self.gemms[i].count.checked_add(n) {
                    Some(c) => self.gemms[i].count = c,
                    None => self.dropped += 1,
                }
                Some(i)
            }
            None if self.gemms.len() < MAX_GEMMS => {
                self.at.insert(gemm.command.clone(), self.gemms.len());
                self.gemms.push(Gemm { count: n, ..gemm });
                Some(self.gemms.len() - 1)
            }
            None => {
                self.dropped += 1;
                None
            }
        }
    }

    /// A result row: the figures of the bench command read before it when that has the same
    /// shape (one GEMM, not two; a run over many solutions prints a row each), else a GEMM of
    /// its own.
    fn result(&mut self, gemm: Gemm, result: BenchResult, n: u64) {
        let target = match self.awaiting {
            Some(i) if same_shape(&self.gemms[i], &gemm) => Some(i),
            _ => {
                self.awaiting = None;
                self.add(gemm, n)
            }
        };
        if let Some(i) = target {
            if self.gemms[i].results.len() < MAX_RESULTS {
                self.gemms[i].results.push(result);
            } else {
                self.dropped += 1;
            }
        }
    }

    /// The GEMMs, most frequent first (ties by their text, so a log and its `sort | uniq -c`
    /// list them alike); `None` when none came.
    pub fn finish(self) -> Option<HipblasltLog> {
        let mut gemms = self.gemms;
        sort(&mut gemms);
        (!gemms.is_empty() || self.dropped > 0).then_some(HipblasltLog {
            gemms,
            dropped: self.dropped,
        })
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

/// The parts of `line` that start at a bench tool's name: two glued bench lines are two.
fn bench_segments(line: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = Vec::new();
    for tool in TOOLS {
        // The tool's name as a word's end (`hipblaslt-bench.yaml` is a file, not a call).
        let at_end = |i: usize| line[i + tool.len()..].chars().next().is_none_or(char::is_whitespace);
        starts.extend(line.match_indices(tool).map(|(i, _)| i).filter(|i| at_end(*i)));
    }
    starts.sort_unstable();
    let ends = starts.iter().skip(1).copied().chain(std::iter::once(line.len()));
    starts.iter().zip(ends).map(|(&s, e)| &line[s..e]).collect()
}

const TOOLS: [&str; 2] = ["hipblaslt-bench", "rocblas-bench"];

/// One bench line's GEMM (the line starts at the tool's name), its command with spaces
/// collapsed; `None` for a bench line without `-m`, `-n` and `-k` (a rocBLAS line of another
/// function than a GEMM).
pub fn bench_line(line: &str) -> Option<Gemm> {
    let tool = TOOLS.iter().find(|t| line.starts_with(**t))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut flags: HashMap<&str, &str> = HashMap::new();
    let mut bare: Vec<&str> = Vec::new();
    let mut i = 1;
    while i < words.len() {
        let w = words[i];
        let takes_value = w.starts_with('-') && words.get(i + 1).is_some_and(|v| !is_flag(v));
        if takes_value {
            flags.insert(w.trim_start_matches('-'), words[i + 1]);
            i += 2;
        } else {
            if w.starts_with('-') {
                bare.push(w.trim_start_matches('-'));
            }
            i += 1;
        }
    }
    if *tool == "rocblas-bench" && !flags.get("f").is_some_and(|f| f.starts_with("gemm")) {
        return None;
    }
    let number = |name: &str| flags.get(name).and_then(|v| v.parse::<u64>().ok());
    let text = |names: &[&str]| names.iter().find_map(|n| flags.get(n)).map(|v| v.to_string());
    let precision = text(&["r", "precision"]).map(|p| precision_type(&p));
    let typed = |name: &str| text(&[name]).map(|t| precision_type(&t)).or_else(|| precision.clone());
    // hipBLASLt writes these on every line it logs: without one the line was cut.
    let logged = *tool == "hipblaslt-bench" && (flags.contains_key("api_method") || bare.contains(&"api_method"));
    let full = [
        "transA",
        "transB",
        "a_type",
        "b_type",
        "c_type",
        "d_type",
        "compute_type",
    ]
    .iter()
    .all(|f| flags.contains_key(f));
    let incomplete = logged && !full;
    let default = |v: Option<String>, d: &str| {
        if incomplete {
            v
        } else {
            v.or_else(|| Some(d.to_string()))
        }
    };
    Some(Gemm {
        command: words.join(" "),
        count: 0,
        tool: tool.to_string(),
        form: "bench".into(),
        m: number("m").or_else(|| number("sizem"))?,
        n: number("n").or_else(|| number("sizen"))?,
        k: number("k").or_else(|| number("sizek"))?,
        batch: match number("batch_count").or_else(|| number("batch")) {
            Some(b) => Some(b),
            None if incomplete => None,
            None => Some(1),
        },
        trans_a: default(text(&["transA", "transposeA"]), "N"),
        trans_b: default(text(&["transB", "transposeB"]), "N"),
        a_type: typed("a_type"),
        b_type: typed("b_type"),
        c_type: typed("c_type"),
        d_type: typed("d_type"),
        compute_type: text(&["compute_type"]).map(|t| precision_type(&t)),
        solution_index: flags.get("solution_index").and_then(|v| v.parse().ok()),
        incomplete,
        results: Vec::new(),
    })
}

/// rocBLAS's short precisions (`-r s`, `--compute_type s`) as the type names; any other as
/// given.
fn precision_type(p: &str) -> String {
    match p {
        "h" => "f16_r",
        "s" => "f32_r",
        "d" => "f64_r",
        "c" => "f32_c",
        "z" => "f64_c",
        other => other,
    }
    .to_string()
}

/// A flag, not a value: `-m`, `--any_stride`; `-1` and `-0.5` are values.
fn is_flag(word: &str) -> bool {
    word.starts_with('-') && !word[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')
}
