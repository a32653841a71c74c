//! rocBLAS's trace lines (`ROCBLAS_LAYER=1`, or 3 with the bench lines): one line per call,
//! the function's name and its arguments separated by commas, pointers included, e.g.
//!
//! ```text
//! rocblas_gemm_batched_ex,T,N,256,64,128,1,0x7f44...,f16_r,1024,0x7f44...,f16_r,128,0,0x...,f32_r,256,0x...,f32_r,256,96,f32_r,0,0,none,atomics_not_allowed
//! ```
//!
//! The arguments are in the order of the function's C API, as rocBLAS's `log_trace` calls
//! write them ([`FUNCTIONS`]): `rocblas_[hsdcz]gemm`, `_batched`, `_strided_batched`, and
//! `rocblas_gemm_ex`, `_batched_ex`, `_strided_batched_ex` (each also with the ILP64 API's
//! `_64`). rocBLAS before 2019 wrote the transposes as their enum values (111 N, 112 T, 113
//! C); newer ones append the atomics mode. A trace line and the bench line rocBLAS writes for
//! the same call (`-f gemm_batched_ex --transposeA T ...`) have the same [`Call`], so a log
//! holding both counts each call once (the pairing is [`super::hipblaslt`]'s).
//!
//! Must not: count (that is [`super::hipblaslt`]).
use crate::report::Gemm;

/// What identifies a rocBLAS GEMM call whichever line logged it: the function (as
/// `rocblas-bench -f` names it, with the precision of a typed GEMM), the transposes, the
/// shape, the leading dimensions and strides, the batch, the types, alpha and beta, and the
/// algorithm and solution asked for. A field the function does not take is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Call {
    pub function: String,
    pub precision: Option<String>,
    pub trans: [Option<String>; 2],
    pub mnk: [u64; 3],
    /// lda, ldb, ldc, ldd.
    pub ld: [Option<String>; 4],
    /// stride_a, stride_b, stride_c, stride_d.
    pub stride: [Option<String>; 4],
    pub batch: Option<String>,
    /// a, b, c, d, compute.
    pub types: [Option<String>; 5],
    /// alpha and beta, as numbers where they are.
    pub scalars: [Option<String>; 2],
    pub algo: Option<String>,
    pub solution: Option<String>,
}

impl Call {
    /// The identity, as text.
    pub fn key(&self) -> String {
        format!("rocblas {self:?}")
    }
}

/// A number written two ways (`1`, `1.000000`) as one.
pub fn scalar(v: &str) -> String {
    v.parse::<f64>().map_or_else(|_| v.to_string(), |x| format!("{x}"))
}

/// The arguments each function's trace line writes after its name, in order: `*` a pointer,
/// `-` a field not used here.
const FUNCTIONS: [(&str, &[&str]); 6] = [
    (
        "gemm",
        &[
            "transA", "transB", "m", "n", "k", "alpha", "*", "lda", "*", "ldb", "beta", "*", "ldc",
        ],
    ),
    (
        "gemm_batched",
        &[
            "transA",
            "transB",
            "m",
            "n",
            "k",
            "alpha",
            "*",
            "lda",
            "*",
            "ldb",
            "beta",
            "*",
            "ldc",
            "batch_count",
        ],
    ),
    (
        "gemm_strided_batched",
        &[
            "transA",
            "transB",
            "m",
            "n",
            "k",
            "alpha",
            "*",
            "lda",
            "stride_a",
            "*",
            "ldb",
            "stride_b",
            "beta",
            "*",
            "ldc",
            "stride_c",
            "batch_count",
        ],
    ),
    (
        "gemm_ex",
        &[
            "transA",
            "transB",
            "m",
            "n",
            "k",
            "alpha",
            "*",
            "a_type",
            "lda",
            "*",
            "b_type",
            "ldb",
            "beta",
            "*",
            "c_type",
            "ldc",
            "*",
            "d_type",
            "ldd",
            "compute_type",
            "algo",
            "solution_index",
            "-",
        ],
    ),
    (
        "gemm_batched_ex",
        &[
            "transA",
            "transB",
            "m",
            "n",
            "k",
            "alpha",
            "*",
            "a_type",
            "lda",
            "*",
            "b_type",
            "ldb",
            "beta",
            "*",
            "c_type",
            "ldc",
            "*",
            "d_type",
            "ldd",
            "batch_count",
            "compute_type",
            "algo",
            "solution_index",
            "-",
        ],
    ),
    (
        "gemm_strided_batched_ex",
        &[
            "transA",
            "transB",
            "m",
            "n",
            "k",
            "alpha",
            "*",
            "a_type",
            "lda",
            "stride_a",
            "*",
            "b_type",
            "ldb",
            "stride_b",
            "beta",
            "*",
            "c_type",
            "ldc",
            "stride_c",
            "*",
            "d_type",
            "ldd",
            "stride_d",
            "batch_count",
            "compute_type",
            "algo",
            "solution_index",
            "-",
        ],
    ),
];

/// A typed GEMM's letter -> its precision (`rocblas_sgemm` -> `f32_r`).
fn precision(letter: char) -> Option<&'static str> {
    Some(match letter {
        'h' => "f16_r",
        's' => "f32_r",
        'd' => "f64_r",
        'c' => "f32_c",
        'z' => "f64_c",
        _ => return None,
    })
}

