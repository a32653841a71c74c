//! Whether two reports may be compared or merged: same schema version, same model weights;
//! whether a report's cases are sound enough to compare (unique ids, finite non-negative
//! timings); which machine facts differ (CPU model, instruction set, GPUs); and a report's
//! cases under the ids today's plan gives them ([`load`]: what `compare`, `merge`,
//! `history` and `plot` read).
//!
//! Must not: compare timings or write anything.
use std::collections::HashMap;
use std::path::Path;

use crate::machine::system::{GpuVendors, SystemInfo};
use crate::report::values::MiopenDb;
use crate::report::{ModelInfo, PassStats, Report};
use crate::util::error::UserError;

/// A report as the readers take it: loaded, its cases under today's ids ([`current_ids`]),
/// and sound enough to compare ([`check_cases`]).
pub fn load(path: &Path) -> anyhow::Result<Report> {
    let mut report = Report::load(path)?;
    current_ids(&mut report);
    check_cases(&report, path)?;
    Ok(report)
}

/// Rename the cases of an older report as today's plan names them, with every id that
/// refers to them (quality references; the stored answer's text is left as it was written):
/// on a machine whose GPUs are NVIDIA's only, the `miopen_db` knob cannot act (MIOpen is
/// AMD's), so today's ids leave it out, while reports written before named it
/// (`torch-...-cudnn_on-bench_off-miopen_user`). Renamed, an old report and a new one pair
/// in `compare` and make one series in `history`. A `fresh` database on such a machine
/// (asked for explicitly) keeps its old id: today it would be the default case's twin.
pub fn current_ids(report: &mut Report) {
    let mut renamed: HashMap<String, String> = HashMap::new();
    let top = &report.system;
    for case in report.cases.iter_mut() {
        let machine = case.system.as_ref().unwrap_or(top);
        if machine.gpu_vendors() != GpuVendors::NvidiaOnly || case.settings.knobs.miopen_db != MiopenDb::User {
            continue;
        }
        let mut settings = case.settings.clone();
        settings.knobs.miopen_db = MiopenDb::NotApplicable;
        // The id its settings gave (a merged report may have added `@HOST` behind it).
        let Some(rest) = case.id.strip_prefix(&case.settings.id()) else {
            continue;
        };
        let id = format!("{}{rest}", settings.id());
        renamed.insert(std::mem::replace(&mut case.id, id.clone()), id);
        case.settings = settings;
    }
    if renamed.is_empty() {
        return;
    }
    let rename = |id: &mut String| {
        if let Some(new) = renamed.get(id.as_str()) {
            id.clone_from(new);
        }
    };
    for q in report.cases.iter_mut().filter_map(|c| c.quality.as_mut()) {
        rename(&mut q.reference_id);
        if let Some(x) = q.cross_engine.as_mut() {
            rename(&mut x.reference_id);
        }
    }
}

/// Reasons the two reports are not comparable (empty when they are).
///
/// Weights are the same when both `model.sha256` are present and equal; when either is
/// missing, `model.source`, `model.params` and `model.on_disk_dtype` must all match.
pub fn incompatibilities(a: &Report, b: &Report) -> Vec<String> {
    let mut why = Vec::new();
    if a.schema_version != b.schema_version {
        why.push(format!(
            "different schema versions ({} vs {})",
            a.schema_version, b.schema_version
        ));
    }
    if let Some(reason) = model_mismatch(&a.model, &b.model) {
        why.push(reason);
    }
    why
}

/// Why two models are not the same weights, if they are not.
pub fn model_mismatch(a: &ModelInfo, b: &ModelInfo) -> Option<String> {
    if let (Some(sa), Some(sb)) = (&a.sha256, &b.sha256) {
        return (!sa.eq_ignore_ascii_case(sb))
            .then(|| format!("different model weights (sha256 {} vs {})", short(sa), short(sb)));
    }
    let same = a.source == b.source && a.params == b.params && a.on_disk_dtype == b.on_disk_dtype;
    (!same).then(|| {
        format!(
            "different model weights ({} / {} params / {} vs {} / {} params / {})",
            a.source, a.params, a.on_disk_dtype, b.source, b.params, b.on_disk_dtype
        )
    })
}

