//! Issue 58, items 2-4: hipBLASLt's log file per worker, read by `run` after each case, and
//! the tool's own scratch paths in a case's `env`. A small shell script stands in for the
//! Python worker (as the worker tests do): it writes hipBLASLt bench lines as hipBLASLt
//! does (the file opened truncated by the worker process, `%i` its pid) and a result whose
//! `env` is what a worker would record. `history` reads reports written before `run` left
//! the scratch paths out.
use std::path::Path;
use std::time::Duration;

use crate::util::cli::{bench, fixture, load, scratch, stderr, write};
use crate::util::procs::{fake_python, result_json, run_bounded};
use crate::util::reports::{case, report, save};
use wan_vae_bench::report::Report;

/// A hipBLASLt bench line from a real log (ROCm/TheRock #5314, as in `tests/engine/engines.rs`).
const GEMM: &str = "hipblaslt-bench --api_method c -m 4096 -n 4096 -k 4096 --lda 4096 --ldb 4096 --ldc 4096 \
                    --ldd 4096  --transA T --transB T --batch_count 1 --a_type f16_r --b_type f16_r --c_type f16_r \
                    --d_type f16_r --compute_type f32_r --algo_method index --solution_index 2010";

/// A one-case torch run (5x16x16, one timed pass) on `cuda:0` of a machine whose GPU is
/// AMD's (a fake Strix Halo's `/sys`: only there may torch call hipBLASLt, issue 64 item 10)
/// of the variant `[env.gemms]` holding `variant` (TOML lines), whose fake worker writes
/// `lines` bench lines into its `HIPBLASLT_LOG_FILE` (truncating it, `%i` its pid) unless
/// `lines` is 0, and an ok result recording the hipBLASLt variables it saw. At most 60 s: a
/// hang fails the test.
fn run_gemms(dir: &Path, variant: &str, lines: usize) -> (std::process::Output, Report) {
    run_gemms_on(dir, variant, lines, Machine::Amd)
}

/// Where [`run_gemms_on`] runs its torch case.
#[derive(Clone, Copy, Debug)]
enum Machine {
    /// `cuda:0` of a machine whose GPU is AMD's.
    Amd,
    /// The CPU of that machine.
    AmdCpu,
    /// `cuda:0` of a machine whose GPU is NVIDIA's.
    Nvidia,
}

