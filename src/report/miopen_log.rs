//! What ROCm's libraries logged, as records: a case's `miopen` record (MIOpen's lines on
//! its worker's stderr) and `hipblaslt` record (the GEMMs hipBLASLt logged), and the same
//! records in `wan-vae-bench logs --json`. Field names are a contract for scripts.
//!
//! Must not: read logs (that is `crate::rocm`).
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the MIOpen log lines on a worker's stderr said (`MIOPEN_ENABLE_LOGGING_CMD=1`,
/// `MIOPEN_LOG_LEVEL=5`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct MiopenLog {
    /// Solver name -> how many times MIOpen said it chose or ran it: a Find's `Chosen
    /// Algorithm` line, or immediate mode's `[Convolution...Immediate] solver_id = NAME`
    /// (PyTorch's default, `cudnn.benchmark` off). Never a solver only evaluated or listed.
    pub solvers: BTreeMap<String, u64>,
    /// Solvers MIOpen evaluated during a Find (`Evaluating Solver: ALGO:NAME`), not chosen.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evaluated_solvers: BTreeMap<String, u64>,
    /// The find modes MIOpen said were in force (`MIOPEN_FIND_MODE = DYNAMIC_HYBRID(5)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub find_modes: Vec<String>,
    /// The MIOpen versions it reported (`MIOpen version 3.3.0.`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// Each `MIOpenDriver` command -> the solvers the call it was logged for chose or ran,
    /// counted: a solver line is tied to the command line logged before it, by order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub solver_by_command: BTreeMap<String, BTreeMap<String, u64>>,
    /// Distinct `MIOpenDriver` command lines, in the order first seen (to replay a slow
    /// convolution).
    pub driver_commands: Vec<String>,
    /// The distinct convolution problems the commands describe, in the order first seen,
    /// each with how many command lines named it and the solver its calls ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<ConvProblem>,
    /// The kernels MIOpen said it launched (`[run] kernel_name = NAME`, log level 6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<KernelCount>,
    /// The lines that show MIOpen's find or performance database was cold (`Find-db
    /// regenerating`, `File is unreadable: ...ufdb.txt`): the first few, as logged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cold_db: Vec<String>,
    /// Driver commands logged with a value the driver cannot take (`-n -1`, `-F 9`, a
    /// number past 64 bits): kept as logged, counted, with what could not be read; never
    /// made into a problem.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread_commands: Vec<UnreadCommand>,
    /// Lines that carried a `uniq -c` count: such a file was sorted, so its solver lines are
    /// no longer next to their commands and are not tied to them (counted in `solvers` only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub counted_lines: u64,
    /// Solver names and distinct commands not kept: past the caps of 200 distinct solvers and
    /// 1000 distinct commands per case, or with a count that overflows. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

/// A driver command the reader could not make a problem of, as logged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct UnreadCommand {
    pub command: String,
    /// How many times it was logged.
    pub count: u64,
    /// What could not be read (`-n -1: not a size of 0 or more`).
    pub reason: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One distinct convolution problem of MIOpen's log: what its `MIOpenDriver` command says,
/// flags left out at the driver's defaults. Sizes are `[depth, height, width]`; a 2D problem
/// has depth 1 (and depth pad 0, stride and dilation 1).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ConvProblem {
    /// The first command line that named it, from the driver word on.
    pub command: String,
    /// How many command lines named it.
    pub count: u64,
    /// `fwd`, `bwd` (backward data) or `wrw` (weight gradient); the driver's `-F 0` runs
    /// all three (`fwd+bwd+wrw`).
    pub direction: String,
    /// 2 or 3.
    pub spatial_dims: u8,
    /// `fp32` (`conv`), `fp16` (`convfp16`), `bf16` (`convbfp16`), `int8`, `fp8`.
    pub dtype: String,
    pub n: u64,
    pub c: u64,
    pub k: u64,
    pub input: [u64; 3],
    pub filter: [u64; 3],
    pub pad: [u64; 3],
    pub stride: [u64; 3],
    pub dilation: [u64; 3],
    pub groups: u64,
    /// `-m trans`: a transposed convolution.
    #[serde(default, skip_serializing_if = "is_false")]
    pub transposed: bool,
    /// `-I`/`--in_layout` when the command gives one (`NHWC`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// `-S N`: the immediate-mode solution the command asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solution_id: Option<i64>,
    /// The solver MIOpen ran it with most often (tied by order to its command lines);
    /// `None` when the log names none.
    pub solver: Option<String>,
    /// That solver's family (naive/direct, Winograd, implicit GEMM/CK, GEMM, FFT).
    pub solver_family: Option<String>,
    /// Every solver its calls ran, counted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub solvers: BTreeMap<String, u64>,
}

