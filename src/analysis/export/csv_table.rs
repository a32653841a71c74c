//! The cases as CSV (`run --export-csv FILE`), one row per case, for spreadsheets: `id`,
//! every axis (the case settings' report keys, so a new axis gets its column without an
//! edit here), `added_as_reference`, `status`, `oom_tiled_retry` (empty for engines without such a
//! fallback), `compute_dtype`, per pass the median,
//! stddev and min in seconds, runs and GFLOP/s, the peak memories in bytes, the decoded and
//! latent PSNR against the reference in dB (empty when unknown, with `*_identical` telling
//! identical outputs apart), the reference's id, `quality_weights` (`synthetic` when that
//! quality was measured on synthetic weights, `file` on a weights file; empty without
//! quality), and the first line of the error.
//!
//! Rows in the order of their axes ([`super::rows::sorted`]), not the shuffled order they
//! ran in. Numbers are plain (full precision, `.` decimal point); unknown values are empty
//! cells.
//!
//! Must not: write files (the [`super::ExportManager`] does).
use crate::report::{CaseRecord, ErrorStats, PassStats, Report};

/// Axis columns in this order first; any other settings key follows, sorted.
const AXIS_ORDER: [&str; 17] = [
    "engine",
    "precision",
    "chunk",
    "tile_px",
    "overlap_px",
    "temporal_tile_frames",
    "temporal_overlap_frames",
    "frames",
    "width",
    "height",
    "passes",
    "env_variant",
    "cudnn",
    "cudnn_benchmark",
    "miopen_db",
    "tf32",
    "frames_used",
];

/// The columns after the axes.
const RESULT_COLUMNS: [&str; 25] = [
    "added_as_reference",
    "status",
    "oom_tiled_retry",
    "compute_dtype",
    "encode_median_s",
    "encode_stddev_s",
    "encode_min_s",
    "encode_runs",
    "encode_gflop_per_s",
    "decode_median_s",
    "decode_stddev_s",
    "decode_min_s",
    "decode_runs",
    "decode_gflop_per_s",
    "load_s",
    "peak_rss_bytes",
    "device_memory_bytes",
    "device_peak_allocated_bytes",
    "device_peak_reserved_bytes",
    "reference_id",
    "decoded_psnr_db",
    "decoded_identical",
    "latent_psnr_db",
    "latent_identical",
    "quality_weights",
];

/// A settings value as a cell: strings bare (guarded, [`text`]), null empty.
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => text(s),
        other => other.to_string(),
    }
}

/// Untrusted text as a cell a spreadsheet will not run: one starting with `=`, `+`, `-`, `@`,
/// a tab or a carriage return gets a leading `'` (OWASP's CSV-injection rule).
fn text(s: &str) -> String {
    match s.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{s}"),
        _ => s.to_string(),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn pass_cells(p: Option<&PassStats>) -> [String; 5] {
    match p {
        None => Default::default(),
        Some(p) => [
            p.median_s.to_string(),
            p.stddev_s.to_string(),
            p.min_s.to_string(),
            p.samples_s.len().to_string(),
            p.gflop_per_s.to_string(),
        ],
    }
}

fn error_cells(e: Option<&ErrorStats>) -> [String; 2] {
    match e {
        None => Default::default(),
        Some(e) => [opt(e.psnr_db), e.identical.to_string()],
    }
}

/// The axis keys of the report's cases: [`AXIS_ORDER`]'s, then any other, sorted.
fn axis_keys(settings: &[serde_json::Map<String, serde_json::Value>]) -> Vec<String> {
    let mut extra: Vec<String> = settings
        .iter()
        .flat_map(|m| m.keys())
        .filter(|k| !AXIS_ORDER.contains(&k.as_str()))
        .cloned()
        .collect();
    extra.sort();
    extra.dedup();
    AXIS_ORDER.iter().map(|k| k.to_string()).chain(extra).collect()
}

/// The settings of `c` as report keys, with `frames_used`.
fn settings_map(c: &CaseRecord) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let mut m = match serde_json::to_value(&c.settings)? {
        serde_json::Value::Object(m) => m,
        other => anyhow::bail!("case settings serialized as {other}, not an object"),
    };
    m.insert("frames_used".into(), serde_json::json!(c.frames_used));
    Ok(m)
}

fn result_cells(c: &CaseRecord, synthetic: bool) -> Vec<String> {
    let q = c.quality.as_ref();
    let mut row = vec![
        c.added_as_reference.to_string(),
        c.outcome.status.name().to_string(),
        opt(c.outcome.oom_tiled_retry),
        opt(c.outcome.compute_dtype.as_deref()),
    ];
    row.extend(pass_cells(c.outcome.encode.as_ref()));
    row.extend(pass_cells(c.outcome.decode.as_ref()));
    row.extend([
        opt(c.outcome.load_s),
        opt(c.outcome.peak_rss_bytes),
        opt(c.outcome.device_memory_bytes),
        opt(c.outcome.device_peak_allocated_bytes),
        opt(c.outcome.device_peak_reserved_bytes),
        opt(q.map(|q| q.reference_id.as_str())),
    ]);
    row.extend(error_cells(q.and_then(|q| q.decoded.as_ref())));
    row.extend(error_cells(q.and_then(|q| q.latent.as_ref())));
    // What the quality columns were measured on: `synthetic` weights say nothing of a real VAE.
    row.push(match (q, synthetic) {
        (None, _) => String::new(),
        (Some(_), true) => "synthetic".into(),
        (Some(_), false) => "file".into(),
    });
    row
}

/// The report's cases as CSV text (header row first).
pub fn csv_rows(report: &Report) -> anyhow::Result<String> {
    let cases = super::rows::sorted(report);
    let settings: Vec<_> = cases.iter().map(|c| settings_map(c)).collect::<anyhow::Result<_>>()?;
    let axes = axis_keys(&settings);
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = std::iter::once("id")
        .chain(axes.iter().map(String::as_str))
        .chain(RESULT_COLUMNS)
        .chain(std::iter::once("error"));
    w.write_record(header)?;
    for (c, m) in cases.iter().zip(&settings) {
        let mut row = vec![text(&c.id)];
        row.extend(axes.iter().map(|k| m.get(k).map(cell).unwrap_or_default()));
        row.extend(result_cells(c, report.model.is_synthetic()));
        row.push(text(&opt(c.outcome.error_line())));
        w.write_record(&row)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_a_spreadsheet_would_run_are_guarded() {
        assert_eq!(text("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        for s in ["+1", "-x", "@SUM(A1)", "\tx"] {
            assert!(text(s).starts_with('\''), "{s}");
        }
        assert_eq!(text("fp32-chunk1"), "fp32-chunk1");
    }
}
