//! The user's input file (`run --input`): read once by the parent, checked against the
//! model (its `z_dim` and compression come from the loaded config), and handed to the
//! workers as one f32 safetensors file that any engine can read ([`InputFile::save`]):
//! tensor [`LATENT`] (a normalized latent `[1,z,t,h,w]`) or [`VIDEO`] (`[1,3,T,H,W]` in
//! [-1, 1]).
//!
//! Accepted files: `.safetensors` (`--input-tensor` picks the tensor when there are
//! several), ComfyUI's `.latent` (a safetensors file with `latent_tensor`, as its
//! `SaveLatent` node writes), and `.npy`. ComfyUI keeps the VAE's raw latent (its `WanVAE.encode`
//! returns `mu`; the `Wan21` latent format normalizes only for the diffusion model), so a
//! `latent_tensor` is normalized here with the model's mean/std, `(mu - mean) / std`, which
//! is what our `decode` undoes: the same video ComfyUI's `VAEDecode` makes. Other latents
//! are taken as normalized (what `encode`, `validate`'s fixtures and diffusers' pipelines hold).
//!
//! Checked here, once, with errors naming the file and the tensor: the file is read with a
//! bound ([`crate::util::read`]: a regular file or a FIFO, at most 16 GiB); the shape's element
//! count must not overflow and must match the values; every value must be finite.
//!
//! Must not: run the model or spawn processes.
use std::path::Path;

use candle_core::{DType, Device, Tensor};

use crate::engine::protocol::{InputKind, WorkerInput};
use crate::model::Config;
use crate::report::InputRecord;
use crate::util::error::UserError;

/// Tensor name of a latent input in the file the workers get.
pub const LATENT: &str = "latent";
/// Tensor name of a video input in the file the workers get.
pub const VIDEO: &str = "video";
/// The tensor ComfyUI's `SaveLatent` writes.
pub const COMFYUI_TENSOR: &str = "latent_tensor";
/// The marker ComfyUI's `SaveLatent` writes; without it `LoadLatent` scales by 1/0.18215.
pub const COMFYUI_VERSION_MARKER: &str = "latent_format_version_0";

/// A checked input: the tensor (f32, 5-D, normalized when a latent), what the case
/// settings take from it, and its record for the report.
#[derive(Debug)]
pub struct InputFile {
    /// `[1,z,t,h,w]` normalized latent or `[1,3,T,H,W]` video, f32 on the CPU.
    pub tensor: Tensor,
    /// Whether it is a latent (else a video).
    pub is_latent: bool,
    /// Video frames the case has (a latent's `t` latent frames decode to `1 + 4(t-1)`).
    pub frames: usize,
    /// Video width in pixels.
    pub width: usize,
    /// Video height in pixels.
    pub height: usize,
    /// `run.input` of the report.
    pub record: InputRecord,
}

fn err(path: &Path, message: impl Into<String>) -> UserError {
    UserError::file(path, message.into())
}

