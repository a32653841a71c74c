//! Model weights: the checkpoint layout, loading `.safetensors` / `.pth`, synthetic weights.
//!
//! Which model a checkpoint holds (Wan 2.1 or Wan 2.2) and its widths are inferred from
//! tensor shapes; the result is then checked against the layout of that config: a missing
//! or extra key, or a wrong shape, is an error naming the file and the key. `--model` only
//! chooses the architecture of synthetic weights; with a file it must agree with the file.
//!
//! A `.pth` must hold nothing but tensors ([`pth`]): the torch engines refuse anything
//! else, so it is refused here too, once, naming the key.
//!
//! Owns turning a source into checked tensors in memory, and the `VarBuilder` over them
//! that the model is built from; must not build the model nor know its layers beyond the
//! layout (the model must not import this module either).
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;

use crate::model::{Config, ModelKind, Precision};
use crate::util::error::UserError;

pub mod header;
pub mod layout;
pub mod pth;
pub mod source;
pub mod synthetic;

/// Where weights come from once a reference is resolved to something local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WeightsSource {
    /// Built-in synthetic weights of a real layout (the model comes from `--model`, Wan 2.1
    /// by default), from a seed.
    Synthetic { seed: u64 },
    /// A local `.safetensors` or `.pth` file.
    File(PathBuf),
}

/// A checkpoint held in memory (on the CPU, in its on-disk dtype).
pub struct Weights {
    pub tensors: HashMap<String, Tensor>,
    pub config: Config,
    /// `safetensors`, `pth` or `synthetic`.
    pub format: String,
    /// Distinct on-disk dtypes, sorted.
    pub on_disk_dtypes: Vec<DType>,
    pub params: u64,
}

impl Weights {
    /// On-disk dtype(s) as text: `f32`, or several joined by `+`.
    pub fn dtype_summary(&self) -> String {
        self.on_disk_dtypes
            .iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join("+")
    }

    /// A `VarBuilder` over these tensors that converts each to `precision` on `device` as
    /// the model asks for it (the caller's half of `WanVae::new(cfg, vb, ..)`).
    pub fn var_builder(&self, precision: Precision, device: &Device) -> VarBuilder<'static> {
        VarBuilder::from_tensors(self.tensors.clone(), precision.dtype(), device)
    }

    /// Tensors in state-dict order (the layout's order).
    pub fn ordered(&self) -> Vec<(&str, &Tensor)> {
        layout::expected_tensors(&self.config)
            .into_iter()
            .filter_map(|s| self.tensors.get_key_value(&s.name).map(|(k, t)| (k.as_str(), t)))
            .collect()
    }

    /// Check the tensors against the layout of the inferred config and build `Weights`.
    pub fn from_tensors(tensors: HashMap<String, Tensor>, format: &str, origin: &Path) -> Result<Weights, UserError> {
        let declared: HashMap<String, Declared> = tensors
            .iter()
            .map(|(k, t)| (k.clone(), (t.dims().to_vec(), Some(t.dtype()))))
            .collect();
        let checked = check_layout(&declared, origin)?;
        Ok(Weights {
            params: checked.params,
            tensors,
            config: checked.config,
            format: format.to_string(),
            on_disk_dtypes: checked.on_disk_dtypes,
        })
    }
}

/// What a checkpoint declares for one tensor: its shape and dtype (`None`: a dtype candle
/// has no name for).
pub type Declared = (Vec<usize>, Option<DType>);

/// What [`check_layout`] learned from a checkpoint's declarations.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub config: Config,
    /// Distinct on-disk dtypes, sorted.
    pub on_disk_dtypes: Vec<DType>,
    pub params: u64,
}