/// A kernel MIOpen launched, counted, with its family.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct KernelCount {
    pub name: String,
    pub count: u64,
    pub family: String,
}

/// What hipBLASLt (and rocBLAS) logged: the distinct GEMMs of their bench lines
/// (`HIPBLASLT_LOG_MASK=32`: `hipblaslt-bench --api_method c -m 4096 -n 4096 -k 4096 ...`;
/// `ROCBLAS_LAYER=2`: `rocblas-bench -f gemm_ex ...`), of hipBLASLt's trace lines
/// (`[Trace][rocblaslt_matmul]`) and of the bench tools' result rows, most frequent first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct HipblasltLog {
    pub gemms: Vec<Gemm>,
    /// Lines not kept: past the cap of 1000 distinct GEMMs (or 64 result rows per GEMM), or
    /// with a count that overflows. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

/// One distinct GEMM. hipBLASLt logs PyTorch's row-major matmuls in BLAS column-major terms
/// (operands swapped), so `m` and `n` are the library's, not torch's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Gemm {
    /// What identifies it: the bench line as first logged, from the tool's name on, spaces
    /// collapsed; for a trace line, its descriptors without the pointers; for a result row,
    /// the row without its measured figures.
    pub command: String,
    /// How many times it was logged (a `uniq -c` count included).
    pub count: u64,
    /// `hipblaslt-bench`, `rocblas-bench`, or `rocblaslt_matmul` (a trace line).
    pub tool: String,
    /// `bench` (a command to replay), `trace` (`[Trace][rocblaslt_matmul]`) or `result` (a
    /// bench tool's result row with no command before it). Only `bench` lines go into a
    /// bundle's replay file.
    #[serde(default = "bench_form")]
    pub form: String,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    /// `None` when the line does not say (a trace line of one matrix, a cut bench line).
    pub batch: Option<u64>,
    #[serde(rename = "transA")]
    pub trans_a: Option<String>,
    #[serde(rename = "transB")]
    pub trans_b: Option<String>,
    pub a_type: Option<String>,
    pub b_type: Option<String>,
    pub c_type: Option<String>,
    pub d_type: Option<String>,
    pub compute_type: Option<String>,
    pub solution_index: Option<i64>,
    /// A logged hipBLASLt bench line without the transposes or the types hipBLASLt always
    /// writes: cut by whoever pasted it. Its missing fields are unknown, not defaults.
    #[serde(default, skip_serializing_if = "is_false")]
    pub incomplete: bool,
    /// The figures a bench tool printed for it (its result rows), in the order read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<BenchResult>,
}

fn bench_form() -> String {
    "bench".into()
}

/// One result row of `rocblas-bench` or `hipblaslt-bench`, as printed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct BenchResult {
    /// The `us` column: microseconds per call.
    pub time_us: f64,
    /// The `*-Gflops` column.
    pub gflops: Option<f64>,
    /// The `*-GB/s` column.
    pub gb_per_s: Option<f64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Add `b`'s counts to `a`'s, key by key.
fn add_counts(a: &mut BTreeMap<String, u64>, b: BTreeMap<String, u64>) {
    for (k, n) in b {
        let e = a.entry(k).or_default();
        *e = e.saturating_add(n);
    }
}

/// Append the items of `b` that `a` lacks, in their order.
fn union(a: &mut Vec<String>, b: Vec<String>) {
    for x in b {
        if !a.contains(&x) {
            a.push(x);
        }
    }
}

