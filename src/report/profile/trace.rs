//! Chrome/Perfetto traces (`run --export-trace DIR`) of a profiled pass the tool timed
//! itself (candle's layer spans): the JSON trace-event format (`"ph": "X"` complete events,
//! microseconds) that ui.perfetto.dev and chrome://tracing open. The Python engines write
//! theirs with torch's own `export_chrome_trace`.
//!
//! Must not: time anything.
use std::path::Path;

use serde::Serialize;

/// One complete event: a layer call.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TraceEvent {
    pub name: String,
    pub cat: String,
    pub ph: &'static str,
    /// Start, µs since the pass began.
    pub ts: f64,
    /// Duration, µs.
    pub dur: f64,
    pub pid: u32,
    pub tid: u32,
    pub args: serde_json::Value,
}

impl TraceEvent {
    /// A layer call of `dur_us` at `ts_us`, on the pass's one thread.
    pub fn layer(name: &str, cat: &str, ts_us: f64, dur_us: f64, args: serde_json::Value) -> Self {
        TraceEvent {
            name: name.to_string(),
            cat: cat.to_string(),
            ph: "X",
            ts: ts_us,
            dur: dur_us,
            pid: std::process::id(),
            tid: 1,
            args,
        }
    }
}

/// Write `events` as a trace file at `path` (atomically), led by the trace-event format's
/// metadata records that name their process (`process`: the engine and the case) and thread
/// (`thread`: the pass), so that a viewer shows those instead of "pid N / Thread 1".
pub fn write(path: &Path, events: &[TraceEvent], process: &str, thread: &str) -> anyhow::Result<()> {
    let mut all: Vec<serde_json::Value> = Vec::with_capacity(events.len() + 2);
    let mut named = std::collections::BTreeSet::new();
    for e in events {
        if named.insert((e.pid, e.tid)) {
            if named.iter().filter(|(p, _)| *p == e.pid).count() == 1 {
                all.push(
                    serde_json::json!({"name": "process_name", "ph": "M", "pid": e.pid, "args": {"name": process}}),
                );
            }
            all.push(serde_json::json!({"name": "thread_name", "ph": "M", "pid": e.pid, "tid": e.tid, "args": {"name": thread}}));
        }
    }
    for e in events {
        all.push(serde_json::to_value(e)?);
    }
    let json = serde_json::to_string(&serde_json::json!({ "traceEvents": all, "displayTimeUnit": "ms" }))?;
    crate::util::files::write_atomic(path, json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_is_trace_event_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let e = TraceEvent::layer(
            "decoder.conv1",
            "conv3d",
            10.0,
            2.5,
            serde_json::json!({"shape": [1, 4, 2, 4, 4]}),
        );
        write(&path, &[e], "candle: fp32-case", "decode pass").unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // The metadata records first (issue 49: viewers showed "pid N / Thread 1").
        let meta = &v["traceEvents"];
        assert_eq!(
            (meta[0]["name"].as_str(), meta[0]["ph"].as_str()),
            (Some("process_name"), Some("M"))
        );
        assert_eq!(meta[0]["args"]["name"], "candle: fp32-case");
        assert_eq!(
            (meta[1]["name"].as_str(), meta[1]["args"]["name"].as_str()),
            (Some("thread_name"), Some("decode pass"))
        );
        let ev = &v["traceEvents"][2];
        assert_eq!(
            (ev["ph"].as_str(), ev["name"].as_str(), ev["dur"].as_f64()),
            (Some("X"), Some("decoder.conv1"), Some(2.5))
        );
    }
}