/// Check declared tensors against the layout of the inferred config: every expected key
/// present with its shape, no extras, float dtypes. The loader and the header check
/// ([`header::check_file`], which reads no tensor data) share it, so both fail alike.
pub fn check_layout(tensors: &HashMap<String, Declared>, origin: &Path) -> Result<Checked, UserError> {
    let config =
        layout::infer_config(|k| tensors.get(k).map(|t| t.0.clone())).map_err(|m| UserError::file(origin, m))?;
    let expected = layout::expected_tensors(&config);
    let mut problems = Vec::new();
    for spec in &expected {
        match tensors.get(&spec.name) {
            None => problems.push(format!("missing key {} (expected shape {:?})", spec.name, spec.shape)),
            Some((dims, _)) if dims != &spec.shape => problems.push(format!(
                "key {} has shape {:?}, expected {:?}",
                spec.name, dims, spec.shape
            )),
            Some(_) => {}
        }
    }
    let title = config.kind().title();
    let known: std::collections::HashSet<&str> = expected.iter().map(|s| s.name.as_str()).collect();
    let mut extra: Vec<&String> = tensors.keys().filter(|k| !known.contains(k.as_str())).collect();
    extra.sort();
    problems.extend(
        extra
            .iter()
            .map(|k| format!("unexpected key {k} (not part of the {title})")),
    );
    let mut names: Vec<&String> = tensors.keys().collect();
    names.sort();
    for name in names {
        let dtype = tensors[name].1;
        if !matches!(dtype, Some(DType::F32 | DType::F16 | DType::BF16 | DType::F64)) {
            let shown = dtype.map_or("an unsupported type".to_string(), |d| format!("{d:?}"));
            problems.push(format!(
                "key {name} has dtype {shown}, expected a float type (f32, f16, bf16)"
            ));
        }
    }
    if !problems.is_empty() {
        let n = problems.len();
        let shown: Vec<String> = problems.into_iter().take(12).collect();
        let more = if n > shown.len() {
            format!("\n  ... and {} more", n - shown.len())
        } else {
            String::new()
        };
        return Err(UserError::file(
            origin,
            format!(
                "not a {title} checkpoint for {} ({n} problem(s)):\n  {}{more}",
                widths(&config),
                shown.join("\n  ")
            ),
        ));
    }
    let mut on_disk_dtypes: Vec<DType> = tensors.values().filter_map(|t| t.1).collect();
    on_disk_dtypes.sort_by_key(|d| d.as_str());
    on_disk_dtypes.dedup();
    Ok(Checked {
        params: layout::param_count(&expected),
        config,
        on_disk_dtypes,
    })
}

/// `dim=.. z_dim=..` (and `dec_dim` where it differs), for messages.
fn widths(c: &Config) -> String {
    match c.dec_dim == c.dim {
        true => format!("dim={} z_dim={}", c.dim, c.z_dim),
        false => format!("dim={} dec_dim={} z_dim={}", c.dim, c.dec_dim, c.z_dim),
    }
}

/// Load and validate weights (every expected key present with its shape, no extras);
/// synthetic weights are Wan 2.1's. See [`load_model`] for `--model`.
pub fn load(source: &WeightsSource) -> anyhow::Result<Weights> {
    load_model(source, None)
}

/// [`load`] with the user's `--model`: it picks the architecture of synthetic weights
/// (Wan 2.1 when `None`), and a file holding the other model is an error saying which
/// model the file holds.
pub fn load_model(source: &WeightsSource, model: Option<ModelKind>) -> anyhow::Result<Weights> {
    match source {
        WeightsSource::Synthetic { seed } => Ok(synthetic::build(&model.unwrap_or(ModelKind::Wan21).config(), *seed)?),
        WeightsSource::File(path) => {
            if let Some(m) = model {
                // Shapes only: a mismatch is reported before reading gigabytes.
                check_model(path, &peek_config(path)?, m)?;
            }
            Ok(load_file(path)?)
        }
    }
}

