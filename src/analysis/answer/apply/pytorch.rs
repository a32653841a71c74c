//! The advice for a `torch` or `diffusers` case, in PyTorch code: the dtype as the case ran
//! it (its `compute_dtype` says cast or autocast), spatial tiling (diffusers: the
//! `enable_tiling` keywords each pass ran with, recorded by the engine; torch: the same rule,
//! in the encoder's units for Wan 2.2), temporal tiling and chunk (which no library offers
//! for these engines: where the code change goes), and the `torch.backends` knobs.
//!
//! Must not: read run-wide flags: a case's own record says what ran.
use super::Measured;
use crate::engine::ApplyAs;
use crate::report::values::Switch;

/// The steps of a PyTorch engine's case.
pub(super) fn apply(m: &Measured, how: ApplyAs, steps: &mut Vec<String>) {
    let diffusers = how == ApplyAs::Diffusers;
    if let Some(step) = dtype(m, diffusers) {
        steps.push(step);
    }
    if m.settings.tiling.is_some() {
        steps.extend(spatial(m, diffusers));
    }
    if let Some(t) = m.settings.temporal_tile.filter(|_| m.settings.passes.decodes()) {
        let (size, overlap) = (t.tile_frames, t.overlap_frames);
        steps.push(if diffusers {
            format!(
                "temporal tiles of {size} frames overlapping {overlap}: diffusers' AutoencoderKLWan has no temporal \
                 tiling (this tool's wrapper split the latent in time around its decode, as ComfyUI's \
                 VAEDecodeTiled temporal_size {size} / temporal_overlap {overlap} does, and blended the windows); \
                 no library gives this with diffusers' spatial tiling: it is a code change, a loop over latent \
                 windows around vae.decode (this tool's: temporal_tiled_decode in src/engine/python/wan_common.py)"
            )
        } else {
            format!(
                "temporal tiles of {size} frames overlapping {overlap}, blended as ComfyUI's VAEDecodeTiled \
                 (temporal_size {size} / temporal_overlap {overlap}) does: the official Wan code and diffusers have \
                 no temporal tiling, so outside ComfyUI it is a code change, a loop over latent windows around the \
                 decode (this tool's: temporal_tiled_decode in src/engine/python/wan_common.py)"
            )
        });
    }
    if m.settings.chunk != 1 {
        steps.push(chunk(m));
    }
    knobs(m, steps);
}

/// The 16-bit dtype as the case ran it: model cast, or autocast over fp32 weights (read from
/// its `compute_dtype`); `None` for fp32.
fn dtype(m: &Measured, diffusers: bool) -> Option<String> {
    let dtype = match m.settings.precision.name() {
        "bf16" => "torch.bfloat16",
        "fp16" => "torch.float16",
        _ => return None,
    };
    let recorded = m.case.outcome.compute_dtype.as_deref().unwrap_or("");
    Some(match (recorded.contains("autocast"), diffusers) {
        (true, false) => format!(
            "keep the VAE's fp32 weights and run encode/decode under torch.autocast(device_type, dtype={dtype}) \
             (the official Wan wrapper's way: WanVAE(dtype={dtype}))"
        ),
        (true, true) => format!(
            "keep AutoencoderKLWan in fp32 (no torch_dtype) and call it under torch.autocast(device_type, \
             dtype={dtype})"
        ),
        (false, false) => {
            format!("cast the VAE and its input to {dtype} (vae.to({dtype}); x.to({dtype})), without autocast")
        }
        (false, true) => format!(
            "load AutoencoderKLWan with torch_dtype={dtype} (or vae.to({dtype})), as diffusers pipelines do, \
             without autocast"
        ),
    })
}

/// diffusers' `enable_tiling` keywords for `pass`: as the engine recorded them (null: the
/// frame fit one tile, tiling off), else by the engine's rule (Wan 2.2's encoder tiles the
/// patchified video: half the pixels).
fn tiling_call(m: &Measured, pass: &str) -> Option<String> {
    if let Some(rec) = m.engine_case("enable_tiling").and_then(|t| t.get(pass)) {
        let kw = rec.as_object()?;
        let args: Vec<String> = kw.iter().map(|(k, v)| format!("{k}={v}")).collect();
        return Some(format!("vae.enable_tiling({})", args.join(", ")));
    }
    let t = m.settings.tiling?;
    let div = if m.wan22 && pass == "encode" { 2 } else { 1 };
    let (tile, stride) = (t.tile_px / div, (t.tile_px - t.overlap_px) / div);
    Some(format!(
        "vae.enable_tiling(tile_sample_min_height={tile}, tile_sample_min_width={tile}, \
         tile_sample_stride_height={stride}, tile_sample_stride_width={stride})"
    ))
}

