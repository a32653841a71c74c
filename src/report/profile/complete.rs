//! The profiler's room (`run --profile`, issue 39): what turns a worker's raw profile (its
//! profiled pass's wall time and per-layer times, names already in the official Wan naming)
//! into the report's [`CaseProfile`]: rows merged per layer, the op kind of each
//! ([`op_of`]), its analytic GFLOP ([`crate::model::flops`]), the time outside any layer
//! as a row of its own (so the rows sum to the pass), shares, GFLOP/s, roll-ups by op kind
//! and stage ([`stage_of`]), the overhead against the timed median, the kernels' families
//! ([`kernels`]) and, when the case logged MIOpen, each convolution's solver ([`miopen`]).
//!
//! Must not: run anything, or render (that is `crate::analysis::export::profile`).
use std::collections::BTreeMap;

use crate::model::Config;
use crate::report::profile::{CaseProfile, LayerRow, PassProfile, Rollup, OUTSIDE};
use crate::report::PassStats;

/// The op kind of a layer, from its checkpoint key path: `conv3d` (causal conv3d: the
/// residual convs, shortcuts, time convs, `conv1`, `conv2`, the heads' conv), `conv2d`
/// (a resample's spatial conv), `attention` (a middle attention block, as one layer),
/// `norm` (RMS norms) or `other`.
pub fn op_of(layer: &str) -> &'static str {
    let parts: Vec<&str> = layer.split('.').collect();
    let last = parts.last().copied().unwrap_or("");
    let before = parts.len().checked_sub(2).map(|i| parts[i]).unwrap_or("");
    match (before, last) {
        (_, "time_conv" | "shortcut" | "conv1" | "conv2") => "conv3d",
        ("residual", "2" | "6") | ("head", "2") => "conv3d",
        ("resample", "1") => "conv2d",
        ("middle", "1") => "attention",
        ("residual", "0" | "3") | ("head", "0") | (_, "norm") => "norm",
        _ => "other",
    }
}

/// The stage a layer belongs to: `encoder.conv1`, `encoder.downsamples.<stage>`,
/// `encoder.middle`, `encoder.head`, `conv1` (and the decoder's alike). Wan 2.1's flat
/// block lists are mapped onto their stages with `cfg`'s stage tables.
pub fn stage_of(layer: &str, cfg: Option<&Config>) -> String {
    let parts: Vec<&str> = layer.split('.').collect();
    match parts.as_slice() {
        [coder @ ("encoder" | "decoder"), list @ ("downsamples" | "upsamples"), i, rest @ ..] => {
            let nested = rest.first() == Some(list);
            let Ok(i) = i.parse::<usize>() else {
                return layer.to_string();
            };
            let stage = match (nested, cfg) {
                (true, _) | (false, None) => Some(i),
                (false, Some(cfg)) => {
                    let stages = if *coder == "encoder" {
                        cfg.encoder_stages()
                    } else {
                        cfg.decoder_stages()
                    };
                    let mut end = 0;
                    stages.iter().position(|s| {
                        end += s.blocks();
                        i < end
                    })
                }
            };
            format!("{coder}.{list}.{}", stage.unwrap_or(i))
        }
        [coder @ ("encoder" | "decoder"), part, ..] => format!("{coder}.{part}"),
        _ => layer.to_string(),
    }
}

/// What [`finish`] needs of the case besides the worker's profile.
pub struct CaseFacts<'a> {
    /// The model's config (for the per-layer GFLOP and Wan 2.1's stages); `None`: no
    /// per-layer GFLOP.
    pub cfg: Option<&'a Config>,
    pub frames: usize,
    pub width: usize,
    pub height: usize,
    /// The case's timed passes.
    pub encode: Option<&'a PassStats>,
    pub decode: Option<&'a PassStats>,
}

