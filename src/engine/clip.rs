//! The worker's input: a deterministic structured clip ([`structured_clip`], a function of
//! frames and size only, so every engine and every run gets the same video; whether the
//! parent, which makes it for the Python engines, has the memory for it: [`check_fits`]),
//! and the round-trip PSNR of its reconstruction ([`roundtrip_psnr`], meaningful with real
//! weights only).
//!
//! Must not: time anything or know about the report.
use anyhow::Context;
use candle_core::{Device, Tensor};

use crate::weights::WeightsSource;

/// The benchmark input and round-trip test clip, `[1,3,frames,height,width]` in [-1,1]: a
/// deterministic function of frames and size only (no RNG): smooth colour gradients that
/// drift over time, a disc moving left to right on a sine path and a square moving
/// diagonally, both with anti-aliased (1.5 px) edges. Structured like video, not noise.
pub fn structured_clip(frames: usize, width: usize, height: usize, device: &Device) -> anyhow::Result<Tensor> {
    let (wf, hf) = (width as f32, height as f32);
    let size = wf.min(hf);
    // Coverage of a shape edge at signed distance `d` (px, negative inside): 1 inside, 0 outside.
    let cover = |d: f32| (0.5 - d / 1.5).clamp(0.0, 1.0);
    // The parent makes this clip for the Python engines: a size too large for memory is an
    // error naming it, never an abort of the parent.
    let n = [3, frames, width, height]
        .into_iter()
        .try_fold(1usize, |a, b| a.checked_mul(b))
        .ok_or_else(|| {
            anyhow::anyhow!("the input clip of {frames} frames at {width}x{height} has too many elements")
        })?;
    let mut data: Vec<f32> = Vec::new();
    data.try_reserve_exact(n).map_err(|_| {
        anyhow::anyhow!(
            "{}: not enough memory; choose a smaller --size or --frames",
            cannot_allocate(frames, width, height)
        )
    })?;
    data.resize(n, 0.0);
    let plane = width * height;
    for t in 0..frames {
        let phase = t as f32 / frames.max(2) as f32;
        // Disc: radius a fifth of the smaller side, left to right, bobbing vertically.
        let (dr, dx, dy) = (
            0.2 * size,
            (0.2 + 0.6 * phase) * wf,
            (0.5 + 0.2 * (std::f32::consts::TAU * phase).sin()) * hf,
        );
        // Square: half-side an eighth of the smaller side, top-left to bottom-right.
        let (sh, sx, sy) = (0.125 * size, (0.75 - 0.5 * phase) * wf, (0.25 + 0.5 * phase) * hf);
        for y in 0..height {
            for x in 0..width {
                let (u, v) = ((x as f32 + 0.5) / wf, (y as f32 + 0.5) / hf);
                let (px, py) = (x as f32 + 0.5, y as f32 + 0.5);
                let disc = cover(((px - dx).powi(2) + (py - dy).powi(2)).sqrt() - dr);
                let square = cover((px - sx).abs().max((py - sy).abs()) - sh);
                let background = [
                    0.8 * (2.0 * u - 1.0) + 0.1 * phase,
                    0.6 * (2.0 * v - 1.0) * (1.0 - 0.3 * phase),
                    0.5 * (std::f32::consts::PI * (u + v + phase)).cos(),
                ];
                let disc_rgb = [0.9, 0.7, -0.6];
                let square_rgb = [-0.8, 0.2, 0.9];
                for c in 0..3 {
                    let mut val = background[c];
                    val += disc * (disc_rgb[c] - val);
                    val += square * (square_rgb[c] - val);
                    data[(c * frames + t) * plane + y * width + x] = val.clamp(-1.0, 1.0);
                }
            }
        }
    }
    Tensor::from_vec(data, (1, 3, frames, height, width), device).context("building the input clip")
}

/// Bytes of the f32 clip of `frames` at `width`x`height` ([`structured_clip`]), as f64 (no
/// overflow, however large).
pub fn clip_bytes(frames: usize, width: usize, height: usize) -> f64 {
    12.0 * frames as f64 * width as f64 * height as f64
}

/// `cannot allocate the input clip of F frames at WxH (G GiB of f32)`.
fn cannot_allocate(frames: usize, width: usize, height: usize) -> String {
    format!(
        "cannot allocate the input clip of {frames} frames at {width}x{height} ({:.1} GiB of f32)",
        clip_bytes(frames, width, height) / GIB
    )
}

const GIB: f64 = (1u64 << 30) as f64;

/// Refuse (exit 2) a clip no tensor can hold: 3 x frames x width x height f32 values whose
/// count or bytes overflow (`--frames 9223372036854775807`), checked for every engine with
/// the plan, before anything runs.
pub fn check_shape(frames: usize, width: usize, height: usize) -> Result<(), crate::util::error::UserError> {
    let bytes = [3, frames, width, height, 4]
        .into_iter()
        .try_fold(1usize, |a, b| a.checked_mul(b));
    if bytes.is_some_and(|b| b <= isize::MAX as usize) {
        return Ok(());
    }
    Err(crate::util::error::UserError::invalid(
        "frames and size",
        format!("{frames} frames at {width}x{height}"),
        format!(
            "a clip that can exist: this one would be {:.3e} bytes of f32, more than any tensor can hold; choose a \
             smaller --frames or --size",
            clip_bytes(frames, width, height)
        ),
    ))
}

