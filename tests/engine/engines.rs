//! The PyTorch engines (issue 8) for real, on the CPU: `validate --engine torch|diffusers`
//! against the fixtures, a run over all three engines with cross-engine errors, and the
//! Python worker's orchestration (variant variables, missing interpreter or torch, MIOpen
//! log lines, fresh MIOpen folders) through the worker's `WAN_VAE_BENCH_FAULT` hook and
//! wrapper interpreters.
//!
//! The interpreter comes from `WAN_VAE_BENCH_TEST_PYTHON` or `<repo>/.venv-torch/bin/python`
//! (`scripts/test.sh` creates it); without either the tests skip (fail under `CI=true`).
use std::path::{Path, PathBuf};

use crate::need;
use crate::util::cli::*;
use wan_vae_bench::report::values::Engine;
use wan_vae_bench::report::{CaseStatus, Report};

/// An executable shell script `name` in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = write(dir, name, &format!("#!/bin/sh\n{body}\n"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// `run` over `engines` with the tiny Wan 2.1 fixture weights, one timed pass, 5x32x32.
fn run_engines(dir: &Path, python: &Path, extra: &[&str]) -> (std::process::Output, Report) {
    run_engines_with(dir, python, extra, &[])
}

/// [`run_engines`] with `env` set for the run.
fn run_engines_with(
    dir: &Path,
    python: &Path,
    extra: &[&str],
    env: &[(&str, &Path)],
) -> (std::process::Output, Report) {
    let weights = fixture("wan21_tiny.weights.safetensors");
    let mut args = vec![
        "--fault-hooks",
        "--weights",
        weights.to_str().unwrap(),
        "--python",
        python.to_str().unwrap(),
        "--size",
        "32x32",
        "--precision",
        "fp32",
        "--warmup",
        "0",
        "--runs",
        "1",
        "--timeout",
        "300",
    ];
    args.extend_from_slice(extra);
    let path = dir.join("report.json");
    let mut cmd = bench();
    cmd.arg("run").args(&args).arg("--output").arg(&path).arg("--quiet");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the binary");
    let report = load(&path);
    (out, report)
}

