//! `inspect`: which model a checkpoint holds (Wan 2.1 or Wan 2.2, from its shapes), its
//! format, on-disk dtype(s), tensor and parameter counts and the inferred config; `--json`
//! adds every tensor's name, shape and dtype.
//!
//! Must not describe the architecture itself: the config line is `Config::summary`.
use serde::Serialize;

use crate::weights::Weights;

/// Arguments of `wan-vae-bench inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// Weights: `synthetic`, a `.safetensors`/`.pth` path, `hf://OWNER/REPO/FILE[@REV]` or a preset.
    #[arg(long, required_unless_present = "list_presets")]
    pub weights: Option<String>,
    /// Model of `synthetic` weights: wan2.1 (default) or wan2.2. With a file the model is
    /// read from it, and a different --model is an error.
    #[arg(long)]
    pub model: Option<crate::model::ModelKind>,
    /// Print one JSON object (with every tensor) instead of text.
    #[arg(long)]
    pub json: bool,
    /// List the weight presets (`--weights NAME`) and exit.
    #[arg(long)]
    pub list_presets: bool,
}

/// One tensor of the checkpoint.
#[derive(Debug, Serialize)]
pub struct TensorInfo {
    pub name: String,
    pub shape: Vec<usize>,
    pub dtype: String,
}

/// What `inspect --json` prints.
#[derive(Debug, Serialize)]
pub struct Inspection {
    /// The reference as given.
    pub weights: String,
    /// `wan2.1` or `wan2.2`, from the tensor shapes.
    pub model: crate::model::ModelKind,
    /// `safetensors`, `pth` or `synthetic`.
    pub format: String,
    /// Distinct on-disk dtypes.
    pub on_disk_dtypes: Vec<String>,
    pub tensor_count: usize,
    pub params: u64,
    pub dim: usize,
    /// Decoder base width (equal to `dim` in Wan 2.1).
    pub dec_dim: usize,
    pub z_dim: usize,
    /// Tensors in state-dict order.
    pub tensors: Vec<TensorInfo>,
}

pub fn inspection(reference: &str, w: &Weights) -> Inspection {
    let tensors = w
        .ordered()
        .into_iter()
        .map(|(name, t)| TensorInfo {
            name: name.to_string(),
            shape: t.dims().to_vec(),
            dtype: t.dtype().as_str().to_string(),
        })
        .collect::<Vec<_>>();
    Inspection {
        weights: reference.to_string(),
        model: w.config.kind(),
        format: w.format.clone(),
        on_disk_dtypes: w.on_disk_dtypes.iter().map(|d| d.as_str().to_string()).collect(),
        tensor_count: tensors.len(),
        params: w.params,
        dim: w.config.dim,
        dec_dim: w.config.dec_dim,
        z_dim: w.config.z_dim,
        tensors,
    }
}

pub fn command(args: InspectArgs) -> anyhow::Result<i32> {
    if args.list_presets {
        crate::out!("{}", crate::weights::source::list_presets());
        return Ok(0);
    }
    let reference = args.weights.expect("clap requires --weights");
    let resolved = crate::weights::source::resolve(&reference)?;
    let w = crate::weights::load_model(&resolved.source, args.model)?;
    let info = inspection(&reference, &w);
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(0);
    }
    crate::outln!("weights:        {}", info.weights);
    let m = &resolved.info;
    if let Some(repo) = &m.repo {
        let rev = m.revision.as_deref().unwrap_or("?");
        crate::outln!("hub:            {repo} / {} @ {rev}", m.file.as_deref().unwrap_or("?"));
    }
    if let Some(path) = &m.local_path {
        crate::outln!("file:           {path} ({} bytes)", m.file_size_bytes.unwrap_or(0));
        crate::outln!("sha256:         {}", m.sha256.as_deref().unwrap_or("?"));
    }
    crate::outln!("model:          {} [{}]", w.config.kind().title(), info.model);
    crate::outln!("format:         {}", info.format);
    crate::outln!("on-disk dtype:  {}", info.on_disk_dtypes.join(", "));
    crate::outln!("tensors:        {}", info.tensor_count);
    crate::outln!("parameters:     {} ({:.1} M)", info.params, info.params as f64 / 1e6);
    crate::outln!("config:         {}", w.config.summary());
    let enc: u64 = count(&info.tensors, "encoder.");
    let dec: u64 = count(&info.tensors, "decoder.");
    crate::outln!(
        "                encoder {:.1} M, decoder {:.1} M parameters",
        enc as f64 / 1e6,
        dec as f64 / 1e6
    );
    Ok(0)
}

fn count(tensors: &[TensorInfo], prefix: &str) -> u64 {
    tensors
        .iter()
        .filter(|t| t.name.starts_with(prefix))
        .map(|t| t.shape.iter().product::<usize>() as u64)
        .sum()
}