/// [`run_gemms`] on `machine`.
fn run_gemms_on(dir: &Path, variant: &str, lines: usize, machine: Machine) -> (std::process::Output, Report) {
    let writes = match lines {
        0 => String::new(),
        n => format!(
            "f=$(printf '%s' \"$HIPBLASLT_LOG_FILE\" | sed \"s/%i/$$/\")\n\
             i=0; while [ $i -lt {n} ]; do echo '{GEMM}'; i=$((i+1)); done > \"$f\"\n"
        ),
    };
    let seen =
        r#""env":{"HIPBLASLT_LOG_MASK":"'"$HIPBLASLT_LOG_MASK"'","HIPBLASLT_LOG_FILE":"'"$HIPBLASLT_LOG_FILE"'"}"#;
    let result = result_json("[0.01]", "0.01").replace(r#""env":{}"#, seen);
    let py = fake_python(dir, &format!("{writes}printf '%s' '{result}' > \"$r\"\nexit 0"));
    let cfg = write(
        dir,
        "m.toml",
        &format!("[matrix]\nengine = [\"torch\"]\nenv = [\"gemms\"]\n[env.gemms]\n{variant}\n"),
    );
    let report = dir.join("r.json");
    let mut cmd = bench();
    cmd.args([
        "run", "--quiet", "--frames", "5", "--size", "16x16", "--warmup", "0", "--runs", "1",
    ])
    .arg("--weights")
    .arg(fixture("wan21_tiny.weights.safetensors"))
    .arg("--python")
    .arg(&py)
    .arg("--config")
    .arg(&cfg)
    .arg("-o")
    .arg(&report)
    .env_remove("HIPBLASLT_LOG_FILE");
    let sysfs = dir.join(format!("sysfs-{machine:?}"));
    match machine {
        Machine::Amd | Machine::AmdCpu => crate::bench_system::fake_strix_halo(&sysfs),
        Machine::Nvidia => {
            std::fs::create_dir_all(sysfs.join("proc/driver/nvidia")).unwrap();
            std::fs::write(sysfs.join("proc/driver/nvidia/version"), "NVRM version: 580.65.06\n").unwrap();
        }
    }
    let device = if matches!(machine, Machine::AmdCpu) {
        "cpu"
    } else {
        "cuda:0"
    };
    cmd.args(["--device", device]).env("WAN_VAE_BENCH_SYSFS_ROOT", &sysfs);
    let out = run_bounded(cmd, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (out, load(&report))
}

fn gemms(r: &Report) -> u64 {
    r.cases[0]
        .outcome
        .hipblaslt
        .as_ref()
        .map_or(0, |h| h.gemms.iter().map(|g| g.count).sum())
}

#[test]
fn a_log_file_an_earlier_run_filled_is_read_whole_once_the_worker_rewrote_it() {
    // Item 3: the file held 3 lines of an earlier run; the worker truncated it and wrote 6;
    // the case read from the old end and recorded 3.
    let dir = scratch();
    let mine = dir.path().join("mine.log");
    std::fs::write(&mine, format!("{GEMM}\n").repeat(3)).unwrap();
    let variant = format!("HIPBLASLT_LOG_MASK = 32\nHIPBLASLT_LOG_FILE = \"{}\"", mine.display());
    let (_, r) = run_gemms(dir.path(), &variant, 6);
    assert_eq!(gemms(&r), 6, "{:?}", r.cases[0].outcome.hipblaslt);
    // The user's own file is the user's: recorded in `env`, and left in place.
    let env = &r.cases[0].outcome.env;
    assert_eq!(env.get("HIPBLASLT_LOG_FILE"), Some(&mine.display().to_string()));
    assert!(mine.is_file());
    // A worker that writes nothing leaves the earlier lines unread.
    let (_, r) = run_gemms(dir.path(), &variant, 0);
    assert_eq!(r.cases[0].outcome.hipblaslt, None);
}

#[test]
fn a_log_file_that_is_a_fifo_is_never_read_and_the_run_ends() {
    // Item 2: `run` opened the FIFO after the case and blocked forever (no signal ended it).
    let dir = scratch();
    let fifo = dir.path().join("gemms.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let variant = format!("HIPBLASLT_LOG_MASK = 32\nHIPBLASLT_LOG_FILE = \"{}\"", fifo.display());
    let (_, r) = run_gemms(dir.path(), &variant, 0);
    assert_eq!(r.cases[0].outcome.status.name(), "ok");
    assert_eq!(r.cases[0].outcome.hipblaslt, None);
    assert!(!dir.path().join("r.json.lock").exists());
}

#[test]
fn the_tools_scratch_log_file_is_read_but_not_recorded_in_env() {
    // Item 4: the scratch HIPBLASLT_LOG_FILE (a new temporary folder every run) was recorded
    // in `env`, and `history` named it as what changed at every step.
    let dir = scratch();
    let (_, r) = run_gemms(dir.path(), "HIPBLASLT_LOG_MASK = 32", 2);
    assert_eq!(gemms(&r), 2);
    let env = &r.cases[0].outcome.env;
    assert_eq!(env.get("HIPBLASLT_LOG_MASK").map(String::as_str), Some("32"));
    assert!(!env.contains_key("HIPBLASLT_LOG_FILE"), "{env:?}");
}

#[test]
fn history_leaves_the_scratch_paths_of_older_reports_out_of_what_changed() {
    // Reports written before: every run a new scratch folder in HIPBLASLT_LOG_FILE and in a
    // fresh MIOpen database's variables; the one real change is ROCm's, at run 7.
    let dir = scratch();
    for i in 0..10usize {
        let median = if i < 6 { 1.0 } else { 1.25 };
        let decode: Vec<f64> = [1.0, 1.01, 0.99, 1.005, 0.995].iter().map(|x| x * median).collect();
        let mut c = case("fp32-chunk1-untiled-5x64x64-default", &[0.5; 5], &decode);
        let scratch = format!("/tmp/wan-vae-bench-{:06}", i * 7919);
        let env = [
            ("HIPBLASLT_LOG_MASK", "32".to_string()),
            ("HIPBLASLT_LOG_FILE", format!("{scratch}/hipblaslt-0a1b2c3d4e5f-%i.log")),
            (
                "MIOPEN_USER_DB_PATH",
                format!("{scratch}/miopen-fp32-chunk1-0123456789abcdef"),
            ),
        ];
        c.outcome.env = env.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let mut r = report("box", vec![c]);
        r.created_at = format!("2026-11-01T{i:02}:00:00Z");
        r.system.rocm_version = Some(if i < 6 { "6.4.1" } else { "7.0.0" }.into());
        save(dir.path(), &format!("r{i:02}.json"), &r);
    }
    let out = bench().arg("history").arg(dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ROCm 6.4.1 -> 7.0.0"), "{text}{}", stderr(&out));
    assert!(
        !text.contains("HIPBLASLT_LOG_FILE") && !text.contains("MIOPEN_USER_DB_PATH"),
        "the tool's own paths are not the user's stack: {text}"
    );
}

#[test]
fn only_a_case_that_can_call_hipblaslt_records_gemms() {
    // Issue 64, item 10: a candle case on the CPU (no hipBLASLt there) recorded the lines
    // already in the user's HIPBLASLT_LOG_FILE plus what another process appended meanwhile.
    let dir = scratch();
    let mine = dir.path().join("mine.log");
    std::fs::write(&mine, format!("{GEMM}\n").repeat(3)).unwrap();
    // Another process appends to the same file the whole time.
    let mut appender = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "while :; do echo '{GEMM}' >> '{}'; sleep 0.02; done",
            mine.display()
        ))
        .spawn()
        .unwrap();
    let cfg = write(
        dir.path(),
        "candle.toml",
        &format!(
            "[matrix]\nenv = [\"gemms\"]\n[env.gemms]\nHIPBLASLT_LOG_MASK = 32\nHIPBLASLT_LOG_FILE = \"{}\"\n",
            mine.display()
        ),
    );
    let report = dir.path().join("candle.json");
    let mut cmd = bench();
    cmd.args([
        "run", "--quiet", "--frames", "1", "--size", "16x16", "--warmup", "0", "--runs", "1",
    ])
    .arg("--weights")
    .arg(fixture("wan21_tiny.weights.safetensors"))
    .arg("--config")
    .arg(&cfg)
    .arg("-o")
    .arg(&report);
    let out = run_bounded(cmd, Duration::from_secs(120));
    let _ = appender.kill();
    let _ = appender.wait();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = load(&report);
    assert_eq!(r.cases[0].outcome.hipblaslt, None, "a candle case recorded GEMMs");
    // The torch engine's worker writes its lines, but on the CPU, or on an NVIDIA GPU, no
    // hipBLASLt runs: nothing is recorded. On an AMD GPU its own lines are.
    for (machine, want) in [(Machine::AmdCpu, 0), (Machine::Nvidia, 0), (Machine::Amd, 2)] {
        let (_, r) = run_gemms_on(dir.path(), "HIPBLASLT_LOG_MASK = 32", 2, machine);
        assert_eq!(gemms(&r), want, "{machine:?}: {:?}", r.cases[0].outcome.hipblaslt);
    }
}