/// The report's profile from a worker's: every pass completed ([`finish_pass`]).
pub fn finish(mut raw: CaseProfile, facts: &CaseFacts) -> CaseProfile {
    let layers = |encode: bool| match facts.cfg {
        Some(cfg) if encode => crate::model::flops::encode_layers(cfg, facts.frames, facts.width, facts.height),
        Some(cfg) => crate::model::flops::decode_layers(cfg, facts.frames, facts.width, facts.height),
        None => Vec::new(),
    };
    if let Some(p) = raw.encode.take() {
        raw.encode = Some(finish_pass(p, &layers(true), facts.encode, facts.cfg));
    }
    if let Some(p) = raw.decode.take() {
        raw.decode = Some(finish_pass(p, &layers(false), facts.decode, facts.cfg));
    }
    raw
}

/// One pass: rows merged per layer, op kinds, GFLOP per layer from `flops` (`(layer,
/// GFLOP)`), the outside row, shares, rates, kernels' families, costliest first, roll-ups,
/// and the overhead against `timed`'s median.
pub fn finish_pass(
    raw: PassProfile,
    flops: &[(String, f64)],
    timed: Option<&PassStats>,
    cfg: Option<&Config>,
) -> PassProfile {
    let mut merged: BTreeMap<String, LayerRow> = BTreeMap::new();
    let mut outside_ms = 0.0;
    for row in raw.layers {
        if row.layer == OUTSIDE {
            outside_ms += row.ms;
            continue;
        }
        match merged.get_mut(&row.layer) {
            Some(m) => {
                m.ms += row.ms;
                m.calls += row.calls;
                m.kernels.extend(row.kernels);
            }
            None => {
                merged.insert(row.layer.clone(), row);
            }
        }
    }
    let total_ms = raw.total_ms;
    let inside: f64 = merged.values().map(|r| r.ms).sum();
    let gflop_of: BTreeMap<&str, f64> = flops.iter().map(|(n, g)| (n.as_str(), *g)).collect();
    let mut rows: Vec<LayerRow> = merged.into_values().collect();
    rows.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.layer.cmp(&b.layer)));
    rows.push(LayerRow {
        layer: OUTSIDE.to_string(),
        calls: 0,
        ms: (total_ms - inside).max(0.0) + outside_ms,
        ..Default::default()
    });
    for r in &mut rows {
        r.op = op_of(&r.layer).to_string();
        r.gflop = gflop_of.get(r.layer.as_str()).copied().unwrap_or(0.0);
        r.share = if total_ms > 0.0 { r.ms / total_ms } else { 0.0 };
        r.gflop_per_s = if r.ms > 0.0 { r.gflop / (r.ms / 1e3) } else { 0.0 };
        super::kernels::finish(&mut r.kernels);
    }
    let rollup = |key: &dyn Fn(&LayerRow) -> String| -> Vec<Rollup> {
        let mut by: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        for r in &rows {
            let e = by.entry(key(r)).or_default();
            e.0 += r.ms;
            e.1 += r.gflop;
        }
        let mut out: Vec<Rollup> = by
            .into_iter()
            .map(|(name, (ms, gflop))| Rollup {
                name,
                ms,
                share: if total_ms > 0.0 { ms / total_ms } else { 0.0 },
                gflop,
            })
            .collect();
        out.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.name.cmp(&b.name)));
        out
    };
    let by_op = rollup(&|r| r.op.clone());
    let by_stage = rollup(&|r| {
        if r.layer == OUTSIDE {
            OUTSIDE.to_string()
        } else {
            stage_of(&r.layer, cfg)
        }
    });
    let timed_median_ms = timed.map_or(0.0, |t| t.median_s * 1e3);
    PassProfile {
        total_ms,
        timed_median_ms,
        overhead: if timed_median_ms > 0.0 {
            total_ms / timed_median_ms
        } else {
            0.0
        },
        gflop: timed.map_or_else(|| flops.iter().map(|(_, g)| g).sum(), |t| t.gflop),
        layers: rows,
        by_op,
        by_stage,
    }
}

#[cfg(test)]
mod tests;
