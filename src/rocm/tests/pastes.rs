//! Issue 55 on real excerpts (`tests/fixtures/rocm/`, each naming its source): records
//! joined on one line after their `grep -n` numbers, solvers only considered (the
//! immediate-mode fallback's estimates, a workspace too small, a failed search), the bench
//! tools' result rows after their command, hipBLASLt's trace lines, short precision flags,
//! and bench lines glued together or cut by a paste.
use std::collections::BTreeMap;

use super::{fixture, miopen};
use crate::rocm::LogReader;

fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn records_joined_after_their_grep_numbers_are_each_read_in_order() {
    // AETS-MAGI/ROCm-vega: a Markdown list item holding `NNN:MIOpen(HIP): ...;` records.
    let log = miopen("rocm-vega-gfx900-group2-joined-wti.log");
    assert!(log.solvers.is_empty(), "{:?}", log.solvers);
    assert_eq!(
        log.evaluated_solvers,
        counts(&[
            ("ConvBinWinogradRxSf3x2", 2),
            ("ConvBinWinogradRxSf2x3", 1),
            ("ConvDirectNaiveConvFwd", 1),
            ("GemmFwdRest", 1),
        ])
    );
    // The last record is the driver's own `Solution: 14/NAME`, its `;` the record's end.
    let log = miopen("rocm-vega-gfx900-fp32-3x3-joined-solution.log");
    assert_eq!(log.solvers, counts(&[("ConvBinWinograd3x3U", 1)]));
}

#[test]
fn solvers_turned_down_estimated_or_failed_are_evaluated_never_run() {
    let log = miopen("rocm-libraries-4071-gfx1151-is-enough-workspace.log");
    assert_eq!(log.evaluated_solvers, counts(&[("GemmFwdRest", 7)]));
    assert!(log.solvers.is_empty());
    let log = miopen("miopen-2981-is-enough-workspace-get-solutions.log");
    assert_eq!(
        log.evaluated_solvers,
        counts(&[("ConvAsmImplicitGemmGTCDynamicFwdXdlopsNHWC", 3), ("GemmFwd1x1_0_2", 1)])
    );
    // `Search Failed: <key><Solver>:`: the name glued after the key's direction letter.
    // (Its `[EvaluateInvokers] DESKTOP-5V05ODG:C:/...: Empty code object path.` error named the
    // host as an evaluated solver before: a solver's name is followed by `: `.)
    let log = miopen("therock-2524-gfx1103-search-failed.log");
    assert_eq!(log.evaluated_solvers, counts(&[("ConvBinWinogradRxSf3x2", 1)]));
    assert!(log.solvers.is_empty());
}

#[test]
fn a_bench_command_and_its_result_row_are_one_gemm_with_its_figures() {
    let gemms = |name: &str| fixture(name).hipblaslt.unwrap_or_else(|| panic!("{name}")).gemms;
    // rocBLAS's own guide: the command, then rocblas-bench's header and row.
    let g = gemms("rocblas-programmers-guide-bench-result.log");
    assert_eq!(g.len(), 1, "{g:?}");
    let g = &g[0];
    assert_eq!(
        (g.m, g.n, g.k, g.count, g.form.as_str()),
        (4096, 4096, 4096, 1, "bench")
    );
    assert_eq!(
        (g.a_type.as_deref(), g.d_type.as_deref()),
        (Some("f32_r"), Some("f32_r"))
    );
    assert_eq!(g.results.len(), 1);
    assert_eq!((g.results[0].time_us, g.results[0].gflops), (11509.4, Some(11941.5)));
    // hipBLASLt #251: after a shell prompt, the old header (M,N,K, CPU columns after `us`).
    let g = &gemms("hipblaslt-251-bench-session-gfx906.log")[0];
    assert_eq!((g.m, g.count), (2048, 1));
    assert_eq!((g.results[0].time_us, g.results[0].gflops), (6.3, Some(2.72763e6)));
    // rocm-libraries #10211: the `[0]:` header and its indented row after a `Winner:` line.
    let g = gemms("rocm-libraries-10211-hipblaslt-gfx1151-fp32.log");
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!(g[0].results[0].time_us, 42865.8);
    assert_eq!(g[0].results[0].gb_per_s, Some(24.7867));
    // hipBLASLt #1544: command and output in Markdown code spans.
    let g = gemms("hipblaslt-1544-bench-efficiency-output.log");
    assert_eq!(g.len(), 1, "{g:?}");
    assert_eq!((g[0].m, g[0].n, g[0].k), (4096, 4864, 32896));
    assert_eq!(
        (g[0].results[0].time_us, g[0].results[0].gflops),
        (2361.71, Some(555009.0))
    );
}

#[test]
fn short_precision_flags_name_the_types() {
    let g = &fixture("rocblas-1425-mi100-short-precision.log")
        .hipblaslt
        .unwrap()
        .gemms[0];
    assert_eq!((g.m, g.n, g.k), (1, 16192, 16192));
    assert_eq!(
        (g.a_type.as_deref(), g.c_type.as_deref(), g.compute_type.as_deref()),
        (Some("f32_r"), Some("f32_r"), Some("f32_r"))
    );
}

#[test]
fn hipblaslt_trace_lines_give_m_n_k_from_their_descriptors() {
    // The form an earlier comment said had no m, n, k: D's rows and columns, and A's rows
    // (transA=OP_T) or columns give them.
    let g = fixture("hipblaslt-1442-trace-matmul.log")
        .hipblaslt
        .expect("trace GEMMs")
        .gemms;
    let got: Vec<_> = g.iter().map(|g| (g.m, g.n, g.k, g.count, g.batch)).collect();
    assert_eq!(got, [(4096, 267, 14336, 1, None), (14336, 267, 4096, 1, None)]);
    assert!(g.iter().all(|g| g.form == "trace" && g.trans_a.as_deref() == Some("T")));
    assert_eq!(g[0].a_type.as_deref(), Some("f32_r"));
}

