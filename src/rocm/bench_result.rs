//! The result rows the bench tools print: a CSV header, then one row per run.
//! `rocblas-bench` writes `transA,transB,M,N,K,alpha,lda,...,rocblas-Gflops,us` (header
//! names vary by function and version); `hipblaslt-bench` writes
//! `[0]:transA,transB,grouped_gemm,batch_count,m,n,k,...,hipblaslt-Gflops,hipblaslt-GB/s,us`
//! (older ones without `[0]:`), its rows indented. A row gives the GEMM's shape, transposes
//! and types as the header names them, and its measured time (`us`), GFLOP/s and GB/s.
//!
//! Must not: count (that is [`super::hipblaslt`]).
use crate::report::{BenchResult, Gemm};

/// The most columns a header may have (real ones have under 60).
const MAX_COLUMNS: usize = 128;

/// A header seen, waiting for its rows.
#[derive(Debug, Default)]
pub struct Header {
    tool: &'static str,
    columns: Vec<String>,
}

/// `text` as a result header: comma-separated names with `m`, `n`, `k` (any case) and a
/// `us` column, from a bench tool (a `*-Gflops` column names it).
pub fn header(text: &str) -> Option<Header> {
    let t = strip_index(text.trim().trim_matches('`'));
    if !t.contains(',') || t.len() > 4096 {
        return None;
    }
    let columns: Vec<String> = t.split(',').map(|c| c.trim().to_string()).collect();
    if columns.len() > MAX_COLUMNS {
        return None;
    }
    let has = |name: &str| columns.iter().any(|c| c.eq_ignore_ascii_case(name));
    let tool = if has("hipblaslt-Gflops") {
        "hipblaslt-bench"
    } else if has("rocblas-Gflops") {
        "rocblas-bench"
    } else {
        return None;
    };
    (has("m") && has("n") && has("k") && (has("us") || has("rocblas-us") || has("hipblaslt-us")))
        .then_some(Header { tool, columns })
}

/// `text` as a row of `header`: as many fields, m, n and k whole numbers, a time in `us`.
/// The GEMM's identity is the row without its measured columns (the tool, then the rest).
pub fn row(header: &Header, text: &str) -> Option<(Gemm, BenchResult)> {
    // A row pasted in a Markdown code span ends in its backtick.
    let t = strip_index(text.trim().trim_matches('`'));
    let fields: Vec<&str> = t.split(',').map(str::trim).collect();
    if fields.len() != header.columns.len() {
        return None;
    }
    let get = |names: &[&str]| {
        header
            .columns
            .iter()
            .position(|c| names.iter().any(|n| c.eq_ignore_ascii_case(n)))
            .map(|i| fields[i])
    };
    let number = |names: &[&str]| get(names).and_then(|v| v.parse::<u64>().ok());
    let float = |names: &[&str]| get(names).and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite());
    let measured = |c: &str| {
        let c = c.to_ascii_lowercase();
        c == "us"
            || c.ends_with("-us")
            || c.ends_with("-gflops")
            || c.ends_with("-gb/s")
            || c.starts_with("cpu-")
            || c == "norm_error_1"
            || c == "efficiency"
    };
    let result = BenchResult {
        time_us: float(&["us", "rocblas-us", "hipblaslt-us"])?,
        gflops: float(&["hipblaslt-Gflops", "rocblas-Gflops"]),
        gb_per_s: float(&["hipblaslt-GB/s", "rocblas-GB/s"]),
    };
    let shape: Vec<String> = header
        .columns
        .iter()
        .zip(&fields)
        .filter(|(c, _)| !measured(c))
        .map(|(c, v)| format!("{c}={v}"))
        .collect();
    let text = |names: &[&str]| get(names).map(str::to_string);
    let gemm = Gemm {
        command: format!("{} result {}", header.tool, shape.join(",")),
        count: 0,
        tool: header.tool.to_string(),
        form: "result".into(),
        m: number(&["m"])?,
        n: number(&["n"])?,
        k: number(&["k"])?,
        batch: number(&["batch_count", "batch"]),
        trans_a: text(&["transA"]),
        trans_b: text(&["transB"]),
        a_type: text(&["a_type"]),
        b_type: text(&["b_type"]),
        c_type: text(&["c_type"]),
        d_type: text(&["d_type"]),
        compute_type: text(&["compute_type"]),
        solution_index: None,
        incomplete: false,
        results: Vec::new(),
    };
    Some((gemm, result))
}

/// `[0]:` (hipblaslt-bench's index of the problem) before a header or a row.
fn strip_index(t: &str) -> &str {
    if let Some(rest) = t.strip_prefix('[') {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            if let Some(r) = rest[digits..].strip_prefix("]:") {
                return r;
            }
        }
    }
    t
}
