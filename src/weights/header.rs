//! Checking a checkpoint without loading it: the `.safetensors` header (and that the file
//! is as long as the header says) or the `.pth` tensor index, then the same key, shape and
//! dtype checks as the loader ([`super::check_layout`]). `run` calls it once in the parent
//! before any case, so a bad file is one error (exit 2), not a failure in every worker.
//!
//! Must not: read tensor data.
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use candle_core::DType;

use super::{check_layout, checked_format, Checked, Declared};
use crate::util::error::UserError;

/// Largest safetensors header we read (the format's own limit is 100 MB).
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// A checked checkpoint header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// `safetensors` or `pth`.
    pub format: String,
    pub checked: Checked,
}

/// Read `path`'s header and check it as the loader would; errors are the loader's.
pub fn check_file(path: &Path) -> Result<Header, UserError> {
    let (format, declared) = declared(path)?;
    Ok(Header {
        format: format.to_string(),
        checked: check_layout(&declared, path)?,
    })
}

/// The format (`safetensors` or `pth`) and what the file declares for each tensor, read
/// from its header or index alone.
pub fn declared(path: &Path) -> Result<(&'static str, HashMap<String, Declared>), UserError> {
    let (format, len) = checked_format(path)?;
    let declared = match format {
        "safetensors" => safetensors_header(path, len)?,
        _ => pth_index(path)?,
    };
    if declared.is_empty() {
        return Err(UserError::file(path, "the file holds no tensors"));
    }
    Ok((format, declared))
}

fn safetensors_header(path: &Path, file_len: u64) -> Result<HashMap<String, Declared>, UserError> {
    let bad = |why: String| UserError::file(path, format!("cannot read as safetensors: {why}"));
    let mut f = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len).map_err(|e| bad(format!("no header ({e})")))?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER_BYTES || n + 8 > file_len {
        return Err(bad(format!(
            "header length {n} does not fit the file ({file_len} bytes)"
        )));
    }
    let mut text = vec![0u8; n as usize];
    f.read_exact(&mut text).map_err(|e| bad(e.to_string()))?;
    // The safetensors crate checks the offsets (contiguous, sizes matching shapes).
    let metadata: safetensors::tensor::Metadata =
        serde_json::from_slice(&text).map_err(|e| bad(format!("invalid header: {e}")))?;
    let data_end = 8 + n + metadata.data_len() as u64;
    if data_end != file_len {
        return Err(bad(format!(
            "the header describes {data_end} bytes but the file has {file_len} (truncated or padded)"
        )));
    }
    Ok(metadata
        .tensors()
        .into_iter()
        .map(|(name, info)| (name, (info.shape.clone(), dtype(info.dtype))))
        .collect())
}

fn dtype(d: safetensors::Dtype) -> Option<DType> {
    use safetensors::Dtype as S;
    Some(match d {
        S::F32 => DType::F32,
        S::F16 => DType::F16,
        S::BF16 => DType::BF16,
        S::F64 => DType::F64,
        S::U8 => DType::U8,
        S::U32 => DType::U32,
        S::I64 => DType::I64,
        _ => return None,
    })
}

fn pth_index(path: &Path) -> Result<HashMap<String, Declared>, UserError> {
    let unreadable = |e: candle_core::Error| {
        UserError::file(
            path,
            format!("cannot read as a PyTorch (.pth zip pickle) checkpoint: {e}"),
        )
    };
    // Nothing but tensors (what the torch engines accept), refused here once, naming the key.
    super::pth::check_only_tensors(path)?;
    // Same fallbacks as the loader: a state dict at the top, or under `state_dict` / `model`.
    let mut infos = candle_core::pickle::read_pth_tensor_info(path, false, None).map_err(unreadable)?;
    for key in ["state_dict", "model"] {
        if !infos.is_empty() {
            break;
        }
        infos = candle_core::pickle::read_pth_tensor_info(path, false, Some(key)).unwrap_or_default();
    }
    Ok(infos
        .into_iter()
        .map(|t| (t.name, (t.layout.shape().dims().to_vec(), Some(t.dtype))))
        .collect())
}
