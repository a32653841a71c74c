//! candle's profiled pass (`run --profile`): a `tracing` subscriber, installed for that one
//! pass only, that times the layer spans the model enters ([`crate::model::span`]),
//! synchronizing the device when an outermost layer span is entered and when it exits (a
//! span inside another, as the attention block's norm, counts in its outer layer). It
//! collects per layer its calls, time, and first input shape and dtype, the device library's
//! algorithms that ran inside it (cuDNN's, per convolution: the row's `solver`), and the
//! calls as trace events. The timed passes run without it.
//!
//! Must not: decide what a pass runs, or complete the profile (`crate::report::profile::complete::finish`).
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use candle_core::Device;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata};

use crate::report::profile::trace::TraceEvent;
use crate::report::profile::{LayerRow, PassProfile, SolverJoin};

/// What a span said when it was created.
#[derive(Default, Clone)]
struct SpanInfo {
    path: String,
    shape: Vec<usize>,
    dtype: String,
    refs: usize,
}

#[derive(Default)]
struct State {
    next: u64,
    spans: HashMap<u64, SpanInfo>,
    depth: usize,
    started: Option<Instant>,
    rows: Vec<LayerRow>,
    /// Per row, the library algorithms (name, family) that ran in it, distinct.
    algos: Vec<Vec<(String, &'static str)>>,
    index: HashMap<String, usize>,
    events: Vec<TraceEvent>,
    t0: Option<Instant>,
}

/// The subscriber of one profiled pass.
struct LayerClock {
    device: Device,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct Fields(SpanInfo);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "path" => self.0.path = value.to_string(),
            "dtype" => self.0.dtype = value.to_string(),
            _ => {}
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "shape" {
            let text = format!("{value:?}");
            self.0.shape = text
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .filter_map(|d| d.trim().parse().ok())
                .collect();
        }
    }
}

impl LayerClock {
    fn sync(&self) {
        // Best effort: a device that cannot synchronize fails the pass itself anyway.
        let _ = crate::machine::device::synchronize(&self.device);
    }

    /// The device library's algorithms that ran since the last call.
    fn algorithms(&self) -> Vec<(String, &'static str)> {
        crate::model::conv::device::backend_for(&self.device).map_or_else(Vec::new, |b| b.take_used())
    }
}

impl tracing::Subscriber for LayerClock {
    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        meta.is_span() && meta.name() == "layer" && meta.target().starts_with("wan_vae_bench")
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut f = Fields::default();
        attrs.record(&mut f);
        f.0.refs = 1;
        let mut s = self.state.lock().unwrap();
        s.next += 1;
        let id = s.next;
        s.spans.insert(id, f.0);
        Id::from_u64(id)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {
        let outermost = self.state.lock().unwrap().depth == 0;
        if outermost {
            self.sync();
            // What ran outside any layer is no layer's.
            self.algorithms();
        }
        let mut s = self.state.lock().unwrap();
        s.depth += 1;
        if outermost {
            s.started = Some(Instant::now());
        }
    }
    fn exit(&self, id: &Id) {
        let outermost = self.state.lock().unwrap().depth == 1;
        let algorithms = if outermost {
            self.sync();
            self.algorithms()
        } else {
            Vec::new()
        };
        let end = Instant::now();
        let mut s = self.state.lock().unwrap();
        s.depth = s.depth.saturating_sub(1);
        if !outermost {
            return;
        }
        let (Some(start), Some(info)) = (s.started.take(), s.spans.get(&id.into_u64()).cloned()) else {
            return;
        };
        let ms = (end - start).as_secs_f64() * 1e3;
        let t0 = *s.t0.get_or_insert(start);
        let ts = (start - t0).as_secs_f64() * 1e6;
        let op = crate::report::profile::complete::op_of(&info.path);
        let args = serde_json::json!({ "shape": info.shape, "dtype": info.dtype });
        s.events.push(TraceEvent::layer(&info.path, op, ts, ms * 1e3, args));
        let i = match s.index.get(&info.path) {
            Some(i) => *i,
            None => {
                let i = s.rows.len();
                s.index.insert(info.path.clone(), i);
                s.rows.push(LayerRow {
                    layer: info.path.clone(),
                    input_shape: info.shape.clone(),
                    dtype: info.dtype.clone(),
                    ..Default::default()
                });
                s.algos.push(Vec::new());
                i
            }
        };
        s.rows[i].calls += 1;
        s.rows[i].ms += ms;
        for a in algorithms {
            if !s.algos[i].contains(&a) {
                s.algos[i].push(a);
            }
        }
    }
    fn clone_span(&self, id: &Id) -> Id {
        if let Some(info) = self.state.lock().unwrap().spans.get_mut(&id.into_u64()) {
            info.refs += 1;
        }
        id.clone()
    }
    fn try_close(&self, id: Id) -> bool {
        let mut s = self.state.lock().unwrap();
        let key = id.into_u64();
        let last = s.spans.get_mut(&key).map(|i| {
            i.refs = i.refs.saturating_sub(1);
            i.refs == 0
        });
        if last == Some(true) {
            s.spans.remove(&key);
        }
        last == Some(true)
    }
}

