//! The in-process measurement of one case (the hidden `worker` subcommand): load the weights
//! (timed), build the input clip, run the warmup passes, then `runs` timed encode and decode
//! passes with a device synchronization before each clock read; report the environment it
//! saw, peak RSS, device memory and the dtype that really ran.
//!
//! Each pass decodes the latent its own encode produced; the outputs of the last timed pass
//! (latent and decoded video, f32) are saved to [`WorkerSpec::outputs`] for the parent's
//! quality comparison, and with real weights the worker reports the round-trip PSNR of that
//! pass ([`super::clip::roundtrip_psnr`]).
//!
//! Speaks [`super::protocol`]; the fault hook is [`super::fault`], the clip [`super::clip`],
//! process memory [`super::memory`]. Must not: spawn processes or write the report.
use std::collections::BTreeMap;
use std::time::Instant;

use candle_core::{Device, Tensor};

use super::clip::{roundtrip_applies, roundtrip_psnr, structured_clip};
use super::memory;
use super::protocol::{phase, seen_env, WorkerModel, WorkerResult, WorkerSpec};
use crate::model::WanVae;
use crate::report::{CaseStatus, PassStats};

/// An error with the status it should be recorded as.
struct Classified(CaseStatus, anyhow::Error);

fn classify(err: anyhow::Error) -> Classified {
    let text = format!("{err:#}").to_ascii_lowercase();
    let status = if text.contains("out of memory") || text.contains("memory allocation of") {
        CaseStatus::Oom
    } else if text.contains("not supported") || text.contains("unsupported") || text.contains("not available") {
        CaseStatus::Unsupported
    } else {
        CaseStatus::Failed
    };
    Classified(status, err)
}

/// Run one case in this process. A model error becomes the result
/// (classified as `oom`, `unsupported` or `failed`); a panic still ends the process, which
/// the parent records as `failed` with the stderr tail.
pub fn run(spec: &WorkerSpec) -> WorkerResult {
    let env = seen_env(&spec.variant_vars);
    let mut result = match super::fault::inject_fault(spec) {
        Some(r) => r,
        None => match measure(spec) {
            Ok(r) => r,
            Err(Classified(status, err)) => WorkerResult::empty(status, Some(format!("{err:#}")), BTreeMap::new()),
        },
    };
    result.env = env;
    result.peak_rss_bytes = result.peak_rss_bytes.or_else(memory::peak_rss_bytes);
    if spec.device.starts_with("cuda") {
        result.device_memory_bytes = memory::cuda_memory_used_bytes();
    }
    result
}

/// Load, warm up and measure. Errors carry the status they should be recorded as.
fn measure(spec: &WorkerSpec) -> Result<WorkerResult, Classified> {
    phase("device");
    // A device this build lacks, or one that cannot be opened, is `unsupported` here.
    let device = crate::device::parse(&spec.device).map_err(|e| Classified(CaseStatus::Unsupported, e.into()))?;
    phase("load");
    let sync = |d: &Device| crate::device::synchronize(d).map_err(classify);
    let t0 = Instant::now();
    // A weights file the parent wrote (synthetic weights shared with the Python engines)
    // is read like the Python workers read it; the format stays the source's.
    let weights = match &spec.weights_path {
        Some(path) => crate::weights::load_file(path)
            .map(|mut w| {
                if matches!(spec.weights, crate::weights::WeightsSource::Synthetic { .. }) {
                    w.format = "synthetic".into();
                }
                w
            })
            .map_err(anyhow::Error::from),
        None => crate::weights::load(&spec.weights),
    }
    .map_err(classify)?;
    let vae = WanVae::new(
        &weights.config,
        weights.var_builder(spec.settings.precision, &device),
        crate::model::ConvImpl::Auto,
    )
    .map_err(classify)?;
    sync(&device)?;
    let load_s = t0.elapsed().as_secs_f64();
    let cfg = weights.config.clone();
    let model = WorkerModel {
        format: weights.format.clone(),
        on_disk_dtype: weights.dtype_summary(),
        params: weights.params,
        dim: cfg.dim,
        z_dim: cfg.z_dim,
    };
    drop(weights);

    phase("inputs");
    let s = &spec.settings;
    let video = match &spec.input_path {
        Some(path) => super::inputs::load_clip(path, s.frames, s.width, s.height, &device),
        None => structured_clip(s.frames, s.width, s.height, &device),
    }
    .map_err(classify)?;
    let opts = s.run_options();
    let (mut enc_warm, mut dec_warm, mut enc, mut dec) = (vec![], vec![], vec![], vec![]);
    let mut last: Option<(Tensor, Tensor)> = None;
    let total = spec.warmup + spec.runs;
    for i in 0..total {
        let warm = i < spec.warmup;
        let label = if warm {
            format!("warmup {}/{}", i + 1, spec.warmup)
        } else {
            format!("run {}/{}", i + 1 - spec.warmup, spec.runs)
        };
        phase(&format!("encode {label}"));
        sync(&device)?;
        let t = Instant::now();
        let z = vae.encode(&video, &opts).map_err(classify)?;
        sync(&device)?;
        let e = t.elapsed().as_secs_f64();
        phase(&format!("decode {label}"));
        sync(&device)?;
        let t = Instant::now();
        let out = vae.decode(&z, &opts).map_err(classify)?;
        sync(&device)?;
        let d = t.elapsed().as_secs_f64();
        // Keep only the last pass's outputs (the previous ones are dropped here).
        last = (i + 1 == total).then_some((z, out));
        if warm {
            enc_warm.push(e);
            dec_warm.push(d);
        } else {
            enc.push(e);
            dec.push(d);
        }
    }
    let (mut roundtrip_psnr_db, mut outputs_error) = (None, None);
    if let Some((latent, decoded)) = last {
        phase("outputs");
        let latent = latent
            .to_dtype(candle_core::DType::F32)
            .map_err(|e| classify(e.into()))?;
        let decoded = decoded
            .to_dtype(candle_core::DType::F32)
            .map_err(|e| classify(e.into()))?;
        if roundtrip_applies(&spec.weights) {
            roundtrip_psnr_db = roundtrip_psnr(&video, &decoded).map_err(classify)?;
        }
        if let Some(path) = &spec.outputs {
            if let Err(e) = super::outputs::save_outputs(path, &latent, &decoded) {
                outputs_error = Some(format!("{e:#}"));
            }
        }
    }
    drop(video);
    let (f, w, h) = (s.frames, s.width, s.height);
    let out_frames = crate::model::frames_used(f).map_err(|e| classify(e.into()))?;
    let encode = PassStats::from_samples(enc, enc_warm, f, crate::model::flops::encode_gflop(&cfg, f, w, h));
    let decode = PassStats::from_samples(
        dec,
        dec_warm,
        out_frames,
        crate::model::flops::decode_gflop(&cfg, f, w, h),
    );
    Ok(WorkerResult {
        compute_dtype: Some(vae.compute_dtype()),
        encode: Some(encode),
        decode: Some(decode),
        load_s: Some(load_s),
        model: Some(model),
        roundtrip_psnr_db,
        outputs_error,
        ..WorkerResult::empty(CaseStatus::Ok, None, BTreeMap::new())
    })
}
