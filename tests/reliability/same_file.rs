//! Issue 17, item 1: an output that is also one of the command's inputs, or another of its
//! outputs (the same path, or the same file through a symbolic or a hard link), is refused
//! with exit 2 naming both flags, and nothing is written: every file is byte-identical after.
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::util::cli::{bench, fixture, scratch, stderr, stdout};
use crate::util::reports::{case, report, save, steady};

const TINY: &[&str] = &[
    "--frames",
    "1",
    "--size",
    "8x8",
    "--runs",
    "1",
    "--warmup",
    "0",
    "--precision",
    "fp32",
    "--quiet",
];

fn copy_fixture(dir: &Path, name: &str, as_name: &str) -> PathBuf {
    let to = dir.join(as_name);
    std::fs::copy(fixture(name), &to).unwrap();
    to
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Exit 2, the error names both flags and the file, and `files` are as they were.
fn assert_refused(out: &Output, flags: [&str; 2], file: &Path, files: &[(&Path, Vec<u8>)]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}{}", stdout(out));
    for flag in flags {
        assert!(err.contains(flag), "the error must name {flag}: {err}");
    }
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(err.contains(name), "the error must name {name}: {err}");
    assert!(err.contains("same file"), "{err}");
    for (path, before) in files {
        assert_eq!(&read(path), before, "{} was changed", path.display());
    }
}

#[test]
fn run_report_over_the_weights_file_is_refused() {
    let dir = scratch();
    let w = copy_fixture(dir.path(), "wan21_tiny.weights.safetensors", "w.safetensors");
    let before = read(&w);
    let out = bench()
        .args(["run", "--weights"])
        .arg(&w)
        .arg("-o")
        .arg(&w)
        .args(TINY)
        .output()
        .unwrap();
    assert_refused(&out, ["-o", "--weights"], &w, &[(&w, before)]);
}

#[test]
fn run_markdown_export_over_the_report_is_refused() {
    let dir = scratch();
    let r = dir.path().join("r.json");
    std::fs::write(&r, "an older report").unwrap();
    let out = bench()
        .args(["run", "--weights", "synthetic", "-o"])
        .arg(&r)
        .arg("--export-markdown")
        .arg(&r)
        .args(TINY)
        .output()
        .unwrap();
    assert_refused(
        &out,
        ["--export-markdown", "-o"],
        &r,
        &[(&r, b"an older report".to_vec())],
    );
}