/// `f` run as a profiled pass on `device`: its wall time (the device synchronized before
/// each clock read, as a timed pass) and the per-layer profile, with its calls as trace
/// events (µs from the pass's start).
pub fn profiled<T>(
    device: &Device,
    f: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(T, f64, PassProfile, Vec<TraceEvent>)> {
    let state = Arc::new(Mutex::new(State::default()));
    let clock = LayerClock {
        device: device.clone(),
        state: state.clone(),
    };
    crate::machine::device::synchronize(device)?;
    let t = Instant::now();
    state.lock().unwrap().t0 = Some(t);
    let out = tracing::subscriber::with_default(clock, f)?;
    crate::machine::device::synchronize(device)?;
    let secs = t.elapsed().as_secs_f64();
    let mut s = state.lock().unwrap();
    let mut layers = std::mem::take(&mut s.rows);
    for (row, algos) in layers.iter_mut().zip(&s.algos) {
        row.solver = solver_of(algos);
    }
    let pass = PassProfile {
        total_ms: secs * 1e3,
        layers,
        ..Default::default()
    };
    Ok((out, secs, pass, std::mem::take(&mut s.events)))
}

/// A layer's library algorithms as its row's `solver`: their names (` | ` between several,
/// e.g. a convolution whose first call had another shape), and their family when they
/// share one.
fn solver_of(algos: &[(String, &'static str)]) -> Option<SolverJoin> {
    let (first, rest) = algos.split_first()?;
    let names: Vec<&str> = algos.iter().map(|(n, _)| n.as_str()).collect();
    let family = rest.iter().all(|(_, f)| *f == first.1).then(|| first.1.to_string());
    Some(SolverJoin {
        solver: Some(names.join(" | ")),
        family,
        driver_command: None,
    })
}

/// The profiled passes of a case whose spec asks for them ([`crate::engine::protocol::ProfileRequest`]):
/// the timed (non-warmup) pass of each kind runs through [`profiled`]; traces are written
/// when asked.
pub struct Recorder {
    request: Option<crate::engine::protocol::ProfileRequest>,
    pub profile: crate::report::profile::CaseProfile,
}

impl Recorder {
    pub fn new(request: Option<crate::engine::protocol::ProfileRequest>) -> Self {
        Recorder {
            request,
            profile: crate::report::profile::CaseProfile {
                method: "spans".into(),
                ..Default::default()
            },
        }
    }

    /// Whether the pass (a warmup or not) is profiled.
    pub fn wants(&self, warm: bool) -> bool {
        self.request.is_some() && !warm
    }

    /// Run `f` as the profiled `pass` (`encode` or `decode`): its output and wall time.
    pub fn pass<T>(
        &mut self,
        pass: &str,
        device: &Device,
        f: impl FnOnce() -> anyhow::Result<T>,
    ) -> anyhow::Result<(T, f64)> {
        let (out, secs, profile, events) = profiled(device, f)?;
        if let Some(prefix) = self.request.as_ref().and_then(|r| r.trace.as_ref()) {
            let path = crate::report::profile::options::trace_file(prefix, pass);
            let case = prefix
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            crate::report::profile::trace::write(
                &path,
                &events,
                &format!("wan-vae-bench candle: {case}"),
                &format!("{pass} pass"),
            )?;
            self.profile.trace_files.push(path.display().to_string());
        }
        match pass {
            "encode" => self.profile.encode = Some(profile),
            _ => self.profile.decode = Some(profile),
        }
        Ok((out, secs))
    }

    /// The case's raw profile, when one was asked for.
    pub fn finish(self) -> Option<crate::report::profile::CaseProfile> {
        self.request.map(|_| self.profile)
    }
}

#[cfg(test)]
mod tests {
    use super::solver_of;

    #[test]
    fn a_layer_names_its_algorithms_and_their_family_when_they_share_one() {
        assert_eq!(solver_of(&[]), None);
        let one = solver_of(&[("cuDNN IMPLICIT_PRECOMP_GEMM (FMA math)".into(), "implicit-gemm/cudnn")]).unwrap();
        assert_eq!(one.solver.as_deref(), Some("cuDNN IMPLICIT_PRECOMP_GEMM (FMA math)"));
        assert_eq!(one.family.as_deref(), Some("implicit-gemm/cudnn"));
        let two = solver_of(&[
            ("cuDNN IMPLICIT_GEMM (FMA math)".into(), "implicit-gemm/cudnn"),
            ("cuDNN WINOGRAD_NONFUSED (FMA math)".into(), "winograd"),
        ])
        .unwrap();
        assert_eq!(
            two.solver.as_deref(),
            Some("cuDNN IMPLICIT_GEMM (FMA math) | cuDNN WINOGRAD_NONFUSED (FMA math)")
        );
        assert_eq!(two.family, None, "two families: none claimed");
    }
}
