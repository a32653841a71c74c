//! Issue 17, items 13-16 and 19: what a newcomer reads. The default run says what it
//! measured and counts "1 case" (so do `plot` and `merge`); the tile help says what an 8 px
//! tile overlaps; README, `configs/smoke.toml` and the comments agree with
//! what runs; `run --list` costs decode-only cases and Wan 2.2 weights as they are.
use std::path::Path;

use crate::util::cli::{bench, repo_text, scratch, stderr, stdout};

#[test]
fn a_run_says_what_it_measured_and_counts_one_case() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let out = bench()
        .args([
            "run",
            "--frames",
            "1",
            "--size",
            "16x16",
            "--precision",
            "fp32",
            "--warmup",
            "0",
            "--runs",
            "1",
        ])
        .args(["--order", "shuffled", "--seed", "3", "-o"])
        .arg(&report)
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let line = text
        .lines()
        .find(|l| l.starts_with("measured: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("Wan 2.1 VAE")
            && line.contains("synthetic weights")
            && line.contains("on cpu with 2 threads")
            && line.contains("GFLOP/s: encode "),
        "{line}"
    );
    assert!(text.contains("1 case, shuffled with seed 3"), "{text}");
    assert!(!text.contains("1 cases"), "{text}");
}

#[test]
fn readme_and_smoke_matrix_agree_on_warmup_and_runs() {
    let smoke: toml::Value = toml::from_str(&repo_text("configs/smoke.toml")).unwrap();
    let warmup = smoke["run"]["warmup"].as_integer().unwrap();
    let runs = smoke["run"]["runs"].as_integer().unwrap();
    let readme = repo_text("README.md");
    assert!(
        readme.contains(&format!("{warmup} warmup + {runs} timed runs per case")),
        "README does not state the smoke matrix's {warmup} warmup + {runs} runs"
    );
    assert!(!repo_text("configs/smoke.toml").contains("about a minute"));
}

