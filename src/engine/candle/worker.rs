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
//! ([`save_outputs`]) for the parent's quality comparison, and with real weights the worker
//! reports the round-trip PSNR of the decoded video against the video
//! ([`crate::engine::clip::roundtrip_psnr`]). A last pass whose latent or decoded video
//! holds NaN or Inf makes the case `failed`, naming the pass and the count.
//!
//! Speaks [`crate::engine::protocol`]; the fault hook is [`super::fault`], process memory
//! [`super::memory`]. Must not: spawn processes or write the report.
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use candle_core::{DType, Device, Tensor};

use super::memory;
use crate::engine::clip::{roundtrip_applies, roundtrip_psnr, structured_clip};
use crate::engine::protocol::{
    phase, seen_env, InputKind, WorkerModel, WorkerResult, WorkerSpec, OUTPUT_DECODED, OUTPUT_LATENT,
};
use crate::engine::shared_files::{load_clip, read_worker_input};
use crate::model::{Config, WanVae};
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

fn failed(message: &str) -> Classified {
    Classified(CaseStatus::Failed, anyhow::anyhow!("{message}"))
}

/// What a worker keeps from one case to the next: the model it built, while the weights,
/// model, precision and device stay the same.
#[derive(Default)]
pub struct Session {
    model: Option<(String, Loaded)>,
}

/// Run one case in this process, reusing the session's model when the case allows. A model
/// error becomes the result (classified as `oom`, `unsupported` or `failed`); a panic still
/// ends the process, which the parent records as `failed` with the stderr tail.
pub fn run(spec: &WorkerSpec, session: &mut Session) -> WorkerResult {
    let env = seen_env(&spec.variant_vars);
    let mut reused = false;
    let mut result = match super::fault::inject_fault(spec) {
        Some(r) => r,
        None => match measure(spec, session, &mut reused) {
            Ok(r) => r,
            Err(Classified(status, err)) => WorkerResult::empty(status, Some(format!("{err:#}")), BTreeMap::new()),
        },
    };
    let o = &mut result.outcome;
    o.worker = Some(crate::report::WorkerUse {
        model_reused: reused,
        ..Default::default()
    });
    o.env = env;
    o.peak_rss_bytes = o.peak_rss_bytes.or_else(memory::peak_rss_bytes);
    if spec.run.device.starts_with("cuda") {
        o.device_memory_bytes = memory::cuda_memory_used_bytes();
    }
    result
}

/// The model, loaded and built on the device.
struct Loaded {
    vae: WanVae,
    cfg: Config,
    model: WorkerModel,
    load_s: f64,
}

/// What the timed passes read: the video a case encodes (the input video, else the clip),
/// or the latent a decode-only case decodes.
struct Inputs {
    video: Option<Tensor>,
    given_latent: Option<Tensor>,
}

/// The timings of every pass, and the outputs of the last one (latent, decoded video).
#[derive(Default)]
struct Timed {
    enc_warm: Vec<f64>,
    dec_warm: Vec<f64>,
    enc: Vec<f64>,
    dec: Vec<f64>,
    last: Option<(Option<Tensor>, Option<Tensor>)>,
    /// A profiled lease's per-layer profile ([`super::profile`]).
    profile: Option<crate::report::profile::CaseProfile>,
}

/// What the last pass's outputs said: round trip, why they could not be saved, and the
/// non-finite values they held.
#[derive(Default)]
struct Checked {
    roundtrip_psnr_db: Option<f64>,
    outputs_error: Option<String>,
    non_finite: Vec<String>,
}