#[test]
fn run_outputs_over_the_input_file_and_through_links_are_refused() {
    let dir = scratch();
    // A normalized Wan 2.1 latent [1,16,1,1,1] as .npy.
    let input = dir.path().join("latent.npy");
    crate::util::files::write_npy(&input, &[1, 16, 1, 1, 1], &[0.25; 16]);
    let input_bytes = read(&input);
    let out = bench()
        .args([
            "run",
            "--weights",
            "synthetic",
            "--passes",
            "decode",
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .arg("--input")
        .arg(&input)
        .arg("-o")
        .arg(&input)
        .output()
        .unwrap();
    assert_refused(&out, ["-o", "--input"], &input, &[(&input, input_bytes.clone())]);

    // An SVG export through a symbolic link to the weights file.
    let w = copy_fixture(dir.path(), "wan21_tiny.weights.safetensors", "w.safetensors");
    let w_bytes = read(&w);
    let link = dir.path().join("chart.svg");
    std::os::unix::fs::symlink(&w, &link).unwrap();
    let out = bench()
        .args(["run", "--weights"])
        .arg(&w)
        .arg("-o")
        .arg(dir.path().join("r.json"))
        .arg("--export-svg")
        .arg(&link)
        .args(TINY)
        .output()
        .unwrap();
    assert_refused(&out, ["--export-svg", "--weights"], &link, &[(&w, w_bytes)]);
    assert!(!dir.path().join("r.json").exists(), "no report may be started");

    // The report as a hard link of the matrix file.
    let matrix = dir.path().join("m.toml");
    std::fs::write(
        &matrix,
        "[run]\nruns = 1\nwarmup = 0\n[matrix]\nframes = [1]\nsize = [\"8x8\"]\n",
    )
    .unwrap();
    let matrix_bytes = read(&matrix);
    let hard = dir.path().join("report.json");
    std::fs::hard_link(&matrix, &hard).unwrap();
    let out = bench()
        .args(["run", "--weights", "synthetic", "--quiet", "--config"])
        .arg(&matrix)
        .arg("-o")
        .arg(&hard)
        .output()
        .unwrap();
    assert_refused(
        &out,
        ["-o", "--config"],
        &hard,
        &[(&matrix, matrix_bytes.clone()), (&hard, matrix_bytes)],
    );
}

#[test]
fn plot_and_merge_over_their_input_are_refused() {
    let dir = scratch();
    let r = save(
        dir.path(),
        "R.json",
        &report("h", vec![case("a", &steady(1.0), &steady(1.0))]),
    );
    let s = save(
        dir.path(),
        "S.json",
        &report("h", vec![case("b", &steady(1.0), &steady(1.0))]),
    );
    let (r_bytes, s_bytes) = (read(&r), read(&s));
    let out = bench().arg("plot").arg(&r).arg("-o").arg(&r).output().unwrap();
    assert_refused(&out, ["-o", "report"], &r, &[(&r, r_bytes.clone())]);
    // The same file through a symbolic link in another folder.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let link = sub.join("merged.json");
    std::os::unix::fs::symlink(&s, &link).unwrap();
    let out = bench()
        .arg("merge")
        .arg(&r)
        .arg(&s)
        .arg("-o")
        .arg(&link)
        .output()
        .unwrap();
    assert_refused(&out, ["-o", "S.json"], &link, &[(&r, r_bytes), (&s, s_bytes)]);
}

#[test]
fn validate_save_outputs_over_the_cases_file_is_refused() {
    let dir = scratch();
    let cases = copy_fixture(dir.path(), "wan21_tiny.cases.safetensors", "cases.safetensors");
    let before = read(&cases);
    let out = bench()
        .arg("validate")
        .arg("--weights")
        .arg(fixture("wan21_tiny.weights.safetensors"))
        .arg("--cases")
        .arg(&cases)
        .arg("--save-outputs")
        .arg(dir.path().join(".").join("cases.safetensors"))
        .output()
        .unwrap();
    assert_refused(&out, ["--save-outputs", "--cases"], &cases, &[(&cases, before)]);
}

#[test]
fn no_output_lands_in_a_folder_filled_by_the_command_through_a_link_or_dotdot() {
    // Issue 58, item 1: outputs were compared as written, so a link to the bundle folder or
    // a `c/../bundle` path let the bundle's summary.json replace the report.
    let dir = scratch();
    let d = dir.path();
    let bundle = d.join("bun");
    std::fs::create_dir(&bundle).unwrap();
    std::os::unix::fs::symlink(&bundle, d.join("lnk")).unwrap();
    let refused = |args: &[&str], flags: [&str; 2]| {
        let out = bench().current_dir(d).args(args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}{}", stdout(&out));
        assert!(err.contains("inside the bundle folder"), "{args:?}: {err}");
        for flag in flags {
            assert!(err.contains(flag), "{args:?} must name {flag}: {err}");
        }
    };
    for (o, b) in [("lnk/summary.json", "bun"), ("c/../bun2/summary.json", "bun2")] {
        let args = [
            &["run", "--weights", "synthetic", "-o", o, "--export-rocm-bundle", b],
            TINY,
        ]
        .concat();
        refused(&args, ["-o", "--export-rocm-bundle"]);
        assert!(
            !d.join("c").exists() && !d.join("bun2").exists(),
            "nothing may be created"
        );
    }
    assert_eq!(
        std::fs::read_dir(&bundle).unwrap().count(),
        0,
        "the bundle folder stays empty"
    );
    // `logs --json` into the bundle through the link.
    let log = d.join("console.log");
    std::fs::copy(fixture("rocm/miopen-600-bwrw-chosen-algorithm.log"), &log).unwrap();
    refused(
        &["logs", "console.log", "--json", "lnk/summary.json", "--bundle", "bun"],
        ["--json", "--bundle"],
    );
    assert_eq!(std::fs::read_dir(&bundle).unwrap().count(), 0);
}

#[test]
fn logs_json_over_a_count_file_of_the_bundle_it_reads_is_refused() {
    // Second reading of issues 58/55, 1.2: `logs DIR` reads DIR's count files, but `--json`
    // was compared with DIR itself, so `--json DIR/miopen-commands.txt` replaced an input.
    let dir = scratch();
    let d = dir.path();
    let log = copy_fixture(d, "rocm/rocm-libraries-6439-gfx1201-convfp16.log", "console.log");
    let bundle = d.join("bun");
    let out = bench()
        .arg("logs")
        .arg(&log)
        .arg("--bundle")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let commands = bundle.join("miopen-commands.txt");
    // The GEMM file is empty (no GEMM logged): still the bundle's, never an output.
    let gemms = bundle.join("hipblaslt-gemms.txt");
    let files = [(commands.as_path(), read(&commands)), (gemms.as_path(), read(&gemms))];
    for target in [&commands, &gemms] {
        let out = bench()
            .arg("logs")
            .arg(&bundle)
            .arg("--json")
            .arg(target)
            .output()
            .unwrap();
        assert_refused(&out, ["--json", "log file"], target, &files);
    }
}