#[test]
fn list_costs_decode_only_cases_and_wan22_weights_as_they_are() {
    let dir = scratch();
    let list = |args: &[&str]| {
        let out = bench()
            .args(["run", "--list"])
            .args(args)
            .env("HF_HOME", dir.path().join("hf"))
            .env_remove("HF_HUB_CACHE")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let text = list(&[
        "--passes",
        "decode",
        "--frames",
        "5",
        "--size",
        "64x64",
        "--precision",
        "fp32",
    ]);
    let row = text
        .lines()
        .find(|l| l.starts_with("fp32-"))
        .unwrap_or_else(|| panic!("{text}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[1], "decode", "{row}");
    assert_eq!(cols[2], "0.00", "the encode of a decode-only case was counted: {row}");
    assert!(cols[3].parse::<f64>().unwrap() > 0.0, "{row}");
    assert!(!text.contains("encode+decode"), "{text}");

    let text = list(&[
        "--weights",
        "wan2.2",
        "--size",
        "64x64",
        "--frames",
        "1",
        "--precision",
        "fp32",
    ]);
    assert!(text.contains("costed as the Wan 2.2 VAE"), "{text}");
    let cfg = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/wan22-ti2v.toml");
    let text = list(&["--config", cfg.to_str().unwrap()]);
    assert!(text.contains("costed as the Wan 2.2 VAE"), "{text}");
}

#[test]
fn the_wan22_config_does_not_say_decode_only_cases_are_missing() {
    assert!(!repo_text("configs/wan22-ti2v.toml").contains("do not exist yet"));
}

#[test]
fn plot_and_merge_count_one_case_and_the_tile_help_is_true() {
    use crate::util::reports::{case, report, save};
    let dir = scratch();
    let one = save(dir.path(), "one.json", &report("h", vec![case("a", &[1.0], &[1.0])]));
    let svg = dir.path().join("one.svg");
    let out = bench().arg("plot").arg(&one).arg("-o").arg(&svg).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("one.svg (1 case)"), "{}", stderr(&out));
    let merged = dir.path().join("all.json");
    let out = bench().arg("merge").arg(&one).arg("-o").arg(&merged).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("merged 1 case from 1 report into"),
        "{}",
        stderr(&out)
    );

    // A tile given alone overlaps by a quarter, at least 8 px, but an 8 px tile cannot.
    let help = stdout(&bench().args(["run", "--help"]).output().unwrap());
    let tile_px = help.split("--tile-px <PX").nth(1).unwrap_or_default();
    let tile_px = tile_px.split("--overlap-px <PX").next().unwrap_or_default();
    let tile_px = tile_px.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        tile_px.contains("at least 8 (none for an 8 px tile, which cannot overlap)"),
        "{tile_px}"
    );
    let out = bench()
        .args(["run", "--list", "--tile-px", "8", "--frames", "1", "--size", "16x16"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("tile8o0"), "{}", stdout(&out));
}

/// Issue 26: the README's test command is `scripts/test.sh`, CI runs the same script, and
/// the test Python's packages are listed in that script only. Issue 54: their versions are
/// pinned in one lock file, which pins every package the script names (asv at 0.6.6, the
/// version history's agreement tests cite), and the script installs from it.
#[test]
fn readme_and_ci_run_one_test_script_that_lists_the_packages() {
    let readme = repo_text("README.md");
    assert!(
        readme.contains("\n# Run the tests (the first run also makes the test Python"),
        "README's two commands"
    );
    assert!(readme.contains("\nscripts/test.sh\n"), "README's test command");
    let ci = repo_text(".ci/run");
    assert!(ci.lines().any(|l| l.trim() == "exec scripts/test.sh"), "{ci}");
    let script = repo_text("scripts/test.sh");
    assert!(script.contains("PACKAGES=(torch diffusers safetensors"), "{script}");
    for file in [".ci/run", "README.md", "docs/ci.md"] {
        assert!(
            !repo_text(file).contains("pip install"),
            "{file} lists packages: scripts/test.sh is their one place"
        );
    }
    assert!(
        script.contains("pip install --quiet --disable-pip-version-check -r \"$LOCK\""),
        "{script}"
    );
    let lock = repo_text("scripts/test-python.lock");
    let pinned: Vec<(String, String)> = lock
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, version) = l.split_once("==").unwrap_or_else(|| panic!("not pinned: {l}"));
            (name.to_ascii_lowercase().replace('_', "-"), version.to_string())
        })
        .collect();
    let list = script.split("PACKAGES=(").nth(1).unwrap().split(')').next().unwrap();
    for package in list.split_whitespace() {
        let name = package.split(':').next().unwrap().to_ascii_lowercase();
        assert!(
            pinned.iter().any(|(n, _)| *n == name),
            "{name} is not pinned in scripts/test-python.lock"
        );
    }
    assert!(pinned.contains(&("asv".to_string(), "0.6.6".to_string())), "{pinned:?}");
}

/// Issue 26: a test whose outside input is absent says so in a line of its own (past
/// libtest's capture), appends it to the skip log, and passes; under `CI=true` it fails.
#[test]
fn a_test_without_its_outside_input_skips_visibly_and_fails_under_ci() {
    let dir = scratch();
    let log = dir.path().join("skips.txt");
    let test = "engine_comfyui::comfyui_agrees_with_candle_and_records_its_own_choices";
    let run = |ci: bool| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", test])
            .env("WAN_VAE_BENCH_COMFYUI_TARBALL", dir.path().join("no-such.tar.xz"))
            .env("WAN_VAE_BENCH_SKIP_LOG", &log)
            .env_remove("CI");
        if ci {
            cmd.env("CI", "true");
        }
        cmd.output().unwrap()
    };
    let out = run(false);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = format!("SKIPPED {test}: no ComfyUI test data: ");
    assert!(text.contains(&line) && text.contains("no-such.tar.xz"), "{text}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), 1, "{logged}");
    assert!(logged.starts_with(&line), "{logged}");
    let out = run(true);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("CI=true: a test may not skip there"), "{text}");
}
