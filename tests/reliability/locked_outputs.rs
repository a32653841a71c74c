//! Issue 64 (the seventh round), item 4 and a smaller one: every command that writes a file
//! honours the lock a running `run` (or `merge`, `plot`) holds on its output, refusing it
//! (exit 2, naming the file and the holder) and leaving it as it was; and `history DIR`
//! writes no export into DIR, where its next reading would take it for a report.
use std::path::{Path, PathBuf};

use crate::util::cli::{bench, fixture, scratch, stderr, stdout};
use crate::util::reports::{case, report, save, steady};
use wan_vae_bench::util::lock::OutputLock;

/// Two reports of one case in `dir/hist`, a day apart.
fn history_dir(dir: &Path) -> PathBuf {
    let hist = dir.join("hist");
    std::fs::create_dir_all(&hist).unwrap();
    for (i, f) in [1.0, 1.01].into_iter().enumerate() {
        let mut r = report("box", vec![case("fp32-a", &steady(f), &steady(f))]);
        r.created_at = format!("2026-11-0{}T03:00:00Z", i + 1);
        save(&hist, &format!("night{i}.json"), &r);
    }
    hist
}

#[test]
fn every_writer_refuses_a_report_a_running_run_holds_locked() {
    // Item 4: `logs --json` and `history --export-json` wrote over the report a running `run`
    // held locked (its case then lost when that run was killed); `plot` refused.
    let dir = scratch();
    let d = dir.path();
    let running = save(
        d,
        "running.json",
        &report("box", vec![case("fp32-mine", &steady(1.0), &steady(1.0))]),
    );
    let before = std::fs::read(&running).unwrap();
    let hist = history_dir(d);
    let night = hist.join("night0.json");
    let log = fixture("rocm/miopen-427-tuna-info-prefix.log");
    let cases = fixture("wan21_tiny.cases.safetensors");
    let weights = fixture("wan21_tiny.weights.safetensors");
    let r = running.to_str().unwrap();
    let (h, n, l) = (hist.to_str().unwrap(), night.to_str().unwrap(), log.to_str().unwrap());
    let (c, w) = (cases.to_str().unwrap(), weights.to_str().unwrap());
    // As a `run` holds it (this test process stands for the run: the binary is another process).
    let lock = OutputLock::acquire(&running).unwrap();
    let writers: Vec<Vec<&str>> = vec![
        vec!["logs", l, "--json", r],
        vec!["history", h, "--export-json", r],
        vec!["history", h, "--export-svg", r],
        vec!["history", h, "--export-bmf", r],
        vec!["history", h, "--export-gab", r],
        vec!["merge", n, "-o", r],
        vec!["merge", n, "-o", "merged.json", "--export-bmf", r],
        vec!["merge", n, "-o", "merged.json", "--export-gab", r],
        vec!["plot", n, "-o", r],
        vec!["validate", "--weights", w, "--cases", c, "--save-outputs", r],
        vec![
            "run",
            "--frames",
            "1",
            "--size",
            "8x8",
            "--runs",
            "1",
            "--warmup",
            "0",
            "-o",
            "new.json",
            "--export-csv",
            r,
        ],
    ];
    for args in &writers {
        let out = bench().args(args).current_dir(d).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}{err}", stdout(&out));
        assert!(
            err.contains("running.json") && err.contains("being written by another process"),
            "{args:?}: {err}"
        );
        assert!(err.contains(&format!("pid {}", std::process::id())), "{args:?}: {err}");
        assert_eq!(
            std::fs::read(&running).unwrap(),
            before,
            "{args:?} changed the locked report"
        );
        assert!(
            !d.join("merged.json").exists() && !d.join("new.json").exists(),
            "{args:?}"
        );
    }
    // Through a symbolic link to it, too.
    let link = d.join("link.json");
    std::os::unix::fs::symlink(&running, &link).unwrap();
    let out = bench().args(["logs", l, "--json"]).arg(&link).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(std::fs::read(&running).unwrap(), before);
    // Once the run is over, the same command writes.
    drop(lock);
    let out = bench().args(["history", h, "--export-json", r]).output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    assert_ne!(std::fs::read(&running).unwrap(), before);
}

#[test]
fn history_writes_no_export_into_a_folder_it_reads() {
    // Also seen: `history DIR --export-bmf DIR/bmf.json` wrote a file the next `history DIR`
    // stopped on (exit 2: not a report). Refused before anything is read, naming it.
    let dir = scratch();
    let hist = history_dir(dir.path());
    for flag in ["--export-bmf", "--export-gab", "--export-json"] {
        let export = hist.join("dash.json");
        let out = bench()
            .arg("history")
            .arg(&hist)
            .arg(flag)
            .arg(&export)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains(flag) && err.contains("dash.json") && err.contains("reads"),
            "{flag}: {err}"
        );
        assert!(!export.exists(), "{flag}");
        // The same folder spelled another way (a link to it) is the same folder.
        let via = dir.path().join("via");
        let _ = std::os::unix::fs::symlink(&hist, &via);
        let out = bench()
            .arg("history")
            .arg(&hist)
            .arg(flag)
            .arg(via.join("dash.json"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        assert!(!export.exists(), "{flag}");
    }
    // Beside the folder, or with another extension (history reads `*.json` only), it is written,
    // and the next history reads the folder as before.
    let beside = dir.path().join("bmf.json");
    let svg = hist.join("history.svg");
    let out = bench()
        .arg("history")
        .arg(&hist)
        .arg("--export-bmf")
        .arg(&beside)
        .arg("--export-svg")
        .arg(&svg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(beside.exists() && svg.exists());
    let out = bench().arg("history").arg(&hist).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
