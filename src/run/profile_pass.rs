//! The profiled lease of `run --profile` (issue 39): after an `ok` measured case, the same
//! spec once more, leased for [`Purpose::Profile`] (it takes the group's kept worker and
//! passes it on, as a measured case does), with at most one warmup, one pass of each kind,
//! no outputs and a [`ProfileRequest`]. The scheduler calls it outside the case's telemetry
//! sampler, and its figures never enter the case's statistics: only its profile is kept,
//! completed by [`crate::report::profile::complete::finish`].
//!
//! Must not: render, or touch the case's timings.
use super::executor::{Executor, Placement, Purpose, WorkerEvent};
use super::progress::Progress;
use crate::engine::protocol::{ProfileRequest, WorkerSpec};
use crate::report::profile::options::{file_name, Profiling};
use crate::report::profile::CaseProfile;
use crate::report::{CaseStatus, Outcome};

/// Run `spec`'s profiled lease and return the case's profile (or why there is none).
pub fn run(
    executor: &mut Executor,
    spec: &WorkerSpec,
    measured: &Outcome,
    place: &Placement<'_>,
    profiling: &Profiling,
    progress: &Progress,
) -> CaseProfile {
    let mut p = spec.clone();
    p.outputs = None;
    p.run.warmup = p.run.warmup.min(1);
    p.run.runs = 1;
    p.profile = Some(ProfileRequest {
        trace: profiling.trace_dir.as_ref().map(|d| d.join(file_name(&spec.id))),
    });
    let result = executor.run(&p, place, Purpose::Profile, &mut |e| match e {
        WorkerEvent::Phase(ph) => progress.note(&format!("profile {ph}")),
        WorkerEvent::Output(line) => progress.output(line),
        WorkerEvent::Started(_) | WorkerEvent::Done => {}
    });
    if result.outcome.status != CaseStatus::Ok {
        let why = result.outcome.error_line().unwrap_or("no message").to_string();
        // A pass stopped half way (a signal, a crash) may have left a trace, or torch's
        // `.tmp` of one: none is listed, none is left.
        let removed = match &profiling.trace_dir {
            Some(dir) => remove_traces(dir, &file_name(&spec.id)),
            None => Vec::new(),
        };
        let removed = match removed.len() {
            0 => String::new(),
            _ => format!("; its partial trace(s) removed: {}", removed.join(", ")),
        };
        return CaseProfile {
            error: Some(format!(
                "the profiled pass ended {}: {why}{removed}",
                result.outcome.status.name()
            )),
            ..Default::default()
        };
    }
    let Some(raw) = result.profile else {
        return CaseProfile {
            error: Some("the worker returned no profile".into()),
            ..Default::default()
        };
    };
    let s = &spec.settings;
    let cfg = match &spec.run.weights_path {
        Some(path) => crate::weights::peek_config(path).ok(),
        None => crate::weights::resolve_config(&spec.run.weights, spec.run.model).ok(),
    };
    let facts = crate::report::profile::complete::CaseFacts {
        cfg: cfg.as_ref(),
        frames: s.frames,
        width: s.width,
        height: s.height,
        encode: measured.encode.as_ref(),
        decode: measured.decode.as_ref(),
    };
    let mut profile = crate::report::profile::complete::finish(raw, &facts);
    if let Some(log) = &result.outcome.miopen {
        crate::report::profile::miopen::join(&mut profile, log);
    }
    crate::report::profile::miopen::reproducers(&mut profile, &spec.run.device);
    profile
}

/// Remove the files of `dir` that a profiled pass of the case `stem` writes (`STEM.PASS.json`
/// and its `.tmp`); their names.
fn remove_traces(dir: &std::path::Path, stem: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = format!("{stem}.");
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let ours = name.strip_prefix(&prefix).is_some_and(|rest| {
            ["encode.json", "decode.json"]
                .iter()
                .any(|p| rest == *p || rest.starts_with(&format!("{p}.")))
        });
        if ours && e.file_type().is_ok_and(|t| t.is_file()) && std::fs::remove_file(e.path()).is_ok() {
            removed.push(name);
        }
    }
    removed.sort();
    removed
}