#[test]
fn two_bench_lines_glued_are_two_calls_and_a_cut_one_is_incomplete() {
    // Real lines (rocm-libraries #12243 and #10211) written into one log by two processes
    // with no newline between them.
    let text = |name: &str| {
        let t = std::fs::read_to_string(format!("{}/tests/fixtures/rocm/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        t.lines()
            .find(|l| l.starts_with("hipblaslt-bench"))
            .unwrap()
            .trim_end()
            .to_string()
    };
    let (a, b) = (
        text("rocm-libraries-12243-hipblaslt-bench-bf16.log"),
        text("rocm-libraries-10211-hipblaslt-gfx1151-fp32.log"),
    );
    let mut r = LogReader::default();
    r.line(&format!("{a}{b}"));
    let g = r.finish().hipblaslt.unwrap().gemms;
    let shapes: BTreeMap<u64, u64> = g.iter().map(|g| (g.m, g.count)).collect();
    assert_eq!(shapes, [(16, 1), (16384, 1)].into());
    // The same line cut by whoever pasted it, before the transposes: one call of the shape
    // it names, incomplete, with no transpose, batch or type it never had.
    let cut = &a[..a.find("--transA").unwrap()];
    let mut r = LogReader::default();
    r.line(cut);
    r.line(&a);
    let g = r.finish().hipblaslt.unwrap().gemms;
    assert_eq!(g.len(), 2);
    let c = g.iter().find(|g| g.incomplete).expect("the cut line");
    assert_eq!((c.m, c.n, c.k, c.count), (16, 512, 4096, 1));
    assert_eq!((c.trans_a.as_deref(), c.batch, c.a_type.as_deref()), (None, None, None));
    let whole = g.iter().find(|g| !g.incomplete).unwrap();
    assert_eq!((whole.trans_a.as_deref(), whole.batch), (Some("N"), Some(1)));
}

#[test]
fn grep_and_cat_numbers_are_no_counts_and_uniq_counts_are() {
    let line = "hipblaslt-bench --api_method c -m 4096 -n 4096 -k 4096 --transA T --transB T --batch_count 1 \
                --a_type f16_r --b_type f16_r --c_type f16_r --d_type f16_r --compute_type f32_r";
    let mut r = LogReader::default();
    for l in [
        format!("229:{line}"),
        format!("run.log:230:{line}"),
        format!("     3\t{line}"),
        format!("  42428 {line}"),
        format!("7:      5 {line}"),
    ] {
        assert!(r.line(&l), "{l}");
    }
    let g = &r.finish().hipblaslt.unwrap().gemms[0];
    assert_eq!((g.count, g.command.as_str()), (1 + 1 + 1 + 42428 + 5, line));
    // A driver command after a grep number keeps no number in its text.
    let mut p = LogReader::default();
    p.line("12:./bin/MIOpenDriver conv -n 1 -c 3 -F 1");
    let log = p.finish().miopen.unwrap();
    assert_eq!(log.driver_commands, ["./bin/MIOpenDriver conv -n 1 -c 3 -F 1"]);
}

#[test]
fn a_counted_miopen_log_counts_solvers_without_tying_them_to_commands() {
    let mut r = LogReader::default();
    r.line("      3 MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -F 1");
    r.line("      3 MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 0");
    let log = r.finish().miopen.unwrap();
    assert_eq!((log.problems[0].count, log.solvers["GemmFwdRest"]), (3, 3));
    assert_eq!(
        log.problems[0].solver, None,
        "a sorted log does not tie solvers to commands"
    );
    assert!(log.solver_by_command.is_empty());
    assert_eq!(log.counted_lines, 2);
}

#[test]
fn an_old_miopens_api_name_before_its_command_gives_the_direction() {
    // MIOpen from September 2017 to 2019 logged `__func__: ./bin/MIOpenDriver conv` and the
    // flags, without `-F` (ROCm/MIOpen src/convolution_api.cpp and logger.hpp at commit
    // 7297b3c75, `MIOPEN_DRIVER_CMD`); no published paste of that form was found, so these
    // lines are that code's output for MIOpen #600's problem, byte for byte.
    let flags = "-n 16 -c 64 -H 32 -W 32 -k 256 -x 3 -y 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1";
    let mut r = LogReader::default();
    for api in [
        "miopenFindConvolutionForwardAlgorithm",
        "miopenConvolutionForward",
        "miopenFindConvolutionBackwardDataAlgorithm",
        "miopenConvolutionBackwardWeights",
    ] {
        assert!(r.line(&format!("{api}: ./bin/MIOpenDriver conv {flags}")));
    }
    let log = r.finish().miopen.unwrap();
    let got: Vec<_> = log
        .problems
        .iter()
        .map(|p| (p.direction.as_str(), p.count, p.c, p.k))
        .collect();
    assert_eq!(got, [("fwd", 2, 64, 256), ("bwd", 1, 64, 256), ("wrw", 1, 64, 256)]);
    // The call stays in the command's text, so the replay file keeps the direction too.
    assert!(log.problems[2]
        .command
        .starts_with("miopenConvolutionBackwardWeights: ./bin/MIOpenDriver conv"));
    // An explicit `-F` wins over the name.
    let p = crate::rocm::driver::problem(&format!(
        "miopenConvolutionForward: ./bin/MIOpenDriver conv {flags} -F 4"
    ));
    assert_eq!(p.unwrap().direction, "wrw");
}