/// Read `path` (picking `tensor` when given) and check it against `cfg`.
pub fn load(path: &Path, tensor: Option<&str>, cfg: &Config) -> Result<InputFile, UserError> {
    let bytes = crate::util::read::tensor_file(path, "input file")?;
    let sha256 = format!("{:x}", <sha2::Sha256 as sha2::Digest>::digest(&bytes));
    let is_npy = path.extension().and_then(|e| e.to_str()) == Some("npy") || bytes.starts_with(b"\x93NUMPY");
    let (name, shape, dtype, values, comfy) = if is_npy {
        if let Some(t) = tensor {
            return Err(err(
                path,
                format!("--input-tensor {t:?} given, but a .npy file holds one array"),
            ));
        }
        let (shape, dtype, values) = read_npy(path, &bytes)?;
        ("array".to_string(), shape, dtype, values, None)
    } else {
        read_safetensors(path, &bytes, tensor)?
    };
    let z = cfg.z_dim;
    let sc = cfg.spatial_compression();
    let check = Check {
        path,
        what: format!("tensor `{name}` {shape:?} ({dtype})"),
        valid: format!(
            "a latent [1,{z},t,h,w] or [{z},t,h,w] (this model's z_dim is {z}), or a video [1,3,T,H,W] in \
             [-1, 1] with H and W multiples of {sc}"
        ),
    };
    if element_count(path, &name, &shape)? != values.len() {
        let n = values.len();
        return Err(err(
            path,
            format!("{} holds {n} values, not the product of its shape", check.what),
        ));
    }
    check_finite(path, &check.what, &shape, &values)?;
    let dims5 = check.five_dims(&shape)?;
    let is_video = shape.len() == 5 && dims5[1] == 3 && z != 3 && comfy.is_none();
    let tensor = Tensor::from_vec(values, dims5.as_slice(), &Device::Cpu).map_err(|e| err(path, e.to_string()))?;
    let read = if is_video {
        check.video(tensor, &dims5, sc)?
    } else {
        check.latent(tensor, &dims5, cfg, comfy)?
    };
    Ok(InputFile {
        tensor: read.tensor,
        is_latent: !is_video,
        frames: read.frames,
        width: read.width,
        height: read.height,
        record: InputRecord {
            path: path.display().to_string(),
            tensor: name,
            shape,
            dtype,
            sha256,
            kind: if is_video { "video" } else { "latent" }.to_string(),
            normalization: read.normalization.to_string(),
        },
    })
}

/// The number of values a `shape` holds; an error naming the file, the tensor and the shape
/// when the product overflows (a damaged or hostile header).
fn element_count(path: &Path, name: &str, shape: &[usize]) -> Result<usize, UserError> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)).ok_or_else(|| {
        err(
            path,
            format!(
                "tensor `{name}` has shape {shape:?}, whose element count overflows (more values than \
                 memory can hold): the header is damaged or does not describe a tensor"
            ),
        )
    })
}

/// Every value must be finite (a NaN or an infinity would fail every case later): the error
/// names the first bad value, where it is, and how many there are.
fn check_finite(path: &Path, what: &str, shape: &[usize], values: &[f32]) -> Result<(), UserError> {
    let mut bad = values.iter().enumerate().filter(|(_, v)| !v.is_finite());
    let Some((first, value)) = bad.next() else {
        return Ok(());
    };
    let count = 1 + bad.count();
    // Row-major index of `first` in `shape`.
    let mut index = vec![0usize; shape.len()];
    let mut rest = first;
    for (i, &d) in shape.iter().enumerate().rev() {
        index[i] = rest % d.max(1);
        rest /= d.max(1);
    }
    Err(err(
        path,
        format!(
            "{what} holds values that are not finite: {value} at index {index:?} (the first; {count} of {} values \
             are NaN or infinite, as f32); the input must hold finite numbers",
            values.len()
        ),
    ))
}

/// The checks of one input tensor, with what its errors say: the file, the tensor
/// (`what`) and what would be valid.
struct Check<'a> {
    path: &'a Path,
    what: String,
    valid: String,
}

/// A checked tensor and the video it stands for.
struct Checked {
    tensor: Tensor,
    frames: usize,
    width: usize,
    height: usize,
    /// `video`, `normalized` or `comfyui` (the report's `run.input.normalization`).
    normalization: &'static str,
}

