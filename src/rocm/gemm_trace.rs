//! hipBLASLt's trace lines (`HIPBLASLT_LOG_MASK` with the trace bit, or `HIPBLASLT_LOG_LEVEL`
//! 2 and up): one `[Trace][rocblaslt_matmul]` line per call, its operands' descriptors and
//! the op descriptor, e.g.
//!
//! ```text
//! [...][HIPBLASLT][1085][Trace][rocblaslt_matmul] A=0x7f.. Adesc=[type=R_32F rows=4096 cols=14336 ld=4096]
//!   B=.. Bdesc=[...] C=.. Cdesc=[...] D=.. Ddesc=[type=R_32F rows=14336 cols=267 ld=14336]
//!   computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transA=OP_T transB=OP_N ...] ...
//! ```
//!
//! `m` and `n` are D's rows and columns; `k` is A's columns (`transA=OP_N`) or rows (`OP_T`).
//! A descriptor carries `batch_count=` only when the batch is over 1 (`rocblaslt_matrix_layout_to_string`):
//! without it the batch is unknown here. Pointers differ per call: a GEMM's identity is its
//! descriptors without them.
//!
//! Must not: count (that is [`super::hipblaslt`]).
use crate::report::Gemm;

/// The GEMM of a `[Trace][rocblaslt_matmul]` line; `None` for any other line or one without
/// the descriptors that give m, n and k.
pub fn gemm(line: &str) -> Option<Gemm> {
    let at = line.find("[rocblaslt_matmul]")?;
    let rest = &line[at + "[rocblaslt_matmul]".len()..];
    if !line[..at].ends_with("[Trace]") {
        return None;
    }
    let a = descriptor(rest, "Adesc=[")?;
    let b = descriptor(rest, "Bdesc=[")?;
    let c = descriptor(rest, "Cdesc=[");
    let d = descriptor(rest, "Ddesc=[")?;
    let op = descriptor(rest, "computeDesc=[")?;
    let trans_a = field(op, "transA")?;
    let trans_b = field(op, "transB")?;
    let number = |desc: &str, name: &str| field(desc, name).and_then(|v| v.parse::<u64>().ok());
    let k = match trans_a {
        "OP_N" => number(a, "cols")?,
        _ => number(a, "rows")?,
    };
    let batch = number(d, "batch_count");
    let letter = |t: &str| match t {
        "OP_N" => "N".to_string(),
        "OP_T" => "T".to_string(),
        "OP_C" => "C".to_string(),
        other => other.to_string(),
    };
    // The identity: every descriptor, and the op's fields but its pointer.
    let op_fields: Vec<&str> = op
        .split_whitespace()
        .filter(|w| !w.starts_with("biasPointer="))
        .collect();
    let command = format!(
        "rocblaslt_matmul Adesc=[{a}] Bdesc=[{b}] Cdesc=[{}] Ddesc=[{d}] computeDesc=[{}]",
        c.unwrap_or(""),
        op_fields.join(" ")
    );
    Some(Gemm {
        command: command.split_whitespace().collect::<Vec<_>>().join(" "),
        count: 0,
        tool: "rocblaslt_matmul".into(),
        form: "trace".into(),
        m: number(d, "rows")?,
        n: number(d, "cols")?,
        k,
        batch,
        trans_a: Some(letter(trans_a)),
        trans_b: Some(letter(trans_b)),
        a_type: field(a, "type").map(bench_type),
        b_type: field(b, "type").map(bench_type),
        c_type: c.and_then(|c| field(c, "type")).map(bench_type),
        d_type: field(d, "type").map(bench_type),
        compute_type: field(op, "computeType").map(bench_type),
        solution_index: None,
        incomplete: false,
        results: Vec::new(),
    })
}

/// The text inside `marker`'s brackets (`Adesc=[` ... `]`).
fn descriptor<'a>(s: &'a str, marker: &str) -> Option<&'a str> {
    let from = s.find(marker)? + marker.len();
    let len = s[from..].find(']')?;
    Some(&s[from..from + len])
}

/// `name=VALUE` in a descriptor.
fn field<'a>(desc: &'a str, name: &str) -> Option<&'a str> {
    desc.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
}

/// hipBLASLt's type names as the bench tools write them (`R_16F` -> `f16_r`,
/// `COMPUTE_32F` -> `f32_r`); any other as logged.
fn bench_type(t: &str) -> String {
    match t {
        "R_16F" => "f16_r",
        "R_32F" => "f32_r",
        "R_64F" => "f64_r",
        "R_16BF" => "bf16_r",
        "R_8I" => "i8_r",
        "R_32I" => "i32_r",
        "COMPUTE_16F" => "f16_r",
        "COMPUTE_32F" => "f32_r",
        "COMPUTE_64F" => "f64_r",
        "COMPUTE_32I" => "i32_r",
        other => other,
    }
    .to_string()
}