/// Load (or reuse the session's model), warm up and measure. Errors carry the status they
/// should be recorded as.
fn measure(spec: &WorkerSpec, session: &mut Session, reused: &mut bool) -> Result<WorkerResult, Classified> {
    phase("device");
    // A device this build lacks, or one that cannot be opened, is `unsupported` here.
    let device =
        crate::machine::device::parse(&spec.run.device).map_err(|e| Classified(CaseStatus::Unsupported, e.into()))?;
    // The `tf32` knob (it acts on NVIDIA GPUs only; `auto` is candle's true fp32).
    let tf32 = spec.settings.knobs.tf32 == crate::report::values::Switch::On;
    crate::model::conv::device::set_tf32(tf32);
    phase("load");
    let key = serde_json::json!([
        format!("{:?}", spec.run.weights),
        spec.run.weights_path,
        spec.run.model.map(|m| m.name()),
        spec.run.device,
        format!("{:?}", spec.settings.precision)
    ])
    .to_string();
    let loaded = match session.model.take() {
        Some((k, mut l)) if k == key => {
            *reused = true;
            l.load_s = 0.0;
            l
        }
        old => {
            // The previous model goes before the next one is built: never both in memory.
            drop(old);
            load(spec, &device)?
        }
    };
    let loaded = &session.model.insert((key, loaded)).1;
    // Each case's peak memory is its own, the same in a shared worker as in a process of its
    // own: it restarts once this case's model is in place (kept or loaded; the loading's
    // transient is not the setting's), so it holds the model and the case's inputs and passes.
    // The kernels' kept buffers go first: an earlier, larger case's are not this case's.
    crate::model::conv::release_caches();
    memory::reset_peak_rss();
    phase("inputs");
    let inputs = read_inputs(spec, &device)?;
    let mut timed = time_passes(spec, loaded, &inputs, &device)?;
    let profile = timed.profile.take();
    let checked = match timed.last {
        Some((latent, decoded)) => {
            phase("outputs");
            check_outputs(spec, latent, decoded, inputs.video.as_ref())?
        }
        None => Checked::default(),
    };
    drop(inputs);
    let s = &spec.settings;
    let (cfg, (f, w, h)) = (&loaded.cfg, (s.frames, s.width, s.height));
    let out_frames = cfg.frames_used(f).map_err(|e| classify(e.into()))?;
    // Both passes process the first 1+4k frames: encode reads them, decode returns them.
    let encode_gflop = crate::model::flops::encode_gflop(cfg, f, w, h);
    let decode_gflop = crate::model::flops::decode_gflop(cfg, f, w, h);
    let (status, error) = if checked.non_finite.is_empty() {
        (CaseStatus::Ok, None)
    } else {
        (CaseStatus::Failed, Some(checked.non_finite.join("; ")))
    };
    let mut result = WorkerResult::empty(status, error, BTreeMap::new());
    let o = &mut result.outcome;
    o.compute_dtype = Some(loaded.vae.compute_dtype());
    o.encode = s
        .passes
        .encodes()
        .then(|| PassStats::from_samples(timed.enc, timed.enc_warm, out_frames, encode_gflop));
    o.decode = s
        .passes
        .decodes()
        .then(|| PassStats::from_samples(timed.dec, timed.dec_warm, out_frames, decode_gflop));
    o.load_s = Some(loaded.load_s);
    o.conv_library = crate::model::conv::device::backend_for(&device).and_then(|b| b.library());
    if device.is_cuda() {
        let in_force = if tf32 { "on" } else { "off" };
        o.knobs_in_force = Some(BTreeMap::from([("tf32".to_string(), in_force.to_string())]));
    }
    result.model = Some(loaded.model.clone());
    result.roundtrip_psnr_db = checked.roundtrip_psnr_db;
    result.outputs_error = checked.outputs_error;
    result.profile = profile;
    Ok(result)
}

fn sync(device: &Device) -> Result<(), Classified> {
    crate::machine::device::synchronize(device).map_err(classify)
}