/// The spatial tiling steps of the passes the case timed.
fn spatial(m: &Measured, diffusers: bool) -> Vec<String> {
    let calls: Vec<(&str, Option<String>)> = m.passes().into_iter().map(|p| (p, tiling_call(m, p))).collect();
    let t = m.settings.tiling.expect("called for tiled cases");
    let halved = m.wan22 && calls.iter().any(|(p, _)| *p == "encode");
    let why = if halved {
        " (Wan 2.2's encoder tiles the patchified video: its sizes are half the decoder's)"
    } else {
        ""
    };
    let same = calls.windows(2).all(|w| w[0].1 == w[1].1);
    let mut out = Vec::new();
    if diffusers {
        if same {
            match &calls[0].1 {
                Some(c) => out.push(format!("{c}{why}")),
                None => out.push("vae.disable_tiling(): the frame fits one tile".into()),
            }
        } else {
            for (pass, call) in &calls {
                out.push(match call {
                    Some(c) => format!("before {pass}: {c}{why}"),
                    None => format!("before {pass}: vae.disable_tiling() (the frame fits one tile)"),
                });
            }
        }
        return out;
    }
    let per_pass: Vec<String> = calls
        .iter()
        .filter_map(|(p, c)| c.as_ref().map(|c| format!("{p}: {c}")))
        .collect();
    out.push(format!(
        "spatial tiles of {} px overlapping {} px, blended linearly as diffusers' AutoencoderKLWan does: with \
         diffusers, {}{why}; the official Wan code has no spatial tiling (a code change)",
        t.tile_px,
        t.overlap_px,
        per_pass.join("; ")
    ));
    out
}

/// The chunk: what it changes in the passes the case timed, and where the code change goes
/// (no library exposes it).
fn chunk(m: &Measured) -> String {
    let n = m.settings.chunk;
    let p = m.settings.passes;
    let what = match (p.encodes(), p.decodes()) {
        (true, true) => format!(
            "the decoder runs on {n} latent frames per call and the encoder on {} video frames per call after the \
             first (the official code: 1 and 4)",
            4 * n
        ),
        (true, false) => format!(
            "the encoder runs on {} video frames per call after the first (the official code: 4)",
            4 * n
        ),
        _ => format!("the decoder runs on {n} latent frames per call (the official code: 1)"),
    };
    let (mut loops, mut diffusers) = (Vec::new(), Vec::new());
    if p.encodes() {
        loops.push(format!(
            "WanVAE_.encode's loop over x[:, :, 1+4*(i-1):1+4*i] (step {})",
            4 * n
        ));
        diffusers.push("_encode");
    }
    if p.decodes() {
        loops.push(format!("WanVAE_.decode's loop over z[:, :, i:i+1] (step {n})"));
        diffusers.push("_decode");
    }
    let libraries = if p.decodes() {
        "diffusers runs one latent frame per decoder call, ComfyUI picks its own split"
    } else {
        "diffusers runs 4 video frames per encoder call after the first, ComfyUI picks its own split"
    };
    format!(
        "chunk {n}: {what}. No library exposes it ({libraries}, the official code has no parameter): it is a code \
         change, in the official Wan VAE code (wan/modules/vae.py, vae2_2.py): {} (diffusers: the same loop in \
         AutoencoderKLWan.{})",
        loops.join(" and "),
        diffusers.join(" and ")
    )
}

/// The `torch.backends` knobs the case set (not left to the engine, `auto`), as Python
/// statements; `on` is named too, since an engine may turn cuDNN off at start-up.
fn knobs(m: &Measured, steps: &mut Vec<String>) {
    let k = &m.settings.knobs;
    match k.cudnn {
        Switch::Off => steps.push("torch.backends.cudnn.enabled = False (MIOpen off on ROCm)".into()),
        Switch::On => steps.push("torch.backends.cudnn.enabled = True (MIOpen on ROCm), after start-up".into()),
        Switch::Auto | Switch::NotApplicable => {}
    }
    if k.cudnn_benchmark == Switch::On {
        steps.push("torch.backends.cudnn.benchmark = True".into());
    }
    if matches!(k.tf32, Switch::On | Switch::Off) {
        let (v, legacy) = if k.tf32 == Switch::On {
            ("tf32", "True")
        } else {
            ("ieee", "False")
        };
        steps.push(format!(
            "torch.backends.cudnn.conv.fp32_precision = \"{v}\"; torch.backends.cuda.matmul.fp32_precision = \"{v}\" \
             (torch < 2.9: torch.backends.cudnn.allow_tf32 = {legacy}; torch.backends.cuda.matmul.allow_tf32 = {legacy})"
        ));
    }
}
