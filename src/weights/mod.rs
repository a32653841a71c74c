//! Model weights: the checkpoint layout, loading `.safetensors` / `.pth`, synthetic weights.
use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{DType, Tensor};

use crate::model::VaeConfig;

pub mod layout;
pub mod source;

/// Where weights come from once a reference is resolved to something local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WeightsSource {
    /// Built-in synthetic weights of the real layout (dim 96, z 16), from a seed.
    Synthetic { seed: u64 },
    /// A local `.safetensors` or `.pth` file.
    File(PathBuf),
}

/// A checkpoint held in memory (on the CPU, in its on-disk dtype).
pub struct Weights {
    pub tensors: HashMap<String, Tensor>,
    pub config: VaeConfig,
    /// `safetensors`, `pth` or `synthetic`.
    pub format: String,
    /// Distinct on-disk dtypes.
    pub on_disk_dtypes: Vec<DType>,
    pub params: u64,
}

/// Load and validate weights (every expected key present with its shape, no extras).
pub fn load(_source: &WeightsSource) -> anyhow::Result<Weights> {
    anyhow::bail!("weights: not implemented yet")
}