/// The model of `source` under `--model`: synthetic weights take `model` (Wan 2.1 when
/// `None`); a file's is read from its tensor shapes only (no tensor data is read) and must
/// agree with `model` when one is given. The config has the file's widths.
pub fn resolve_config(source: &WeightsSource, model: Option<ModelKind>) -> Result<Config, UserError> {
    match source {
        WeightsSource::Synthetic { .. } => Ok(model.unwrap_or(ModelKind::Wan21).config()),
        WeightsSource::File(path) => {
            let cfg = peek_config(path)?;
            if let Some(m) = model {
                check_model(path, &cfg, m)?;
            }
            Ok(cfg)
        }
    }
}

/// `--model` must agree with the file: the error names the model the file holds.
fn check_model(path: &Path, held: &Config, asked: ModelKind) -> Result<(), UserError> {
    let kind = held.kind();
    if kind == asked {
        return Ok(());
    }
    Err(UserError::file(
        path,
        format!(
            "holds the {} ({}), not the {} that --model {asked} asks for; \
             drop --model (it is only needed for synthetic weights) or pass --model {kind}",
            kind.title(),
            widths(held),
            asked.title()
        ),
    ))
}

/// The config of a checkpoint file, inferred from the shapes in its header (safetensors)
/// or pickle index (pth) without reading tensor data.
pub fn peek_config(path: &Path) -> Result<Config, UserError> {
    let (_, declared) = header::declared(path)?;
    layout::infer_config(|k| declared.get(k).map(|d| d.0.clone())).map_err(|m| UserError::file(path, m))
}

/// Load a `.safetensors` or `.pth` file (format by extension, else by content).
pub fn load_file(path: &Path) -> Result<Weights, UserError> {
    let (format, _) = checked_format(path)?;
    let tensors: HashMap<String, Tensor> = match format {
        "safetensors" => candle_core::safetensors::load(path, &Device::Cpu)
            .map_err(|e| UserError::file(path, format!("cannot read as safetensors: {e}")))?,
        _ => read_pth(path)?,
    };
    if tensors.is_empty() {
        return Err(UserError::file(path, "the file holds no tensors"));
    }
    Weights::from_tensors(tensors, format, path)
}

/// `path` is a regular file: its format ([`detect_format`]) and its length in bytes.
pub(crate) fn checked_format(path: &Path) -> Result<(&'static str, u64), UserError> {
    let meta = std::fs::metadata(path).map_err(|e| UserError::file(path, format!("cannot read weights file: {e}")))?;
    if !meta.is_file() {
        return Err(UserError::file(
            path,
            "not a file (expected a .safetensors or .pth checkpoint)",
        ));
    }
    Ok((detect_format(path)?, meta.len()))
}

/// `pth` for a zip archive (torch.save), `safetensors` otherwise; the extension decides
/// when it is one of the two.
fn detect_format(path: &Path) -> Result<&'static str, UserError> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("safetensors") => return Ok("safetensors"),
        Some("pth") | Some("pt") | Some("bin") | Some("ckpt") => return Ok("pth"),
        _ => {}
    }
    let mut magic = [0u8; 4];
    use std::io::Read;
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| UserError::file(path, format!("cannot read weights file: {e}")))?;
    Ok(if &magic[..2] == b"PK" { "pth" } else { "safetensors" })
}

/// A torch zip-pickle state dict; also accepts one nested under `state_dict` / `model`.
fn read_pth(path: &Path) -> Result<HashMap<String, Tensor>, UserError> {
    let unreadable = |e: candle_core::Error| {
        UserError::file(
            path,
            format!("cannot read as a PyTorch (.pth zip pickle) checkpoint: {e}"),
        )
    };
    pth::check_only_tensors(path)?;
    let mut entries = candle_core::pickle::read_all(path).map_err(unreadable)?;
    for key in ["state_dict", "model"] {
        if !entries.is_empty() {
            break;
        }
        entries = candle_core::pickle::read_all_with_key(path, Some(key)).unwrap_or_default();
    }
    Ok(entries.into_iter().collect())
}
