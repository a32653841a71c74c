//! The in-process measurement of one case (the hidden `worker` subcommand): load the weights
//! (timed), build the input clip, run the warmup passes, then `runs` timed encode and decode
//! passes with a device synchronization before each clock read; report the environment it
//! saw, peak RSS, device memory and the dtype that really ran.
//!
//! The case's `passes` say what is timed: with both, each pass decodes the latent its own
//! encode produced; a decode-only case decodes the latent it was given
//! ([`WorkerSpec::input`]) and never encodes; an encode-only case never decodes. The input
//! video is the given one or the built-in clip. The decode tiles in time when the case
//! says so ([`crate::model::temporal_tiling`]). The outputs of the last timed pass (latent
//! and decoded video, f32, whichever the case made) are saved to [`WorkerSpec::outputs`]
//! for the parent's quality comparison, and with real weights the worker reports the
//! round-trip PSNR of the decoded video against the video ([`super::clip::roundtrip_psnr`]). A last pass whose latent or decoded
//! video holds NaN or Inf makes the case `failed`, naming the pass and the count.
//!
//! Speaks [`super::protocol`]; the fault hook is [`super::fault`], the clip [`super::clip`],
//! process memory [`super::memory`]. Must not: spawn processes or write the report.
use std::collections::BTreeMap;
use std::time::Instant;

use candle_core::{Device, Tensor};