/// Load the weights and build the model, timed (the device synchronized before the clock
/// is read).
fn load(spec: &WorkerSpec, device: &Device) -> Result<Loaded, Classified> {
    let t0 = Instant::now();
    // A weights file the parent wrote (synthetic weights shared with the Python engines)
    // is read like the Python workers read it; the format stays the source's.
    let weights = match &spec.run.weights_path {
        Some(path) => crate::weights::load_file(path)
            .map(|mut w| {
                if matches!(spec.run.weights, crate::weights::WeightsSource::Synthetic { .. }) {
                    w.format = "synthetic".into();
                }
                w
            })
            .map_err(anyhow::Error::from),
        None => crate::weights::load_model(&spec.run.weights, spec.run.model),
    }
    .map_err(classify)?;
    let vae = WanVae::new(
        &weights.config,
        weights.var_builder(spec.settings.precision, device),
        crate::model::ConvImpl::Auto,
    )
    .map_err(classify)?;
    sync(device)?;
    let load_s = t0.elapsed().as_secs_f64();
    let cfg = weights.config.clone();
    let model = WorkerModel {
        format: weights.format.clone(),
        on_disk_dtype: weights.dtype_summary(),
        params: weights.params,
        dim: cfg.dim,
        z_dim: cfg.z_dim,
    };
    Ok(Loaded {
        vae,
        cfg,
        model,
        load_s,
    })
}

/// The video a case encodes (and a real-weights round trip compares with): the input video
/// when given, else the built-in clip (the file the parent wrote for every engine, else the
/// same clip built here); a decode-only case has none and reads the latent it was given.
fn read_inputs(spec: &WorkerSpec, device: &Device) -> Result<Inputs, Classified> {
    let s = &spec.settings;
    let given = |i: &crate::engine::protocol::WorkerInput| {
        read_worker_input(&i.path, i.kind.tensor(), device).map_err(classify)
    };
    if !s.passes.encodes() {
        return match spec.input.as_ref().filter(|i| i.kind == InputKind::Latent) {
            Some(i) => Ok(Inputs {
                video: None,
                given_latent: Some(given(i)?),
            }),
            None => Err(failed(
                "a decode-only case needs a latent input (the parent passes one)",
            )),
        };
    }
    let video = match (&spec.input, &spec.input_path) {
        (Some(i), _) if i.kind == InputKind::Video => given(i)?,
        (Some(_), _) => return Err(failed("an encode pass needs a video, but the input is a latent")),
        (None, Some(path)) => load_clip(path, s.frames, s.width, s.height, device).map_err(classify)?,
        (None, None) => structured_clip(s.frames, s.width, s.height, device).map_err(classify)?,
    };
    Ok(Inputs {
        video: Some(video),
        given_latent: None,
    })
}

/// `f` timed, the device synchronized before each clock read.
fn timed<T>(device: &Device, f: impl FnOnce() -> anyhow::Result<T>) -> Result<(T, f64), Classified> {
    sync(device)?;
    let t = Instant::now();
    let out = f().map_err(classify)?;
    sync(device)?;
    Ok((out, t.elapsed().as_secs_f64()))
}

/// `warmup + runs` passes, each timing the encode and the decode the case runs; keeps the
/// outputs of the last one.
fn time_passes(spec: &WorkerSpec, loaded: &Loaded, inputs: &Inputs, device: &Device) -> Result<Timed, Classified> {
    let s = &spec.settings;
    let (vae, opts) = (&loaded.vae, s.run_options());
    let tc = loaded.cfg.temporal_compression();
    let decode = |z: &Tensor| -> anyhow::Result<Tensor> {
        match s.temporal_tile {
            None => vae.decode(z, &opts),
            Some(tt) => Ok(crate::model::temporal_tiling::tiled_decode(z, tt, tc, |tile| {
                vae.decode(tile, &opts)
                    .map_err(|e| candle_core::Error::Msg(format!("{e:#}")))
            })?),
        }
    };
    let (warmup, runs) = (spec.run.warmup, spec.run.runs);
    let mut t = Timed::default();
    let mut rec = super::profile::Recorder::new(spec.profile.clone());
    for i in 0..warmup + runs {
        let warm = i < warmup;
        let label = if warm {
            format!("warmup {}/{warmup}", i + 1)
        } else {
            format!("run {}/{runs}", i + 1 - warmup)
        };
        let z = match (&inputs.given_latent, &inputs.video) {
            (Some(z), _) => z.clone(),
            (None, Some(video)) => {
                phase(&format!("encode {label}"));
                let (z, secs) = match rec.wants(warm) {
                    true => rec
                        .pass("encode", device, || vae.encode(video, &opts))
                        .map_err(classify)?,
                    false => timed(device, || vae.encode(video, &opts))?,
                };
                let samples = if warm { &mut t.enc_warm } else { &mut t.enc };
                samples.push(secs);
                z
            }
            (None, None) => unreachable!("read_inputs gives an encode a video"),
        };
        let out = if s.passes.decodes() {
            phase(&format!("decode {label}"));
            let (out, secs) = match rec.wants(warm) {
                true => rec.pass("decode", device, || decode(&z)).map_err(classify)?,
                false => timed(device, || decode(&z))?,
            };
            let samples = if warm { &mut t.dec_warm } else { &mut t.dec };
            samples.push(secs);
            Some(out)
        } else {
            None
        };
        // Keep only the last pass's outputs (the previous ones are dropped here); a
        // decode-only case's latent is its input, not an output.
        let own_latent = inputs.given_latent.is_none().then_some(z);
        t.last = (i + 1 == warmup + runs).then_some((own_latent, out));
    }
    t.profile = rec.finish();
    Ok(t)
}

