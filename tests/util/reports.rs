//! Helpers of the report-level CLI tests (compare, merge, plot): crafted reports, running
//! the binary.
use std::path::{Path, PathBuf};
use std::process::Command;

use wan_vae_bench::machine::system::SystemInfo;
use wan_vae_bench::model::Precision;
use wan_vae_bench::report::settings::CaseSettings;
use wan_vae_bench::report::{
    CaseRecord, CaseStatus, ErrorStats, ModelInfo, Outcome, PassStats, Quality, Report, RunSettings, SCHEMA_VERSION,
};

/// Pass statistics from samples, through the real [`PassStats::from_samples`] (5 frames,
/// 10 GFLOP per pass, one warmup run of twice the median).
pub fn pass(samples: &[f64]) -> PassStats {
    let mut p = PassStats::from_samples(samples.to_vec(), Vec::new(), 5, 10.0);
    p.warmup_s = vec![p.median_s * 2.0];
    p
}

/// An ok case (5 frames 64x64) with the given encode and decode samples.
pub fn case(id: &str, encode: &[f64], decode: &[f64]) -> CaseRecord {
    CaseRecord {
        id: id.to_string(),
        added_as_reference: false,
        added_as_control: false,
        settings: CaseSettings {
            precision: Precision::Fp32,
            chunk: 1,
            tiling: None,
            frames: 5,
            width: 64,
            height: 64,
            env_variant: "default".into(),
            passes: Default::default(),
            temporal_tile: None,
            engine: Default::default(),
            knobs: Default::default(),
            layout: Default::default(),
            conv3d: Default::default(),
        },
        frames_used: Some(5),
        outcome: Outcome {
            compute_dtype: Some("f32".into()),
            encode: Some(pass(encode)),
            decode: Some(pass(decode)),
            load_s: Some(0.1),
            peak_rss_bytes: Some(1 << 20),
            ..Outcome::new(CaseStatus::Ok, None, Default::default())
        },
        quality: None,
        profile: None,
        system: None,
        budgets: Vec::new(),
        run: None,
    }
}

/// A case that did not run to completion.
pub fn failed_case(id: &str, status: CaseStatus) -> CaseRecord {
    let ok = case(id, &[1.0], &[1.0]);
    CaseRecord {
        outcome: Outcome {
            status,
            error: Some("worker exited with signal 9\nmore stderr".into()),
            encode: None,
            decode: None,
            compute_dtype: None,
            ..ok.outcome
        },
        ..ok
    }
}

/// Quality against `reference` with the given decoded and latent PSNR (None = identical).
pub fn quality(reference: &str, decoded: Option<f64>, latent: Option<f64>) -> Quality {
    let stats = |p: Option<f64>| ErrorStats {
        psnr_db: p,
        max_abs: if p.is_some() { 0.01 } else { 0.0 },
        mean_abs: if p.is_some() { 0.001 } else { 0.0 },
        identical: p.is_none(),
    };
    Quality {
        reference_id: reference.into(),
        latent: Some(stats(latent)),
        decoded: Some(stats(decoded)),
        roundtrip_psnr_db: None,
        cross_engine: None,
    }
}

/// A report of synthetic weights on host `host` with these cases.
pub fn report(host: &str, cases: Vec<CaseRecord>) -> Report {
    Report {
        schema_version: SCHEMA_VERSION,
        tool: wan_vae_bench::machine::tool::this_tool(),
        created_at: "2025-01-01T00:00:00Z".into(),
        system: SystemInfo {
            hostname: Some(host.into()),
            ..Default::default()
        },
        model: ModelInfo {
            source: "synthetic".into(),
            on_disk_dtype: "f32".into(),
            params: 1234,
            dim: 8,
            z_dim: 4,
            ..Default::default()
        },
        run: RunSettings {
            device: "cpu".into(),
            warmup: 1,
            runs: 5,
            timeout_s: 60.0,
            order: "as-written".into(),
            ..Default::default()
        },
        cases,
        engines: Default::default(),
        summary: None,
    }
}

/// Save `report` as `dir/name`.
pub fn save(dir: &Path, name: &str, report: &Report) -> PathBuf {
    let path = dir.join(name);
    report.save_atomic(&path).unwrap();
    path
}

/// Output of one run of the binary.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run `wan-vae-bench ARGS...`.
pub fn bench<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_wan-vae-bench"))
        .args(args)
        .output()
        .unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Samples around 1 s with 2% spread (consistent), scaled by `factor`.
pub fn steady(factor: f64) -> Vec<f64> {
    [1.00, 1.01, 0.99, 1.02, 0.98].iter().map(|x| x * factor).collect()
}
