//! Commands a narrow terminal cut into lines ([`wrapped`]). No real paste of a command cut
//! at a terminal's width was found in public threads (see docs/rocm.md): the commands here
//! are real ones, from the fixtures that name their sources, cut by the test at the widths
//! of real terminals; and every real log of the fixtures must read with no line rejoined.
use super::*;

/// A fixture's text after its `# Source:` line.
fn body(dir: &str, name: &str) -> String {
    let path = format!("{}/tests/fixtures/{dir}/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (first, rest) = text.split_once('\n').unwrap();
    assert!(first.starts_with("# Source:"), "{name}");
    rest.to_string()
}

/// What `text` reads as, and how many lines were rejoined.
fn read_text(text: &str) -> (RocmLogs, u64) {
    let mut reader = LogReader::default();
    read_stream(text.as_bytes(), &mut reader).unwrap();
    let rejoined = reader.rejoined_lines();
    (reader.finish(), rejoined)
}

/// `text` with each line that names a command cut into lines of `width` characters, as a
/// terminal of that width shows it; and how many cuts were made.
fn cut(text: &str, width: usize) -> (String, u64) {
    let mut out = String::new();
    let mut cuts = 0;
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let command = ["hipblaslt-bench", "rocblas-bench", "MIOpenDriver"]
            .iter()
            .any(|c| line.contains(c));
        if !command || chars.len() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        for (i, piece) in chars.chunks(width).enumerate() {
            cuts += u64::from(i > 0);
            out.extend(piece);
            out.push('\n');
        }
    }
    (out, cuts)
}

/// Real logs, each with commands long enough to be cut at 80 columns.
const COMMANDS: [(&str, &str); 6] = [
    // hipBLASLt's own bench line: double and triple spaces, `--a_type bf16_r` far out.
    ("rocm", "rocm-libraries-12243-hipblaslt-bench-bf16.log"),
    ("rocm", "rocm-libraries-10211-hipblaslt-gfx1151-fp32.log"),
    // A prompt, a path (`./clients/staging/hipblaslt-bench`), then the session's output.
    ("rocm", "hipblaslt-251-bench-session-gfx906.log"),
    // rocBLAS's bench after a `%` prompt, then `rocBLAS info:` lines.
    ("rocm", "rocblas-1425-mi100-short-precision.log"),
    // The Wan VAE's own 3D convolutions, typed on Windows.
    ("rocm", "rocm-libraries-1329-wan-vae-3d-convfp16.log"),
    ("rocm", "rocm-libraries-3559-gfx1151-convbfp16-3d.log"),
];

#[test]
fn a_real_command_cut_at_a_terminals_width_reads_as_the_whole_command() {
    for (dir, name) in COMMANDS {
        let text = body(dir, name);
        let (whole, none) = read_text(&text);
        assert_eq!(none, 0, "{name}");
        for width in [60, 80, 100, 120, 132] {
            let (wrapped, cuts) = cut(&text, width);
            if cuts == 0 {
                continue;
            }
            let (got, rejoined) = read_text(&wrapped);
            assert_eq!(rejoined, cuts, "{name} at {width} columns");
            assert_eq!(got, whole, "{name} at {width} columns");
        }
    }
}

#[test]
fn before_the_rejoin_the_first_physical_line_alone_lost_transposes_and_types() {
    // What the issue reported: only the first line was read, the rest lost.
    let text = body("rocm", "rocm-libraries-12243-hipblaslt-bench-bf16.log");
    let (wrapped, _) = cut(&text, 80);
    let first = wrapped.lines().find(|l| l.starts_with("hipblaslt-bench")).unwrap();
    let (alone, _) = read_text(first);
    let alone = alone.hipblaslt.expect("its shape");
    let g = &alone.gemms[0];
    assert_eq!((g.m, g.n, g.k), (16, 512, 4096));
    assert_eq!((g.trans_a.as_deref(), g.a_type.as_deref()), (None, None));
    let (joined, _) = read_text(&wrapped);
    let g = &joined.hipblaslt.unwrap().gemms[0];
    assert_eq!((g.trans_a.as_deref(), g.a_type.as_deref()), (Some("N"), Some("bf16_r")));
    assert_eq!(g.compute_type.as_deref(), Some("f32_r"));
}

#[test]
fn no_line_of_any_real_log_is_rejoined() {
    // Complete commands followed by their output (`Query device success`, `PRNG seed`,
    // `Winner:`, result rows, rules, the driver's echo), shell `\` continuations, diffs and
    // Markdown: none is a terminal's cut.
    let mut read = 0;
    for dir in ["rocm", "rocm-heldout"] {
        let path = format!("{}/tests/fixtures/{dir}", env!("CARGO_MANIFEST_DIR"));
        for entry in std::fs::read_dir(&path).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if !(name.ends_with(".log") || name.ends_with(".txt")) {
                continue;
            }
            let (_, rejoined) = read_text(&body(dir, &name));
            assert_eq!(rejoined, 0, "{dir}/{name}");
            read += 1;
        }
    }
    assert!(read >= 70, "{read} fixtures read");
}

#[test]
fn only_cuts_at_one_width_are_rejoined() {
    let text = body("rocm", "rocm-libraries-3559-gfx1151-convbfp16-3d.log");
    let command = text.lines().find(|l| l.starts_with("MIOpenDriver.exe")).unwrap();
    let chars: Vec<char> = command.chars().collect();
    // Cut at 80, then at 70: the second line is not as wide as the first, so the third
    // is no continuation of a full line.
    let a: String = chars[..80].iter().collect();
    let b: String = chars[80..150].iter().collect();
    let c: String = chars[150..].iter().collect();
    let (_, rejoined) = read_text(&format!("{a}\n{b}\n{c}\n"));
    assert_eq!(rejoined, 1);
    // A line narrower than any terminal is never held.
    let short: String = chars[..30].iter().collect();
    let rest: String = chars[30..].iter().collect();
    let (_, rejoined) = read_text(&format!("{short}\n{rest}\n"));
    assert_eq!(rejoined, 0);
}