impl Check<'_> {
    fn fail(&self, problem: String) -> UserError {
        err(self.path, format!("{problem}; expected {}", self.valid))
    }

    /// The shape as 5 dimensions (a 4-D latent gets batch 1): batch 1, none empty.
    fn five_dims(&self, shape: &[usize]) -> Result<Vec<usize>, UserError> {
        let what = &self.what;
        let dims5: Vec<usize> = match shape.len() {
            4 => [&[1usize][..], shape].concat(),
            5 => shape.to_vec(),
            n => return Err(self.fail(format!("{what} has {n} dimensions"))),
        };
        if dims5[0] != 1 {
            let batch = format!("{what} has batch {}; expected batch 1: {}", dims5[0], self.valid);
            return Err(err(self.path, batch));
        }
        if dims5.contains(&0) {
            return Err(self.fail(format!("{what} has an empty dimension")));
        }
        Ok(dims5)
    }

    /// A video: height and width multiples of the spatial compression, values in [-1, 1].
    fn video(&self, tensor: Tensor, dims5: &[usize], sc: usize) -> Result<Checked, UserError> {
        let (t, h, w) = (dims5[2], dims5[3], dims5[4]);
        let what = &self.what;
        if h % sc != 0 || w % sc != 0 {
            return Err(self.fail(format!("{what}: a video's height and width must be multiples of {sc}")));
        }
        let (lo, hi) = min_max(&tensor).map_err(|e| err(self.path, e.to_string()))?;
        if lo < -1.0 - 1e-3 || hi > 1.0 + 1e-3 || lo.is_nan() || hi.is_nan() {
            return Err(self.fail(format!("{what} looks like a video but its values span [{lo}, {hi}]")));
        }
        Ok(Checked {
            tensor,
            frames: t,
            width: w,
            height: h,
            normalization: "video",
        })
    }

    /// A latent: the model's `z_dim` channels; a ComfyUI latent (`comfy` = its scale) is
    /// normalized with the model's mean/std.
    fn latent(&self, tensor: Tensor, dims5: &[usize], cfg: &Config, comfy: Option<f64>) -> Result<Checked, UserError> {
        let (c, t, h, w) = (dims5[1], dims5[2], dims5[3], dims5[4]);
        let z = cfg.z_dim;
        if c != z {
            return Err(self.fail(format!(
                "{} has {c} latent channels but this model's z_dim is {z}",
                self.what
            )));
        }
        let tensor = match comfy {
            Some(scale) => normalize_comfyui(&tensor, cfg, scale).map_err(|e| err(self.path, e.to_string()))?,
            None => tensor,
        };
        let sc = cfg.spatial_compression();
        Ok(Checked {
            tensor,
            frames: 1 + cfg.temporal_compression() * (t - 1),
            width: sc * w,
            height: sc * h,
            normalization: if comfy.is_some() { "comfyui" } else { "normalized" },
        })
    }
}

/// ComfyUI's raw latent (times `scale`, its `LoadLatent` rule) -> `(mu - mean) / std`.
fn normalize_comfyui(raw: &Tensor, cfg: &Config, scale: f64) -> candle_core::Result<Tensor> {
    let z = cfg.z_dim;
    let stat = |v: &[f32], fill: f32| -> candle_core::Result<Tensor> {
        let vals: Vec<f32> = (0..z).map(|i| v.get(i).copied().unwrap_or(fill)).collect();
        Tensor::from_vec(vals, (1, z, 1, 1, 1), &Device::Cpu)
    };
    let mean = stat(&cfg.latent_mean, 0.0)?;
    let std = stat(&cfg.latent_std, 1.0)?;
    (raw * scale)?.broadcast_sub(&mean)?.broadcast_div(&std)
}

fn min_max(t: &Tensor) -> candle_core::Result<(f32, f32)> {
    let flat = t.flatten_all()?;
    Ok((flat.min(0)?.to_scalar()?, flat.max(0)?.to_scalar()?))
}

type Read = (String, Vec<usize>, String, Vec<f32>, Option<f64>);

