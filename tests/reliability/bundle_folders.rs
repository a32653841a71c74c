//! Issue 64 (the seventh round), items 8 and 9: the bundle for AMD (`logs --bundle DIR`,
//! `run --export-rocm-bundle DIR`). A folder where nothing can be created is refused before
//! any input is read or any case runs, as `--json` there is; and a bundle of a run stopped
//! part way says, in its summary and its README, that it holds only the cases measured.
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::cli::{bench, fixture, load, scratch, stderr, stdout, write};
use crate::util::procs::{fake_python, result_json, signal_and_wait, spawn_group};

/// A folder no one may create: `/proc` takes no new entries, even from root.
fn uncreatable() -> std::path::PathBuf {
    Path::new("/proc")
        .join(format!("wan-vae-bench-test-{}", std::process::id()))
        .join("bundle")
}

#[test]
fn a_bundle_folder_that_cannot_be_made_is_refused_before_anything_is_read_or_run() {
    // Item 8: `logs --bundle DIR` read every input, and `run --export-rocm-bundle DIR` ran
    // every case, before failing on a folder where nothing could be created.
    let dir = scratch();
    let bad = uncreatable();
    let log = fixture("rocm/miopen-427-tuna-info-prefix.log");
    let missing = dir.path().join("no-such.log");
    for input in [&log, &missing] {
        let out = bench()
            .arg("logs")
            .arg(input)
            .arg("--bundle")
            .arg(&bad)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&bad.display().to_string()), "the folder is named: {err}");
        assert!(!err.contains("no-such.log"), "an input was read first: {err}");
        assert!(
            stdout(&out).is_empty(),
            "the logs were read and printed: {}",
            stdout(&out)
        );
    }
    let report = dir.path().join("r.json");
    let out = bench()
        .args([
            "run", "--quiet", "--frames", "1", "--size", "8x8", "--warmup", "0", "--runs", "1",
        ])
        .arg("-o")
        .arg(&report)
        .arg("--export-rocm-bundle")
        .arg(&bad)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--export-rocm-bundle") && err.contains(&bad.display().to_string()),
        "{err}"
    );
    assert!(!report.exists(), "a case ran");
    // A folder that can be made is checked without leaving anything behind when the command
    // then stops on something else (here an input that is not there).
    let fine = dir.path().join("new/for-amd");
    let out = bench()
        .arg("logs")
        .arg(&missing)
        .arg("--bundle")
        .arg(&fine)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such.log"), "{}", stderr(&out));
    assert!(!dir.path().join("new").exists(), "the check left a folder behind");
    // An empty folder we may not write into (for a user other than root, who may).
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let root = std::fs::File::create(locked.join("probe")).is_ok();
    let _ = std::fs::remove_file(locked.join("probe"));
    let out = bench()
        .arg("logs")
        .arg(&log)
        .arg("--bundle")
        .arg(&locked)
        .output()
        .unwrap();
    if root {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    } else {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_bundle_of_a_run_stopped_part_way_says_it_is_partial() {
    // Item 9: a run stopped by SIGTERM after 1 of 2 cases wrote a bundle with nothing saying
    // it held one case of two.
    let dir = scratch();
    let count = dir.path().join("count");
    let waiting = dir.path().join("waiting");
    let body = format!(
        "n=$(cat '{c}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{c}'\n\
         if [ $n -ge 2 ]; then : > '{w}'; sleep 60; fi\n\
         echo 'MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 3 -H 8 -W 8 -k 4 -y 3 -x 3 \
         -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1' >&2\n\
         printf '%s' '{res}' > \"$r\"\nexit 0",
        c = count.display(),
        w = waiting.display(),
        res = result_json("[0.01]", "0.01")
    );
    let py = fake_python(dir.path(), &body);
    let cfg = write(
        dir.path(),
        "m.toml",
        "[matrix]\nengine = [\"torch\"]\nframes = [1, 5]\nenv = [\"logs\"]\n[env.logs]\nMIOPEN_ENABLE_LOGGING_CMD = 1\n",
    );
    let (report, bundle) = (dir.path().join("r.json"), dir.path().join("for-amd"));
    let mut child = spawn_group(
        bench()
            .args([
                "run",
                "--quiet",
                "--size",
                "16x16",
                "--warmup",
                "0",
                "--runs",
                "1",
                "--timeout",
                "120",
            ])
            .arg("--weights")
            .arg(fixture("wan21_tiny.weights.safetensors"))
            .arg("--python")
            .arg(&py)
            .arg("--config")
            .arg(&cfg)
            .arg("-o")
            .arg(&report)
            .arg("--export-rocm-bundle")
            .arg(&bundle)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let t = Instant::now();
    while !waiting.exists() {
        assert!(t.elapsed() < Duration::from_secs(60), "the second case never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = signal_and_wait(&mut child, libc::SIGTERM, Duration::from_secs(30));
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    assert_eq!(load(&report).cases.len(), 1);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("summary.json")).unwrap()).unwrap();
    let partial = &summary["partial"];
    assert_eq!(partial["cases_measured"], 1, "{summary}");
    assert_eq!(partial["cases_planned"], 2, "{summary}");
    assert_eq!(partial["stopped_by"], "SIGTERM", "{summary}");
    let readme = std::fs::read_to_string(bundle.join("README.md")).unwrap();
    assert!(
        readme.contains("Partial") && readme.contains("1 of the 2 cases") && readme.contains("SIGTERM"),
        "{readme}"
    );
    // A bundle of a whole run, or of `logs`, says nothing of the kind.
    let whole = dir.path().join("whole");
    let out = bench()
        .arg("logs")
        .arg(fixture("rocm/miopen-427-tuna-info-prefix.log"))
        .arg("--bundle")
        .arg(&whole)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary = std::fs::read_to_string(whole.join("summary.json")).unwrap();
    assert!(!summary.contains("\"partial\""), "{summary}");
    assert!(!std::fs::read_to_string(whole.join("README.md"))
        .unwrap()
        .contains("Partial"));
}