#[test]
fn validate_torch_and_diffusers_pass_the_fixtures_from_safetensors_and_pth() {
    let python = need!(python());
    for engine in ["torch", "diffusers"] {
        for format in ["safetensors", "pth"] {
            let out = bench()
                .args(["validate", "--json", "--engine", engine, "--python"])
                .arg(&python)
                .arg("--weights")
                .arg(fixture(&format!("wan21_tiny.weights.{format}")))
                .arg("--cases")
                .arg(fixture("wan21_tiny.cases.safetensors"))
                .output()
                .unwrap();
            let what = format!("{engine} {format}: {}{}", stdout(&out), stderr(&out));
            assert_eq!(out.status.code(), Some(0), "{what}");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(
                (v["pass"].as_bool(), v["engine"].as_str()),
                (Some(true), Some(engine)),
                "{what}"
            );
            assert_eq!(v["tolerance_rule"], "max_abs_error <= 1e-4 x max(1, max|expected|)");
            // The test Python has diffusers: its version is named whichever engine ran (it
            // was null for torch, issue 46).
            assert!(
                v["python"]["diffusers"].as_str().is_some_and(|d| !d.is_empty()),
                "{what}"
            );
            let cases = v["cases"].as_array().unwrap();
            assert_eq!(cases.len(), 4, "{what}");
            for o in cases.iter().flat_map(|c| c["outputs"].as_array().unwrap()) {
                assert!(
                    o["max_abs_error"].as_f64().unwrap() <= o["tolerance"].as_f64().unwrap(),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn a_run_over_three_engines_agrees_across_engines() {
    let dir = scratch();
    let python = need!(python());
    let (out, r) = run_engines(dir.path(), &python, &["--engine", "candle,torch,diffusers"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(r.cases.len(), 3);
    assert_eq!(r.run.python.as_deref(), python.to_str());
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
        assert_eq!(c.outcome.compute_dtype.as_deref(), Some("f32"));
        assert_eq!(c.settings.knobs, Default::default(), "knobs are n/a on the CPU");
    }
    let ids: Vec<&str> = r.cases.iter().map(|c| c.id.as_str()).collect();
    for engine in ["torch", "diffusers"] {
        let id = format!("{engine}-fp32-chunk1-untiled-5x32x32-baseline");
        assert!(ids.contains(&id.as_str()), "{ids:?}");
        let case = r.cases.iter().find(|c| c.id == id).unwrap();
        let q = case.quality.as_ref().expect("reference quality");
        let x = q.cross_engine.as_ref().expect("cross_engine against candle");
        assert_eq!(x.reference_engine, "candle");
        assert_eq!(x.reference_id, "fp32-chunk1-untiled-5x32x32-baseline");
        let bound = 1e-4 * x.max_abs_reference.max(1.0);
        assert!(x.max_abs_error <= bound, "{engine}: {x:?}");
        assert!(x.max_abs_error > 0.0 || x.psnr_db.is_none());
        let ctx = &r.engines[engine];
        assert!(
            ["torch", "python", "device_name"].iter().all(|k| ctx.text(k).is_some()),
            "{ctx:?}"
        );
        assert_eq!(ctx.text("diffusers").is_some(), engine == "diffusers");
        // The worker reports exactly the keys the engine's entry declares.
        let spec = wan_vae_bench::engine::spec(Engine::parse("engine", engine).unwrap());
        let keys: Vec<&str> = ctx.0.keys().map(String::as_str).collect();
        let mut declared = spec.context.to_vec();
        declared.sort_unstable();
        assert_eq!(keys, declared, "{engine}");
    }
    assert!(!r.engines.contains_key("candle"));
}

#[test]
fn variant_variables_reach_the_python_worker_and_garbage_fails() {
    let py = need!(python());
    let dir = scratch();
    let cfg = write(
        dir.path(),
        "m.toml",
        r#"
[matrix]
engine = ["torch"]
env = ["tuned", "garbage", "crash"]
[env.tuned]
WAN_VAE_BENCH_FAULT = "fake"
MIOPEN_FIND_MODE = 2
MY_CUSTOM_KNOB = "hello"
[env.garbage]
WAN_VAE_BENCH_FAULT = "garbage"
[env.crash]
WAN_VAE_BENCH_FAULT = "crash"
"#,
    );
    let (out, r) = run_engines(dir.path(), &py, &["--config", cfg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let by = |v: &str| r.cases.iter().find(|c| c.settings.env_variant == v).unwrap();
    let tuned = by("tuned");
    assert_eq!(tuned.outcome.status, CaseStatus::Ok, "{:?}", tuned.outcome.error);
    assert_eq!(tuned.outcome.compute_dtype.as_deref(), Some("fake"));
    assert_eq!(tuned.outcome.env.get("MIOPEN_FIND_MODE").map(String::as_str), Some("2"));
    assert_eq!(
        tuned.outcome.env.get("MY_CUSTOM_KNOB").map(String::as_str),
        Some("hello")
    );
    assert!(!tuned.outcome.env.contains_key("WAN_VAE_BENCH_ENV_PADDING"));
    let garbage = by("garbage");
    assert_eq!(garbage.outcome.status, CaseStatus::Failed);
    assert!(
        garbage.outcome.error.as_deref().unwrap().contains("not a valid result"),
        "{:?}",
        garbage.outcome.error
    );
    let crash = by("crash");
    assert_eq!(crash.outcome.status, CaseStatus::Failed);
    let e = crash.outcome.error.as_deref().unwrap();
    assert!(e.contains("signal 6") && e.contains("injected crash"), "{e}");
}

#[test]
fn missing_interpreter_and_python_without_torch_are_unsupported() {
    let py = need!(python());
    let dir = scratch();
    let missing = dir.path().join("no-such-python");
    // -S: no site-packages, so this Python has no torch.
    let bare = script(dir.path(), "bare-python", &format!("exec '{}' -S \"$@\"", py.display()));
    for (python, says) in [
        (&missing, vec![missing.to_str().unwrap().to_string()]),
        (
            &bare,
            vec!["torch is not installed".to_string(), "Python 3".to_string()],
        ),
    ] {
        let (out, r) = run_engines(dir.path(), python, &["--engine", "torch"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let c = &r.cases[0];
        assert_eq!(c.outcome.status, CaseStatus::Unsupported);
        let e = c.outcome.error.as_deref().unwrap();
        assert!(says.iter().all(|s| e.contains(s.as_str())), "{e}");
        let v = bench()
            .args(["validate", "--engine", "torch", "--python"])
            .arg(python)
            .arg("--weights")
            .arg(fixture("wan21_tiny.weights.pth"))
            .arg("--cases")
            .arg(fixture("wan21_tiny.cases.safetensors"))
            .output()
            .unwrap();
        assert_eq!(v.status.code(), Some(2), "{}", stderr(&v));
        assert!(says.iter().all(|s| stderr(&v).contains(s.as_str())), "{}", stderr(&v));
    }
}

const SOLVER: &str =
    "MIOpen(HIP): Info [FillFindReturnParameters] FW Chosen Algorithm: GemmFwdRest , 4718592000, 458.512";
const SOLVER_PLAIN: &str =
    "MIOpen: Info [FillFindReturnParameters] FW Chosen Algorithm: ConvBinWinogradRxSf2x3 , 1, 2.5";
const DRIVER: &str = "./bin/MIOpenDriver conv -n 1 -c 96 --in_d 6 -H 482 -W 834 -k 96 --fil_d 3 -y 3 -x 3";

/// A torch run (fake timings) whose worker prints `lines` on stderr once its case is sent, as
/// MIOpen would with `MIOPEN_ENABLE_LOGGING_CMD=1` and `MIOPEN_LOG_LEVEL=5` (set in its env
/// variant). The wrapper takes the case line from stdin first, prints, then hands the line
/// and the rest of stdin to the real worker: lines printed before the case was sent are no
/// case's (`LiveWorker::send` drops them), so printing them at start-up raced the send.
fn run_logging(dir: &Path, py: &Path, lines: &[String]) -> (std::process::Output, Report) {
    let echoes: String = lines.iter().map(|l| format!("echo '{l}' >&2\n")).collect();
    let py = py.display();
    let wrapper = script(
        dir,
        "logging-python",
        &format!(
            "case \" $* \" in\n*' --session '*) IFS= read -r case\n{echoes}\
             {{ printf '%s\\n' \"$case\"; exec cat; }} | '{py}' \"$@\";;\n*) exec '{py}' \"$@\";;\nesac"
        ),
    );
    let cfg = write(
        dir,
        "m.toml",
        "[matrix]\nengine = [\"torch\"]\nenv = [\"miopen_log\"]\n[env.miopen_log]\nWAN_VAE_BENCH_FAULT = \"fake\"\n\
         MIOPEN_ENABLE_LOGGING_CMD = 1\nMIOPEN_LOG_LEVEL = 5\n",
    );
    run_engines(dir, &wrapper, &["--config", cfg.to_str().unwrap()])
}

#[test]
fn miopen_solver_lines_are_parsed_from_the_worker_stderr() {
    let py = need!(python());
    let dir = scratch();
    let command = |prefix: &str| format!("{prefix} Command [LogCmdConvolution] {DRIVER}");
    let lines = [
        SOLVER.into(),
        SOLVER.into(),
        SOLVER_PLAIN.into(),
        command("MIOpen(HIP):"),
        command("MIOpen:"),
    ];
    let (out, r) = run_logging(dir.path(), &py, &lines);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = &r.cases[0];
    let log = c.outcome.miopen.as_ref().expect("miopen log");
    assert_eq!(log.solvers["GemmFwdRest"], 2);
    assert_eq!(log.solvers["ConvBinWinogradRxSf2x3"], 1);
    assert_eq!(log.driver_commands, vec![DRIVER.to_string()]);
    assert_eq!(c.outcome.env.get("MIOPEN_LOG_LEVEL").map(String::as_str), Some("5"));
}

#[test]
fn immediate_mode_solver_lines_name_the_solver_of_each_problem() {
    // Issue 47: in PyTorch's default mode MIOpen logs no "Chosen Algorithm" line, only
    // `[ConvolutionForwardImmediate] solver_id = NAME, workspace = N` after each call's command.
    let py = need!(python());
    let dir = scratch();
    let other = "MIOpenDriver conv -n 1 -c 384 -H 60 -W 104 -k 384 -y 3 -x 3";
    let lines = [
        "MIOpen(HIP): Info [] MIOPEN_FIND_MODE = DYNAMIC_HYBRID(5)".to_string(),
        format!("MIOpen(HIP): Command [LogCmdConvolution] {DRIVER}"),
        "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = ConvBinWinogradRxSf2x3g1, workspace = 0".into(),
        format!("MIOpen(HIP): Command [LogCmdConvolution] {other}"),
        "MIOpen(HIP): Info [EvaluateInvokers] Evaluating Solver: miopenConvolutionFwdAlgoGEMM:GemmFwdRest".into(),
        "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 1179648".into(),
    ];
    let (out, r) = run_logging(dir.path(), &py, &lines);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = r.cases[0].outcome.miopen.as_ref().expect("miopen log");
    assert_eq!(log.solvers.len(), 2, "{log:?}");
    assert_eq!(
        log.solver_by_command[DRIVER].keys().collect::<Vec<_>>(),
        ["ConvBinWinogradRxSf2x3g1"]
    );
    assert_eq!(log.solver_by_command[other].keys().collect::<Vec<_>>(), ["GemmFwdRest"]);
    assert_eq!(log.evaluated_solvers["GemmFwdRest"], 1);
    assert_eq!(log.find_modes, ["DYNAMIC_HYBRID(5)"]);
    // Each problem, with its shape, names the solver its own call ran, and its family.
    let solver = |c: u64| {
        let p = log.problems.iter().find(|p| p.c == c).expect("the problem");
        (p.solver.clone(), p.solver_family.clone(), p.count)
    };
    assert_eq!(
        solver(96),
        (Some("ConvBinWinogradRxSf2x3g1".into()), Some("winograd".into()), 1)
    );
    assert_eq!(solver(384), (Some("GemmFwdRest".into()), Some("gemm+im2col".into()), 1));
    assert_eq!(log.problems.len(), 2);
}

#[test]
fn hipblaslt_bench_lines_of_a_case_reach_its_report_record() {
    // Issue 47: a variant that sets HIPBLASLT_LOG_MASK gets HIPBLASLT_LOG_FILE in the run's
    // scratch; each case reads back what was appended while it ran. The wrapper writes the
    // lines of a real log (ROCm/TheRock #5314) once, when its worker starts: the first case
    // of the shared worker has them, the second none.
    let py = need!(python());
    let dir = scratch();
    let line = "hipblaslt-bench --api_method c -m 4096 -n 4096 -k 4096 --lda 4096 --ldb 4096 --ldc 4096 --ldd 4096  \
                --transA T --transB T --batch_count 1 --a_type f16_r --b_type f16_r --c_type f16_r --d_type f16_r \
                --compute_type f32_r --algo_method index --solution_index 2010";
    let body = format!(
        "echo \"$HIPBLASLT_LOG_FILE\" > '{seen}'\nf=$(echo \"$HIPBLASLT_LOG_FILE\" | sed \"s/%i/$$/\")\n\
         for i in 1 2 3; do echo '{line}' >> \"$f\"; done\nexec '{py}' \"$@\"",
        seen = dir.path().join("seen.txt").display(),
        py = py.display()
    );
    let wrapper = script(dir.path(), "gemm-python", &body);
    let cfg = write(
        dir.path(),
        "m.toml",
        "[matrix]\nengine = [\"torch\"]\nframes = [5, 9]\nenv = [\"gemms\"]\n[env.gemms]\n\
         WAN_VAE_BENCH_FAULT = \"fake\"\nHIPBLASLT_LOG_MASK = 32\n",
    );
    let bundle = dir.path().join("for-amd");
    // On a GPU of AMD's (a fake Strix Halo's /sys): only there may torch call hipBLASLt
    // (issue 64, item 10).
    let sysfs = dir.path().join("sysfs");
    crate::bench_system::fake_strix_halo(&sysfs);
    let (out, r) = run_engines_with(
        dir.path(),
        &wrapper,
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--order",
            "as-written",
            "--device",
            "cuda:0",
            "--export-rocm-bundle",
            bundle.to_str().unwrap(),
        ],
        &[("WAN_VAE_BENCH_SYSFS_ROOT", sysfs.as_path())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = std::fs::read_to_string(dir.path().join("seen.txt")).unwrap();
    // hipBLASLt puts its pid for `%i` (the wrapper does as it does; `exec` keeps the pid).
    assert!(
        file.contains("hipblaslt-") && file.trim().ends_with("-%i.log"),
        "{file}"
    );
    let first = r.cases[0].outcome.hipblaslt.as_ref().expect("the first case's GEMMs");
    let g = &first.gemms[0];
    assert_eq!(
        (g.m, g.n, g.k, g.count, g.trans_a.as_deref()),
        (4096, 4096, 4096, 3, Some("T"))
    );
    assert_eq!(g.solution_index, Some(2010));
    assert_eq!(
        r.cases[1].outcome.hipblaslt, None,
        "nothing was logged while the second case ran"
    );
    // The tool's own scratch path is not the user's stack: read, not recorded (issue 58).
    assert_eq!(r.cases[0].outcome.env.get("HIPBLASLT_LOG_FILE"), None);
    // `--export-rocm-bundle`: the run's GEMMs as `logs --bundle` writes them.
    let gemms = std::fs::read_to_string(bundle.join("hipblaslt-gemms.txt")).unwrap();
    assert!(
        gemms
            .trim_start()
            .starts_with("3 hipblaslt-bench --api_method c -m 4096"),
        "{gemms}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["files"][0]["path"], format!("case {}", r.cases[0].id));
}

#[test]
fn a_fresh_miopen_folder_is_set_empty_then_removed() {
    let py = need!(python());
    let dir = scratch();
    let seen = dir.path().join("seen.txt");
    // The wrapper records what the worker gets: the folder, whether it exists, its entries.
    let body = format!(
        "echo \"db=$MIOPEN_USER_DB_PATH cache=$MIOPEN_CUSTOM_CACHE_DIR exists=$(test -d \"$MIOPEN_USER_DB_PATH\" && echo yes) \
         entries=$(ls -A \"$MIOPEN_USER_DB_PATH\" 2>/dev/null | wc -l)\" >> '{}'\nexec '{}' \"$@\"",
        seen.display(),
        py.display()
    );
    let wrapper = script(dir.path(), "recording-python", &body);
    let cfg = write(
        dir.path(),
        "m.toml",
        "[model]\ndevice = \"cuda:0\"\n[matrix]\nengine = [\"torch\"]\nmiopen_db = [\"fresh\", \"user\"]\n\
         env = [\"fake\"]\n[env.fake]\nWAN_VAE_BENCH_FAULT = \"fake\"\n",
    );
    let mut cmd = bench();
    cmd.env_remove("MIOPEN_USER_DB_PATH")
        .env_remove("MIOPEN_CUSTOM_CACHE_DIR");
    let out = cmd
        .args(["run", "--fault-hooks", "--quiet", "--order", "as-written", "--config"])
        .arg(&cfg)
        .arg("--python")
        .arg(&wrapper)
        .arg("--output")
        .arg(dir.path().join("r.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = load(&dir.path().join("r.json"));
    let ids: Vec<&str> = r.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "torch-fp32-chunk1-untiled-5x64x64-fake-miopen_fresh",
            "torch-fp32-chunk1-untiled-5x64x64-fake-miopen_user",
            // On cuda:N every TF32-auto case gets a true-fp32 reference (issue 27).
            "torch-fp32-chunk1-untiled-5x64x64-fake-miopen_fresh-tf32_off",
            "torch-fp32-chunk1-untiled-5x64x64-fake-miopen_user-tf32_off"
        ]
    );
    let lines = std::fs::read_to_string(&seen).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    let db = lines[0]
        .strip_prefix("db=")
        .and_then(|l| l.split(' ').next())
        .filter(|d| !d.is_empty())
        .expect("fresh folder set");
    assert_eq!(lines[0], format!("db={db} cache={db} exists=yes entries=0"));
    assert!(!Path::new(db).exists(), "{db} must be removed after the case");
    // The folder is the tool's scratch, not the user's stack: not in `env` (issue 58).
    for case in &r.cases[..2] {
        assert!(!case.outcome.env.contains_key("MIOPEN_USER_DB_PATH"), "{}", case.id);
        assert!(!case.outcome.env.contains_key("MIOPEN_CUSTOM_CACHE_DIR"), "{}", case.id);
    }
    assert_eq!(lines[1], "db= cache= exists= entries=0");
}

#[test]
fn the_parent_writes_synthetic_weights_and_the_clip_once_for_every_engine() {
    let py = need!(python());
    let dir = scratch();
    let spec_file = dir.path().join("spec.json");
    // The wrapper keeps a copy of each case's spec file (the first field of each stdin line)
    // as it passes the lines on to the worker.
    let body = format!(
        "while IFS= read -r line; do cp \"${{line%%\t*}}\" '{}'; printf '%s\\n' \"$line\"; done | '{}' \"$@\"",
        spec_file.display(),
        py.display()
    );
    let wrapper = script(dir.path(), "spec-python", &body);
    let cfg = write(
        dir.path(),
        "m.toml",
        "[matrix]\nengine = [\"torch\"]\nsize = [\"16x8\"]\nenv = [\"fake\"]\n[env.fake]\nWAN_VAE_BENCH_FAULT = \"fake\"\n",
    );
    let out = bench()
        .args([
            "run",
            "--fault-hooks",
            "--quiet",
            "--keep-outputs",
            "--weights",
            "synthetic",
            "--config",
        ])
        .arg(&cfg)
        .args(["--torch-precision", "cast", "--python"])
        .arg(&wrapper)
        .arg("--output")
        .arg(dir.path().join("r.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let kept = stdout(&out)
        .lines()
        .find_map(|l| l.strip_prefix("outputs: ").map(PathBuf::from))
        .expect("scratch path printed");
    let spec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&spec_file).unwrap()).unwrap();
    assert_eq!(spec["weights"], "synthetic");
    assert_eq!(spec["engine"], "torch");
    assert_eq!(
        spec["python_module"], "wan_torch",
        "the module that makes the engine, from its entry"
    );
    assert_eq!(
        spec["torch_precision"], "cast",
        "a mode the torch engine lists reaches it"
    );
    let weights = PathBuf::from(spec["weights_path"].as_str().unwrap());
    let input = PathBuf::from(spec["input_path"].as_str().unwrap());
    assert!(weights.starts_with(&kept) && input.starts_with(&kept), "{spec}");
    let w = candle_core::safetensors::load(&weights, &candle_core::Device::Cpu).unwrap();
    assert_eq!(w.len(), 194, "the real layout, original key names");
    assert!(w.contains_key("encoder.conv1.weight") && w.contains_key("decoder.head.2.weight"));
    let clip = candle_core::safetensors::load(&input, &candle_core::Device::Cpu).unwrap();
    let want = wan_vae_bench::engine::clip::structured_clip(5, 16, 8, &candle_core::Device::Cpu).unwrap();
    let diff = (&clip["video"] - &want).unwrap().abs().unwrap().sum_all().unwrap();
    assert_eq!(
        diff.to_scalar::<f32>().unwrap(),
        0.0,
        "the clip the parent wrote is candle's, bit for bit"
    );
    std::fs::remove_dir_all(&kept).unwrap();
}

#[test]
fn a_python_engine_fails_a_case_whose_outputs_are_not_finite() {
    // As the candle worker does (issue 10): NaN weights make the case `failed`, naming the
    // pass and the count, and `run` exits 1.
    let dir = scratch();
    let weights = crate::reliability_numbers::nan_weights(dir.path());
    let py = need!(python());
    let (out, path) = run(
        dir.path(),
        &[
            "--weights",
            weights.to_str().unwrap(),
            "--python",
            py.to_str().unwrap(),
            "--engine",
            "torch",
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
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = load(&path);
    assert_eq!(r.cases.len(), 1);
    let c = &r.cases[0];
    assert_eq!(c.outcome.status, CaseStatus::Failed, "{}", c.id);
    let e = c.outcome.error.as_deref().unwrap_or("");
    assert!(e.contains("encode produced") && e.contains("non-finite"), "{e}");
}

/// The Python worker in a user's ROCm venv (issue 18 item 6), checked on the CPU through its
/// own functions: a torch without kernels for the GPU is `unsupported` with a hint naming the
/// target; TF32 is never claimed on ROCm or the CPU, and reading it survives torch >= 2.9's
/// API; a missing diffusers names the versions each model needs.
#[test]
fn the_python_worker_speaks_to_a_users_rocm_venv() {
    let py = need!(python());
    let code = r#"
import sys, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("error")
import torch, wan_runtime, wan_common, diffusers_engine
status, msg = wan_runtime.classify(RuntimeError("HIP error: invalid device function"))
print("hip:", status, "|", msg)
print("tf32 cpu:", wan_common.tf32_convs(torch.device("cpu")))
torch.version.hip = "6.4.0"
print("tf32 rocm:", wan_common.tf32_convs(torch.device("cuda:0")))
sys.modules["diffusers"] = None
try:
    diffusers_engine.import_diffusers()
except diffusers_engine.Unsupported as e:
    print("diffusers:", e)
"#;
    let text = python_code(&py, code);
    assert!(text.contains("hip: unsupported |"), "{text}");
    assert!(
        text.contains("no GPU kernels for this GPU") && text.contains("gfx1151"),
        "{text}"
    );
    assert!(text.contains("tf32 cpu: False"), "{text}");
    assert!(text.contains("tf32 rocm: False"), "{text}");
    assert!(
        text.contains("diffusers >= 0.33 for Wan 2.1 and >= 0.35 for Wan 2.2"),
        "{text}"
    );
}