/// The first 12 characters (not bytes: the field is the report's text, it may be anything).
pub fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// A report `compare` can trust: every case id once, every timing finite, not negative, and
/// between [`MIN_PASS_S`] (when not 0) and [`MAX_PASS_S`].
/// The error names the file and the case.
pub fn check_cases(report: &Report, path: &Path) -> Result<(), UserError> {
    let mut seen = std::collections::BTreeSet::new();
    for case in &report.cases {
        if !seen.insert(case.id.as_str()) {
            return Err(UserError::file(
                path,
                format!(
                    "case id {:?} appears more than once; each case must be measured once",
                    case.id
                ),
            ));
        }
        for (pass, stats) in [("encode", &case.outcome.encode), ("decode", &case.outcome.decode)] {
            if let Some(bad) = stats.as_ref().and_then(bad_timing) {
                return Err(UserError::file(
                    path,
                    format!(
                        "case {:?}: {pass} {bad}; timings must be finite, from 1e-9 s to 1e7 s",
                        case.id
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The longest pass a report may hold, seconds (115 days): larger finite values are not
/// measurements, and their variance overflows Welch's test.
pub const MAX_PASS_S: f64 = 1e7;

/// The shortest pass a report may hold, seconds (1 ns). A pass of the smallest VAE at the
/// smallest size is thousands of convolutions, each at least one kernel launch or loop of
/// microseconds, and the clock `run` reads ticks in nanoseconds: anything shorter was not
/// measured. Below it, ratios and variances lose their meaning (1e-300 s gave `compare` a
/// 310-digit factor, a subnormal one "infx", `history` "+inf% (p = NaN)").
pub const MIN_PASS_S: f64 = 1e-9;

fn bad_timing(p: &PassStats) -> Option<String> {
    let bad = |v: f64| !(v.is_finite() && (0.0..=MAX_PASS_S).contains(&v));
    // A summary field may be 0 (a pass without samples); a positive value below the bound is not a time.
    let too_small = |v: f64| v > 0.0 && v < MIN_PASS_S;
    if let Some((i, v)) = p.samples_s.iter().enumerate().find(|(_, v)| bad(**v)) {
        return Some(format!("sample {} is {v} (at most {MAX_PASS_S} s)", i + 1));
    }
    if let Some((i, v)) = p.samples_s.iter().enumerate().find(|(_, v)| too_small(**v)) {
        return Some(format!(
            "sample {} is {v} s (at least {MIN_PASS_S} s: no VAE pass is shorter)",
            i + 1
        ));
    }
    if !p.samples_s.is_empty() {
        let m = crate::util::stats::median(&p.samples_s);
        if m <= 0.0 || p.median_s <= 0.0 {
            return Some(format!(
                "median_s is {} with samples of median {m}: a pass takes time",
                p.median_s
            ));
        }
        if (p.median_s - m).abs() > 1e-6 * m.max(p.median_s) {
            return Some(format!(
                "median_s {} contradicts its samples, whose median is {m}",
                p.median_s
            ));
        }
    }
    let fields = [
        ("min_s", p.min_s),
        ("median_s", p.median_s),
        ("mean_s", p.mean_s),
        ("max_s", p.max_s),
    ];
    if let Some((name, v)) = fields.iter().find(|(_, v)| bad(*v)) {
        return Some(format!("{name} is {v}"));
    }
    fields
        .iter()
        .find(|(_, v)| too_small(*v))
        .map(|(name, v)| format!("{name} is {v} s (at least {MIN_PASS_S} s: no VAE pass is shorter)"))
}

/// The machine facts that differ between two reports: CPU model, instruction-set
/// extensions, GPUs (empty when none differ or a side does not know them).
pub fn system_differences(a: &SystemInfo, b: &SystemInfo) -> Vec<String> {
    let mut why = Vec::new();
    if let (Some(x), Some(y)) = (&a.cpu_model, &b.cpu_model) {
        if x != y {
            why.push(format!("different CPU models ({x} vs {y})"));
        }
    }
    if !a.cpu_simd.is_empty() && !b.cpu_simd.is_empty() && a.cpu_simd != b.cpu_simd {
        let only = |p: &[String], q: &[String]| -> String {
            let v: Vec<&str> = p.iter().filter(|x| !q.contains(x)).map(String::as_str).collect();
            if v.is_empty() {
                "-".into()
            } else {
                v.join(" ")
            }
        };
        why.push(format!(
            "different instruction sets (baseline only: {}; current only: {})",
            only(&a.cpu_simd, &b.cpu_simd),
            only(&b.cpu_simd, &a.cpu_simd)
        ));
    }
    let gpus = |s: &SystemInfo| -> Vec<String> {
        s.gpus
            .iter()
            .map(|g| {
                format!(
                    "{} {}",
                    g.vendor,
                    g.name.as_deref().or(g.gfx_target.as_deref()).unwrap_or("?")
                )
            })
            .collect()
    };
    let (ga, gb) = (gpus(a), gpus(b));
    if ga != gb {
        let text = |g: &[String]| if g.is_empty() { "none".to_string() } else { g.join(", ") };
        why.push(format!("different GPUs ({} vs {})", text(&ga), text(&gb)));
    }
    why
}
