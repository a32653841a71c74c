"""The levers of issue 40 on any Python engine's Wan VAE (the `torch` port, diffusers'
AutoencoderKLWan, ComfyUI's comfy.ldm.wan), and what the convolutions saw (the read-back).

A causal convolution is found as what it is in all three codes: an `nn.Conv3d` with the
reference's 6-tuple `_padding` (our `CausalConv3d`, diffusers' `WanCausalConv3d`, ComfyUI's
`CausalConv3d`, which in these models are all the Conv3d there are).

  * layout `channels_last_3d`: every Conv3d weight in `torch.channels_last_3d`, and each
    causal convolution's input built in that format by `causal_pad`: one tensor allocated
    in the format, its borders zeroed, the cached frames and the input copied in. The
    reference's `torch.cat` + `F.pad` keep the format of what they are given, but a conv3d
    on the CPU returns NCDHW, so only a pad that allocates in the format holds it for
    every convolution (a `repeat` + `cat` pad would lose it on every device).
  * conv3d `split`: a causal convolution with a time kernel of k > 1 frames runs as k
    `conv2d` over its time offsets, summed (bias once): the same products and the same
    cache (the padded input is the one the native conv3d would see). The padded input is
    laid out frames-major (NCDHW) or NDHWC (channels_last_3d), so each offset's frames are
    a view in the 2D layout, not a copy.
  * the defaults (`ncdhw`, `native`) leave every forward as the engine's own code has it.

The read-back: the first call of each causal convolution in a case records the memory
format of its weight and of the tensor its convolution (conv3d, or the split's conv2d)
was given, and the path it took; `read_back` sums them into the `layout` and `conv3d` the
case ran with, and a case whose convolutions did not run as asked fails, naming what they
saw. Imports torch only; no engine module (the engines call `apply`, `read_back`).
"""
from __future__ import annotations

from typing import Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

LAYOUTS = ("ncdhw", "channels_last_3d")
CONV3D = ("native", "split")
_STATE = "_wan_levers"


def causal_convs(model: nn.Module) -> List[nn.Conv3d]:
    return [m for m in model.modules() if isinstance(m, nn.Conv3d) and len(getattr(m, "_padding", ())) == 6]


def format_of(t: torch.Tensor) -> Optional[str]:
    """`channels_last_3d` or `ncdhw` (4D: `channels_last` counts as the former, NCHW as the
    latter); None where the strides fit both (one channel, or one position) or neither."""
    cl = torch.channels_last_3d if t.dim() == 5 else torch.channels_last
    std, last = t.is_contiguous(), t.is_contiguous(memory_format=cl)
    if t.dim() == 5 and not std and not last:
        # The split's frames-major input (B, T, C, H, W in memory) is NCDHW per frame.
        if t.permute(0, 2, 1, 3, 4).is_contiguous():
            return "ncdhw"
    if std == last:
        return None
    return "ncdhw" if std else "channels_last_3d"


class Probe:
    """What the causal convolutions saw in one case: per module, its first call only."""

    def __init__(self) -> None:
        self.seen: Dict[int, tuple] = {}

    def see(self, m: nn.Module, given: torch.Tensor, weight: torch.Tensor, path: str) -> None:
        if id(m) not in self.seen:
            self.seen[id(m)] = (format_of(given), format_of(weight), path, m.kernel_size[0] > 1)


def _weights(m: nn.Module, x: torch.Tensor):
    """The weight and bias the module's own forward would use: ComfyUI casts them (its
    `comfy_cast_weights`, lowvram, patches) through `comfy.ops.cast_bias_weight`."""
    if getattr(m, "comfy_cast_weights", False) or getattr(m, "weight_function", None) or \
            getattr(m, "bias_function", None):
        import comfy.ops
        return comfy.ops.cast_bias_weight(m, x)
    return m.weight, m.bias


def causal_pad(x: torch.Tensor, cache_x: Optional[torch.Tensor], padding, layout: str,
               frames_major: bool) -> torch.Tensor:
    """The reference's `F.pad(torch.cat([cache_x, x], 2), padding)` (with `padding[4]`
    less the cached frames) into one tensor allocated in the layout: `channels_last_3d`,
    or NCDHW, or (`frames_major`, the split's) B, T, C, H, W in memory."""
    pw0, pw1, ph0, ph1, pt0, pt1 = padding
    b, c, t, h, w = x.shape
    if cache_x is not None and pt0 > 0:
        cache_x = cache_x.to(x.device)[:, :, -pt0:]
        tc = cache_x.shape[2]
    else:
        cache_x, tc = None, 0
    front = pt0 - tc
    tp, hp, wp = front + tc + t + pt1, h + ph0 + ph1, w + pw0 + pw1
    if layout == "channels_last_3d":
        out = torch.empty((b, c, tp, hp, wp), dtype=x.dtype, device=x.device, memory_format=torch.channels_last_3d)
    elif frames_major:
        out = torch.empty((b, tp, c, hp, wp), dtype=x.dtype, device=x.device).permute(0, 2, 1, 3, 4)
    else:
        out = torch.empty((b, c, tp, hp, wp), dtype=x.dtype, device=x.device)
    # Zero the borders only; the inside is copied.
    for sl in ((slice(None), slice(None), slice(0, front)), (slice(None), slice(None), slice(tp - pt1, tp)),
               (Ellipsis, slice(0, ph0), slice(None)), (Ellipsis, slice(hp - ph1, hp), slice(None)),
               (Ellipsis, slice(0, pw0)), (Ellipsis, slice(wp - pw1, wp))):
        out[sl].zero_()
    inner = (Ellipsis, slice(ph0, ph0 + h), slice(pw0, pw0 + w))
    if cache_x is not None:
        out[:, :, front:front + tc][inner].copy_(cache_x)
    out[:, :, front + tc:front + tc + t][inner].copy_(x)
    return out


