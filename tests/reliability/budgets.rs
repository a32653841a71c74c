//! Budget filters on the axes that only some cases multiply (engine, the PyTorch knobs)
//! and on passes, through a real `run`: each `[[budgets.case]]` entry must apply to exactly
//! the cases whose recorded settings it names, `n/a` included. The workers are faked
//! (`WAN_VAE_BENCH_FAULT=fake`: made-up timings of a few milliseconds, no model, and no
//! torch in the Python worker), so `cuda:0` records the knobs on a machine without a GPU.
use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::util::cli::*;
use wan_vae_bench::report::values::{Engine, MiopenDb, Passes, Switch};
use wan_vae_bench::report::BudgetVerdict;

const MATRIX: &str = r#"
[model]
device = "cuda:0"
[run]
warmup = 0
runs = 1
[matrix]
engine = ["candle", "torch"]
cudnn = ["on", "off"]
miopen_db = ["user", "fresh"]
passes = ["both", "encode"]
size = ["16x8"]
tf32 = ["off"]  # true fp32: each fp32 untiled case is its own reference
env = ["fake"]
[env.fake]
WAN_VAE_BENCH_FAULT = "fake"

[[budgets.case]]
engine = "torch"
decode_median_s = 1000
[[budgets.case]]
cudnn = "off"
decode_median_s = 1000
[[budgets.case]]
cudnn = "n/a"
decode_median_s = 1000
[[budgets.case]]
miopen_db = ["fresh"]
decode_median_s = 1000
[[budgets.case]]
passes = "encode"
encode_median_s = 1e-9
"#;

#[test]
fn filters_on_engine_cudnn_miopen_db_and_passes_pick_the_recorded_cases() {
    let dir = scratch();
    let cfg = write(dir.path(), "m.toml", MATRIX);
    // The fake needs only Python's standard library.
    let python = std::env::var_os("WAN_VAE_BENCH_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| "python3".into());
    let weights = fixture("wan21_tiny.weights.safetensors");
    let (out, report) = run(
        dir.path(),
        &[
            "--fault-hooks",
            "--config",
            cfg.to_str().unwrap(),
            "--weights",
            weights.to_str().unwrap(),
            "--python",
            python.to_str().unwrap(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the encode budget is broken: {}",
        stderr(&out)
    );
    let r = load(&report);
    // candle: 2 passes (knobs n/a); torch: 2 cudnn x 2 miopen_db x 2 passes.
    assert_eq!(r.cases.len(), 2 + 8);
    for c in &r.cases {
        let s = &c.settings;
        let scopes: BTreeSet<&str> = c.budgets.iter().map(|b| b.scope.as_str()).collect();
        let mut want = BTreeSet::new();
        if s.engine == Engine::Torch {
            want.insert("engine = torch");
        }
        match s.knobs.cudnn {
            Switch::Off => want.insert("cudnn = off"),
            Switch::NotApplicable => want.insert("cudnn = n/a"),
            Switch::On | Switch::Auto => false,
        };
        if s.knobs.miopen_db == MiopenDb::Fresh {
            want.insert("miopen_db = fresh");
        }
        if s.passes == Passes::Encode {
            want.insert("passes = encode");
        }
        assert_eq!(scopes, want, "{}", c.id);
        for b in &c.budgets {
            let broken = b.scope == "passes = encode";
            assert_eq!(b.verdict == BudgetVerdict::Broken, broken, "{}: {b:?}", c.id);
        }
    }
    // Every filter value matched some case, and the knobs were recorded where they act.
    let all: BTreeSet<&str> = r
        .cases
        .iter()
        .flat_map(|c| c.budgets.iter().map(|b| b.scope.as_str()))
        .collect();
    assert_eq!(all.len(), 5, "{all:?}");
    assert!(r
        .cases
        .iter()
        .any(|c| c.id == "torch-fp32-chunk1-untiled-5x16x8-fake-encode-cudnn_off-miopen_fresh-tf32_off"));
    let broken = stdout(&out)
        .lines()
        .filter(|l| l.starts_with("budget broken: "))
        .count();
    assert_eq!(broken, 1 + 4, "one encode-only candle case, four torch ones");
}
