//! Issue 68: rocBLAS's trace lines (paired with the bench line of the same call, counted
//! once), and lines pasted inside diffs and Markdown; issue 64: a cut or unreadable shape
//! value is never a GEMM, and what is dropped says why; issue 67: MIOpen's errors, a
//! missing system database, and the conclusion when most calls ran the naive fallback. Each
//! on real excerpts (`tests/fixtures/rocm/`, each naming its source).
use std::collections::BTreeMap;

use super::*;
use crate::rocm::dropped::Why;

fn body(name: &str) -> String {
    let path = format!("{}/tests/fixtures/rocm/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.split_once('\n').unwrap().1.to_string()
}

fn read_text(text: &str) -> RocmLogs {
    let mut reader = LogReader::default();
    read_stream(text.as_bytes(), &mut reader).unwrap();
    reader.finish()
}

/// (m, n, k, batch, transA, transB, a_type, c_type, compute_type) -> count, the GEMMs'
/// shapes whatever text identifies them.
type Shapes = BTreeMap<(u64, u64, u64, Option<u64>, String, String, String, String, String), u64>;

fn shapes(logs: &RocmLogs) -> Shapes {
    let t = |v: &Option<String>| v.clone().unwrap_or_default();
    logs.hipblaslt
        .as_ref()
        .map(|h| h.gemms.clone())
        .unwrap_or_default()
        .iter()
        .map(|g| {
            (
                (
                    g.m,
                    g.n,
                    g.k,
                    g.batch,
                    t(&g.trans_a),
                    t(&g.trans_b),
                    t(&g.a_type),
                    t(&g.c_type),
                    t(&g.compute_type),
                ),
                g.count,
            )
        })
        .collect()
}

#[test]
fn a_calls_trace_line_and_its_bench_line_are_one_call() {
    // ROCBLAS_LAYER=3: three gemm_batched_ex calls, the last one's bench line cut off in the
    // paste; the rocblas_set_stream trace lines are no GEMM.
    let logs = fixture("rocm-libraries-3413-rocblas-layer3-batched-ex.log");
    let g = &logs.hipblaslt.as_ref().unwrap().gemms;
    assert_eq!(g.len(), 2, "{g:?}");
    let a = &g[0];
    assert_eq!((a.m, a.n, a.k, a.batch, a.count), (256, 64, 128, Some(96), 2));
    assert_eq!(
        (
            a.trans_a.as_deref(),
            a.trans_b.as_deref(),
            a.a_type.as_deref(),
            a.c_type.as_deref()
        ),
        (Some("T"), Some("N"), Some("f16_r"), Some("f32_r"))
    );
    assert_eq!(a.compute_type.as_deref(), Some("f32_r"));
    // Known by its bench line, which replays it.
    assert_eq!((a.form.as_str(), a.tool.as_str()), ("bench", "rocblas-bench"));
    let b = &g[1];
    assert_eq!(
        (b.m, b.n, b.k, b.count, b.c_type.as_deref()),
        (128, 64, 256, 1, Some("f16_r"))
    );
    // rocBLAS before 2019 (AMDMIGraphX #763): transposes as enum values, each call's trace
    // line then its bench line: still one call each.
    let g = &fixture("amdmigraphx-763-rocblas-layer3.log").hipblaslt.unwrap().gemms;
    assert_eq!(g.iter().map(|g| g.count).collect::<Vec<_>>(), [1, 1], "{g:?}");
    assert!(g.iter().all(|g| g.trans_a.as_deref() == Some("N") && g.form == "bench"));
}

#[test]
fn a_logs_counts_are_the_same_with_its_trace_lines_its_bench_lines_or_both() {
    // The calls whose two lines both reached the paste (AMDMIGraphX #763; rocm-libraries
    // #3413 up to its cut line).
    let whole_3413: String = body("rocm-libraries-3413-rocblas-layer3-batched-ex.log")
        .lines()
        .take(6)
        .map(|l| format!("{l}\n"))
        .collect();
    for text in [body("amdmigraphx-763-rocblas-layer3.log"), whole_3413] {
        let is_bench = |l: &str| l.contains("rocblas-bench");
        let is_trace = |l: &str| l.starts_with("rocblas_gemm");
        let keep =
            |f: &dyn Fn(&str) -> bool| -> String { text.lines().filter(|l| f(l)).map(|l| format!("{l}\n")).collect() };
        let both = shapes(&read_text(&text));
        let traces = shapes(&read_text(&keep(&|l| !is_bench(l))));
        let benches = shapes(&read_text(&keep(&|l| !is_trace(l))));
        assert!(!both.is_empty());
        assert_eq!(traces, both, "trace lines alone");
        assert_eq!(benches, both, "bench lines alone");
        // ... and as `sort | uniq -c` counts them, the two lines of a call sorted apart.
        let mut counted: BTreeMap<&str, u64> = BTreeMap::new();
        for l in text.lines().filter(|l| !l.trim().is_empty()) {
            *counted.entry(l).or_default() += 1;
        }
        let uniq: String = counted.iter().map(|(l, n)| format!("{n:>7} {l}\n")).collect();
        assert_eq!(shapes(&read_text(&uniq)), both, "a uniq -c file");
    }
}

#[test]
fn a_trace_line_alone_is_a_call_of_its_shape_with_its_types() {
    let text: String = body("rocm-libraries-3413-rocblas-layer3-batched-ex.log")
        .lines()
        .filter(|l| l.starts_with("rocblas_gemm"))
        .map(|l| format!("{l}\n"))
        .collect();
    let g = read_text(&text).hipblaslt.unwrap().gemms;
    assert_eq!(g.len(), 2);
    assert!(g
        .iter()
        .all(|g| g.form == "trace" && g.tool == "rocblas_gemm_batched_ex"));
    // The identity leaves the pointers out: the same call with other buffers is one GEMM.
    assert!(!g[0].command.contains("0x"), "{}", g[0].command);
    assert_eq!((g[0].count, g[0].solution_index, g[0].incomplete), (2, Some(0), false));
}

#[test]
fn a_line_cut_inside_its_last_value_never_reads_a_shorter_number() {
    // Issue 64 item 12: the real bench line of rocm-libraries #12243 cut inside `-k 4096`.
    let line = body("rocm-libraries-12243-hipblaslt-bench-bf16.log")
        .lines()
        .find(|l| l.starts_with("hipblaslt-bench"))
        .unwrap()
        .to_string();
    let cut = &line[..line.find("-k 4096").unwrap() + "-k 409".len()];
    let logs = read_text(&format!("{cut}\n"));
    assert!(logs.hipblaslt.as_ref().is_none_or(|h| h.gemms.is_empty()), "{logs:?}");
    let reasons = logs.hipblaslt_dropped.reasons();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!((reasons[0].reason, reasons[0].count), (Why::CutValue, 1));
    assert!(reasons[0].example.as_deref().unwrap().ends_with("-k 409"));
    // Cut inside a value that is no shape (`--a_type bf1`): the GEMM, its type unknown.
    let cut = &line[..line.find("--a_type bf16_r").unwrap() + "--a_type bf1".len()];
    let g = read_text(&format!("{cut}\n")).hipblaslt.unwrap().gemms;
    assert_eq!((g[0].m, g[0].n, g[0].k, g[0].incomplete), (16, 512, 4096, true));
    assert_eq!(g[0].a_type, None);
    // A trace line cut inside its `k` (rocm-libraries #3413's first call).
    let trace = body("rocm-libraries-3413-rocblas-layer3-batched-ex.log")
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    let logs = read_text(&format!(
        "{}\n",
        &trace[.."rocblas_gemm_batched_ex,T,N,256,64,12".len()]
    ));
    assert!(logs.hipblaslt.as_ref().is_none_or(|h| h.gemms.is_empty()), "{logs:?}");
    assert_eq!(logs.hipblaslt_dropped.reasons()[0].reason, Why::CutValue);
}

#[test]
fn a_shape_value_past_64_bits_is_counted_unreadable_never_vanishes() {
    let line = body("rocm-libraries-12243-hipblaslt-bench-bf16.log")
        .lines()
        .find(|l| l.starts_with("hipblaslt-bench"))
        .unwrap()
        .replace("-k 4096", "-k 99999999999999999999");
    let logs = read_text(&format!("{line}\n"));
    let reasons = logs.hipblaslt_dropped.reasons();
    assert_eq!((reasons[0].reason, reasons[0].count), (Why::BadValue, 1), "{reasons:?}");
    assert_eq!(logs.hipblaslt.unwrap().dropped, 1);
}

#[test]
fn records_with_an_unreadable_uniq_count_are_dropped_with_their_reason() {
    // Issue 64 item 14: `0` and a count past 64 bits before real lines.
    let line = body("rocm-libraries-12243-hipblaslt-bench-bf16.log")
        .lines()
        .find(|l| l.starts_with("hipblaslt-bench"))
        .unwrap()
        .to_string();
    let command = body("rocm-libraries-6439-gfx1201-convfp16.log")
        .lines()
        .find(|l| l.contains("MIOpenDriver"))
        .unwrap()
        .to_string();
    let text = format!("      0 {line}\n99999999999999999999999 {command}\n");
    let logs = read_text(&text);
    let h = logs.hipblaslt_dropped.reasons();
    let m = logs.miopen_dropped.reasons();
    assert_eq!((h[0].reason, h[0].count), (Why::UnreadableCount, 1), "{h:?}");
    assert_eq!((m[0].reason, m[0].count), (Why::UnreadableCount, 1), "{m:?}");
    // Neither is "past the caps".
    assert!(h.iter().chain(&m).all(|r| r.reason != Why::Capped));
    // The MIOpen side is reported although no MIOpen record was kept.
    assert_eq!(logs.miopen.as_ref().map(|m| m.dropped), Some(1));
}

#[test]
fn an_added_diff_line_is_read_and_a_removed_one_is_not() {
    // hipBLASLt PR #1305: a command and its Winner result as a diff's added lines.
    let logs = fixture("hipblaslt-1305-diff-bench-winner.log");
    let g = &logs.hipblaslt.unwrap().gemms;
    assert_eq!(g.len(), 1, "the result row is the command's, not a second GEMM: {g:?}");
    assert_eq!(
        (g[0].m, g[0].n, g[0].k, g[0].trans_a.as_deref()),
        (64, 64, 1024, Some("N"))
    );
    assert_eq!(g[0].results.len(), 1);
    assert_eq!(
        (g[0].results[0].time_us, g[0].results[0].gflops),
        (9.28735, Some(903.229))
    );
    // The same real lines as a diff's removed lines (the diff markers turned to `-`): no call.
    let removed = body("hipblaslt-1305-diff-bench-winner.log").replace("\n+", "\n-");
    let mut reader = LogReader::default();
    read_stream(removed.as_bytes(), &mut reader).unwrap();
    assert!(reader.removed_lines() >= 5);
    assert!(reader.finish().hipblaslt.is_none());
}

#[test]
fn bold_markers_and_code_spans_are_taken_off_before_a_line_is_read() {
    // hipBLASLt PR #1962: `**--api_method cpp**` and `**--compute_type xf32_r**`.
    let g = fixture("hipblaslt-1962-bold-api-method-compute-type.log")
        .hipblaslt
        .unwrap()
        .gemms;
    let computes: Vec<_> = g.iter().map(|g| g.compute_type.as_deref()).collect();
    assert_eq!(computes, [Some("f32_r"), Some("xf32_r")]);
    assert!(g.iter().all(|g| !g.incomplete && !g.command.contains('*')), "{g:?}");
    // ROCm/ROCm #4466's code span (the trace and bench line of one gemm_ex call): the span's
    // backticks are no part of a value.
    let text = format!(
        "`{}`\n",
        body("rocm-libraries-12243-hipblaslt-bench-bf16.log")
            .lines()
            .find(|l| l.starts_with("hipblaslt-bench"))
            .unwrap()
            .trim_end()
    );
    let g = read_text(&text).hipblaslt.unwrap().gemms;
    assert_eq!(g[0].command.chars().last(), Some('0'), "{}", g[0].command);
}

#[test]
fn lines_joined_by_br_in_a_table_cell_are_each_read() {
    // No real paste of this form was found; the two real lines of hipBLASLt #1587 joined as
    // an HTML table cell joins them.
    let lines: Vec<String> = std::fs::read_to_string(format!(
        "{}/tests/fixtures/rocm-heldout/hipblaslt-1587-bold-bench-flags.log",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .lines()
    .filter(|l| l.starts_with("hipblaslt-bench"))
    .map(|l| l.replace("**", ""))
    .collect();
    let g = read_text(&format!("<td>{}<br>{}</td>\n", lines[0], lines[1]))
        .hipblaslt
        .unwrap()
        .gemms;
    assert_eq!(g.len(), 2, "{g:?}");
    assert!(g.iter().all(|g| !g.incomplete && g.count == 1));
}

#[test]
fn miopens_errors_and_a_missing_system_database_are_noted() {
    // The gfx1151 log (MIOpen #3964): two errors, one text once its paths are left out.
    let logs = fixture("miopen-3964-gfx1151-evaluating.log");
    let errors = &logs.miopen_notes.errors;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .0
            .starts_with("[EvaluateInvokers] Invalid elapsed time detected"),
        "{errors:?}"
    );
    assert_eq!(errors[0].1, 2);
    let logs = fixture("miopen-1606-missing-system-db.log");
    assert!(logs.miopen_notes.system_db[0].contains("gfx1030_40.kdb"));
    let logs = fixture("miopen-1254-unreadable-system-db-errors.log");
    assert!(logs.miopen_notes.system_db[0].contains("Unable to read system database"));
    assert_eq!(logs.miopen_notes.errors.len(), 2);
    // A failed search is an error and still names the solver it evaluated (TheRock #2524).
    let logs = fixture("therock-2524-gfx1103-search-failed.log");
    assert!(logs
        .miopen_notes
        .errors
        .iter()
        .any(|(e, _)| e.starts_with("[FindSolutionImpl] Search Failed")));
    assert!(logs
        .miopen
        .unwrap()
        .evaluated_solvers
        .contains_key("ConvBinWinogradRxSf3x2"));
}

#[test]
fn most_calls_on_the_naive_fallback_is_concluded_with_what_to_try() {
    // MIOpen #3860: every convolution kernel launched was MIOpen's naive one.
    let json = crate::rocm::summary::summary(Vec::new(), fixture("miopen-3860-gfx1150-naive-kernels.log"));
    assert_eq!(json.conclusions.len(), 1, "{:?}", json.conclusions);
    let c = &json.conclusions[0];
    for want in [
        "6 of 6",
        "naive",
        "--conv3d split",
        "MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD",
        "--cudnn off",
    ] {
        assert!(c.contains(want), "{want}: {c}");
    }
    // Winograd kernels (MIOpen #3860's other excerpt): nothing to conclude.
    let json = crate::rocm::summary::summary(Vec::new(), fixture("miopen-3860-gfx1150-run-kernel-name.log"));
    assert!(json.conclusions.is_empty(), "{:?}", json.conclusions);
}

#[test]
fn a_size_stride_or_group_of_zero_is_no_problem_but_an_unread_command() {
    // The real command of rocm-libraries #6439 with one value turned to 0.
    let command = body("rocm-libraries-6439-gfx1201-convfp16.log")
        .lines()
        .find_map(|l| crate::rocm::driver::find(l).map(|c| c.to_string()))
        .unwrap();
    assert!(crate::rocm::driver::problem(&command).is_ok());
    for (flag, zero) in [(" -u 1", " -u 0"), (" -n 2", " -n 0"), ("", " -g 0")] {
        let bad = if flag.is_empty() {
            format!("{command}{zero}")
        } else {
            assert!(command.contains(flag), "{flag}: {command}");
            command.replacen(flag, zero, 1)
        };
        let why = crate::rocm::driver::problem(&bad).unwrap_err();
        assert!(why.contains(zero.trim()), "{zero}: {why}");
    }
    // A 2D command's depth stride of 0 is no depth stride (rocm-libraries #2734's form).
    let two_d = "MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 --conv_stride_d 0 --spatial_dim 2 -F 1";
    assert!(crate::rocm::driver::problem(two_d).is_ok());
}
