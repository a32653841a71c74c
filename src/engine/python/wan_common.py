"""Rules every PyTorch engine shares with the candle engine, so that one setting means one
thing everywhere: the 1+4k frame rule, the time loop (first frame alone, then chunks), the
spatial tiling (diffusers' linear-ramp blending, as `src/model/tiling.rs`), precision
(model cast or autocast) and the latent normalization (done in f32 in every engine).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

import torch

Fn = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Tiling:
    """Spatial tiling in output pixels (both multiples of 8, overlap < tile)."""

    tile_px: int
    overlap_px: int

    @property
    def stride_px(self) -> int:
        return self.tile_px - self.overlap_px


@dataclass(frozen=True)
class RunOptions:
    """How one encode/decode call runs: `chunk` latent frames per call after the first
    (encoder: 4*chunk frames; 1 = the reference) and optional spatial tiling."""

    chunk: int = 1
    tiling: Optional[Tiling] = None


DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DTYPE_NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}


def frames_used(frames: int) -> int:
    """Frames the reference encodes out of `frames`: 1 + 4*((frames-1)//4)."""
    if frames < 1:
        raise ValueError("frames must be at least 1 (1+4k frames, e.g. 1, 5, 9, 21, 81)")
    return 1 + 4 * ((frames - 1) // 4)


def time_bounds(t: int, step: int) -> List[tuple]:
    """The reference's time loop: [0,1), then `step` frames at a time (the last call may
    get fewer). With step = 4 (encode) or 1 (decode) these are exactly the official calls."""
    bounds = [(0, min(1, t))]
    s = 1
    while s < t:
        e = min(s + step, t)
        bounds.append((s, e))
        s = e
    return bounds


def first_then_chunks(x: torch.Tensor, step: int, call: Callable[[torch.Tensor, bool], torch.Tensor]) -> torch.Tensor:
    """Run `call(frames, first)` over `time_bounds` of dim 2 and concatenate in time; the
    caller owns the cache (it must start empty)."""
    outs = [call(x[:, :, s:e], s == 0) for (s, e) in time_bounds(x.shape[2], step)]
    return torch.cat(outs, 2) if len(outs) > 1 else outs[0]


@dataclass(frozen=True)
class Precision:
    """Requested precision and how it is applied.

    `mode` is `cast` (weights and activations stored in the dtype, like candle, ComfyUI
    and diffusers' `torch_dtype`) or `autocast` (f32 weights under `torch.autocast`, like
    the official `WanVAE` wrapper). fp32 is always plain f32.
    """

    name: str
    mode: str

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.name]

    @property
    def weight_dtype(self) -> torch.dtype:
        return self.dtype if self.mode == "cast" else torch.float32

    def context(self, device: torch.device) -> contextlib.AbstractContextManager:
        """Autocast for 16-bit autocast runs, nothing otherwise."""
        if self.name == "fp32" or self.mode != "autocast":
            return contextlib.nullcontext()
        return torch.autocast(device_type=device.type, dtype=self.dtype)

    def describe(self, device: torch.device) -> str:
        """The `compute_dtype` string: what really computes."""
        if self.name == "fp32":
            note = " (cuDNN may use TF32 for convs: TF32 allowed for cuDNN convolutions)" if tf32_convs(device) else ""
            return "f32" + note
        dt = DTYPE_NAMES[self.dtype]
        if self.mode == "cast":
            return f"{dt} (model and activations cast to {dt})"
        # CUDA autocast runs norm/normalize in f32; CPU autocast has no such rule (checked on torch 2.15).
        norms = "RMS norms in f32" if device.type == "cuda" else f"RMS norms in {dt} too"
        return f"{dt} (autocast over f32 weights: convs, matmuls and attention in {dt}; {norms})"


def tf32_convs(device: torch.device) -> bool:
    """Whether cuDNN may run fp32 convolutions in TF32 on `device`. Never on the CPU, never on
    ROCm (MIOpen has no TF32 convolutions; gfx1151 has no TF32), never with cuDNN off."""
    if device.type != "cuda" or getattr(torch.version, "hip", None) or not torch.backends.cudnn.enabled:
        return False
    return tf32_flags()[0]


def tf32_flags() -> tuple:
    """(convolutions, matmuls): whether torch lets fp32 convolutions (cuDNN) and matmuls
    (cuBLAS) use TF32, read back from torch. Torch >= 2.9 has `fp32_precision` per backend and
    op, where `none` defers to the level above (`cudnn.conv` -> `cudnn` -> the global one; its
    legacy `allow_tf32` getters raise once the new API was used); older torch has only the
    legacy flags. A torch that refuses both is read as not using TF32."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        def first_set(*levels) -> Optional[str]:
            found = [p for p in (getattr(x, "fp32_precision", None) for x in levels) if p not in (None, "none")]
            return found[0] if found else None

        try:
            p = first_set(getattr(torch.backends.cudnn, "conv", None), torch.backends.cudnn, torch.backends)
            conv = p == "tf32" if p else bool(torch.backends.cudnn.allow_tf32)
        except (RuntimeError, AttributeError):
            conv = False
        try:
            p = first_set(torch.backends.cuda.matmul, torch.backends.cuda, torch.backends)
            matmul = p == "tf32" if p else torch.get_float32_matmul_precision() != "highest"
        except (RuntimeError, AttributeError):
            matmul = False
    return conv, matmul


def set_tf32(on: bool) -> None:
    """Let fp32 convolutions and matmuls use TF32 (`on`) or compute true fp32: torch >= 2.9's
    `fp32_precision` ("tf32" / "ieee") where it exists, else the legacy `allow_tf32` flags
    (mixing the two APIs raises in torch >= 2.9)."""
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):
        value = "tf32" if on else "ieee"
        torch.backends.cudnn.conv.fp32_precision = value
        torch.backends.cuda.matmul.fp32_precision = value
    else:
        torch.backends.cudnn.allow_tf32 = on
        torch.backends.cuda.matmul.allow_tf32 = on


def check_precision_mode(mode: str) -> str:
    if mode not in ("cast", "autocast"):
        raise ValueError(f"torch_precision must be `cast` or `autocast`, got {mode!r}")
    return mode


# ----------------------------------------------------------------------------------------
# Latent normalization (f32 in every engine)


def normalize(mu: torch.Tensor, mean: Sequence[float], std: Sequence[float], out_dtype: torch.dtype) -> torch.Tensor:
    """`(mu - mean) / std` per channel in f32, returned in `out_dtype` (the latent that
    encode hands to decode is rounded to the model precision, as in candle)."""
    m, s = _stats(mu, mean, std)
    return ((mu.float() - m) / s).to(out_dtype)


def denormalize(z: torch.Tensor, mean: Sequence[float], std: Sequence[float], out_dtype: torch.dtype) -> torch.Tensor:
    """`z * std + mean` per channel in f32, in `out_dtype`."""
    m, s = _stats(z, mean, std)
    return (z.float() * s + m).to(out_dtype)


def _stats(x: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> tuple:
    """Channel stats shaped [1,C,1,1,1]; test models with another z_dim pad with 0/1."""
    c = x.shape[1]
    mv = [mean[i] if i < len(mean) else 0.0 for i in range(c)]
    sv = [std[i] if i < len(std) else 1.0 for i in range(c)]
    shape = (1, c, 1, 1, 1)
    return (torch.tensor(mv, dtype=torch.float32, device=x.device).view(shape),
            torch.tensor(sv, dtype=torch.float32, device=x.device).view(shape))


# ----------------------------------------------------------------------------------------
# Spatial tiling: candle's `src/model/tiling.rs`, itself diffusers' AutoencoderKLWan rule


def tiled(x: torch.Tensor, tile: int, stride: int, fn: Fn, blend: int, out_stride: int, out_h: int,
          out_w: int) -> torch.Tensor:
    """Cut `x` into tiles of `tile` at origins `0, stride, ...` (both in x's units), map each
    with `fn`, blend each tile's top then left edge over `blend` rows/cols with the tile
    above/left (in place, as diffusers), keep `out_stride` of each and crop to the size."""
    h, w = x.shape[3], x.shape[4]
    rows = [[fn(x[:, :, :, i:i + tile, j:j + tile]) for j in range(0, w, stride)] for i in range(0, h, stride)]
    stitched = []
    for i, row in enumerate(rows):
        pieces = []
        for j in range(len(row)):
            t = rows[i][j]
            if i > 0:
                t = _blend_edge(rows[i - 1][j], t, blend, 3)
            if j > 0:
                t = _blend_edge(rows[i][j - 1], t, blend, 4)
            rows[i][j] = t
            pieces.append(t[:, :, :, :out_stride, :out_stride])
        stitched.append(torch.cat(pieces, 4))
    return torch.cat(stitched, 3)[:, :, :, :out_h, :out_w].contiguous()


def _blend_edge(a: torch.Tensor, b: torch.Tensor, extent: int, dim: int) -> torch.Tensor:
    """diffusers' blend_v (dim 3) / blend_h (dim 4), computed in f32 as candle does: the
    first `e` rows of `b` become a's last rows * (1 - y/e) + b's rows * (y/e)."""
    e = min(extent, a.shape[dim], b.shape[dim])
    if e == 0:
        return b
    shape = [1] * 5
    shape[dim] = e
    r = (torch.arange(e, dtype=torch.float32, device=b.device) / e).view(shape)
    a_end = a.narrow(dim, a.shape[dim] - e, e).float()
    b_start = b.narrow(dim, 0, e).float()
    mixed = (a_end * (1.0 - r) + b_start * r).to(b.dtype)
    return torch.cat([mixed, b.narrow(dim, e, b.shape[dim] - e)], dim)


def needs_tiling(tl: Optional[Tiling], height_px: int, width_px: int) -> bool:
    """diffusers' condition (and candle's): tile only when the frame exceeds one tile."""
    return tl is not None and (height_px > tl.tile_px or width_px > tl.tile_px)


def temporal_latent_frames(tile_frames: int, overlap_frames: int, c: int = 4) -> tuple:
    """ComfyUI's `VAEDecodeTiled` units -> (tile, overlap) in latent frames, as candle's
    `temporal_tiling.rs` (docs/temporal-tiling.md): halve the overlap when the tile is
    shorter than twice it, then max(2, tile // c) and max(1, min(tile_t // 2, overlap // c))."""
    if tile_frames < overlap_frames * 2:
        overlap_frames //= 2
    tile_t = max(2, tile_frames // c)
    overlap_t = max(1, min(tile_t // 2, overlap_frames // c))
    return tile_t, overlap_t


def temporal_tiled_decode(z: torch.Tensor, tile_frames: int, overlap_frames: int, c: int, fn: Fn) -> torch.Tensor:
    """ComfyUI's temporal tiling (`tiled_scale_multidim` on the time axis): tiles at
    range(0, T - ov, tile - ov) clamped to T - ov, each decoded whole by `fn`, placed at
    c * start, weighted by the feather (c * ov - c + 1 frames, (t+1)/feather at both ends)
    and divided by the summed weights. Candle's `temporal_tiling.rs` does the same."""
    n = z.shape[2]
    tile, ov = temporal_latent_frames(tile_frames, overlap_frames, c)
    if n <= tile:
        return fn(z)
    out_len = max(0, c * n - (c - 1))
    feather = max(0, c * ov - (c - 1))
    out, weight, dtype = None, torch.zeros(out_len, dtype=torch.float32), None
    for p in range(0, n - ov, tile - ov):
        pos = max(0, min(n - ov, p))
        ps = fn(z[:, :, pos:pos + min(tile, n - pos)])
        dtype, ps = ps.dtype, ps.float()
        m = ps.shape[2]
        mask = torch.ones(m, dtype=torch.float32)
        if feather < m:
            for t in range(feather):
                a = (t + 1) / feather
                mask[t] *= a
                mask[m - 1 - t] *= a
        start = c * pos
        if out is None:
            out = torch.zeros(ps.shape[:2] + (out_len,) + ps.shape[3:], dtype=torch.float32, device=ps.device)
        out[:, :, start:start + m] += ps * mask.to(ps.device).view(1, 1, m, 1, 1)
        weight[start:start + m] += mask
    return (out / weight.to(out.device).view(1, 1, out_len, 1, 1)).to(dtype)
