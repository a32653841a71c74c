"""Engine `torch`'s module interface (its `python_module`; docs/worker-protocol.md, section
9): the port of the checkpoint's model, Wan 2.1 (`wan21_torch`) or Wan 2.2 (`wan22_torch`),
both built from the blocks of `wan_blocks`. The imports point one way: this module imports
the two models, they import `wan_blocks`, and nothing imports this module.
"""
from __future__ import annotations

from typing import Optional

import wan21_torch
import wan22_torch


def make_engine(torch_, loaded, device, precision, spec: dict):
    """Engine `torch`: the port of the checkpoint's model (Wan 2.1 or Wan 2.2)."""
    port = wan21_torch if loaded.model == "wan2.1" else wan22_torch
    return port.Engine(loaded.state_dict, device, precision)


def precision(name: str, mode: Optional[str]):
    """fp32/bf16/fp16; 16-bit under autocast unless `cast` is asked (the official WanVAE
    wrapper's way)."""
    import wan_runtime
    return wan_runtime.dtype_precision(name, mode, "autocast")