def split_conv(m: nn.Conv3d, xp: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
               probe: Probe) -> torch.Tensor:
    """`conv3d(xp)` as `sum_k conv2d(frames k, k+st, ... of xp, weight[:, :, k])`; xp is
    already padded. The output is NCDHW per frame (frames-major) or channels_last_3d."""
    kt, st, dt = m.kernel_size[0], m.stride[0], m.dilation[0]
    b, c, tp = xp.shape[:3]
    t_out = (tp - dt * (kt - 1) - 1) // st + 1
    out = None
    for k in range(kt):
        slab = xp[:, :, k * dt:k * dt + st * (t_out - 1) + 1:st]
        frames = slab.permute(0, 2, 1, 3, 4).reshape(b * t_out, c, xp.shape[3], xp.shape[4])
        probe.see(m, frames, weight, "split")
        y = F.conv2d(frames, weight[:, :, k], bias if k == 0 else None, m.stride[1:], 0, m.dilation[1:], m.groups)
        out = y if out is None else out.add_(y)
    return out.reshape(b, t_out, *out.shape[1:]).permute(0, 2, 1, 3, 4)


def _lever_forward(m: nn.Conv3d, layout: str, split: bool, probe: Probe):
    split = split and m.kernel_size[0] > 1

    def forward(x, cache_x=None, cache_list=None, cache_idx=None):
        if cache_list is not None:  # ComfyUI's way of handing over (and freeing) the cache
            cache_x = cache_list[cache_idx]
            cache_list[cache_idx] = None
        xp = causal_pad(x, cache_x, m._padding, layout, split)
        weight, bias = _weights(m, xp)
        if split:
            return split_conv(m, xp, weight, bias, probe)
        probe.see(m, xp, weight, "native")
        return type(m)._conv_forward(m, xp, weight, bias)

    return forward


def _native_probe(m: nn.Conv3d, probe: Probe):
    """The engine's own forward, its conv's input seen once (then the class's method again)."""
    def conv_forward(x, weight, bias):
        probe.see(m, x, weight, "native")
        del m._conv_forward
        return type(m)._conv_forward(m, x, weight, bias)

    return conv_forward


def apply(model: nn.Module, layout: str, conv3d: str) -> Probe:
    """Put the case's levers on `model` (kept between cases: the previous case's are undone
    first) and a fresh probe; the defaults leave the engine's forwards as they are."""
    if layout not in LAYOUTS or conv3d not in CONV3D:
        raise ValueError(f"layout {layout!r} / conv3d {conv3d!r}: expected one of {LAYOUTS} / {CONV3D}")
    fmt = torch.channels_last_3d if layout == "channels_last_3d" else torch.contiguous_format
    probe = Probe()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv3d) and m.weight.device.type != "meta":
                m.weight.data = m.weight.data.contiguous(memory_format=fmt)
    for m in causal_convs(model):
        for name in ("forward", "_conv_forward"):
            m.__dict__.pop(name, None)
        if (layout, conv3d) == (LAYOUTS[0], CONV3D[0]):
            m._conv_forward = _native_probe(m, probe)
        else:
            m.forward = _lever_forward(m, layout, conv3d == "split", probe)
    setattr(model, _STATE, (layout, conv3d, probe))
    return probe


def _count(values) -> str:
    counts: Dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))


def read_back(model: nn.Module) -> Dict[str, str]:
    """`layout` and `conv3d` as the convolutions of the case saw them: one value where all
    agree, else the counts (`28 channels_last_3d, 2 ncdhw`). Raises RuntimeError when they
    did not run as asked (the case fails, naming what they saw)."""
    layout, conv3d, probe = getattr(model, _STATE, (None, None, None))
    if probe is None:
        raise RuntimeError("the levers were not applied to this model")
    seen = list(probe.seen.values())
    if not seen:
        return {"layout": "not seen (no convolution ran)", "conv3d": "not seen (no convolution ran)"}
    formats = [f for s in seen for f in s[:2] if f is not None]
    paths = [s[2] for s in seen if s[3]]
    got = {"layout": _count(formats) if len(set(formats)) != 1 else formats[0],
           "conv3d": _count(paths) if len(set(paths)) != 1 else (paths[0] if paths else "native")}
    if got != {"layout": layout, "conv3d": conv3d}:
        raise RuntimeError(f"the levers did not take: asked layout {layout}, conv3d {conv3d}; the causal convolutions "
                           f"saw layout {got['layout']} (inputs and weights), conv3d {got['conv3d']}")
    return got


def apply_case(eng, spec: dict) -> Optional[nn.Module]:
    """The case's levers (`layout`, `conv3d` of its spec; absent: the defaults) on the
    engine's model (its `lever_model()`); None for an engine without one."""
    get = getattr(eng, "lever_model", None)
    if get is None:
        return None
    model = get()
    apply(model, spec.get("layout") or LAYOUTS[0], spec.get("conv3d") or CONV3D[0])
    return model