/// Whether the parent can hold the clip of `frames` at `width`x`height` (it makes one, and
/// writes it, for the Python engines): checked up front against the memory the kernel says
/// is left ([`crate::util::memory::memory_headroom`]). A clip that is too large is an error naming
/// frames, size and GiB, never an allocation that the out-of-memory killer ends (with
/// overcommit an allocation larger than the free memory can succeed, and the process dies
/// when it touches it).
pub fn check_fits(frames: usize, width: usize, height: usize) -> Result<(), crate::util::error::UserError> {
    let Some((headroom, what)) = crate::util::memory::memory_headroom() else {
        return Ok(());
    };
    if clip_bytes(frames, width, height) <= headroom as f64 {
        return Ok(());
    }
    Err(crate::util::error::UserError::Other(format!(
        "{}: more than the {:.1} GiB {what}; choose a smaller --size or --frames",
        cannot_allocate(frames, width, height),
        headroom as f64 / GIB
    )))
}

/// Whether the round-trip PSNR means anything: real weights only (random synthetic weights
/// reconstruct nothing).
pub fn roundtrip_applies(weights: &WeightsSource) -> bool {
    !matches!(weights, WeightsSource::Synthetic { .. })
}

/// PSNR (dB, [-1,1] range) of `clamp(decoded, -1, 1)` against the frames of `clip` the model
/// used (`1+4k`); `None` when identical.
pub fn roundtrip_psnr(clip: &Tensor, decoded: &Tensor) -> anyhow::Result<Option<f64>> {
    let used = decoded.dim(2)?;
    let clip: Vec<f32> = clip
        .narrow(2, 0, used)?
        .flatten_all()?
        .to_dtype(candle_core::DType::F32)?
        .to_vec1()?;
    let out: Vec<f32> = decoded
        .clamp(-1f32, 1f32)?
        .flatten_all()?
        .to_dtype(candle_core::DType::F32)?
        .to_vec1()?;
    if clip.len() != out.len() {
        anyhow::bail!(
            "decoded video {:?} does not match the clip's {} values",
            decoded.dims(),
            clip.len()
        );
    }
    Ok(crate::report::quality::psnr_db(&clip, &out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn video_is_deterministic_and_bounded() {
        let a = structured_clip(5, 16, 8, &Device::Cpu).unwrap();
        let b = structured_clip(5, 16, 8, &Device::Cpu).unwrap();
        assert_eq!(a.dims(), &[1, 3, 5, 8, 16]);
        let va: Vec<f32> = a.flatten_all().unwrap().to_vec1().unwrap();
        let vb: Vec<f32> = b.flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(va, vb);
        assert!(va.iter().all(|v| (-1.0..=1.0).contains(v)));
        // Structured, not flat: a real spread of values, and the frames differ (motion).
        let (lo, hi) = va.iter().fold((1f32, -1f32), |(l, h), &v| (l.min(v), h.max(v)));
        assert!(hi - lo > 1.0, "{lo}..{hi}");
        let plane = 16 * 8;
        assert_ne!(va[..plane], va[plane..2 * plane]);
    }

    #[test]
    fn roundtrip_only_with_real_weights() {
        assert!(!roundtrip_applies(&WeightsSource::Synthetic { seed: 0 }));
        assert!(roundtrip_applies(&WeightsSource::File(
            "/models/Wan2.1_VAE.safetensors".into()
        )));
    }

    #[test]
    fn roundtrip_psnr_clamps_and_uses_the_decoded_frames() {
        let clip = structured_clip(6, 8, 8, &Device::Cpu).unwrap();
        // Decoded has 5 frames (1+4k): the 6th clip frame is ignored; identical -> None.
        let same = clip.narrow(2, 0, 5).unwrap();
        assert_eq!(roundtrip_psnr(&clip, &same).unwrap(), None);
        // Values past the range are clamped back before comparing.
        let edge = Tensor::new(&[1f32, -1.0, 0.5], &Device::Cpu)
            .unwrap()
            .reshape((1, 3, 1, 1, 1))
            .unwrap();
        let over = Tensor::new(&[1.5f32, -3.0, 0.5], &Device::Cpu)
            .unwrap()
            .reshape((1, 3, 1, 1, 1))
            .unwrap();
        assert_eq!(roundtrip_psnr(&edge, &over).unwrap(), None);
        // Off by 0.02 everywhere: 40 dB.
        let off = (same + 0.02).unwrap().clamp(-0.98f32, 0.98f32).unwrap();
        let p = roundtrip_psnr(&clip, &off).unwrap().unwrap();
        assert!(p > 35.0 && p < 45.0, "{p}");
    }
}
