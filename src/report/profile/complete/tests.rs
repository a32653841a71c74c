//! Tests of the profile's completion: rows, outside row, GFLOP, roll-ups, op kinds, stages.
use super::*;
use crate::report::profile::KernelRow;

fn raw(layer: &str, ms: f64, calls: u64) -> LayerRow {
    LayerRow {
        layer: layer.into(),
        calls,
        ms,
        ..Default::default()
    }
}

#[test]
fn op_kinds_and_stages_follow_the_checkpoint_names() {
    assert_eq!(op_of("decoder.upsamples.4.residual.2"), "conv3d");
    assert_eq!(op_of("decoder.upsamples.4.residual.3"), "norm");
    assert_eq!(op_of("decoder.upsamples.3.resample.1"), "conv2d");
    assert_eq!(op_of("decoder.upsamples.3.time_conv"), "conv3d");
    assert_eq!(op_of("encoder.middle.1"), "attention");
    assert_eq!(op_of("decoder.head.0"), "norm");
    assert_eq!(op_of("conv2"), "conv3d");
    assert_eq!(op_of(OUTSIDE), "other");
    let cfg = Config::wan21();
    // Wan 2.1's flat list: decoder stages of 3 residual blocks + a resample (4 blocks).
    assert_eq!(
        stage_of("decoder.upsamples.4.residual.2", Some(&cfg)),
        "decoder.upsamples.1"
    );
    assert_eq!(
        stage_of("decoder.upsamples.3.resample.1", Some(&cfg)),
        "decoder.upsamples.0"
    );
    assert_eq!(stage_of("decoder.middle.1", Some(&cfg)), "decoder.middle");
    // Wan 2.2's nested lists name their stage.
    assert_eq!(
        stage_of("encoder.downsamples.2.downsamples.1.residual.2", None),
        "encoder.downsamples.2"
    );
    assert_eq!(stage_of("conv1", None), "conv1");
}

#[test]
fn rows_sum_to_the_pass_and_gflop_to_the_case() {
    let cfg = Config::wan21_sized(8, 4);
    let flops = crate::model::flops::decode_layers(&cfg, 5, 32, 32);
    let total_gflop = crate::model::flops::decode_gflop(&cfg, 5, 32, 32);
    // Every analytic layer seen, some twice (the decoder runs per chunk), plus norms.
    let mut layers: Vec<LayerRow> = flops.iter().map(|(n, _)| raw(n, 2.0, 1)).collect();
    layers.push(raw(&flops[0].0, 1.0, 1));
    layers.push(raw("decoder.head.0", 0.5, 2));
    layers[1].kernels = vec![
        KernelRow {
            name: "aten::mkldnn_convolution".into(),
            calls: 1,
            ms: 1.5,
            ..Default::default()
        },
        KernelRow {
            name: "aten::constant_pad_nd".into(),
            calls: 1,
            ms: 0.5,
            ..Default::default()
        },
    ];
    let inside: f64 = layers.iter().map(|r| r.ms).sum();
    let total_ms = inside + 10.0;
    let timed = PassStats::from_samples(vec![total_ms / 2e3], vec![], 5, total_gflop);
    let p = finish_pass(
        PassProfile {
            total_ms,
            layers,
            ..Default::default()
        },
        &flops,
        Some(&timed),
        Some(&cfg),
    );
    let sum_ms: f64 = p.layers.iter().map(|r| r.ms).sum();
    assert!((sum_ms - total_ms).abs() < 1e-9, "{sum_ms} vs {total_ms}");
    let sum_gflop: f64 = p.layers.iter().map(|r| r.gflop).sum();
    assert!((sum_gflop - total_gflop).abs() < 1e-9 * total_gflop.max(1.0));
    assert_eq!(
        p.layers.len(),
        flops.len() + 2,
        "merged per layer, plus the norm and the outside row"
    );
    let outside = p.layers.last().unwrap();
    assert_eq!((outside.layer.as_str(), outside.ms), (OUTSIDE, 10.0));
    let first = &p.layers[0];
    assert_eq!(
        (first.layer.as_str(), first.calls, first.ms),
        (flops[0].0.as_str(), 2, 3.0)
    );
    assert!((p.overhead - 2.0).abs() < 1e-9);
    let share: f64 = p.by_op.iter().map(|r| r.share).sum();
    assert!((share - 1.0).abs() < 1e-9);
    assert!(p.by_op.iter().any(|r| r.name == "norm" && r.ms == 0.5));
    let stage_ms: f64 = p.by_stage.iter().map(|r| r.ms).sum();
    assert!((stage_ms - total_ms).abs() < 1e-9);
    let k = &p.layers.iter().find(|r| r.layer == flops[1].0).unwrap().kernels;
    assert_eq!((k[0].family.as_str(), k[0].share), ("onednn", 0.75));
    assert_eq!(k[1].family, "copy/pad");
}
