//! Issue 58 on the reader itself: a hostile log costs linear time (7), a continued command
//! never swallows the next tool's line (8), lines are counted by newline (12), and a MIOpen
//! line that straddles a long progress line's 1 MiB pieces is read whole (15).
use super::super::*;

/// A line of `len` bytes made of `unit` repeated.
fn long_line(unit: &str, len: usize) -> String {
    let mut s = unit.repeat(len / unit.len());
    s.push('\n');
    s
}

#[test]
fn many_miopen_words_on_long_lines_cost_linear_time() {
    // Each `MIOpen` used to start a scan to the line's end (for `)` or `:`): 1 MB took 3.9 s.
    let mut text = String::new();
    for unit in ["MIOpen(HIP ", "MIOpen ", "MIOpenDriver MIOpen(", "Problem=\"conv "] {
        text.push_str(&long_line(unit, MAX_LINE_BYTES));
    }
    let started = std::time::Instant::now();
    let mut r = LogReader::default();
    let lines = read_stream(text.as_bytes(), &mut r).unwrap();
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(2), "{took:?} for 4 MiB");
    assert_eq!(lines, 4);
}

#[test]
fn a_continued_command_never_takes_the_next_tools_line() {
    let mut r = LogReader::default();
    r.line("./bin/MIOpenDriver conv -c 3 \\");
    r.line("hipblaslt-bench --api_method c -m 4 -n 5 -k 6 --transA N --transB N");
    let got = r.finish();
    let g = &got.hipblaslt.expect("the GEMM").gemms[0];
    assert_eq!((g.m, g.n, g.k), (4, 5, 6));
    let p = &got.miopen.expect("the command").problems[0];
    assert_eq!((p.n, p.c, p.k), (100, 3, 32), "the driver's defaults, not the GEMM's");
    // Flags on the next line (as a shell continues them) are the command's.
    let mut r = LogReader::default();
    r.line("./bin/MIOpenDriver conv -c 3 \\");
    r.line("   -n 7 -k 9");
    let p = &r.finish().miopen.unwrap().problems[0];
    assert_eq!((p.n, p.c, p.k), (7, 3, 9));
}

#[test]
fn lines_are_counted_by_newline() {
    let mut text = "y".repeat(3 * MAX_LINE_BYTES + 5);
    text.push_str("\nlast, without a newline");
    assert_eq!(read_stream(text.as_bytes(), &mut LogReader::default()).unwrap(), 2);
    assert_eq!(read_stream(&b""[..], &mut LogReader::default()).unwrap(), 0);
    assert_eq!(read_stream(&b"\n\n"[..], &mut LogReader::default()).unwrap(), 2);
}

#[test]
fn a_miopen_line_cut_by_a_piece_of_a_long_progress_line_is_read_whole() {
    let solver = "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = ConvBinWinogradRxSf2x3g1, workspace = 0";
    // The 1 MiB cut falls inside the solver's name.
    let at = solver.find("Winograd").unwrap();
    let mut text = "p".repeat(MAX_LINE_BYTES - at - 1);
    text.push('\r');
    text.push_str(solver);
    text.push('\r');
    text.push_str(&"q".repeat(100));
    text.push('\n');
    let mut r = LogReader::default();
    assert_eq!(read_stream(text.as_bytes(), &mut r).unwrap(), 1);
    let log = r.finish().miopen.unwrap();
    assert_eq!(log.solvers, [("ConvBinWinogradRxSf2x3g1".to_string(), 1)].into());
}

#[test]
fn an_overlong_continued_command_is_dropped_never_flushed_with_defaults() {
    // Second reading of issues 58/55, 1.7: past MAX_COMMAND_BYTES the continuation stopped,
    // and the command's first part was read with the driver's defaults for the rest.
    let mut r = LogReader::default();
    r.line("./bin/MIOpenDriver conv -n 7 \\");
    for _ in 0..(crate::rocm::miopen::MAX_COMMAND_BYTES / 8) {
        r.line("  -c 3 -k 9 \\");
    }
    r.line("  -H 64 -W 64");
    r.line("./bin/MIOpenDriver conv -n 1 -c 2 -k 4 -F 1");
    let log = r.finish().miopen.unwrap();
    let got: Vec<_> = log.problems.iter().map(|p| (p.n, p.c, p.k)).collect();
    assert_eq!(got, [(1, 2, 4)], "only the command that was read whole");
    assert_eq!(log.dropped, 1);
    assert!(
        log.driver_commands.iter().all(|c| !c.contains("-n 7")),
        "{:?}",
        log.driver_commands
    );
    // The same at the end of the input, and at the end of the log.
    for end_of_input in [true, false] {
        let mut r = LogReader::default();
        r.line("./bin/MIOpenDriver conv -n 7 \\");
        for _ in 0..(crate::rocm::miopen::MAX_COMMAND_BYTES / 8) {
            r.line("  -c 3 -k 9 \\");
        }
        if end_of_input {
            r.end_of_input();
        }
        let log = r.finish().miopen;
        assert!(log.as_ref().is_none_or(|l| l.problems.is_empty()), "{log:?}");
    }
}

