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
