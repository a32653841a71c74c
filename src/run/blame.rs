//! Who a worker's end is blamed on, and what the case's result then is: the worker's result
//! file when it wrote one, else what its death says ([`classify_death`]: out of memory, a
//! signal, an exit without a result), with the stderr tail. (A worker that ended before it
//! acknowledged a case is the worker's failure, not the case's: the executor runs the case
//! again in a fresh worker and never calls this for that end.)
//!
//! Must not: start or keep workers.
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitStatus;

use super::live_worker::STDERR_TAIL_LINES;
use crate::engine::protocol::WorkerResult;
use crate::report::CaseStatus;

/// The case's result: the worker's file, or what its death says.
pub fn outcome(
    timeout: std::time::Duration,
    timed_out: bool,
    status: Option<ExitStatus>,
    result_path: &Path,
    tail_text: &str,
    vars: &BTreeMap<String, String>,
) -> WorkerResult {
    if timed_out {
        let msg = format!(
            "timed out after {}; worker killed{}",
            crate::util::format::seconds(timeout.as_secs_f64()),
            stderr_suffix(tail_text)
        );
        return WorkerResult::empty(CaseStatus::Timeout, Some(msg), vars.clone());
    }
    match read_result(result_path) {
        Some(Ok(mut result)) => {
            let _ = std::fs::remove_file(result_path);
            let o = &mut result.outcome;
            if o.status != CaseStatus::Ok && !tail_text.is_empty() {
                let base = o.error.take().unwrap_or_default();
                o.error = Some(format!("{base}{}", stderr_suffix(tail_text)));
            }
            result
        }
        Some(Err(why)) => {
            let _ = std::fs::remove_file(result_path);
            let msg = format!(
                "the worker's result file is not a valid result: {why}{}",
                stderr_suffix(tail_text)
            );
            WorkerResult::empty(CaseStatus::Failed, Some(msg), vars.clone())
        }
        None => {
            let (status, why) = classify_death(status, tail_text);
            WorkerResult::empty(status, Some(format!("{why}{}", stderr_suffix(tail_text))), vars.clone())
        }
    }
}

/// A timed-out case's message, with why the timeout was likely when the tool can tell
/// (issue 67): a PyTorch case in bf16 on a CPU without native bf16, which emulates it
/// ([`crate::plan::check::bf16_emulated`]). Said after `timed out after N s`, before the
/// stderr tail.
pub fn explain_timeout(result: &mut WorkerResult, spec: &crate::engine::protocol::WorkerSpec) {
    let o = &mut result.outcome;
    if o.status != CaseStatus::Timeout {
        return;
    }
    let cpu = crate::machine::cpu_bf16::cpu_bf16();
    if !crate::plan::check::bf16_emulated(&spec.settings, &spec.run.device, &cpu) {
        return;
    }
    let why = format!(
        " (likely why: {} computes bf16 by emulation on this CPU, which has neither {}; leave bf16 out, or \
         raise --timeout)",
        spec.settings.engine.name(),
        crate::machine::cpu_bf16::NATIVE_BF16_FLAGS.join(" nor ")
    );
    if let Some(e) = &mut o.error {
        match e.find('\n') {
            Some(at) => e.insert_str(at, &why),
            None => e.push_str(&why),
        }
    }
}

pub fn stderr_suffix(tail: &str) -> String {
    if tail.is_empty() {
        String::new()
    } else {
        format!("\n--- worker stderr (last {STDERR_TAIL_LINES} lines) ---\n{tail}")
    }
}

/// Largest result file read (a result is a few kilobytes).
const RESULT_MAX_BYTES: u64 = 64 << 20;

/// `None` when there is no result file; `Some(Err)` when it is not a valid result (too
/// large, not UTF-8, not JSON, or JSON of another shape).
fn read_result(path: &Path) -> Option<Result<WorkerResult, String>> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > RESULT_MAX_BYTES {
        return Some(Err(format!(
            "{} bytes, more than the {RESULT_MAX_BYTES} a result may be",
            meta.len()
        )));
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return Some(Err(format!("cannot read it: {e}"))),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Some(Err("it is not valid UTF-8".into()));
    };
    Some(serde_json::from_str(&text).map_err(|e| format!("it is not a result in JSON: {e}")))
}

/// Status and message for a worker that exited without writing a result: out-of-memory
/// when stderr says so or the kernel's SIGKILL ended it (we did not: that is a timeout),
/// otherwise failed.
pub fn classify_death(status: Option<ExitStatus>, stderr_tail: &str) -> (CaseStatus, String) {
    let lower = stderr_tail.to_ascii_lowercase();
    let oom_text = lower.contains("memory allocation of") || lower.contains("out of memory");
    let how = match status {
        None => "worker vanished (no exit status)".to_string(),
        Some(s) => describe_exit(s),
    };
    if oom_text {
        return (CaseStatus::Oom, format!("out of memory: {how}"));
    }
    if signal_of(status) == Some(9) {
        return (CaseStatus::Oom, format!("{how}; probably the out-of-memory killer"));
    }
    (CaseStatus::Failed, format!("{how} without writing a result"))
}

fn describe_exit(s: ExitStatus) -> String {
    if let Some(code) = s.code() {
        return format!("worker exited with code {code}");
    }
    match signal_of(Some(s)) {
        Some(sig) => format!("worker killed by signal {sig} ({})", signal_name(sig)),
        None => format!("worker ended: {s}"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        4 => "SIGILL",
        7 => "SIGBUS",
        8 => "SIGFPE",
        _ => "signal",
    }
}

#[cfg(unix)]
fn signal_of(status: Option<ExitStatus>) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.and_then(|s| s.signal())
}

#[cfg(not(unix))]
fn signal_of(_status: Option<ExitStatus>) -> Option<i32> {
    None
}