#[test]
fn unread_commands_print_most_logged_first_as_the_bundle_writes_them() {
    // Second reading of issues 58/55, 1.8: the table printed them in the order first seen.
    let mut r = LogReader::default();
    r.line("MIOpenDriver conv -n -1 -F 1");
    r.line("      5 MIOpenDriver conv -n -2 -F 1");
    r.line("      5 MIOpenDriver conv -n -3 -F 1");
    let json = crate::rocm::summary::summary(Vec::new(), r.finish());
    let text = crate::rocm::render::text(&json);
    let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s}: {text}"));
    assert!(
        at("conv -n -2") < at("conv -n -3") && at("conv -n -3") < at("conv -n -1"),
        "{text}"
    );
}

#[test]
fn counts_past_64_bits_in_total_are_summed_exactly() {
    // Second reading of issues 58/55, 1.3: the table's totals wrapped (release) or panicked.
    let mut r = LogReader::default();
    let max = u64::MAX;
    for n in 1..=2 {
        r.line(&format!("{max} MIOpenDriver conv -n {n} -F 1"));
        r.line(&format!("{max} MIOpenDriver conv -n -{n} -F 1"));
        r.line(&format!(
            "{max} hipblaslt-bench --api_method c -m {n} -n 2 -k 3 --transA N --transB N --batch_count 1 \
             --a_type f16_r --b_type f16_r --c_type f16_r --d_type f16_r --compute_type f32_r"
        ));
    }
    let text = crate::rocm::render::text(&crate::rocm::summary::summary(Vec::new(), r.finish()));
    let total = (2 * u128::from(max)).to_string();
    assert!(text.contains(&format!("2 distinct, {total} command lines")), "{text}");
    assert!(text.contains(&format!("2 driver commands ({total} lines)")), "{text}");
    assert!(text.contains(&format!("2 distinct, {total} lines")), "{text}");
}

/// A case's outcome with `miopen` and `hipblaslt` records.
fn outcome(miopen: MiopenLog, hipblaslt: HipblasltLog) -> crate::report::Outcome {
    let mut o = crate::report::Outcome::new(crate::report::CaseStatus::Ok, None, Default::default());
    o.miopen = Some(miopen);
    o.hipblaslt = Some(hipblaslt);
    o
}

#[test]
fn a_runs_bundle_sums_counts_without_overflow_and_keeps_at_most_the_caps() {
    // Second reading of issues 58/55, 1.3: `from_cases` added the cases' counts unchecked
    // (wrapping in release), and merged their unread commands by a linear search, uncapped.
    let mut r = LogReader::default();
    r.line(&format!("{} MIOpenDriver conv -n 1 -F 1", u64::MAX));
    r.line(&format!("{} MIOpenDriver conv -n -1 -F 1", u64::MAX));
    r.line(&format!(
        "{} MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 0",
        u64::MAX
    ));
    r.line(&format!(
        "{} hipblaslt-bench --api_method c -m 1 -n 2 -k 3 --transA N --transB N --batch_count 1 --a_type f16_r \
         --b_type f16_r --c_type f16_r --d_type f16_r --compute_type f32_r",
        u64::MAX
    ));
    r.line(&format!(
        "{} MIOpen(HIP): Info [run] kernel_name = naive_conv_fwd, global_work_dim = 1",
        u64::MAX
    ));
    let logs = r.finish();
    let (m, h) = (logs.miopen.unwrap(), logs.hipblaslt.unwrap());
    assert_eq!(m.kernels.len(), 1, "{m:?}");
    let o = outcome(m, h);
    let json = crate::rocm::bundle::from_cases([("a", &o), ("b", &o)].into_iter());
    let max = u64::MAX;
    assert_eq!(json.miopen.problems[0].count, max);
    assert_eq!(json.miopen.unread_commands[0].count, max);
    assert_eq!(json.miopen.solvers["GemmFwdRest"], max);
    assert_eq!(json.miopen.kernels[0].count, max);
    assert_eq!(json.hipblaslt.gemms[0].count, max);
    assert_eq!(json.miopen.dropped, 4, "each sum that overflowed is counted");
    assert_eq!(json.hipblaslt.dropped, 1);
    // Many cases' distinct unread commands: at most MAX_COMMANDS kept, the rest counted.
    let cap = crate::rocm::miopen::MAX_COMMANDS;
    let cases: Vec<crate::report::Outcome> = (0..20)
        .map(|case| {
            let m = MiopenLog {
                unread_commands: (0..cap)
                    .map(|i| crate::report::UnreadCommand {
                        command: format!("MIOpenDriver conv -n -{case}{i:04}"),
                        count: 1,
                        reason: "-n: not a size of 0 or more".into(),
                    })
                    .collect(),
                ..Default::default()
            };
            outcome(m, HipblasltLog::default())
        })
        .collect();
    let json = crate::rocm::bundle::from_cases(cases.iter().map(|o| ("c", o)));
    assert_eq!(json.miopen.unread_commands.len(), cap);
    assert_eq!(json.miopen.dropped, 19 * cap as u64);
}
