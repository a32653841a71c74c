//! Issue 58, the items of `logs` and the bundle writer: a hostile log or a hostile user finds
//! no command dropped or invented (6), no line read twice (8), no file counted twice (9), no
//! line miscounted (12), no escape sequence reaching the terminal or the bundle (14), and no
//! file that appeared in the bundle folder meanwhile replaced, by `logs --bundle` or by
//! `run --export-rocm-bundle` (16). Issue 64, `logs`' items: standard input's file is no
//! output (2), the tool's own JSON is no log (11), a cut value is no GEMM (12), what is
//! dropped says why (14), a device is refused (15), a size of 0 is no problem.
use std::io::Write;
use std::process::Stdio;

use crate::need;
use crate::util::cli::*;

fn logs_json(args: &[&std::ffi::OsStr]) -> (std::process::Output, serde_json::Value) {
    let out = bench().arg("logs").args(args).args(["--json", "-"]).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out, v)
}

#[test]
fn a_command_with_values_the_driver_cannot_take_is_kept_counted_and_named_never_invented() {
    let dir = scratch();
    let bad = [
        "MIOpenDriver conv -n 99999999999999999999 -c 3 -F 1",
        "MIOpenDriver conv -n -1 -c 3 -F 1",
        "MIOpenDriver conv -n 2 -p -1 -F 1",
        "MIOpenDriver conv -n 3 -F 9",
        "MIOpenDriver conv -n 4 --spatial_dim 7",
    ];
    let mut text = String::new();
    for cmd in bad {
        text.push_str(&format!("MIOpen(HIP): Command [LogCmdConvolution] ./bin/{cmd}\n"));
        text.push_str("MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 0\n");
    }
    let log = write(dir.path(), "bad.log", &text);
    let (out, v) = logs_json(&[log.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let m = &v["miopen"];
    // Nothing invented: no problem of all three directions, none in 7 dimensions.
    assert_eq!(m["problems"].as_array().map(Vec::len), Some(0), "{m}");
    let unread = m["unread_commands"].as_array().unwrap_or_else(|| panic!("{m}"));
    assert_eq!(unread.len(), bad.len(), "{m}");
    for (u, want) in unread
        .iter()
        .zip(["-n 99999999999999999999", "-n -1", "-p -1", "-F 9", "--spatial_dim 7"])
    {
        assert_eq!(u["count"], 1, "{u}");
        assert!(u["reason"].as_str().unwrap().contains(want), "{want}: {u}");
    }
    assert_eq!(m["solvers"]["GemmFwdRest"], 5);
    // The bundle's replay file keeps every command that was logged.
    let bundle = dir.path().join("b");
    let out = bench()
        .arg("logs")
        .arg(&log)
        .arg("--bundle")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let commands = std::fs::read_to_string(bundle.join("miopen-commands.txt")).unwrap();
    for cmd in bad {
        assert!(commands.contains(cmd), "{cmd}: {commands}");
    }
    assert!(stdout(&out).contains("could not be read"), "{}", stdout(&out));
}

#[test]
fn a_continued_command_ends_at_a_line_that_is_no_driver_flags() {
    let dir = scratch();
    let log = write(
        dir.path(),
        "cont.log",
        "./bin/MIOpenDriver conv -c 3 \\\n\
         hipblaslt-bench --api_method c -m 4 -n 5 -k 6 --transA N --transB N --batch_count 1 --a_type f16_r \
         --b_type f16_r --c_type f16_r --d_type f16_r --compute_type f32_r\n",
    );
    let (out, v) = logs_json(&[log.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let g = &v["hipblaslt"]["gemms"];
    assert_eq!(
        (g[0]["m"].as_u64(), g[0]["n"].as_u64(), g[0]["k"].as_u64()),
        (Some(4), Some(5), Some(6)),
        "{v}"
    );
    // The convolution keeps the driver's defaults, not the GEMM's -n and -k.
    let p = &v["miopen"]["problems"][0];
    assert_eq!(
        (p["n"].as_u64(), p["c"].as_u64(), p["k"].as_u64()),
        (Some(100), Some(3), Some(32)),
        "{p}"
    );
}

#[test]
fn the_same_file_given_twice_or_through_a_link_or_stdin_is_read_once() {
    let dir = scratch();
    let log = dir.path().join("a.log");
    std::fs::copy(fixture("rocm/rocm-libraries-6439-gfx1201-convfp16.log"), &log).unwrap();
    let link = dir.path().join("link.log");
    std::os::unix::fs::symlink(&log, &link).unwrap();
    let (_, once) = logs_json(&[log.as_os_str()]);
    let count = |v: &serde_json::Value| v["miopen"]["problems"][0]["count"].as_u64();
    assert_eq!(count(&once), Some(6), "{once}");
    for args in [[log.as_os_str(), log.as_os_str()], [log.as_os_str(), link.as_os_str()]] {
        let (out, v) = logs_json(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(count(&v), Some(6), "{args:?}: {v}");
        assert_eq!(v["files"].as_array().map(Vec::len), Some(1), "{v}");
        assert!(stderr(&out).contains("read once"), "{}", stderr(&out));
    }
    // `-` and /dev/stdin are one input.
    let mut child = bench()
        .args(["logs", "-", "/dev/stdin", "--json", "-"])
        .stdin(std::fs::File::open(&log).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take();
    let out = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(count(&v), Some(6), "{}{v}", stderr(&out));
}

#[test]
fn lines_are_counted_by_newline_not_by_piece() {
    let dir = scratch();
    let mut text = "x".repeat(3 << 20);
    text.push_str("\nMIOpen(HIP): Info [GetFindModeValueImpl] MIOPEN_FIND_MODE = NORMAL(1)\n");
    let log = write(dir.path(), "long.log", &text);
    let out = bench().arg("logs").arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("long.log: 2 lines, 1 of them ROCm's"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn control_characters_of_a_log_never_reach_the_terminal_or_the_bundle() {
    let dir = scratch();
    let esc = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{0}\u{9b}31m";
    let text = format!(
        "MIOpen(HIP): Info [GetFindModeValueImpl] MIOPEN_FIND_MODE = NORMAL{esc}\n\
         MIOpen(HIP): Info [AmdRocmMetadataVersionDetect] MIOpen version 3.1{esc}\n\
         MIOpen(HIP): Info [TryLoad] Find-db regenerating.{esc}\n\
         MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -F 1 -I NCHW{esc}\n\
         MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = Gemm{esc}, workspace = 0\n\
         MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n {esc} -F 1\n\
         hipblaslt-bench --api_method c -m 1 -n 2 -k 3 --transA N --transB N --batch_count 1 --a_type f16_r{esc} \
         --b_type f16_r --c_type f16_r --d_type f16_r --compute_type f32_r\n"
    );
    let log = write(dir.path(), "esc.log", &text);
    let bundle = dir.path().join("b");
    let out = bench()
        .arg("logs")
        .arg(&log)
        .arg("--bundle")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let raw = |bytes: &[u8]| {
        let s = String::from_utf8_lossy(bytes);
        s.chars().any(|c| c.is_control() && c != '\n')
    };
    assert!(!raw(&out.stdout), "{:?}", stdout(&out));
    assert!(!raw(&out.stderr), "{:?}", stderr(&out));
    for f in ["miopen-commands.txt", "hipblaslt-gemms.txt", "README.md"] {
        let bytes = std::fs::read(bundle.join(f)).unwrap();
        assert!(!raw(&bytes), "{f}: {:?}", String::from_utf8_lossy(&bytes));
    }
    // JSON on the terminal escapes them too, C1 controls included.
    let (out, _) = logs_json(&[log.as_os_str()]);
    assert!(!raw(&out.stdout), "{:?}", stdout(&out));
}

#[test]
fn a_file_that_appears_in_the_bundle_folder_while_logs_reads_is_never_replaced() {
    let dir = scratch();
    let bundle = dir.path().join("for-amd");
    let mut child = bench()
        .args(["logs", "-", "--bundle"])
        .arg(&bundle)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // More than a pipe holds: once written, `logs` has read from stdin, so it checked the
    // folder before (it checks outputs before reading).
    let line = "MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -F 1\n";
    stdin.write_all(line.repeat((1 << 20) / line.len()).as_bytes()).unwrap();
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(bundle.join("summary.json"), "mine").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("summary.json"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(bundle.join("summary.json")).unwrap(), "mine");
}

#[test]
fn a_file_that_appears_in_the_bundle_folder_during_a_run_is_never_replaced() {
    let py = need!(python());
    let dir = scratch();
    let bundle = dir.path().join("for-amd");
    // The worker's interpreter is a wrapper: once its case line arrives (lines before a case
    // are dropped) it logs a MIOpen command, so the run has a bundle to write, and, the
    // run's checks long done, puts a file of its own in the bundle folder.
    let body = format!(
        "case \" $* \" in\n*' --session '*) IFS= read -r case\n\
         mkdir -p '{b}' && echo mine > '{b}/miopen-commands.txt'\n\
         echo 'MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -F 1' >&2\n\
         {{ printf '%s\\n' \"$case\"; exec cat; }} | '{py}' \"$@\";;\n*) exec '{py}' \"$@\";;\nesac",
        b = bundle.display(),
        py = py.display()
    );
    let wrapper = write(dir.path(), "py", &format!("#!/bin/sh\n{body}\n"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = write(
        dir.path(),
        "m.toml",
        "[matrix]\nengine = [\"torch\"]\nenv = [\"fake\"]\n[env.fake]\nWAN_VAE_BENCH_FAULT = \"fake\"\n\
         MIOPEN_ENABLE_LOGGING_CMD = 1\n",
    );
    let weights = fixture("wan21_tiny.weights.safetensors");
    let (out, report) = run(
        dir.path(),
        &[
            "--fault-hooks",
            "--weights",
            weights.to_str().unwrap(),
            "--python",
            wrapper.to_str().unwrap(),
            "--config",
            cfg.to_str().unwrap(),
            "--size",
            "32x32",
            "--precision",
            "fp32",
            "--timeout",
            "300",
            "--warmup",
            "0",
            "--runs",
            "1",
            "--export-rocm-bundle",
            bundle.to_str().unwrap(),
            "--json",
        ],
    );
    // Second reading of issues 58/55, 1.4: the bundle's failure returned before the report
    // reached stdout, with exit 2 ("unusable input, nothing ran"). The run measured: the
    // report is printed, the failure is an error line, exit 1.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert_eq!(printed["cases"].as_array().map(Vec::len), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("miopen-commands.txt"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(bundle.join("miopen-commands.txt")).unwrap(),
        "mine\n"
    );
    // The measured report is kept.
    assert_eq!(load(&report).cases.len(), 1);
}

/// A real bench line (rocm-libraries #12243).
fn real_bench_line() -> String {
    std::fs::read_to_string(fixture("rocm/rocm-libraries-12243-hipblaslt-bench-bf16.log"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("hipblaslt-bench"))
        .unwrap()
        .trim_end()
        .to_string()
}

#[test]
fn standard_inputs_own_file_is_never_the_json_output() {
    // Issue 64 item 2: `logs - --json FILE < FILE` replaced the log it read.
    let dir = scratch();
    let log = dir.path().join("console.log");
    std::fs::copy(fixture("rocm/miopen-600-bwrw-chosen-algorithm.log"), &log).unwrap();
    let before = std::fs::read(&log).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&log, &link).unwrap();
    for out_path in [&log, &link] {
        let out = bench()
            .args(["logs", "-", "--json"])
            .arg(out_path)
            .stdin(std::fs::File::open(&log).unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("standard input") && err.contains("--json"), "{err}");
        assert!(err.contains(&out_path.display().to_string()), "{err}");
        assert_eq!(std::fs::read(&log).unwrap(), before, "the log is untouched");
    }
    // Another file as --json is written, as before.
    let json = dir.path().join("out.json");
    let out = bench()
        .args(["logs", "-", "--json"])
        .arg(&json)
        .stdin(std::fs::File::open(&log).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(json.exists());
}

#[test]
fn the_tools_own_json_is_refused_as_a_log() {
    // Issue 64 item 11: `logs` read its own --json output and a bundle's summary.json as a
    // log, every count 1. Refused (exit 2), pointing at what to give instead: a summary.json
    // is read through its bundle's count files, which hold the counts.
    let dir = scratch();
    let log = rocm_fixture("rocm-libraries-6439-gfx1201-convfp16.log");
    let json = dir.path().join("summary-of-logs.json");
    let bundle = dir.path().join("b");
    let out = bench()
        .arg("logs")
        .arg(&log)
        .arg("--json")
        .arg(&json)
        .arg("--bundle")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = bench().arg("logs").arg(&json).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("summary-of-logs.json") && err.contains("not a log"),
        "{err}"
    );
    let summary = bundle.join("summary.json");
    let out = bench().arg("logs").arg(&summary).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("give the bundle folder") && err.contains(&bundle.display().to_string()),
        "{err}"
    );
    // Through standard input too.
    let out = bench()
        .args(["logs", "-"])
        .stdin(std::fs::File::open(&summary).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    // The folder itself reads back to the log's counts.
    let (out, v) = logs_json(&[bundle.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(v["miopen"]["problems"][0]["count"], 6, "{v}");
}

fn rocm_fixture(name: &str) -> std::path::PathBuf {
    fixture(&format!("rocm/{name}"))
}

#[test]
fn a_bench_line_cut_inside_its_shape_is_no_gemm_and_never_replayed() {
    // Issue 64 item 12: cut inside `-k 4096`, it was read as k=409 and written to the
    // bundle's replay file.
    let dir = scratch();
    let line = real_bench_line();
    let cut = &line[..line.find("-k 4096").unwrap() + "-k 409".len()];
    let log = write(dir.path(), "cut.log", &format!("{line}\n{cut}\n"));
    let bundle = dir.path().join("b");
    let out = bench()
        .arg("logs")
        .arg(&log)
        .arg("--bundle")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let replay = std::fs::read_to_string(bundle.join("hipblaslt-gemms.txt")).unwrap();
    assert!(
        !replay.contains("-k 409 ") && !replay.trim_end().ends_with("-k 409"),
        "{replay}"
    );
    assert_eq!(replay.lines().count(), 1, "{replay}");
    let text = stdout(&out);
    assert!(text.contains("cut inside their shape"), "{text}");
    let (_, v) = logs_json(&[log.as_os_str()]);
    let gemms = v["hipblaslt"]["gemms"].as_array().unwrap();
    assert!(gemms.iter().all(|g| g["k"] == 4096), "{v}");
    assert_eq!(v["hipblaslt"]["dropped_reasons"][0]["reason"], "cut_value", "{v}");
}

#[test]
fn records_dropped_for_their_uniq_count_or_a_value_past_64_bits_say_so() {
    // Issue 64 item 14 and the smaller item: an unreadable `uniq -c` count was reported as
    // "past the caps"; a bench value past 64 bits vanished uncounted.
    let dir = scratch();
    let line = real_bench_line();
    let big = line.replace("-m 16", "-m 99999999999999999999");
    let text = format!("      0 {line}\n99999999999999999999999 {line}\n{big}\n");
    let log = write(dir.path(), "counted.log", &text);
    let out = bench().arg("logs").arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("past the caps"), "{text}");
    assert!(
        text.contains("2 lines not read: their `uniq -c` count is no count"),
        "{text}"
    );
    assert!(
        text.contains("1 bench lines not read: a shape value that is not a whole number of 64 bits"),
        "{text}"
    );
    assert!(text.contains("-m 99999999999999999999"), "the line is shown: {text}");
}

#[test]
fn a_device_is_refused_before_it_is_read() {
    // Issue 64 item 15: `logs /dev/zero` and `logs /dev/urandom` never ended.
    for device in ["/dev/zero", "/dev/urandom"] {
        let mut child = bench()
            .args(["logs", device])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() && start.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            panic!("logs {device} still reading after 20 s");
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{device}");
        let err = stderr(&out);
        assert!(err.contains(device) && err.contains("character device"), "{err}");
    }
    // ... and as standard input (not a terminal).
    let out = bench()
        .args(["logs", "-"])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn a_size_stride_or_group_of_zero_is_an_unread_command_never_a_problem() {
    let dir = scratch();
    let text: String = ["-u 0", "-g 0", "-n 0"]
        .iter()
        .map(|v| format!("MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 2 -c 16 -H 32 -W 32 -k 16 {v} -F 1\n"))
        .collect();
    let log = write(dir.path(), "zeros.log", &text);
    let (out, v) = logs_json(&[log.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(v["miopen"]["problems"].as_array().map(Vec::len), Some(0), "{v}");
    let unread = v["miopen"]["unread_commands"].as_array().unwrap();
    assert_eq!(unread.len(), 3, "{v}");
    for (u, want) in unread.iter().zip(["-u 0", "-g 0", "-n 0"]) {
        assert!(u["reason"].as_str().unwrap().contains(want), "{want}: {u}");
    }
}

#[test]
fn logs_concludes_when_most_calls_ran_the_naive_fallback_and_reads_like_english() {
    // Issue 67 item 7, on MIOpen #3860's naive kernel launches.
    let out = bench()
        .arg("logs")
        .arg(rocm_fixture("miopen-3860-gfx1150-naive-kernels.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let conclusion = text.lines().find(|l| l.starts_with("conclusion:")).expect(&text);
    for want in ["naive fallback", "--conv3d split", "NAIVE_CONV_FWD", "--cudnn off"] {
        assert!(conclusion.contains(want), "{want}: {conclusion}");
    }
    assert!(
        text.contains("no sign of a cold find or performance database"),
        "{text}"
    );
    assert!(!text.contains("database no sign"), "{text}");
    assert!(text.contains(": 9 lines, 6 of them ROCm's"), "{text}");
    // The missing system database and MIOpen's errors are said.
    let out = bench()
        .arg("logs")
        .arg(rocm_fixture("miopen-1254-unreadable-system-db-errors.log"))
        .arg(rocm_fixture("miopen-3964-gfx1151-evaluating.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("system database is missing or unreadable"), "{text}");
    assert!(
        text.contains("2 [EvaluateInvokers] Invalid elapsed time detected in EvaluateInvokers"),
        "{text}"
    );
    assert!(
        text.contains("[BuildOcl] comgr status = INVALID_ARGUMENT (2)"),
        "{text}"
    );
}
