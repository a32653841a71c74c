//! Whether two reports may be compared or merged: same schema version, same model weights.
//!
//! Must not: compare timings or write anything.
use crate::report::{ModelInfo, Report};

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

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}
