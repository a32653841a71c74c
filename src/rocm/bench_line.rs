//! One bench line of hipBLASLt or rocBLAS (`hipblaslt-bench --api_method c -m 4096 -n 4096
//! -k 4096 ...`, `./rocblas-bench -f gemm_ex --transposeA N -m 4096 ...`) read into its GEMM.
//!
//! - hipBLASLt always logs the transposes and `--a_type` ... `--compute_type`; rocBLAS logs
//!   `-f FUNCTION [-r PRECISION] --transposeA ...` and ends each line with the last argument
//!   of its function (`--ldc`, `--batch_count`, `--compute_type`, as its `log_bench` calls
//!   write them). A logged line without them was cut by whoever pasted it: its last value is
//!   unknown (a line cut inside `-k 4096` never reads as `-k 409`), the fields it lacks are
//!   `None`, and it is marked incomplete. A cut or unreadable shape value (`-k` past 64 bits)
//!   makes the line unread, counted with its reason, never a GEMM that did not run.
//! - A command a user typed takes the bench tools' defaults for what it leaves out (no
//!   transpose, batch 1), as the tools do; `-r s|d|h|c|z` (`--precision`) names its types.
//!
//! Must not: count (that is [`super::hipblaslt`]).
use std::collections::HashMap;

use super::dropped::Why;
use super::rocblas_trace::{scalar, Call};
use crate::report::Gemm;

/// The bench tools whose lines are read.
pub const TOOLS: [&str; 2] = ["hipblaslt-bench", "rocblas-bench"];

/// What a bench line gave.
#[derive(Debug)]
pub enum BenchLine {
    /// The GEMM, and for rocBLAS the call that identifies it (shared with its trace line).
    Gemm(Box<(Gemm, Option<Call>)>),
    /// A GEMM's bench line whose shape could not be read, and why.
    Unread(Why),
}

/// The parts of `line` that start at a bench tool's name: two glued bench lines are two. A
/// part ends at a backtick (a command in a Markdown code span ends with the span).
pub fn segments(line: &str) -> Vec<&str> {
    let mut starts: Vec<usize> = Vec::new();
    for tool in TOOLS {
        // The tool's name as a word's end (`hipblaslt-bench.yaml` is a file, not a call).
        let at_end = |i: usize| line[i + tool.len()..].chars().next().is_none_or(char::is_whitespace);
        starts.extend(line.match_indices(tool).map(|(i, _)| i).filter(|i| at_end(*i)));
    }
    starts.sort_unstable();
    let ends = starts.iter().skip(1).copied().chain(std::iter::once(line.len()));
    starts
        .iter()
        .zip(ends)
        .map(|(&s, e)| {
            let part = &line[s..e];
            part.find('`').map_or(part, |b| &part[..b])
        })
        .collect()
}