/// After the clocks stopped, on the last timed pass: count non-finite values (a NaN from the
/// weights or an overflow appears in every pass alike), compute the round trip against the
/// video (real weights only) and save the outputs.
fn check_outputs(
    spec: &WorkerSpec,
    latent: Option<Tensor>,
    decoded: Option<Tensor>,
    video: Option<&Tensor>,
) -> Result<Checked, Classified> {
    let f32 = |t: Option<Tensor>| -> Result<Option<Tensor>, Classified> {
        t.map(|t| t.to_dtype(DType::F32).map_err(|e| classify(e.into())))
            .transpose()
    };
    let (latent, decoded) = (f32(latent)?, f32(decoded)?);
    let mut checked = Checked::default();
    for (pass, what, t) in [("encode", "latent", &latent), ("decode", "decoded video", &decoded)] {
        let Some(t) = t else { continue };
        let n = count_non_finite(t).map_err(classify)?;
        if n > 0 {
            checked.non_finite.push(format!(
                "{pass} produced {n} non-finite value(s) (NaN or Inf) of {} in the {what}",
                t.elem_count()
            ));
        }
    }
    if let (true, true, Some(video), Some(decoded)) = (
        roundtrip_applies(&spec.run.weights),
        checked.non_finite.is_empty(),
        video,
        &decoded,
    ) {
        checked.roundtrip_psnr_db = roundtrip_psnr(video, decoded).map_err(classify)?;
    }
    if let Some(path) = &spec.outputs {
        if let Err(e) = save_outputs(path, latent.as_ref(), decoded.as_ref()) {
            checked.outputs_error = Some(format!("{e:#}"));
        }
    }
    Ok(checked)
}

/// Number of NaN or infinite values in an f32 tensor.
fn count_non_finite(t: &Tensor) -> anyhow::Result<usize> {
    let values = t.flatten_all()?.to_device(&Device::Cpu)?.to_vec1::<f32>()?;
    Ok(values.iter().filter(|v| !v.is_finite()).count())
}

/// Save `latent` and `decoded` (as f32, on the CPU) as the outputs file (tensors
/// [`OUTPUT_LATENT`] and [`OUTPUT_DECODED`]), atomically; a pass the case did not run is
/// left out (an encode-only case has no `decoded`, a decode-only case no `latent` of its
/// own).
pub fn save_outputs(path: &Path, latent: Option<&Tensor>, decoded: Option<&Tensor>) -> anyhow::Result<()> {
    let cpu = |t: &Tensor| -> anyhow::Result<Tensor> { Ok(t.to_dtype(DType::F32)?.to_device(&Device::Cpu)?) };
    let mut tensors = std::collections::HashMap::new();
    for (name, t) in [(OUTPUT_LATENT, latent), (OUTPUT_DECODED, decoded)] {
        if let Some(t) = t {
            tensors.insert(name.to_string(), cpu(t)?);
        }
    }
    crate::util::files::write_atomic_with(path, |tmp| {
        candle_core::safetensors::save(&tensors, tmp).with_context(|| format!("cannot write {}", tmp.display()))
    })
}
