//! The line `run` prints above its results table, saying what was measured: the model,
//! synthetic or real weights, the device, the worker threads and the best GFLOP/s of the
//! `ok` cases.
//!
//! Must not: spawn workers or write files.
use crate::model::ModelKind;
use crate::report::{CaseStatus, Report};

/// The threads a CPU worker uses: `RAYON_NUM_THREADS` (candle) or `OMP_NUM_THREADS`
/// (torch) when set, else every logical CPU.
fn threads() -> String {
    for var in ["RAYON_NUM_THREADS", "OMP_NUM_THREADS"] {
        if let Ok(v) = std::env::var(var) {
            if !v.trim().is_empty() {
                return format!("{} threads ({var})", v.trim());
            }
        }
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{n} threads")
}

/// `measured: Wan 2.1 VAE, synthetic weights (seed 0), on cpu with 16 threads; best
/// GFLOP/s: encode 12.3, decode 45.6`.
pub fn line(report: &Report, kind: ModelKind) -> String {
    let m = &report.model;
    let weights = match (&m.local_path, m.source.starts_with("synthetic")) {
        (None, _) | (_, true) => format!("synthetic weights ({})", m.source),
        (Some(p), false) => format!("real weights ({p})"),
    };
    let ok = report.cases.iter().filter(|c| c.outcome.status == CaseStatus::Ok);
    let best = |f: &dyn Fn(&crate::report::Outcome) -> Option<f64>| {
        ok.clone()
            .filter_map(|c| f(&c.outcome))
            .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))))
    };
    let enc = best(&|o| o.encode.as_ref().map(|p| p.gflop_per_s).filter(|g| *g > 0.0));
    let dec = best(&|o| o.decode.as_ref().map(|p| p.gflop_per_s).filter(|g| *g > 0.0));
    let gflops = match (enc, dec) {
        (None, None) => "no ok case".to_string(),
        (e, d) => {
            let part = |name: &str, v: Option<f64>| v.map(|v| format!("{name} {v:.1}"));
            let parts: Vec<String> = [part("encode", e), part("decode", d)].into_iter().flatten().collect();
            parts.join(", ")
        }
    };
    format!(
        "measured: {}, {weights}, on {} with {}; {}; best GFLOP/s: {gflops}",
        kind.title(),
        report.run.device,
        threads(),
        workers(report)
    )
}

/// How the cases were spread over worker processes: `3 worker processes for 12 cases
/// (shared by engine and env variant; --isolate case for one each)` or `one process per
/// case (--isolate case)`.
fn workers(report: &Report) -> String {
    if report.run.isolate == "case" {
        return "one worker process per case (--isolate case)".to_string();
    }
    let pids: std::collections::BTreeSet<u32> = report
        .cases
        .iter()
        .filter_map(|c| c.outcome.worker.as_ref()?.pid)
        .collect();
    let (shared_by, how) = match report.run.schedule.as_str() {
        "rounds" => (
            "engine, env variant and precision",
            format!(
                ", timed in interleaved rounds of {} run(s) a visit",
                report.run.round_runs.unwrap_or(1)
            ),
        ),
        _ => ("engine and env variant", String::new()),
    };
    format!(
        "{} worker process(es) for {} case(s), shared by {shared_by} (--isolate case: one each){how}",
        pids.len(),
        report.cases.len()
    )
}
