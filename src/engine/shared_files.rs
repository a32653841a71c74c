//! The files workers read besides their spec: what the parent writes once per run into the
//! scratch directory when an engine that reads files only (the Python worker) takes part,
//! so that every engine reads bit-identical inputs: the synthetic weights (as safetensors,
//! original key names) and one input clip per frames x size
//! ([`super::clip::structured_clip`], f32 tensor [`INPUT_VIDEO`]); and how the candle worker
//! reads those clips and its given input (`plan::user_input` writes the user's) back.
//!
//! Must not: run workers or decide which engines run.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use candle_core::{DType, Device, Tensor};

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
            let mut tensors: Vec<(&str, &Tensor)> = w.tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
            tensors.sort_by_key(|(k, _)| *k);
            save_f32_all(&path, &tensors)?;
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
    save_f32(path, INPUT_VIDEO, clip)
}

/// Write `tensor` as the one tensor `name` (dtype F32) of a safetensors file at `path`
/// (temp file + rename); see [`save_f32_all`].
pub fn save_f32(path: &Path, name: &str, tensor: &Tensor) -> anyhow::Result<()> {
    save_f32_all(path, &[(name, tensor)])
}

/// Write `tensors` (dtype F32, in the order given) as a safetensors file at `path` (temp
/// file + rename), straight from their storage: the header, then each one's values as
/// little-endian bytes, a buffer at a time. No second copy of the data is made (candle's
/// `safetensors::save` copies every tensor whole first, infallibly: a clip that fits in
/// memory once but not twice would abort the process, and Wan 2.2's synthetic weights,
/// 2.8 GB, took 7.8 s to write that way against 1.5 s to generate).
pub fn save_f32_all(path: &Path, tensors: &[(&str, &Tensor)]) -> anyhow::Result<()> {
    crate::util::files::write_atomic_with(path, |tmp| {
        write_f32(tmp, tensors).with_context(|| format!("cannot write {}", tmp.display()))
    })
}

fn write_f32(path: &Path, tensors: &[(&str, &Tensor)]) -> anyhow::Result<()> {
    use std::io::Write;
    // A tensor that is not f32, contiguous and on the CPU is made so first (a copy; the
    // parent's clips, inputs and synthetic weights are all f32 CPU tensors built from one Vec).
    let mut names = std::collections::HashSet::new();
    let mut owned: Vec<Option<Tensor>> = Vec::with_capacity(tensors.len());
    for (name, tensor) in tensors {
        if !names.insert(*name) {
            anyhow::bail!("tensor `{name}` is given twice: a safetensors file names each tensor once");
        }
        owned.push(
            if tensor.dtype() == DType::F32 && tensor.is_contiguous() && tensor.device().is_cpu() {
                None
            } else {
                Some(tensor.to_device(&Device::Cpu)?.to_dtype(DType::F32)?.contiguous()?)
            },
        );
    }
    let plain: Vec<(&str, &Tensor)> = tensors
        .iter()
        .zip(&owned)
        .map(|(&(name, t), o)| (name, o.as_ref().unwrap_or(t)))
        .collect();
    let mut header = serde_json::Map::new();
    let mut offset = 0u64;
    for (name, t) in &plain {
        let bytes = t.elem_count() as u64 * 4;
        header.insert(
            name.to_string(),
            serde_json::json!({ "dtype": "F32", "shape": t.dims(), "data_offsets": [offset, offset + bytes] }),
        );
        offset += bytes;
    }
    let mut header = serde_json::Value::Object(header).to_string();
    // The data starts 8-byte aligned: the header is padded with spaces (the format's rule).
    while !header.len().is_multiple_of(8) {
        header.push(' ');
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(&(header.len() as u64).to_le_bytes())?;
    out.write_all(header.as_bytes())?;
    let mut buf = Vec::with_capacity(WRITE_CHUNK * 4);
    for (name, t) in &plain {
        let (storage, layout) = t.storage_and_layout();
        let (candle_core::Storage::Cpu(candle_core::CpuStorage::F32(all)), Some((start, end))) =
            (&*storage, layout.contiguous_offsets())
        else {
            anyhow::bail!("tensor `{name}` is not a contiguous f32 tensor on the CPU");
        };
        for chunk in all[start..end].chunks(WRITE_CHUNK) {
            buf.clear();
            buf.extend(chunk.iter().flat_map(|v| v.to_le_bytes()));
            out.write_all(&buf)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Values converted to bytes per write in [`save_f32`].
const WRITE_CHUNK: usize = 1 << 16;

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

/// Read the tensor a worker was given: `latent` or `video`, as `plan::user_input` wrote it
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

    #[test]
    fn save_f32_writes_a_safetensors_file_candle_and_safetensors_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.safetensors");
        // 7 values: the header is padded so the data starts 8-byte aligned.
        let t = Tensor::new(&[1f32, -2.5, 3.0, f32::MIN_POSITIVE, 0.0, 1e30, -0.0], &Device::Cpu)
            .unwrap()
            .reshape((1, 7))
            .unwrap();
        save_f32(&path, "video", &t).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        assert_eq!((8 + n) % 8, 0);
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(st.tensor("video").unwrap().shape(), &[1, 7]);
        let back = read_worker_input(&path, "video", &Device::Cpu).unwrap();
        let (a, b): (Vec<f32>, Vec<f32>) = (
            t.flatten_all().unwrap().to_vec1().unwrap(),
            back.flatten_all().unwrap().to_vec1().unwrap(),
        );
        assert_eq!(
            a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        // A strided view and a bf16 tensor are written as their f32 values.
        let wide = Tensor::arange(0f32, 12.0, &Device::Cpu)
            .unwrap()
            .reshape((3, 4))
            .unwrap();
        save_f32(&path, "x", &wide.t().unwrap().to_dtype(DType::BF16).unwrap()).unwrap();
        let back = read_worker_input(&path, "x", &Device::Cpu).unwrap();
        assert_eq!(back.dims(), &[4, 3]);
        assert_eq!(back.to_vec2::<f32>().unwrap()[1], vec![1.0, 5.0, 9.0]);
        // Several tensors (the synthetic weights): each at its own offset, in the order given.
        let strided = wide.t().unwrap().to_dtype(DType::BF16).unwrap();
        save_f32_all(&path, &[("b", &t), ("s", &strided), ("a", &wide)]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(st.tensor("b").unwrap().data().len(), 7 * 4);
        assert_eq!(st.tensor("a").unwrap().shape(), &[3, 4]);
        let back = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
        assert_eq!(back["a"].to_vec2::<f32>().unwrap(), wide.to_vec2::<f32>().unwrap());
        assert_eq!(back["b"].to_vec2::<f32>().unwrap(), t.to_vec2::<f32>().unwrap());
        assert_eq!(back["s"].to_vec2::<f32>().unwrap()[1], vec![1.0, 5.0, 9.0]);
        let twice = save_f32_all(&path, &[("a", &t), ("a", &wide)]).unwrap_err();
        assert!(format!("{twice:#}").contains("tensor `a` is given twice"), "{twice:#}");
    }
}
