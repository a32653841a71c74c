"""Weights for the PyTorch engines: a state dict with the original Wan key names from a
`.safetensors` file (also the synthetic weights the Rust parent writes once into the run's
scratch directory, so every engine gets bit-identical values) or a `.pth` (torch.load with
weights_only, possibly nested under `state_dict` / `model`), plus the facts the report
records (format, on-disk dtypes, parameter count) and which model the shapes describe.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict

import torch

DTYPE_NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64"}


class WeightsError(ValueError):
    """Unusable weights file: the message names the file and what would be valid."""


@dataclass
class Loaded:
    state_dict: Dict[str, torch.Tensor]
    format: str
    on_disk_dtype: str
    params: int
    model: str  # "wan2.1" or "wan2.2"


def detect_format(path: str) -> str:
    """`pth` for a zip archive (torch.save), `safetensors` otherwise; a known extension decides."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".safetensors":
        return "safetensors"
    if ext in (".pth", ".pt", ".bin", ".ckpt"):
        return "pth"
    with open(path, "rb") as f:
        return "pth" if f.read(2) == b"PK" else "safetensors"


def read_state_dict(path: str) -> tuple:
    """(state dict, format) of a checkpoint file, tensors on the CPU as stored."""
    if not os.path.isfile(path):
        raise WeightsError(f"{path}: not a file (expected a .safetensors or .pth checkpoint)")
    fmt = detect_format(path)
    if fmt == "safetensors":
        from safetensors.torch import load_file
        try:
            sd = load_file(path, device="cpu")
        except Exception as e:  # the library's own error types vary between versions
            raise WeightsError(f"{path}: cannot read as safetensors: {e}") from e
    else:
        try:
            sd = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:
            raise WeightsError(f"{path}: cannot read as a PyTorch (.pth) checkpoint: {e}") from e
        for key in ("state_dict", "model"):
            if isinstance(sd, dict) and isinstance(sd.get(key), dict):
                sd = sd[key]
                break
    if not isinstance(sd, dict) or not sd:
        raise WeightsError(f"{path}: the file holds no state dict of tensors")
    bad = [k for k, v in sd.items() if not isinstance(v, torch.Tensor) or not v.is_floating_point()]
    if bad:
        raise WeightsError(f"{path}: key {bad[0]} is not a float tensor (expected f32, f16 or bf16)")
    return sd, fmt


def detect_model(sd: Dict[str, torch.Tensor], path: str) -> str:
    """Wan 2.2 patchifies 2x2 (12 input channels) and has 48 latent channels; Wan 2.1 has 3 and 16
    (the tiny fixtures only shrink the widths, not these)."""
    w = sd.get("encoder.conv1.weight")
    if w is None or w.dim() != 5:
        raise WeightsError(f"{path}: no 5-d encoder.conv1.weight: not a Wan VAE checkpoint")
    if w.shape[1] == 12:
        return "wan2.2"
    if w.shape[1] == 3:
        return "wan2.1"
    raise WeightsError(f"{path}: encoder.conv1.weight has {w.shape[1]} input channels; expected 3 (Wan 2.1) "
                       "or 12 (Wan 2.2)")


def load(path: str) -> Loaded:
    sd, fmt = read_state_dict(path)
    dtypes = sorted({DTYPE_NAMES.get(v.dtype, str(v.dtype)) for v in sd.values()})
    return Loaded(state_dict=sd, format=fmt, on_disk_dtype="+".join(dtypes),
                  params=sum(v.numel() for v in sd.values()), model=detect_model(sd, path))