/// A trace line's function name (`rocblas_sgemm_strided_batched_64`) -> the function as
/// `rocblas-bench -f` names it and the typed GEMM's precision; `None` for any other function.
fn function(name: &str) -> Option<(&'static str, Option<&'static str>)> {
    let name = name.strip_prefix("rocblas_")?;
    let name = name.strip_suffix("_64").unwrap_or(name);
    if let Some(f) = FUNCTIONS.iter().find(|f| f.0.ends_with("_ex") && f.0 == name) {
        return Some((f.0, None));
    }
    let mut chars = name.chars();
    let letter = chars.next()?;
    let rest = chars.as_str();
    let f = FUNCTIONS.iter().find(|f| !f.0.ends_with("_ex") && f.0 == rest)?;
    Some((f.0, Some(precision(letter)?)))
}

/// rocBLAS's transposes: letters, or before 2019 their enum values.
fn transpose(v: &str) -> Option<String> {
    Some(
        match v {
            "N" | "111" => "N",
            "T" | "112" => "T",
            "C" | "113" => "C",
            _ => return None,
        }
        .to_string(),
    )
}

/// Where a trace line starts in `line`: a word `rocblas_...` followed by a comma, at the
/// line's start or after a space, a backtick or a quote.
fn start(line: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = line[from..].find("rocblas_") {
        let i = from + at;
        let before = line[..i].chars().next_back();
        if before.is_none_or(|c| c.is_whitespace() || c == '`' || c == '"' || c == '\'') {
            return Some(i);
        }
        from = i + "rocblas_".len();
    }
    None
}

/// The fields of a trace line after the name: split at commas, a complex scalar written
/// `(1,0)` kept whole.
fn fields(rest: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for part in rest.split(',') {
        if open {
            if let Some(last) = out.last_mut() {
                last.push(',');
                last.push_str(part);
            }
        } else {
            out.push(part.to_string());
        }
        open = (open || part.trim_start().starts_with('(')) && !part.trim_end().ends_with(')');
    }
    out.iter().map(|f| f.trim().trim_end_matches('`').to_string()).collect()
}

/// What a trace line of a GEMM function gave.
#[derive(Debug)]
pub enum Trace {
    /// The GEMM, and the call that identifies it.
    Gemm(Box<(Gemm, Call)>),
    /// A GEMM's trace line without a shape this reader can take: why (a cut line's last
    /// value is unknown; a value past 64 bits).
    Unread(super::dropped::Why),
}

/// The GEMM and its [`Call`] of a rocBLAS trace line; `None` for any other line, or a trace
/// of another function. A line with fewer arguments than its function writes was cut: its
/// last value is unknown (never a shorter number), the fields it lacks `None`, and it is
/// `incomplete`; without m, n and k it is [`Trace::Unread`].
pub fn gemm(line: &str) -> Option<Trace> {
    use super::dropped::Why;
    let at = start(line)?;
    let text = &line[at..];
    let (name, rest) = text.split_once(',')?;
    let (func, typed) = function(name)?;
    let names = FUNCTIONS.iter().find(|f| f.0 == func)?.1;
    let mut values = fields(rest);
    let complete = values.len() >= names.len();
    if !complete {
        // Cut: the last value may have lost digits.
        values.pop();
    }
    let get = |field: &str| -> Option<String> {
        let i = names.iter().position(|n| *n == field)?;
        values.get(i).filter(|v| !v.is_empty()).cloned()
    };
    let number = |field: &str| get(field).map(|v| v.parse::<u64>().ok());
    let (m, n, k) = match (number("m"), number("n"), number("k")) {
        (Some(Some(m)), Some(Some(n)), Some(Some(k))) => (m, n, k),
        (Some(None), _, _) | (_, Some(None), _) | (_, _, Some(None)) => return Some(Trace::Unread(Why::BadValue)),
        _ => return Some(Trace::Unread(Why::CutValue)),
    };
    let (Some(ta), Some(tb)) = (
        get("transA").as_deref().and_then(transpose),
        get("transB").as_deref().and_then(transpose),
    ) else {
        return None;
    };
    let types: [Option<String>; 5] = match typed {
        // A typed GEMM runs in its precision and names no compute type.
        Some(p) => [Some(p), Some(p), Some(p), Some(p), None].map(|t| t.map(String::from)),
        None => ["a_type", "b_type", "c_type", "d_type", "compute_type"].map(get),
    };
    let batched = names.contains(&"batch_count");
    let call = Call {
        function: func.to_string(),
        precision: typed.map(String::from),
        trans: [Some(ta.clone()), Some(tb.clone())],
        mnk: [m, n, k],
        ld: ["lda", "ldb", "ldc", "ldd"].map(get),
        stride: ["stride_a", "stride_b", "stride_c", "stride_d"].map(get),
        batch: get("batch_count"),
        types: types.clone(),
        scalars: ["alpha", "beta"].map(|s| get(s).map(|v| scalar(&v))),
        algo: get("algo"),
        solution: get("solution_index"),
    };
    // The identity: the line without its pointers and what follows its last argument.
    let kept: Vec<&str> = values
        .iter()
        .zip(names.iter())
        .filter(|(_, n)| **n != "*")
        .map(|(v, _)| v.as_str())
        .collect();
    let [a_type, b_type, c_type, d_type, compute_type] = types;
    let gemm = Gemm {
        command: format!("{name},{}", kept.join(",")),
        count: 0,
        tool: name.strip_suffix("_64").unwrap_or(name).to_string(),
        form: "trace".into(),
        m,
        n,
        k,
        batch: if batched {
            get("batch_count").and_then(|b| b.parse().ok())
        } else {
            Some(1)
        },
        trans_a: Some(ta),
        trans_b: Some(tb),
        a_type,
        b_type,
        c_type,
        d_type,
        compute_type,
        solution_index: get("solution_index").and_then(|s| s.parse().ok()),
        incomplete: !complete,
        results: Vec::new(),
    };
    Some(Trace::Gemm(Box::new((gemm, call))))
}
