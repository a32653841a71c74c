//! Issue 47: `wan-vae-bench logs` reads real ROCm logs (tests/fixtures/rocm, each naming its
//! source) from files and stdin, prints the problems with their solvers and the GEMMs by
//! count, writes the JSON contract and the bundle ROCm/TheRock #2591 asks for, and refuses
//! (exit 2, naming it) an input with no ROCm line or an output that would overwrite.
use std::io::Write;
use std::process::Stdio;

use crate::util::cli::{bench, fixture, scratch, stderr, stdout};

fn rocm(name: &str) -> std::path::PathBuf {
    fixture(&format!("rocm/{name}"))
}

#[test]
fn logs_prints_each_problem_with_its_solver_and_the_gemms_by_count() {
    let out = bench()
        .args(["logs"])
        .arg(rocm("legacy-rocm-build-5191-convbfp16-solution.log"))
        .arg(rocm("amdmigraphx-763-rocblas-layer3.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("2 distinct, 2 command lines"), "{text}");
    let row = text.lines().find(|l| l.contains("128->256")).expect(&text);
    for cell in ["fwd", "2D", "bf16", "1x512x512", "1x3x3", "GemmFwdRest", "gemm+im2col"] {
        assert!(row.contains(cell), "{cell}: {row}");
    }
    let gemm = text.lines().find(|l| l.contains("25088")).expect(&text);
    assert!(gemm.contains("4096") && gemm.contains("rocblas-bench"), "{gemm}");
}

#[test]
fn logs_json_holds_the_contract_fields_and_reads_stdin() {
    let dir = scratch();
    let json = dir.path().join("logs.json");
    let mut child = bench()
        .args(["logs", "-", "--json"])
        .arg(&json)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read(rocm("miopen-600-bwrw-chosen-algorithm.log")).unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let m = &v["miopen"];
    for key in [
        "versions",
        "find_modes",
        "problems",
        "solvers",
        "evaluated_solvers",
        "kernels",
    ] {
        assert!(!m[key].is_null(), "miopen.{key}: {v}");
    }
    assert!(v["hipblaslt"]["gemms"].is_array());
    let p = &m["problems"][0];
    for (key, want) in [
        ("direction", serde_json::json!("wrw")),
        ("spatial_dims", 2.into()),
        ("dtype", "fp32".into()),
        ("n", 16.into()),
        ("c", 64.into()),
        ("k", 256.into()),
        ("input", serde_json::json!([1, 32, 32])),
        ("filter", serde_json::json!([1, 3, 3])),
        ("groups", 1.into()),
        ("count", 1.into()),
        ("solver", "ConvWinograd3x3MultipassWrW<3-5>".into()),
    ] {
        assert_eq!(p[key], want, "{key}: {p}");
    }
    assert!(p["command"].as_str().unwrap().contains("MIOpenDriver conv -F 4"), "{p}");
    assert_eq!(v["files"][0]["path"], "standard input");
}

#[test]
fn the_bundle_holds_the_unique_lines_sorted_by_count_and_a_readme() {
    let dir = scratch();
    let bundle = dir.path().join("for-amd");
    let out = bench()
        .args(["logs", "--bundle"])
        .arg(&bundle)
        .arg(rocm("rocm-libraries-6439-gfx1201-convfp16.log"))
        .arg(rocm("rocm-libraries-12243-hipblaslt-bench-bf16.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let read = |name: &str| std::fs::read_to_string(bundle.join(name)).unwrap();
    let commands = read("miopen-commands.txt");
    assert!(
        commands
            .trim_start()
            .starts_with("6 MIOpenDriver convfp16 -n 2 -c 16 -H 32"),
        "{commands}"
    );
    let gemms = read("hipblaslt-gemms.txt");
    assert!(
        gemms
            .trim_start()
            .starts_with("1 hipblaslt-bench --api_method c -m 16 -n 512 -k 4096"),
        "{gemms}"
    );
    assert!(read("README.md").contains("TheRock #2591"));
    assert!(read("system.json").contains("\"os\""));
    // A second bundle into the same folder would overwrite: refused, the files kept.
    let again = bench()
        .args(["logs", "--bundle"])
        .arg(&bundle)
        .arg(rocm("rocm-libraries-6439-gfx1201-convfp16.log"))
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));
    assert_eq!(read("miopen-commands.txt"), commands);
}

#[test]
fn a_file_with_no_rocm_line_is_refused_by_name_before_anything_is_written() {
    let dir = scratch();
    let json = dir.path().join("out.json");
    let sysfs = rocm("nix-amd-ai-42-strix-halo-gtt-sysfs.txt");
    let out = bench()
        .args(["logs"])
        .arg(rocm("miopen-600-bwrw-chosen-algorithm.log"))
        .arg(&sysfs)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("nix-amd-ai-42") && err.contains("MIOPEN_ENABLE_LOGGING_CMD=1"),
        "{err}"
    );
    assert!(stdout(&out).is_empty() && !json.exists());
    let missing = bench().args(["logs", "no/such.log"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no/such.log"));
}

#[test]
fn no_output_replaces_an_input_or_lands_inside_the_bundle() {
    let dir = scratch();
    let log = dir.path().join("console.log");
    std::fs::copy(rocm("miopen-600-bwrw-chosen-algorithm.log"), &log).unwrap();
    let before = std::fs::read(&log).unwrap();
    // The input spelled another way, as --json: refused, the log untouched.
    let dotted = dir.path().join(".").join("console.log");
    let out = bench()
        .args(["logs"])
        .arg(&log)
        .arg("--json")
        .arg(&dotted)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read(&log).unwrap(), before);
    // --json inside the bundle folder would be replaced by the bundle's summary.json.
    let bundle = dir.path().join("b");
    let out = bench()
        .args(["logs"])
        .arg(&log)
        .arg("--json")
        .arg(bundle.join("summary.json"))
        .arg("--bundle")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("inside the bundle folder"), "{}", stderr(&out));
    // A bundle under a file is refused before anything is read or written.
    let out = bench()
        .args(["logs"])
        .arg(&log)
        .arg("--bundle")
        .arg(log.join("b"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
}
