//! The files workers read besides their spec: what the parent writes once per run into the
//! scratch directory when an engine that reads files only (the Python worker) takes part,
//! so that every engine reads bit-identical inputs: the synthetic weights (as safetensors,
//! original key names) and one input clip per frames x size
//! ([`super::clip::structured_clip`], f32 tensor [`INPUT_VIDEO`]); and how the candle worker
//! reads those clips and its given input (`bench::user_input` writes the user's) back.
//!
//! Must not: run workers or decide which engines run.
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Context;
use candle_core::{Device, Tensor};

use super::protocol::{input_path, INPUT_VIDEO};
use crate::weights::WeightsSource;

/// Files written for the workers.
#[derive(Debug, Default)]
pub struct Shared {
    /// The synthetic weights file (`None` for a weights file: workers read it directly).
    pub weights_path: Option<PathBuf>,
    /// Folder of the input clips ([`input_path`] names each).
    pub inputs_dir: Option<PathBuf>,
}

/// Write the synthetic weights (when `weights` is synthetic) and the clip of every
/// `(frames, width, height)` of `sizes` (each once).
pub fn write_shared(
    scratch: &Path,
    weights: &WeightsSource,
    model: Option<crate::model::ModelKind>,
    sizes: impl IntoIterator<Item = (usize, usize, usize)>,
) -> anyhow::Result<Shared> {
    let weights_path = match weights {
        WeightsSource::Synthetic { seed } => {
            let path = scratch.join(format!("weights-synthetic-{seed}.safetensors"));
            let w = crate::weights::load_model(weights, model)?;
            crate::files::write_atomic_with(&path, |tmp| {
                candle_core::safetensors::save(&w.tensors, tmp)
                    .with_context(|| format!("cannot write {}", tmp.display()))
            })?;
            Some(path)
        }
        WeightsSource::File(_) => None,
    };
    let sizes: BTreeSet<(usize, usize, usize)> = sizes.into_iter().collect();
    for (f, w, h) in sizes {
        let clip = super::clip::structured_clip(f, w, h, &Device::Cpu)?;
        save_clip(&input_path(scratch, f, w, h), &clip)?;
    }
    Ok(Shared {
        weights_path,
        inputs_dir: Some(scratch.to_path_buf()),
    })
}

fn save_clip(path: &Path, clip: &Tensor) -> anyhow::Result<()> {
    let map = HashMap::from([(INPUT_VIDEO.to_string(), clip.clone())]);
    crate::files::write_atomic_with(path, |tmp| {
        candle_core::safetensors::save(&map, tmp).with_context(|| format!("cannot write {}", tmp.display()))
    })
}

/// Read an input clip written by [`write_shared`], checking its shape `[1, 3, F, H, W]`.
pub fn load_clip(path: &Path, frames: usize, width: usize, height: usize, device: &Device) -> anyhow::Result<Tensor> {
    let mut t = candle_core::safetensors::load(path, device)
        .with_context(|| format!("cannot read the input clip {}", path.display()))?;
    let video = t
        .remove(INPUT_VIDEO)
        .with_context(|| format!("{} has no tensor `{INPUT_VIDEO}`", path.display()))?;
    let want = [1, 3, frames, height, width];
    if video.dims() != want {
        anyhow::bail!(
            "input {}: `{INPUT_VIDEO}` has shape {:?}, the case needs {want:?}",
            path.display(),
            video.dims()
        );
    }
    Ok(video)
}

/// Read the tensor a worker was given: `latent` or `video`, as `bench::user_input` wrote it
/// (or a case's outputs file, whose `latent` is the same normalized f32 latent).
pub fn read_worker_input(path: &Path, name: &str, device: &Device) -> anyhow::Result<Tensor> {
    let tensors = candle_core::safetensors::load(path, device)
        .with_context(|| format!("cannot read the input {}", path.display()))?;
    tensors
        .get(name)
        .cloned()
        .with_context(|| format!("{} has no tensor `{name}`", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_are_written_once_per_size_and_read_back_bit_identical() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = [(5, 16, 8), (5, 16, 8)];
        let shared = write_shared(dir.path(), &WeightsSource::File("x.pth".into()), None, sizes).unwrap();
        assert_eq!(shared.weights_path, None);
        let path = input_path(dir.path(), 5, 16, 8);
        let back = load_clip(&path, 5, 16, 8, &Device::Cpu).unwrap();
        let want = super::super::clip::structured_clip(5, 16, 8, &Device::Cpu).unwrap();
        let diff = (back - want)
            .unwrap()
            .abs()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert_eq!(diff, 0.0);
        assert!(load_clip(&path, 5, 8, 8, &Device::Cpu)
            .unwrap_err()
            .to_string()
            .contains("shape"));
    }
}