/// Add `b`'s items to `a`'s: an item with the same key adds its count, a new one is appended.
fn add_keyed<T>(a: &mut Vec<T>, b: Vec<T>, key: impl Fn(&T) -> &str, count: impl Fn(&mut T) -> &mut u64) {
    for mut x in b {
        match a.iter_mut().find(|y| key(y) == key(&x)) {
            Some(y) => {
                let n = *count(&mut x);
                let c = count(y);
                *c = c.saturating_add(n);
            }
            None => a.push(x),
        }
    }
}

impl MiopenLog {
    /// Add what another stretch of the same case's log read (a later visit of the case, in
    /// a run of interleaved rounds): counts add up, lists gain what they lacked.
    pub fn absorb(&mut self, b: MiopenLog) {
        add_counts(&mut self.solvers, b.solvers);
        add_counts(&mut self.evaluated_solvers, b.evaluated_solvers);
        union(&mut self.find_modes, b.find_modes);
        union(&mut self.versions, b.versions);
        for (cmd, solvers) in b.solver_by_command {
            add_counts(self.solver_by_command.entry(cmd).or_default(), solvers);
        }
        union(&mut self.driver_commands, b.driver_commands);
        for p in b.problems {
            match self.problems.iter_mut().find(|q| q.command == p.command) {
                Some(q) => {
                    q.count = q.count.saturating_add(p.count);
                    add_counts(&mut q.solvers, p.solvers);
                    q.solver = q.solver.take().or(p.solver);
                    q.solver_family = q.solver_family.take().or(p.solver_family);
                }
                None => self.problems.push(p),
            }
        }
        add_keyed(&mut self.kernels, b.kernels, |k| &k.name, |k| &mut k.count);
        union(&mut self.cold_db, b.cold_db);
        add_keyed(
            &mut self.unread_commands,
            b.unread_commands,
            |u| &u.command,
            |u| &mut u.count,
        );
        self.counted_lines = self.counted_lines.saturating_add(b.counted_lines);
        self.dropped = self.dropped.saturating_add(b.dropped);
    }
}

impl HipblasltLog {
    /// Add another stretch of the same case's GEMMs (a later visit): a GEMM logged again
    /// adds its count and result rows.
    pub fn absorb(&mut self, b: HipblasltLog) {
        for g in b.gemms {
            match self
                .gemms
                .iter_mut()
                .find(|x| x.command == g.command && x.form == g.form)
            {
                Some(x) => {
                    x.count = x.count.saturating_add(g.count);
                    x.results.extend(g.results);
                }
                None => self.gemms.push(g),
            }
        }
        self.dropped = self.dropped.saturating_add(b.dropped);
    }
}

#[cfg(test)]
mod absorb_tests {
    use super::*;

    #[test]
    fn a_later_stretch_adds_its_counts() {
        let mut a = MiopenLog {
            solvers: [("ConvDirectNaiveConvFwd".to_string(), 3)].into(),
            driver_commands: vec!["conv -n 1".into()],
            kernels: vec![KernelCount {
                name: "k".into(),
                count: 2,
                family: "f".into(),
            }],
            counted_lines: 5,
            ..Default::default()
        };
        let b = MiopenLog {
            solvers: [("ConvDirectNaiveConvFwd".to_string(), 2), ("GemmFwd1x1".to_string(), 1)].into(),
            driver_commands: vec!["conv -n 1".into(), "conv -n 2".into()],
            kernels: vec![KernelCount {
                name: "k".into(),
                count: 1,
                family: "f".into(),
            }],
            counted_lines: 4,
            ..Default::default()
        };
        a.absorb(b);
        assert_eq!(a.solvers["ConvDirectNaiveConvFwd"], 5);
        assert_eq!(a.solvers["GemmFwd1x1"], 1);
        assert_eq!(a.driver_commands.len(), 2);
        assert_eq!((a.kernels.len(), a.kernels[0].count, a.counted_lines), (1, 3, 9));
        let g = |n| Gemm {
            command: "hipblaslt-bench -m 1".into(),
            count: n,
            form: "bench".into(),
            ..Default::default()
        };
        let mut h = HipblasltLog {
            gemms: vec![g(2)],
            dropped: 0,
        };
        h.absorb(HipblasltLog {
            gemms: vec![g(3)],
            dropped: 1,
        });
        assert_eq!((h.gemms.len(), h.gemms[0].count, h.dropped), (1, 5, 1));
    }
}
