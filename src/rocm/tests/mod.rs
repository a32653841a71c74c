//! The ROCm log reader on real logs that ROCm users and AMD engineers published
//! (`tests/fixtures/rocm/`, each file's first line names its source), and on the held-out
//! set (`tests/fixtures/rocm-heldout/`, checked against what a careful reader wrote down in
//! each `.expected.json`, never used while the reader was written).
use std::collections::BTreeMap;

use super::*;
use crate::report::ConvProblem;

mod forms;
mod heldout;
mod hostile;
mod pastes;
mod wraps;

/// A fixture's lines after its `# Source:` header, read as `logs` reads a file.
fn read(text: &str) -> RocmLogs {
    let body = match text.split_once('\n') {
        Some((first, rest)) if first.starts_with("# Source:") => rest,
        _ => panic!("a fixture names its source on its first line"),
    };
    let mut reader = LogReader::default();
    read_stream(body.as_bytes(), &mut reader).unwrap();
    reader.finish()
}

fn fixture(name: &str) -> RocmLogs {
    let path = format!("{}/tests/fixtures/rocm/{name}", env!("CARGO_MANIFEST_DIR"));
    read(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
}

fn miopen(name: &str) -> MiopenLog {
    fixture(name)
        .miopen
        .unwrap_or_else(|| panic!("{name}: no MIOpen line read"))
}

/// (direction, dtype, dims, n, c, k, input, filter, groups, count) of each problem.
type Shape = (
    &'static str,
    &'static str,
    u8,
    u64,
    u64,
    u64,
    [u64; 3],
    [u64; 3],
    u64,
    u64,
);

/// A [`Shape`] with owned strings, as read.
type Row = (String, String, u8, u64, u64, u64, [u64; 3], [u64; 3], u64, u64);

fn shapes(problems: &[ConvProblem]) -> Vec<Row> {
    problems
        .iter()
        .map(|p| {
            let (d, t) = (p.direction.clone(), p.dtype.clone());
            (
                d,
                t,
                p.spatial_dims,
                p.n,
                p.c,
                p.k,
                p.input,
                p.filter,
                p.groups,
                p.count,
            )
        })
        .collect()
}

fn want(list: &[Shape]) -> Vec<Row> {
    list.iter()
        .map(|s| (s.0.into(), s.1.into(), s.2, s.3, s.4, s.5, s.6, s.7, s.8, s.9))
        .collect()
}

fn names(map: &BTreeMap<String, u64>) -> Vec<&str> {
    map.keys().map(String::as_str).collect()
}

#[test]
fn the_wan_vae_decodes_own_3d_convolutions_are_read_from_windows_driver_commands() {
    // ROCm/rocm-libraries #1329: `MIOpenDriver.exe convfp16`, long and short flags mixed.
    let log = miopen("rocm-libraries-1329-wan-vae-3d-convfp16.log");
    assert_eq!(
        shapes(&log.problems),
        want(&[
            ("fwd", "fp16", 3, 1, 96, 96, [6, 482, 834], [3, 3, 3], 1, 1),
            ("fwd", "fp16", 3, 1, 96, 3, [6, 482, 834], [3, 3, 3], 1, 1),
        ])
    );
    assert!(log.solvers.is_empty());
    // Strix Halo, bf16, a depthwise 3D convolution (ROCm/rocm-libraries #3559).
    let log = miopen("rocm-libraries-3559-gfx1151-convbfp16-3d.log");
    let p = &log.problems[0];
    assert_eq!(
        (p.dtype.as_str(), p.input, p.filter, p.pad, p.groups),
        ("bf16", [65, 88, 160], [5, 5, 5], [0, 2, 2], 512)
    );
}

#[test]
fn long_flags_and_quoted_commands_take_the_drivers_defaults_for_what_they_leave_out() {
    let log = miopen("rocm-libraries-2734-long-flags.log");
    let got = shapes(&log.problems);
    assert_eq!(got.len(), 6, "{got:?}");
    assert_eq!(
        got[1],
        want(&[("bwd", "fp16", 2, 1, 512, 512, [1, 28, 28], [1, 3, 3], 32, 1)])[0]
    );
    assert!(got
        .iter()
        .any(|p| p.1 == "bf16" && p.0 == "fwd" && p.3 == 8 && p.4 == 480));
    assert!(got.iter().any(|p| p.1 == "fp32"), "a plain `conv` is fp32");
    // `--conv_stride_d 0` in a 2D command: the depth flags act in 3D only.
    assert!(log.problems.iter().all(|p| p.stride[0] == 1 && p.dilation[0] == 1));
    // MIOpen #600: `conv -F 4 --batchsize 16 --in_channels 64 --out_channels 256 --iter 1`.
    let log = miopen("miopen-600-bwrw-chosen-algorithm.log");
    assert_eq!(
        shapes(&log.problems),
        want(&[("wrw", "fp32", 2, 16, 64, 256, [1, 32, 32], [1, 3, 3], 1, 1)])
    );
    // ... and the weight gradient's own wording, `BWrW Chosen Algorithm: NAME , ws, ms`.
    assert_eq!(names(&log.solvers), ["ConvWinograd3x3MultipassWrW<3-5>"]);
    assert_eq!(
        log.problems[0].solver.as_deref(),
        Some("ConvWinograd3x3MultipassWrW<3-5>")
    );
    assert_eq!(log.problems[0].solver_family.as_deref(), Some("winograd"));
}

#[test]
fn every_direction_and_a_3d_backward_pass_are_told_apart() {
    let log = miopen("miopen-2261-3d-conv-bwd-wrw.log");
    let dirs: Vec<_> = log
        .problems
        .iter()
        .map(|p| (p.direction.as_str(), p.spatial_dims, p.input))
        .collect();
    assert!(dirs.contains(&("fwd", 3, [128, 128, 128])), "{dirs:?}");
    assert!(dirs.contains(&("bwd", 3, [128, 128, 128])), "{dirs:?}");
    assert!(dirs.contains(&("wrw", 3, [128, 128, 128])), "{dirs:?}");
    let log = miopen("miopen-1049-convfp16-bwd-wrw.log");
    let dirs: std::collections::BTreeSet<_> = log.problems.iter().map(|p| p.direction.as_str()).collect();
    assert_eq!(dirs, ["bwd", "fwd", "wrw"].into());
    assert!(log.problems.iter().all(|p| p.dtype == "fp16"));
}

#[test]
fn find_and_run_commands_of_one_problem_are_counted_as_one_problem() {
    // ROCm/rocm-libraries #6439 (gfx1201): the shell line, the driver's echo, one
    // LogCmdFindConvolution and three LogCmdConvolution lines of one fp16 problem.
    let log = miopen("rocm-libraries-6439-gfx1201-convfp16.log");
    assert_eq!(
        shapes(&log.problems),
        want(&[("fwd", "fp16", 2, 2, 16, 16, [1, 32, 32], [1, 3, 3], 1, 6)])
    );
    assert_eq!(log.problems[0].pad, [0, 1, 1]);
    // Immediate mode with `-S 0` and NHWC (tensorflow-upstream #3054); the list of the
    // solutions available is no choice.
    let log = miopen("tensorflow-upstream-3054-immediate-S0.log");
    let p = &log.problems[0];
    assert_eq!((p.solution_id, p.layout.as_deref()), (Some(0), Some("NHWC")));
    assert!(log.solvers.is_empty(), "{:?}", log.solvers);
}

#[test]
fn the_drivers_own_solution_lines_and_the_execution_summary_name_the_solver_run() {
    let log = miopen("miopen-134-driver-solution.log");
    assert_eq!(
        log.solvers,
        [("ConvBinWinogradRxS".into(), 1), ("gemm".into(), 1)].into()
    );
    let log = miopen("legacy-rocm-build-5191-convbfp16-solution.log");
    assert_eq!(names(&log.solvers), ["GemmFwd1x1_0_1", "GemmFwdRest"]);
    let solver_of = |c: u64| log.problems.iter().find(|p| p.c == c).and_then(|p| p.solver.clone());
    assert_eq!(solver_of(512).as_deref(), Some("GemmFwd1x1_0_1"));
    assert_eq!(solver_of(128).as_deref(), Some("GemmFwdRest"));
    // ROCm/rocm-libraries PR #4346: `Problem="conv ..." Solver="NAME"`, tied on one line.
    let log = miopen("rocm-libraries-4346-execution-summary.log");
    let got: Vec<_> = log
        .problems
        .iter()
        .map(|p| (p.direction.as_str(), p.c, p.solver.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("fwd", 3, Some("ConvBinWinogradRxSf2x3g1")),
            ("wrw", 32, Some("ConvAsmImplicitGemmGTCDynamicWrwXdlopsNHWC"))
        ]
    );
    assert_eq!(log.problems[1].solver_family.as_deref(), Some("implicit-gemm/miopen"));
}

#[test]
fn solvers_only_evaluated_listed_searched_or_registered_are_never_called_run() {
    for name in [
        "miopen-3964-gfx1151-evaluating.log",
        "miopen-1739-evaluate-invokers-kernels.log",
        "therock-1899-gfx1150-find-1-0-registered.log",
        "miopen-2838-2d-cold-db.log",
        "miopen-3383-find-db-records.log",
        "rocm-libraries-3509-find-db-records.log",
        "tensorflow-upstream-1110-miopenconvuni-setvalues.log",
        "therock-2524-gfx1103-search-failed.log",
        "miopen-2492-grouped-wrw-dynamic-hybrid.log",
    ] {
        let log = miopen(name);
        assert!(log.solvers.is_empty(), "{name}: {:?}", log.solvers);
        assert!(log.problems.iter().all(|p| p.solver.is_none()), "{name}");
    }
    let ev = |name: &str| miopen(name).evaluated_solvers;
    assert!(ev("miopen-1739-evaluate-invokers-kernels.log").contains_key("ConvBinWinogradRxSf2x3"));
    assert!(ev("therock-1899-gfx1150-find-1-0-registered.log").contains_key("ConvDirectNaiveConvFwd"));
    assert!(ev("miopen-2838-2d-cold-db.log").contains_key("ConvDirectNaiveConvFwd"));
    assert!(ev("rocm-libraries-3509-find-db-records.log").contains_key("ConvWinoFuryRxS<2-3>"));
    assert!(ev("miopen-3383-find-db-records.log").contains_key("ConvHipImplicitGemmGroupFwdXdlops"));
    assert!(ev("tensorflow-upstream-1110-miopenconvuni-setvalues.log").contains_key("ConvOclDirectFwd"));
    // An error's path is no solver.
    assert!(ev("miopen-3964-gfx1151-evaluating.log")
        .keys()
        .all(|k| !k.contains('/')));
}

#[test]
fn versions_find_modes_and_a_cold_database_are_what_miopen_said() {
    let log = miopen("miopen-2838-3d-find-db-regenerating.log");
    assert_eq!(log.versions, ["3.1.0.5aab55d63"]);
    assert_eq!(log.find_modes, ["NORMAL(1)"]);
    assert!(
        log.cold_db.iter().any(|l| l.contains("Find-db regenerating")),
        "{:?}",
        log.cold_db
    );
    assert_eq!(log.problems[0].input, [100, 320, 320]);
    let log = miopen("miopen-2838-2d-cold-db.log");
    assert!(log.cold_db.iter().any(|l| l.contains("udb.txt")), "{:?}", log.cold_db);
    // The shell command continued over lines with `\` is one command, with its own shape.
    assert_eq!(
        shapes(&log.problems),
        want(&[("fwd", "fp16", 2, 1, 1, 640, [1, 3200, 3200], [1, 1, 1], 1, 2)])
    );
    let log = miopen("miopen-990-fp16-wrw-opencl.log");
    assert_eq!(log.find_modes, ["DYNAMIC_HYBRID(5)"], "the OpenCL backend's prefix");
    let log = miopen("miopen-2492-grouped-wrw-dynamic-hybrid.log");
    assert_eq!(log.versions, ["3.1.0.852bd9205"]);
    assert!(log.cold_db.is_empty());
}

#[test]
fn lines_glued_after_a_real_progress_bar_are_read() {
    // patientx-cfz/comfyui-rocm #33 (gfx1010, TheRock wheels on Windows): tqdm's bar, then
    // MIOpen 3.6's `MIOpen: Warning ...` on the same line; then an unreadable find-db.
    let log = miopen("comfyui-rocm-33-progress-bar-glued.log");
    assert!(
        log.cold_db.iter().any(|l| l.contains("gfx1010_20.HIP.fdb.txt")),
        "{:?}",
        log.cold_db
    );
    assert!(log.solvers.is_empty() && log.evaluated_solvers.is_empty());
    let glued = std::fs::read_to_string(format!(
        "{}/tests/fixtures/rocm/comfyui-rocm-33-progress-bar-glued.log",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let line = glued.lines().find(|l| l.contains("it/s]MIOpen")).unwrap();
    assert!(miopen::strip_prefix(line).is_some_and(|r| r.starts_with("Warning [OpenRuntimeLibraryForDevice]")));
    // ROCm/ROCm #2355 (gfx1100, sd-webui): `MIOpen(HIP): Error [Compile]` after the bar.
    let text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/rocm/rocm-2355-progress-bar-glued.log",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let line = text.lines().find(|l| l.contains("it/s]MIOpen(HIP)")).unwrap();
    assert!(miopen::strip_prefix(line).is_some_and(|r| r.starts_with("Error [Compile]")));
}

#[test]
fn odd_but_real_ways_of_writing_a_command_are_read_and_never_panic() {
    // A non-breaking space before the driver (logs copied from a web page): no panic.
    assert_eq!(
        driver::find("\u{a0}MIOpenDriver conv -n 1 -c 3").as_deref(),
        Some("MIOpenDriver conv -n 1 -c 3")
    );
    // A quoted Windows path, then the subcommand.
    let cmd = driver::find(
        r#"& "C:\Program Files\AMD\ROCm\6.4\bin\MIOpenDriver.exe" convbfp16 -n 1 -c 16 -H 64 -W 64 -k 16"#,
    )
    .expect("a quoted path");
    let p = driver::problem(&cmd).expect("its problem");
    assert_eq!((p.dtype.as_str(), p.c, p.input), ("bf16", 16, [1, 64, 64]));
    // A quoted command ends at its quote.
    let cmd = driver::find(r#"cmd="MIOpenDriver conv -n 1 -c 3" rc=0"#).unwrap();
    assert_eq!(cmd, "MIOpenDriver conv -n 1 -c 3");
    assert_eq!(driver::problem(&cmd).unwrap().c, 3);
    // `-S` takes a solver's name too: the problem stays, with no solution id.
    let p = driver::problem("MIOpenDriver conv -n 1 -c 3 -S ConvBinWinogradRxSf2x3g1").unwrap();
    assert_eq!((p.n, p.solution_id), (1, None));
    assert_eq!(driver::problem("MIOpenDriver conv -S -1").unwrap().solution_id, None);
    // The driver's `0/UNKNOWN` names no solver.
    let mut r = LogReader::default();
    r.line("MIOpen Forward Conv. Algorithm: 0, Solution: 0/UNKNOWN");
    assert!(r.finish().miopen.is_none_or(|m| m.solvers.is_empty()));
}

#[test]
fn what_a_hostile_log_holds_is_bounded() {
    let mut p = miopen::MiopenParser::default();
    // One command, then ever new solver names: its maps stay within the global cap.
    for i in 0..(miopen::MAX_SOLVERS + 300) {
        p.line("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1");
        p.line(&format!(
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = S{i}, workspace = 0"
        ));
    }
    // A command continued without end, and one far too long.
    p.line("MIOpenDriver conv \\");
    for _ in 0..10_000 {
        p.line("-n 1 \\");
    }
    p.line(&format!("MIOpenDriver conv {}", "-t 1 ".repeat(2000)));
    let log = p.finish().unwrap();
    assert_eq!(log.solvers.len(), miopen::MAX_SOLVERS);
    assert!(log.problems.iter().all(|p| p.solvers.len() <= miopen::MAX_SOLVERS));
    assert!(log.solver_by_command.values().all(|m| m.len() <= miopen::MAX_SOLVERS));
    assert!(log.driver_commands.iter().all(|c| c.len() <= miopen::MAX_COMMAND_BYTES));
    assert!(log.dropped >= 301, "{}", log.dropped);
}

#[test]
fn kernels_miopen_launched_are_counted_with_their_family() {
    let log = miopen("miopen-3860-gfx1150-run-kernel-name.log");
    assert_eq!(log.kernels.len(), 1, "{:?}", log.kernels);
    let k = &log.kernels[0];
    assert_eq!(k.name, "miopenSp3AsmConv_v30_3_1_gfx11_fp16_dot2_f3x2_stride1");
    assert!(k.count >= 2);
    assert_eq!(k.family, "winograd");
}

#[test]
fn hipblaslt_and_rocblas_bench_lines_give_each_gemm_with_its_count() {
    let gemms = |name: &str| fixture(name).hipblaslt.unwrap_or_else(|| panic!("{name}")).gemms;
    let g = &gemms("rocm-libraries-12243-hipblaslt-bench-bf16.log")[0];
    assert_eq!((g.m, g.n, g.k, g.batch), (16, 512, 4096, Some(1)));
    assert_eq!(
        (g.a_type.as_deref(), g.compute_type.as_deref()),
        (Some("bf16_r"), Some("f32_r"))
    );
    assert_eq!((g.trans_a.as_deref(), g.trans_b.as_deref()), (Some("N"), Some("N")));
    assert_eq!(g.solution_index, Some(93338));
    let g = gemms("amdmigraphx-763-rocblas-layer3.log");
    assert_eq!(g.len(), 2, "fp32 and fp16, each one bench line");
    assert!(g
        .iter()
        .all(|g| (g.tool.as_str(), g.m, g.n, g.k) == ("rocblas-bench", 4096, 1, 25088)));
    let g = &gemms("rocm-libraries-10211-hipblaslt-gfx1151-fp32.log")[0];
    assert_eq!((g.m, g.n, g.k, g.trans_a.as_deref()), (16384, 16384, 512, Some("T")));
    // The trace form (`[Trace][rocblaslt_matmul]`) is read too: see `pastes`.
}

#[test]
fn the_same_gemm_logged_often_is_one_row_sorted_by_count() {
    let line = "hipblaslt-bench --api_method c -m 4096 -n 4096 -k 4096 --lda 4096  --transA T --transB T --batch_count 1 --a_type f16_r --compute_type f32_r --solution_index 2010";
    let other = "hipblaslt-bench --api_method c -m 64 -n 4096 -k 512 --transA N --transB N --batch_count 2";
    let mut r = LogReader::default();
    for l in [other, line, line, &line.replace("  ", " ")] {
        assert!(r.line(l));
    }
    let g = r.finish().hipblaslt.unwrap().gemms;
    // `other` is a logged line (`--api_method`) without its types: cut, so its last value
    // (`--batch_count 2`) is unknown, never a number it may have lost digits of (issue 64).
    assert_eq!((g[0].m, g[0].count, g[1].batch, g[1].count), (4096, 3, None, 1));
}

#[test]
fn real_logs_that_are_not_rocms_read_as_nothing() {
    for name in [
        "amdsmi-110-strix-halo-amd-smi.txt",
        "ds4-475-rocminfo-gfx1151.txt",
        "nix-amd-ai-42-strix-halo-gtt-sysfs.txt",
    ] {
        assert_eq!(fixture(name), RocmLogs::default(), "{name}");
    }
}

#[test]
fn a_long_line_and_bytes_that_are_not_utf8_cost_flat_memory() {
    let mut text = vec![b'x'; 3 * MAX_LINE_BYTES];
    text.extend_from_slice(b"\nMIOpen(HIP): Info [GetFindModeValueImpl] MIOPEN_FIND_MODE = NORMAL(1)\n\xff\xfe\n");
    let mut r = LogReader::default();
    // Three lines: the long one (read in pieces, counted once by its newline: issue 58 item
    // 12; it counted 6 pieces and lines before), the MIOpen line, the bytes.
    assert_eq!(read_stream(&text[..], &mut r).unwrap(), 3);
    assert_eq!(r.finish().miopen.unwrap().find_modes, ["NORMAL(1)"]);
}

mod parser {
    use crate::rocm::miopen::*;

    #[test]
    fn both_prefixes_count_solvers_and_keep_distinct_commands() {
        let mut p = MiopenParser::default();
        let cmd = "./bin/MIOpenDriver conv -n 1 -c 96 --in_d 6 -H 482 -W 834 -k 96 --fil_d 3 -y 3 -x 3";
        assert!(p.line(
            "MIOpen(HIP): Info [FillFindReturnParameters] FW Chosen Algorithm: GemmFwdRest , 4718592000, 458.512"
        ));
        assert!(p.line("MIOpen: Info [FillFindReturnParameters] FW Chosen Algorithm: GemmFwdRest , 1, 2.0"));
        assert!(
            p.line("MIOpen(HIP): Info [FillFindReturnParameters] FW Chosen Algorithm: ConvDirectNaiveConvFwd , 0, 9.5")
        );
        assert!(p.line(&format!("MIOpen(HIP): Command [LogCmdConvolution] {cmd}")));
        assert!(p.line(&format!("MIOpen: Command [LogCmdConvolution] {cmd}")));
        assert!(!p.line("MIOpen(HIP): Info [GetSolutions] something else"));
        assert!(!p.line("Traceback (most recent call last):"));
        let log = p.finish().unwrap();
        assert_eq!(log.solvers["GemmFwdRest"], 2);
        assert_eq!(log.solvers["ConvDirectNaiveConvFwd"], 1);
        assert_eq!(log.driver_commands, vec![cmd.to_string()]);
        assert_eq!(MiopenParser::default().finish(), None);
    }

    #[test]
    fn distinct_commands_are_capped_and_the_rest_counted() {
        let mut p = MiopenParser::default();
        for i in 0..MAX_COMMANDS + 50 {
            assert!(p.line(&format!(
                "MIOpen(HIP): Command [LogCmdConvolution] MIOpenDriver conv -n {i}"
            )));
            // A repeat of a kept command is neither kept twice nor counted as dropped.
            assert!(p.line("MIOpen(HIP): Command [LogCmdConvolution] MIOpenDriver conv -n 0"));
        }
        let log = p.finish().unwrap();
        assert_eq!(log.driver_commands.len(), MAX_COMMANDS);
        assert_eq!(log.dropped, 50);
    }
}

/// Real MIOpen logs published by ROCm users and AMD engineers (each file names its source).
mod real_logs {
    use super::names;
    use crate::report::MiopenLog;
    use crate::rocm::miopen::*;

    fn read(text: &str) -> (MiopenLog, usize) {
        let mut p = MiopenParser::default();
        let consumed = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| p.line(l))
            .count();
        (p.finish().expect("MIOpen lines"), consumed)
    }

    #[test]
    fn a_find_names_the_chosen_solver_and_a_compile_is_not_a_run() {
        let (log, _) = read(include_str!(
            "../../../tests/fixtures/rocm/a1111-6510-gfx1031-find-mode.log"
        ));
        // `FW Chosen Algorithm: NAME , 0, 0.737518`: the space before the comma.
        assert_eq!(log.solvers, [("ConvBinWinogradRxSf2x3g1".to_string(), 1)].into());
        // `[FindSolutionImpl] NAME (not searchable)`: looked at by the Find, kept apart.
        assert_eq!(
            names(&log.evaluated_solvers),
            ["ConvBinWinogradRxSf2x3g1", "GemmFwd1x1_0_1"]
        );
    }

    #[test]
    fn evaluated_solvers_are_never_called_chosen() {
        let (log, consumed) = read(include_str!(
            "../../../tests/fixtures/rocm/miopen-3964-gfx1151-evaluating.log"
        ));
        assert!(log.solvers.is_empty(), "{log:?}");
        assert_eq!(
            log.evaluated_solvers.keys().collect::<Vec<_>>(),
            ["ConvBinWinogradRxSf3x2", "GemmFwdRest"]
        );
        assert_eq!(consumed, 2, "the errors stay in the stderr tail");
    }

    #[test]
    fn elapsed_time_and_tool_prefixes_and_the_state_lines_are_read() {
        let (log, _) = read(include_str!(
            "../../../tests/fixtures/rocm/miopen-1297-elapsed-time.log"
        ));
        assert_eq!(
            (log.find_modes.as_slice(), log.versions.as_slice()),
            (&["NORMAL(1)".to_string()][..], &["2.15.0.3e1d4b080".to_string()][..])
        );
        let (log, _) = read(include_str!("../../../tests/fixtures/rocm/miopen-3860-gfx1150.log"));
        assert_eq!(
            (log.find_modes.as_slice(), log.versions.as_slice()),
            (&["DYNAMIC_HYBRID(5)".to_string()][..], &["3.3.0.".to_string()][..])
        );
        let text = include_str!("../../../tests/fixtures/rocm/miopen-427-tuna-info-prefix.log");
        let lines: Vec<&str> = text.lines().filter(|l| l.contains("MIOpen(HIP)")).collect();
        assert!(
            lines
                .iter()
                .all(|l| strip_prefix(l).is_some_and(|r| r.starts_with("Info ["))),
            "{lines:?}"
        );
        // A bare driver command is no MIOpen log line.
        assert_eq!(strip_prefix(text.lines().nth(1).unwrap()), None);
    }

    #[test]
    fn each_command_is_tied_to_the_solver_of_its_own_call() {
        let mut p = MiopenParser::default();
        let (a, b) = (
            "MIOpenDriver conv -n 1 -c 96 -H 60 -W 104 -k 96",
            "MIOpenDriver conv -n 1 -c 384 -H 60 -W 104 -k 384",
        );
        for l in [
            format!("MIOpen(HIP): Command [LogCmdConvolution] {a}"),
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = ConvBinWinogradRxSf2x3g1, workspace = 0"
                .into(),
            format!("MIOpen(HIP): Command [LogCmdConvolution] {b}"),
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 1179648".into(),
            format!("MIOpen(HIP): Command [LogCmdConvolution] {a}"),
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = ConvBinWinogradRxSf2x3g1, workspace = 0"
                .into(),
        ] {
            p.line(&l);
        }
        let log = p.finish().unwrap();
        assert_eq!(
            log.solver_by_command[a],
            [("ConvBinWinogradRxSf2x3g1".to_string(), 2)].into()
        );
        assert_eq!(log.solver_by_command[b], [("GemmFwdRest".to_string(), 1)].into());
    }

    #[test]
    fn immediate_mode_names_the_solver_it_ran() {
        // PyTorch's default (cudnn.benchmark off) calls miopenConvolution*Immediate, which log
        // through MIOPEN_LOG_I("solver_id = " << ... << ", workspace = " << ...) in MIOpen's
        // src/ocl/convolutionocl.cpp, the same macro whose `[CompileForwardSolution]
        // solver_id = NAME` lines are in the real log above; the function in the brackets is
        // the Immediate call's. Glued after a progress bar as ComfyUI's consoles show them.
        let mut p = MiopenParser::default();
        for l in [
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = ConvBinWinogradRxSf2x3g1, workspace = 0",
            "  0%|          | 0/6 [00:00<?, ?it/s]MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 1179648",
            "MIOpen: Info [ConvolutionBackwardDataImmediate] solver_id = ConvDirectNaiveConvBwd, workspace = 0",
            "MIOpen(HIP): Info [CompileForwardSolution] solver_id = GemmFwdRest",
        ] {
            p.line(l);
        }
        let log = p.finish().unwrap();
        assert_eq!(log.solvers["ConvBinWinogradRxSf2x3g1"], 1);
        assert_eq!(log.solvers["GemmFwdRest"], 1, "the compile line is no second run");
        assert_eq!(log.solvers["ConvDirectNaiveConvBwd"], 1);
    }
}