/// One bench line's GEMM (the line starts at the tool's name), its command with spaces
/// collapsed; `None` for a line that names no shape (`-m`, `-n`, `-k`) or a rocBLAS function
/// other than a GEMM.
pub fn read(line: &str) -> Option<BenchLine> {
    let tool = TOOLS.iter().find(|t| line.starts_with(**t))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut flags: HashMap<&str, &str> = HashMap::new();
    let mut bare: Vec<&str> = Vec::new();
    // The flag whose value is the line's last word, if any.
    let mut last_valued: Option<&str> = None;
    let mut order: Vec<&str> = Vec::new();
    let mut i = 1;
    while i < words.len() {
        let w = words[i];
        let takes_value = w.starts_with('-') && words.get(i + 1).is_some_and(|v| !is_flag(v));
        if takes_value {
            let name = w.trim_start_matches('-');
            flags.insert(name, words[i + 1]);
            order.push(name);
            if i + 2 == words.len() {
                last_valued = Some(name);
            }
            i += 2;
        } else {
            if w.starts_with('-') {
                let name = w.trim_start_matches('-');
                bare.push(name);
                order.push(name);
            }
            i += 1;
        }
    }
    let rocblas = *tool == "rocblas-bench";
    if rocblas && !flags.get("f").is_some_and(|f| f.starts_with("gemm")) {
        return None;
    }
    let shape_given = ["m", "n", "k"].iter().all(|f| flags.contains_key(f))
        || ["sizem", "sizen", "sizek"].iter().all(|f| flags.contains_key(f));
    let (logged, full) = if rocblas {
        rocblas_logged(&flags, &order)
    } else {
        // hipBLASLt writes these on every line it logs (`--api_method`).
        let logged = flags.contains_key("api_method") || bare.contains(&"api_method");
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
        (logged, full)
    };
    let incomplete = logged && !full;
    if incomplete {
        // The line was cut: its last value may have lost characters.
        if let Some(name) = last_valued {
            if ["m", "n", "k", "sizem", "sizen", "sizek"].contains(&name) {
                return Some(BenchLine::Unread(Why::CutValue));
            }
            flags.remove(name);
        }
    } else if !shape_given {
        return None;
    }
    let shape = |a: &str, b: &str| -> Result<Option<u64>, Why> {
        match flags.get(a).or_else(|| flags.get(b)) {
            None => Ok(None),
            Some(v) => v.parse::<u64>().map(Some).map_err(|_| Why::BadValue),
        }
    };
    let (m, n, k) = match (shape("m", "sizem"), shape("n", "sizen"), shape("k", "sizek")) {
        (Ok(Some(m)), Ok(Some(n)), Ok(Some(k))) => (m, n, k),
        (Err(w), _, _) | (_, Err(w), _) | (_, _, Err(w)) => return Some(BenchLine::Unread(w)),
        // A cut line that lost a shape flag altogether.
        _ if incomplete => return Some(BenchLine::Unread(Why::CutValue)),
        _ => return None,
    };
    let number = |name: &str| flags.get(name).and_then(|v| v.parse::<u64>().ok());
    let text = |names: &[&str]| names.iter().find_map(|n| flags.get(n)).map(|v| v.to_string());
    let precision = text(&["r", "precision"]).map(|p| precision_type(&p));
    let typed = |name: &str| text(&[name]).map(|t| precision_type(&t)).or_else(|| precision.clone());
    let default = |v: Option<String>, d: &str| {
        if incomplete {
            v
        } else {
            v.or_else(|| Some(d.to_string()))
        }
    };
    let gemm = Gemm {
        command: words.join(" "),
        count: 0,
        tool: tool.to_string(),
        form: "bench".into(),
        m,
        n,
        k,
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
    };
    let call = rocblas.then(|| {
        let function = flags.get("f").map(|f| f.to_string()).unwrap_or_default();
        let typed_gemm = !function.ends_with("_ex");
        let get = |name: &str| flags.get(name).map(|v| v.to_string());
        Call {
            precision: if typed_gemm { precision.clone() } else { None },
            trans: [get("transposeA"), get("transposeB")],
            mnk: [m, n, k],
            ld: ["lda", "ldb", "ldc", "ldd"].map(get),
            stride: ["stride_a", "stride_b", "stride_c", "stride_d"].map(get),
            batch: get("batch_count"),
            types: [
                gemm.a_type.clone(),
                gemm.b_type.clone(),
                gemm.c_type.clone(),
                gemm.d_type.clone(),
                gemm.compute_type.clone(),
            ],
            scalars: ["alpha", "beta"].map(|s| get(s).map(|v| scalar(&v))),
            algo: get("algo"),
            solution: get("solution_index"),
            function,
        }
    });
    Some(BenchLine::Gemm(Box::new((gemm, call))))
}

/// Whether a rocBLAS bench line is one rocBLAS logged (it writes `-f FUNCTION`, then `-r
/// PRECISION` for a typed GEMM, then `--transposeA`), and whether it holds the argument its
/// function's line ends with (a cut line does not).
fn rocblas_logged(flags: &HashMap<&str, &str>, order: &[&str]) -> (bool, bool) {
    let logged = matches!(order, ["f", "transposeA", ..] | ["f", "r", "transposeA", ..]);
    let function = flags.get("f").copied().unwrap_or_default();
    let last = if function.ends_with("_ex") {
        "compute_type"
    } else if function.contains("batched") {
        "batch_count"
    } else {
        "ldc"
    };
    let full = flags.contains_key(last) && (!function.contains("batched") || flags.contains_key("batch_count"));
    (logged, full)
}

/// rocBLAS's short precisions (`-r s`, `--compute_type s`) as the type names; any other as
/// given.
pub fn precision_type(p: &str) -> String {
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