/// The chosen tensor of a safetensors file, as f32, with `Some(scale)` when it is a
/// ComfyUI latent (`latent_tensor`; scale 1, or 1/0.18215 without the version marker, as
/// ComfyUI's `LoadLatent` does).
fn read_safetensors(path: &Path, bytes: &[u8], tensor: Option<&str>) -> Result<Read, UserError> {
    let st = safetensors::SafeTensors::deserialize(bytes).map_err(|e| {
        err(
            path,
            format!("not a safetensors file ({e}); expected .safetensors, a ComfyUI .latent or .npy"),
        )
    })?;
    let mut names: Vec<String> = st.names().into_iter().map(String::from).collect();
    names.sort();
    let name = match tensor {
        Some(t) if names.iter().any(|n| n == t) => t.to_string(),
        Some(t) => {
            return Err(err(
                path,
                format!("has no tensor {t:?} (--input-tensor); it has: {}", names.join(", ")),
            ))
        }
        None if names.iter().any(|n| n == COMFYUI_TENSOR) => COMFYUI_TENSOR.to_string(),
        None => {
            let data: Vec<&String> = names.iter().filter(|n| n.as_str() != COMFYUI_VERSION_MARKER).collect();
            match data.as_slice() {
                [one] => one.to_string(),
                [] => return Err(err(path, "holds no tensor")),
                _ => {
                    return Err(err(
                        path,
                        format!(
                            "holds several tensors; pick one with --input-tensor: {}",
                            names.join(", ")
                        ),
                    ))
                }
            }
        }
    };
    let view = st.tensor(&name).map_err(|e| err(path, e.to_string()))?;
    let dtype = match view.dtype() {
        safetensors::Dtype::F32 => "f32",
        safetensors::Dtype::F16 => "f16",
        safetensors::Dtype::BF16 => "bf16",
        safetensors::Dtype::F64 => "f64",
        other => {
            return Err(err(
                path,
                format!("tensor `{name}` has dtype {other:?}; expected a float tensor (f32, f16, bf16 or f64)"),
            ))
        }
    };
    let shape = view.shape().to_vec();
    let t = candle_core::safetensors::Load::load(&view, &Device::Cpu).map_err(|e| err(path, e.to_string()))?;
    let values = t
        .to_dtype(DType::F32)
        .and_then(|t| t.flatten_all()?.to_vec1::<f32>())
        .map_err(|e| err(path, e.to_string()))?;
    let comfy = (name == COMFYUI_TENSOR).then(|| {
        if names.iter().any(|n| n == COMFYUI_VERSION_MARKER) {
            1.0
        } else {
            1.0 / 0.18215
        }
    });
    Ok((name, shape, dtype.to_string(), values, comfy))
}

/// A `.npy` array (C order, little- or big-endian f2/f4/f8) as f32.
fn read_npy(path: &Path, bytes: &[u8]) -> Result<(Vec<usize>, String, Vec<f32>), UserError> {
    let npy = npyz::NpyFile::new(bytes).map_err(|e| err(path, format!("not a valid .npy file: {e}")))?;
    if npy.order() != npyz::Order::C {
        return Err(err(
            path,
            "the array is in Fortran order; save it in C order (numpy's default)",
        ));
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    // Before reading: a header whose element count overflows would read the wrong amount.
    element_count(path, "array", &shape)?;
    let npyz::DType::Plain(ts) = npy.dtype() else {
        return Err(err(
            path,
            "the array has a structured dtype; expected a float array (f2, f4 or f8)",
        ));
    };
    let bad = |e: std::io::Error| err(path, format!("cannot read the array: {e}"));
    let (dtype, values) = match (ts.type_char(), ts.size_field()) {
        (npyz::TypeChar::Float, 4) => ("f32", npy.into_vec::<f32>().map_err(bad)?),
        (npyz::TypeChar::Float, 8) => (
            "f64",
            npy.into_vec::<f64>()
                .map_err(bad)?
                .into_iter()
                .map(|v| v as f32)
                .collect(),
        ),
        (npyz::TypeChar::Float, 2) => (
            "f16",
            npy.into_vec::<half::f16>()
                .map_err(bad)?
                .into_iter()
                .map(f32::from)
                .collect(),
        ),
        _ => {
            return Err(err(
                path,
                format!("the array has dtype {ts}; expected a float array (f2, f4 or f8)"),
            ))
        }
    };
    Ok((shape, dtype.to_string(), values))
}

impl InputFile {
    /// Write the checked tensor for the workers: f32 safetensors, tensor [`LATENT`] or
    /// [`VIDEO`], straight from its storage (no second copy in memory).
    pub fn save(&self, path: &Path) -> anyhow::Result<WorkerInput> {
        let name = if self.is_latent { LATENT } else { VIDEO };
        crate::engine::shared_files::save_f32(path, name, &self.tensor)?;
        Ok(WorkerInput {
            path: path.to_path_buf(),
            kind: if self.is_latent {
                InputKind::Latent
            } else {
                InputKind::Video
            },
        })
    }
}
