//! `run`'s command line as scripts use it (issue 19): `--env-var` sweeps into one report,
//! `--show-output`, `--json`, and `--help` that states defaults. Workers fake their timings
//! (`--fault-hooks` with `WAN_VAE_BENCH_FAULT=fake`): no model runs.
use crate::util::cli::*;
use wan_vae_bench::report::CaseStatus;

/// `run ARGS` with faked timings, `SWEEP_B=parent` exported by the "user's shell".
fn fake_run(dir: &std::path::Path, args: &[&str]) -> (std::process::Output, std::path::PathBuf) {
    let report = dir.join("report.json");
    let out = bench()
        .env("WAN_VAE_BENCH_FAULT", "fake")
        .env("SWEEP_B", "parent")
        .env_remove("SWEEP_A")
        .args([
            "run",
            "--fault-hooks",
            "--precision",
            "fp32",
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .args(args)
        .arg("--output")
        .arg(&report)
        .output()
        .unwrap();
    (out, report)
}

#[test]
fn env_var_sweeps_two_variables_and_an_absence_into_one_report() {
    let dir = scratch();
    let (out, path) = fake_run(
        dir.path(),
        &["-q", "--env-var", "SWEEP_A=1,2", "--env-var", "SWEEP_B=x,@unset"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = load(&path);
    // The default's A/A control (issue 63) is the baseline again, in a worker of its own.
    assert_eq!(r.cases.iter().filter(|c| c.added_as_control).count(), 1);
    let mut seen: Vec<(String, Option<String>, Option<String>)> = r
        .cases
        .iter()
        .filter(|c| !c.added_as_control)
        .map(|c| {
            assert_eq!(c.outcome.status, CaseStatus::Ok);
            let env = &c.outcome.env;
            (
                c.settings.env_variant.clone(),
                env.get("SWEEP_A").cloned(),
                env.get("SWEEP_B").cloned(),
            )
        })
        .collect();
    seen.sort();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        seen,
        vec![
            ("SWEEP_A=1+SWEEP_B=@unset".into(), s("1"), None),
            ("SWEEP_A=1+SWEEP_B=x".into(), s("1"), s("x")),
            ("SWEEP_A=2+SWEEP_B=@unset".into(), s("2"), None),
            ("SWEEP_A=2+SWEEP_B=x".into(), s("2"), s("x")),
            // The baseline is the parent's environment, recorded for every swept variable.
            ("baseline".into(), None, s("parent")),
        ]
    );
    assert!(r
        .cases
        .iter()
        .any(|c| c.id == "fp32-chunk1-untiled-5x64x64-SWEEP_A=2+SWEEP_B=x"));

    // Next to --env variants instead of baseline; a clash with a matrix variant is exit 2.
    let cfg = write(dir.path(), "m.toml", "[env.fast]\nSWEEP_A = \"9\"\n");
    let (out, path) = fake_run(
        dir.path(),
        &[
            "-q",
            "-c",
            cfg.to_str().unwrap(),
            "--env",
            "fast",
            "--env-var",
            "SWEEP_A=3",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let variants: Vec<String> = load(&path)
        .cases
        .iter()
        .map(|c| c.settings.env_variant.clone())
        .collect();
    assert_eq!(variants.len(), 2, "{variants:?}");
    assert!(variants.contains(&"fast".into()) && variants.contains(&"SWEEP_A=3".into()));
    let cfg = write(dir.path(), "clash.toml", "[env.\"SWEEP_A=3\"]\nSWEEP_A = \"3\"\n");
    let (out, _) = fake_run(dir.path(), &["-c", cfg.to_str().unwrap(), "--env-var", "SWEEP_A=3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--env-var"), "{}", stderr(&out));
    let (out, _) = fake_run(dir.path(), &["--env-var", "SWEEP_A"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("NAME=VALUE1,VALUE2"), "{}", stderr(&out));
}

#[test]
fn show_output_streams_the_workers_stderr_even_when_quiet() {
    // `fail` makes the worker fail after printing nothing; `crash` prints a line first.
    let dir = scratch();
    let cfg = write(
        dir.path(),
        "m.toml",
        "[matrix]\nenv = [\"crash\"]\n[env.crash]\nWAN_VAE_BENCH_FAULT = \"crash\"\n",
    );
    let args = ["-q", "-c", cfg.to_str().unwrap()];
    let (quiet, _) = fake_run(dir.path(), &args);
    assert_eq!(quiet.status.code(), Some(1));
    assert!(!stderr(&quiet).contains("injected crash"), "{}", stderr(&quiet));
    let (shown, _) = fake_run(dir.path(), &[&args[..], &["--show-output"]].concat());
    assert_eq!(shown.status.code(), Some(1));
    assert!(
        stderr(&shown).contains("wan-vae-bench worker: injected crash"),
        "{}",
        stderr(&shown)
    );
}

#[test]
fn json_puts_the_report_alone_on_stdout_and_the_table_on_stderr() {
    let dir = scratch();
    let (out, path) = fake_run(dir.path(), &["-q", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is one JSON document");
    let on_disk: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(printed, on_disk, "stdout holds the report that was written");
    assert!(
        stderr(&out).contains("report: ") && stderr(&out).contains("median"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_states_defaults_lists_and_rocm_devices() {
    let out = bench().args(["run", "--help"]).output().unwrap();
    let help = stdout(&out);
    assert!(
        help.contains("[default: fp32,bf16 (smoke matrix); with -c, the file's, else fp32]"),
        "{help}"
    );
    assert!(help.contains("comma-separated") && help.contains("comfyui"), "{help}");
    assert!(
        help.contains("ROCm") && help.contains("--tile-px") && help.contains("--env-var"),
        "{help}"
    );
    assert!(!help.contains("--tile_px"), "the seed spelling is a hidden alias");
}

#[test]
fn dash_output_is_the_report_on_stdout_as_with_json() {
    for flag in ["-o", "--export-json"] {
        let dir = scratch();
        let out = bench()
            .current_dir(dir.path())
            .env("WAN_VAE_BENCH_FAULT", "fake")
            .args([
                "run",
                "--fault-hooks",
                "-q",
                "--precision",
                "fp32",
                "--runs",
                "2",
                "--warmup",
                "0",
            ])
            .args([flag, "-"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{flag}: {err}");
        let printed: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is one JSON document");
        assert!(!dir.path().join("-").exists(), "{flag}: no file named `-`");
        // The file the run rewrote after every case is at the default place, named on stderr.
        let written = err
            .lines()
            .find_map(|l| l.strip_prefix("report: "))
            .unwrap_or_else(|| panic!("{flag}: {err}"));
        assert!(written.starts_with("results/"), "{flag}: {written}");
        let on_disk: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(written)).unwrap()).unwrap();
        assert_eq!(printed, on_disk, "{flag}");
        assert!(err.contains("median"), "{flag}: the table goes to stderr: {err}");
    }
}

#[test]
fn a_flag_value_given_twice_is_refused_naming_the_flag() {
    let dir = scratch();
    let (out, path) = fake_run(dir.path(), &["-q", "--frames", "5,5"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("--frames") && e.contains("duplicate") && !e.contains("matrix.frames"),
        "{e}"
    );
    assert!(!path.exists(), "nothing ran");
}

#[test]
fn a_run_whose_every_case_fails_still_names_its_model() {
    // Issue 48: with no case `ok` (a Python without torch), the report recorded z_dim 0 and
    // params 0 and the answer printed "z_dim 0", though the model was known before any case.
    let dir = scratch();
    let report = dir.path().join("report.json");
    let out = bench()
        .env("WAN_VAE_BENCH_FAULT", "unsupported")
        .args([
            "run",
            "--fault-hooks",
            "--precision",
            "fp32",
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .args(["--frames", "1", "--size", "16x16", "--output"])
        .arg(&report)
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    let r = load(&report);
    assert!(
        r.cases.iter().all(|c| c.outcome.status == CaseStatus::Unsupported),
        "{e}"
    );
    assert_eq!((r.model.z_dim, r.model.dim), (16, 96), "{:?}", r.model);
    assert!(r.model.params > 100_000_000, "{:?}", r.model);
    assert!(!e.contains("z_dim 0"), "{e}");
}