use super::clip::{roundtrip_applies, roundtrip_psnr, structured_clip};
use super::input::read_worker_input;
use super::memory;
use super::protocol::{phase, seen_env, InputKind, WorkerModel, WorkerResult, WorkerSpec};
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
        None => crate::weights::load_model(&spec.weights, spec.model),
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
    let tc = cfg.temporal_compression();
    // The video a case encodes (and a real-weights round trip compares with): the input
    // video when given, else the built-in clip. A decode-only case has none (no round trip).
    let latent_input = spec.input.as_ref().filter(|i| i.kind == InputKind::Latent);
    let video = match (&spec.input, s.passes.encodes()) {
        (_, false) => None,
        (Some(i), true) if i.kind == InputKind::Video => {
            Some(read_worker_input(&i.path, i.kind.tensor(), &device).map_err(classify)?)
        }
        (Some(_), true) => {
            return Err(Classified(
                CaseStatus::Failed,
                anyhow::anyhow!("an encode pass needs a video, but the input is a latent"),
            ))
        }
        // The clip the parent wrote for every engine, else the same clip built here.
        (None, true) => Some(
            match &spec.input_path {
                Some(path) => super::inputs::load_clip(path, s.frames, s.width, s.height, &device),
                None => structured_clip(s.frames, s.width, s.height, &device),
            }
            .map_err(classify)?,
        ),
    };
    // A decode-only case decodes the given latent; it never encodes.
    let given_latent = match (s.passes.encodes(), latent_input) {
        (true, _) => None,
        (false, Some(i)) => Some(read_worker_input(&i.path, i.kind.tensor(), &device).map_err(classify)?),
        (false, None) => {
            return Err(Classified(
                CaseStatus::Failed,
                anyhow::anyhow!("a decode-only case needs a latent input (the parent passes one)"),
            ))
        }
    };
    let opts = s.run_options();
    let decode = |z: &Tensor| -> anyhow::Result<Tensor> {
        match s.temporal_tile {
            None => vae.decode(z, &opts),
            Some(tt) => Ok(crate::model::temporal_tiling::tiled_decode(z, tt, tc, |tile| {
                vae.decode(tile, &opts)
                    .map_err(|e| candle_core::Error::Msg(format!("{e:#}")))
            })?),
        }
    };
    let (mut enc_warm, mut dec_warm, mut enc, mut dec) = (vec![], vec![], vec![], vec![]);
    let mut last: Option<(Option<Tensor>, Option<Tensor>)> = None;
    let total = spec.warmup + spec.runs;
    for i in 0..total {
        let warm = i < spec.warmup;
        let label = if warm {
            format!("warmup {}/{}", i + 1, spec.warmup)
        } else {
            format!("run {}/{}", i + 1 - spec.warmup, spec.runs)
        };
        let z = match (&given_latent, &video) {
            (Some(z), _) => z.clone(),
            (None, Some(video)) => {
                phase(&format!("encode {label}"));
                sync(&device)?;
                let t = Instant::now();
                let z = vae.encode(video, &opts).map_err(classify)?;
                sync(&device)?;
                let e = t.elapsed().as_secs_f64();
                if warm {
                    enc_warm.push(e)
                } else {
                    enc.push(e)
                }
                z
            }
            (None, None) => unreachable!("checked above: an encode has a video"),
        };
        let out = if s.passes.decodes() {
            phase(&format!("decode {label}"));
            sync(&device)?;
            let t = Instant::now();
            let out = decode(&z).map_err(classify)?;
            sync(&device)?;
            let d = t.elapsed().as_secs_f64();
            if warm {
                dec_warm.push(d)
            } else {
                dec.push(d)
            }
            Some(out)
        } else {
            None
        };
        // Keep only the last pass's outputs (the previous ones are dropped here); a
        // decode-only case's latent is its input, not an output.
        let own_latent = given_latent.is_none().then_some(z);
        last = (i + 1 == total).then_some((own_latent, out));
    }
    let (mut roundtrip_psnr_db, mut outputs_error) = (None, None);
    let mut non_finite = Vec::new();
    if let Some((latent, decoded)) = last {
        phase("outputs");
        let f32 = |t: Option<Tensor>| -> Result<Option<Tensor>, Classified> {
            t.map(|t| t.to_dtype(candle_core::DType::F32).map_err(|e| classify(e.into())))
                .transpose()
        };
        let (latent, decoded) = (f32(latent)?, f32(decoded)?);
        // Checked after the clocks stopped, on the last timed pass (a NaN from the
        // weights or an overflow appears in every pass alike).
        for (pass, what, t) in [("encode", "latent", &latent), ("decode", "decoded video", &decoded)] {
            let Some(t) = t else { continue };
            let n = count_non_finite(t).map_err(classify)?;
            if n > 0 {
                non_finite.push(format!(
                    "{pass} produced {n} non-finite value(s) (NaN or Inf) of {} in the {what}",
                    t.elem_count()
                ));
            }
        }
        if let (true, true, Some(video), Some(decoded)) = (
            roundtrip_applies(&spec.weights),
            non_finite.is_empty(),
            &video,
            &decoded,
        ) {
            roundtrip_psnr_db = roundtrip_psnr(video, decoded).map_err(classify)?;
        }
        if let Some(path) = &spec.outputs {
            if let Err(e) = super::outputs::save_outputs(path, latent.as_ref(), decoded.as_ref()) {
                outputs_error = Some(format!("{e:#}"));
            }
        }
    }
    drop(video);
    let (f, w, h) = (s.frames, s.width, s.height);
    let out_frames = cfg.frames_used(f).map_err(|e| classify(e.into()))?;
    // Both passes process the first 1+4k frames: encode reads them, decode returns them.
    let encode = PassStats::from_samples(
        enc,
        enc_warm,
        out_frames,
        crate::model::flops::encode_gflop(&cfg, f, w, h),
    );
    let decode = PassStats::from_samples(
        dec,
        dec_warm,
        out_frames,
        crate::model::flops::decode_gflop(&cfg, f, w, h),
    );
    let (status, error) = if non_finite.is_empty() {
        (CaseStatus::Ok, None)
    } else {
        (CaseStatus::Failed, Some(non_finite.join("; ")))
    };
    Ok(WorkerResult {
        compute_dtype: Some(vae.compute_dtype()),
        encode: s.passes.encodes().then_some(encode),
        decode: s.passes.decodes().then_some(decode),
        load_s: Some(load_s),
        model: Some(model),
        roundtrip_psnr_db,
        outputs_error,
        ..WorkerResult::empty(status, error, BTreeMap::new())
    })
}

/// Number of NaN or infinite values in an f32 tensor.
fn count_non_finite(t: &Tensor) -> anyhow::Result<usize> {
    let values = t.flatten_all()?.to_device(&Device::Cpu)?.to_vec1::<f32>()?;
    Ok(values.iter().filter(|v| !v.is_finite()).count())
}
