//! The worker's testing hook: `WAN_VAE_BENCH_FAULT` (set by an env variant) makes the worker
//! `crash` (abort after writing to stderr), `oom` (abort with an allocation-failure message),
//! `hang` (sleep forever), `fail` (report an error), `unsupported` (report an unsupported
//! setting) or `fake` (skip the model and report tiny made-up timings); `exit-between` and
//! `deaf-between` run their case as `fake` and then, between cases, end the worker (exit 0)
//! when the next case arrives or stop reading stdin ([`between_cases`]), so the orchestration
//! can be tested without a model. It acts only when the parent ran with the hidden
//! `run --fault-hooks` flag (the spec's `fault_hooks`); otherwise a set variable is ignored
//! with a note on stderr, so a variable left in the user's shell never invents timings.
//!
//! Must not: touch the model; only the worker calls it, before measuring.
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::engine::protocol::{phase, WorkerResult, WorkerSpec};
use crate::report::{CaseStatus, PassStats};

/// Environment variable that injects a fault (testing hook).
pub const FAULT_VAR: &str = "WAN_VAE_BENCH_FAULT";

/// Restricts [`FAULT_VAR`] to the cases whose id contains its value (testing hook).
pub const FAULT_CASE_VAR: &str = "WAN_VAE_BENCH_FAULT_CASE";

/// The parent's own value of the hook (`engine::preparer`, with `run --fault-hooks`): this
/// build is treated as lacking the run's device, so the latent preparer's fallback can be
/// tested on the CPU. Workers run normally under it.
pub const CANDLE_LACKS_DEVICE: &str = "candle-lacks-device";

/// The fault that fails candle's untimed encode of a decode-only latent (the spec whose id
/// starts `prepare-latent`), so the scheduler's fallback to the run's Python engine can be
/// tested; other cases, and the Python workers, run normally under it.
pub const CANDLE_PREPARE_FAILS: &str = "candle-prepare-fails";

/// The fault that ends the worker after its case, when the next one arrives (exit 0 without
/// acknowledging it).
pub const EXIT_BETWEEN: &str = "exit-between";
/// The fault that makes the worker stop reading stdin after its case (it sleeps).
pub const DEAF_BETWEEN: &str = "deaf-between";

/// After a case's done marker: with `exit-between` or `deaf-between` acting on `spec`, the
/// worker dies or goes deaf between cases (a reused worker that never takes the next case).
pub fn between_cases(spec: &WorkerSpec, next_line: impl FnOnce()) {
    let acts = |f: &str| std::env::var(FAULT_VAR).is_ok_and(|v| v == f) && acts_on(spec);
    if acts(EXIT_BETWEEN) {
        next_line();
        std::process::exit(0);
    }
    if acts(DEAF_BETWEEN) {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

/// Whether the hook acts on `spec`: `run --fault-hooks`, and the case's id holds
/// [`FAULT_CASE_VAR`] when that is set.
fn acts_on(spec: &WorkerSpec) -> bool {
    let only = std::env::var(FAULT_CASE_VAR).unwrap_or_default();
    spec.run.fault_hooks && (only.is_empty() || spec.id.contains(&only))
}

/// The result the fault asks for, `None` when no fault is set (or it is empty). `crash`,
/// `oom` and `hang` never return.
pub fn inject_fault(spec: &WorkerSpec) -> Option<WorkerResult> {
    let fault = std::env::var(FAULT_VAR).ok()?;
    // With WAN_VAE_BENCH_FAULT_CASE, the hook acts only on the cases whose id holds it (one
    // case of a shared worker).
    if let Ok(only) = std::env::var(FAULT_CASE_VAR) {
        if !only.is_empty() && !spec.id.contains(&only) {
            return None;
        }
    }
    if !spec.run.fault_hooks {
        if !fault.is_empty() {
            crate::errln!(
                "wan-vae-bench worker: {FAULT_VAR} ignored (a testing hook, enabled only by `run --fault-hooks`)"
            );
        }
        return None;
    }
    let empty = |status, msg: &str| Some(WorkerResult::empty(status, Some(msg.to_string()), BTreeMap::new()));
    match fault.as_str() {
        // The comfyui engine's own hook (its first decoder call raises ComfyUI's OOM); the
        // candle worker, here preparing a decode-only latent, runs normally.
        // `candle-lacks-device` is the parent's (`engine::preparer`).
        "" | "comfyui-oom" | CANDLE_LACKS_DEVICE => None,
        CANDLE_PREPARE_FAILS if spec.id.starts_with("prepare-latent") => empty(
            CaseStatus::Failed,
            "injected failure of candle's latent preparation (WAN_VAE_BENCH_FAULT=candle-prepare-fails)",
        ),
        CANDLE_PREPARE_FAILS => None,
        "crash" => {
            crate::errln!("wan-vae-bench worker: injected crash ({FAULT_VAR}=crash)");
            std::process::abort();
        }
        "oom" => {
            crate::errln!("memory allocation of 1099511627776 bytes failed ({FAULT_VAR}=oom)");
            std::process::abort();
        }
        "hang" => {
            phase("hang");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        "fail" => empty(CaseStatus::Failed, "injected failure (WAN_VAE_BENCH_FAULT=fail)"),
        "unsupported" => empty(
            CaseStatus::Unsupported,
            "injected unsupported setting (WAN_VAE_BENCH_FAULT=unsupported)",
        ),
        "fake" | EXIT_BETWEEN | DEAF_BETWEEN => Some(fake(spec)),
        other => empty(
            CaseStatus::Failed,
            &format!("unknown {FAULT_VAR} value {other:?} (crash, oom, hang, fail, unsupported, fake, exit-between, deaf-between, comfyui-oom, candle-lacks-device)"),
        ),
    }
}

/// Made-up but well-formed timings (a few milliseconds of sleep per pass).
fn fake(spec: &WorkerSpec) -> WorkerResult {
    let pass = |ms: u64, phase_name: &str| {
        let mut warm = Vec::new();
        let mut samples = Vec::new();
        for i in 0..spec.run.warmup {
            phase(&format!("warmup {phase_name} {}/{}", i + 1, spec.run.warmup));
            warm.push(timed(|| std::thread::sleep(Duration::from_millis(2 * ms))));
        }
        for i in 0..spec.run.runs {
            phase(&format!("{phase_name} {}/{}", i + 1, spec.run.runs));
            samples.push(timed(|| std::thread::sleep(Duration::from_millis(ms))));
        }
        PassStats::from_samples(
            samples,
            warm,
            crate::model::frames_used(spec.settings.frames).unwrap_or(0),
            0.0,
        )
    };
    let encode = pass(5, "encode");
    let decode = pass(10, "decode");
    let mut result = WorkerResult::empty(CaseStatus::Ok, None, BTreeMap::new());
    let o = &mut result.outcome;
    o.compute_dtype = Some("fake".into());
    o.encode = Some(encode);
    o.decode = Some(decode);
    o.load_s = Some(0.0);
    result
}

fn timed(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}
