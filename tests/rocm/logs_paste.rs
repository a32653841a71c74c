//! Issue 55: `logs` on real logs as people hand them over, made with the real tools from the
//! real logs of `tests/fixtures/rocm` (each naming its source): a `sort | uniq -c | sort -rn`
//! file gives the log's own counts and order, `cat -n` and `grep -n`/`grep -rn` numbers are
//! no counts, and a bundle folder reads back to the counts it was made from (its count
//! files, not its summary.json as well), each of its commands one the driver replays.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::util::cli::*;

/// A fixture's log without its `# Source:` line, in `dir`.
fn log_of(dir: &Path, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(fixture(&format!("rocm/{name}"))).unwrap();
    let body = text.split_once('\n').unwrap().1;
    write(dir, name, body)
}

/// `sh -c SCRIPT` with `$1` the input and its output in a new file.
fn shell(dir: &Path, script: &str, input: &Path, out: &str) -> PathBuf {
    let path = dir.join(out);
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{script} > \"$2\""))
        .arg("sh")
        .arg(input)
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
    path
}

fn logs_json(inputs: &[&Path]) -> serde_json::Value {
    let out = bench().arg("logs").args(inputs).args(["--json", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{inputs:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each problem (by its shape) and GEMM (by its text) with its count.
fn counts(v: &serde_json::Value) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let shape = |p: &serde_json::Value| {
        let mut p = p.clone();
        let o = p.as_object_mut().unwrap();
        for k in ["command", "count", "solver", "solver_family", "solvers"] {
            o.remove(k);
        }
        p.to_string()
    };
    let problems = v["miopen"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (shape(p), p["count"].as_u64().unwrap()))
        .collect();
    let gemms = v["hipblaslt"]["gemms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["command"].as_str().unwrap().to_string(), g["count"].as_u64().unwrap()))
        .collect();
    (problems, gemms)
}

/// The rows of `logs`' tables (problems and GEMMs), in order.
fn table_rows(input: &Path) -> Vec<String> {
    let out = bench().arg("logs").arg(input).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .filter(|l| l.starts_with("  ") && l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            // The solver columns differ (a sorted log ties none): keep the shape.
            l.split_whitespace().take(11).collect::<Vec<_>>().join(" ")
        })
        .collect()
}

const LOGS: [&str; 6] = [
    "rocm-libraries-6439-gfx1201-convfp16.log",
    // `Problem="conv ..."` (the execution summary): a bare subcommand, no driver word.
    "rocm-libraries-4346-execution-summary.log",
    "rocm-libraries-2734-long-flags.log",
    "amdmigraphx-763-rocblas-layer3.log",
    "miopen-2261-3d-conv-bwd-wrw.log",
    "legacy-rocm-build-5191-convbfp16-solution.log",
];

#[test]
fn a_uniq_c_file_gives_the_counts_and_order_of_the_log_it_was_made_from() {
    let dir = scratch();
    for name in LOGS {
        let log = log_of(dir.path(), name);
        let counted = shell(
            dir.path(),
            "sort \"$1\" | uniq -c | sort -rn",
            &log,
            &format!("{name}.uniq"),
        );
        let (a, b) = (logs_json(&[&log]), logs_json(&[&counted]));
        assert_eq!(counts(&a), counts(&b), "{name}");
        assert!(
            b["miopen"]["counted_lines"].as_u64().unwrap_or(0) > 0 || a["miopen"]["problems"] == serde_json::json!([])
        );
        assert_eq!(table_rows(&log), table_rows(&counted), "{name}: the tables' order");
    }
    // Solvers are counted in total, never tied to a command by a sorted file's order.
    let log = log_of(dir.path(), "legacy-rocm-build-5191-convbfp16-solution.log");
    let counted = shell(dir.path(), "sort \"$1\" | uniq -c", &log, "5191.uniq");
    let (a, b) = (logs_json(&[&log]), logs_json(&[&counted]));
    assert_eq!(a["miopen"]["solvers"], b["miopen"]["solvers"]);
    assert!(
        b["miopen"]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["solver"].is_null()),
        "{b}"
    );
    let out = bench().arg("logs").arg(&counted).output().unwrap();
    assert!(stdout(&out).contains("not tied"), "{}", stdout(&out));
}

#[test]
fn cat_n_and_grep_numbers_are_line_numbers_not_counts() {
    let dir = scratch();
    for name in LOGS {
        let log = log_of(dir.path(), name);
        let want = counts(&logs_json(&[&log]));
        let numbered = shell(dir.path(), "cat -n \"$1\"", &log, &format!("{name}.cat"));
        assert_eq!(counts(&logs_json(&[&numbered])), want, "{name}: cat -n");
        let grepped = shell(
            dir.path(),
            "grep -n -e MIOpen -e bench \"$1\"",
            &log,
            &format!("{name}.grep"),
        );
        assert_eq!(counts(&logs_json(&[&grepped])), want, "{name}: grep -n");
        let sub = dir.path().join(format!("{name}.d"));
        std::fs::create_dir(&sub).unwrap();
        std::fs::copy(&log, sub.join("run.log")).unwrap();
        let recursive = shell(
            dir.path(),
            "grep -rn -e MIOpen -e bench \"$1\"",
            &sub,
            &format!("{name}.rgrep"),
        );
        assert_eq!(counts(&logs_json(&[&recursive])), want, "{name}: grep -rn");
    }
}

#[test]
fn a_bundle_folder_reads_back_to_the_counts_it_was_made_from() {
    let dir = scratch();
    let logs: Vec<PathBuf> = LOGS.iter().map(|n| log_of(dir.path(), n)).collect();
    let bundle = dir.path().join("for-amd");
    let out = bench()
        .arg("logs")
        .args(&logs)
        .arg("--bundle")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let refs: Vec<&Path> = logs.iter().map(PathBuf::as_path).collect();
    let (from_logs, back) = (logs_json(&refs), logs_json(&[&bundle]));
    assert_eq!(counts(&from_logs), counts(&back));
    // Each call once: the count files are read, summary.json is not.
    let files: Vec<&str> = back["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files
        .iter()
        .all(|f| f.ends_with("hipblaslt-gemms.txt") || f.ends_with("miopen-commands.txt")));
    // A bundle of MIOpen lines only has an empty GEMM file: read back, it is skipped.
    let only = dir.path().join("miopen-only");
    let out = bench()
        .arg("logs")
        .arg(&logs[0])
        .arg("--bundle")
        .arg(&only)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(counts(&logs_json(&[&only])), counts(&logs_json(&[&logs[0]])));
    // A folder with no bundle in it is refused, named.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = bench().arg("logs").arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));
}

/// The commands of a bundle's `miopen-commands.txt`, without their counts.
fn bundle_commands(bundle: &Path) -> Vec<String> {
    std::fs::read_to_string(bundle.join("miopen-commands.txt"))
        .unwrap()
        .lines()
        .map(|l| l.trim_start().split_once(' ').unwrap().1.to_string())
        .collect()
}

#[test]
fn every_command_of_a_bundle_replays_and_reads_back_whatever_form_it_was_logged_in() {
    // Second reading of issues 58/55, 1.1: the execution summary's `Problem="conv ..."` was
    // written as a bare `conv -n 100 ...`, which no driver runs and `logs DIR` refused; an old
    // MIOpen's `miopenConvolutionBackwardWeights: ./bin/MIOpenDriver conv ...` kept the API
    // word, and without it the direction (no `-F`). The API lines are what MIOpen's
    // `MIOPEN_DRIVER_CMD` printed from September 2017 to 2019 (ROCm/MIOpen
    // src/convolution_api.cpp at 7297b3c75), as in `rocm::tests::pastes`: no published paste
    // of that form was found.
    let dir = scratch();
    let summary = log_of(dir.path(), "rocm-libraries-4346-execution-summary.log");
    let flags = "-n 16 -c 64 -H 32 -W 32 -k 256 -x 3 -y 3 -p 0 -q 0 -u 1 -v 1 -l 1 -j 1";
    let api: String = [
        "miopenFindConvolutionForwardAlgorithm",
        "miopenFindConvolutionBackwardDataAlgorithm",
        "miopenConvolutionBackwardWeights",
    ]
    .iter()
    .map(|a| format!("{a}: ./bin/MIOpenDriver conv {flags}\n"))
    .collect::<String>()
        // An explicit -F wins over the name, and stays as it is.
        + &format!("miopenConvolutionForward: ./bin/MIOpenDriver convfp16 {flags} -F 2\n");
    let api = write(dir.path(), "api.log", &api);
    for (name, log) in [("summary", &summary), ("api", &api)] {
        let bundle = dir.path().join(format!("{name}-bundle"));
        let out = bench()
            .arg("logs")
            .arg(log)
            .arg("--bundle")
            .arg(&bundle)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let back = bench().arg("logs").arg(&bundle).args(["--json", "-"]).output().unwrap();
        assert_eq!(back.status.code(), Some(0), "{name}: {}", stderr(&back));
        let back: serde_json::Value = serde_json::from_slice(&back.stdout).unwrap();
        assert_eq!(counts(&logs_json(&[log.as_path()])), counts(&back), "{name}");
        for command in bundle_commands(&bundle) {
            let words: Vec<&str> = command.split_whitespace().collect();
            assert!(
                words[0].ends_with("MIOpenDriver") && words[1].starts_with("conv"),
                "{name}: not a driver command: {command}"
            );
            assert!(
                !words.iter().any(|w| w.ends_with(':')),
                "{name}: an API word: {command}"
            );
            assert_eq!(
                words.iter().filter(|w| **w == "-F").count(),
                1,
                "{name}: the direction: {command}"
            );
        }
    }
    let commands = bundle_commands(&dir.path().join("api-bundle"));
    for (want, dir_flag) in [("conv -n 16", "-F 1"), ("conv -n 16", "-F 2"), ("conv -n 16", "-F 4")] {
        assert!(
            commands
                .iter()
                .any(|c| c.starts_with(&format!("./bin/MIOpenDriver {want}")) && c.ends_with(dir_flag)),
            "{dir_flag}: {commands:?}"
        );
    }
    assert!(commands
        .iter()
        .any(|c| c.starts_with("./bin/MIOpenDriver convfp16") && c.ends_with("-F 2")));
}

/// `text` with each line naming a bench tool or the driver cut into lines of `width`
/// characters, as a terminal that wide shows it.
fn cut_at(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let command = ["hipblaslt-bench", "rocblas-bench", "MIOpenDriver"]
            .iter()
            .any(|c| line.contains(c));
        let pieces: Vec<String> = if command {
            chars.chunks(width).map(|p| p.iter().collect()).collect()
        } else {
            vec![line.to_string()]
        };
        for p in pieces {
            out.push_str(&p);
            out.push('\n');
        }
    }
    out
}

#[test]
fn a_command_a_narrow_terminal_cut_is_read_whole_and_the_output_says_it_was_rejoined() {
    // Issue 68 item 2. The command is a real one (ROCm/rocm-libraries #12243, hipBLASLt's
    // own bench line, 320 characters), cut by the test at 80 columns: 3 lines joined back.
    let dir = scratch();
    let whole = log_of(dir.path(), "rocm-libraries-12243-hipblaslt-bench-bf16.log");
    let wrapped = write(
        dir.path(),
        "wrapped.log",
        &cut_at(&std::fs::read_to_string(&whole).unwrap(), 80),
    );
    let (a, b) = (logs_json(&[&whole]), logs_json(&[&wrapped]));
    assert!(a["files"][0].get("rejoined_lines").is_none(), "{}", a["files"]);
    let cut = b["files"][0]["rejoined_lines"].as_u64().unwrap();
    assert!(cut >= 3, "{}", b["files"]);
    assert_eq!(
        b["files"][0]["lines"].as_u64().unwrap(),
        a["files"][0]["lines"].as_u64().unwrap() + cut,
        "lines are counted as they came"
    );
    assert_eq!(a["hipblaslt"], b["hipblaslt"]);
    let g = &b["hipblaslt"]["gemms"][0];
    assert_eq!(
        (g["transA"].as_str(), g["a_type"].as_str()),
        (Some("N"), Some("bf16_r"))
    );
    let out = bench().arg("logs").arg(&wrapped).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!(
            "; {cut} rejoined to the command a narrow terminal cut them from"
        )),
        "{}",
        stdout(&out)
    );
}
