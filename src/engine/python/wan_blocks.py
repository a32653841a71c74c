"""Engine `torch`: what its two models share, in one place (`wan_torch` is the engine's
module interface; `wan21_torch` and `wan22_torch` import this, never the other way). The official `vae.py` (Wan 2.1)
and `vae2_2.py` (Wan 2.2) define the same blocks (causal conv and its cache step, RMS norm,
upsample, resample, residual and attention blocks) and the same loops; here they are
written once:
  * the blocks, with the reference's module and parameter names;
  * `run_layers`, the reference's loop over a Sequential with the frame cache;
  * `Encoder` / `Decoder`, the forward loop of every encoder (conv1, downsamples, middle,
    head) and decoder (conv1, middle, upsamples, head);
  * `WanVAEBase`, the time loops of encode and decode (first frame alone, then chunks, one
    cache throughout);
  * `Engine`, what the worker calls: normalization, precision, spatial tiling.
`wan21_torch` and `wan22_torch` hold what differs: each model's layer lists, its latent
statistics and, for Wan 2.2, the patchify pair and the parameter-free shortcuts.

Differences from the reference, none of which change the arithmetic:
  * no `einops` (`rearrange` is permute + reshape), the `'Rep'` marker is tested with
    `isinstance` (comparing a tensor with a string is an error on recent torch);
  * the cached-conv step inlined at every call site there is one helper here;
  * the time loop takes a `chunk` (latent frames per call after the first; 1 = reference),
    spatial tiling and the precision as `wan_common` defines them for every engine.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

import wan_common as wc

CACHE_T = 2

Cache = List[object]  # the reference's feat_cache: None, "Rep" or a tensor per slot


def to_frames(x: torch.Tensor) -> torch.Tensor:
    """'b c t h w -> (b t) c h w'"""
    b, c, t, h, w = x.shape
    return x.permute(0, 2, 1, 3, 4).reshape(b * t, c, h, w)


def from_frames(x: torch.Tensor, t: int) -> torch.Tensor:
    """'(b t) c h w -> b c t h w'"""
    bt, c, h, w = x.shape
    return x.reshape(bt // t, t, c, h, w).permute(0, 2, 1, 3, 4)


def is_rep(v: object) -> bool:
    return isinstance(v, str) and v == "Rep"


class CausalConv3d(nn.Conv3d):
    """Causal 3d convolution: 2*pt zero frames in front (fewer when cached frames are
    put there), none behind."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._padding = (self.padding[2], self.padding[2], self.padding[1], self.padding[1], 2 * self.padding[0], 0)
        self.padding = (0, 0, 0)

    def forward(self, x: torch.Tensor, cache_x: Optional[torch.Tensor] = None) -> torch.Tensor:
        padding = list(self._padding)
        if cache_x is not None and self._padding[4] > 0:
            cache_x = cache_x.to(x.device)
            x = torch.cat([cache_x, x], dim=2)
            padding[4] -= cache_x.shape[2]
        x = F.pad(x, padding)
        return super().forward(x)


def cached_conv(layer: CausalConv3d, x: torch.Tensor, feat_cache: Cache, feat_idx: List[int]) -> torch.Tensor:
    """The reference's cache step around one CausalConv3d: run with the slot's frames in
    front, then keep the last CACHE_T input frames (topped up with the previous cache's
    last frame when the input had only one)."""
    idx = feat_idx[0]
    cache_x = x[:, :, -CACHE_T:, :, :].clone()
    if cache_x.shape[2] < 2 and feat_cache[idx] is not None:
        cache_x = torch.cat([feat_cache[idx][:, :, -1, :, :].unsqueeze(2).to(cache_x.device), cache_x], dim=2)
    x = layer(x, feat_cache[idx])
    feat_cache[idx] = cache_x
    feat_idx[0] += 1
    return x


class RMS_norm(nn.Module):
    """`x / max(||x||_2 over channels, 1e-12) * sqrt(C) * gamma`."""

    def __init__(self, dim: int, channel_first: bool = True, images: bool = True, bias: bool = False) -> None:
        super().__init__()
        broadcastable_dims = (1, 1, 1) if not images else (1, 1)
        shape = (dim, *broadcastable_dims) if channel_first else (dim,)
        self.channel_first = channel_first
        self.scale = dim**0.5
        self.gamma = nn.Parameter(torch.ones(shape))
        self.bias = nn.Parameter(torch.zeros(shape)) if bias else 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=(1 if self.channel_first else -1)) * self.scale * self.gamma + self.bias


class Upsample(nn.Upsample):
    """Nearest upsampling in f32 (the reference's bfloat16 fix)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.float()).type_as(x)


class Resample(nn.Module):
    """Spatial (and for the 3d modes temporal) up/downsampling; `up_out` is the upsample
    conv's output width: dim // 2 in Wan 2.1 (the default), dim in Wan 2.2."""

    takes_cache = True

    def __init__(self, dim: int, mode: str, up_out: Optional[int] = None) -> None:
        assert mode in ("none", "upsample2d", "upsample3d", "downsample2d", "downsample3d")
        super().__init__()
        self.dim = dim
        self.mode = mode
        up_out = dim // 2 if up_out is None else up_out
        if mode in ("upsample2d", "upsample3d"):
            self.resample = nn.Sequential(Upsample(scale_factor=(2.0, 2.0), mode="nearest-exact"),
                                          nn.Conv2d(dim, up_out, 3, padding=1))
            if mode == "upsample3d":
                self.time_conv = CausalConv3d(dim, dim * 2, (3, 1, 1), padding=(1, 0, 0))
        elif mode in ("downsample2d", "downsample3d"):
            self.resample = nn.Sequential(nn.ZeroPad2d((0, 1, 0, 1)), nn.Conv2d(dim, dim, 3, stride=(2, 2)))
            if mode == "downsample3d":
                self.time_conv = CausalConv3d(dim, dim, (3, 1, 1), stride=(2, 1, 1), padding=(0, 0, 0))
        else:
            self.resample = nn.Identity()

    def forward(self, x: torch.Tensor, feat_cache: Optional[Cache] = None, feat_idx: List[int] = [0]) -> torch.Tensor:
        b, c, t, h, w = x.size()
        if self.mode == "upsample3d" and feat_cache is not None:
            x = self._upsample_time(x, feat_cache, feat_idx)
        t = x.shape[2]
        x = from_frames(self.resample(to_frames(x)), t)
        if self.mode == "downsample3d" and feat_cache is not None:
            x = self._downsample_time(x, feat_cache, feat_idx)
        return x

    def _upsample_time(self, x: torch.Tensor, feat_cache: Cache, feat_idx: List[int]) -> torch.Tensor:
        """Skipped on the first call ('Rep'), zero-padded on the second, cached after;
        channel groups [0,C) and [C,2C) become frames 2t and 2t+1."""
        b, c, t, h, w = x.size()
        idx = feat_idx[0]
        if feat_cache[idx] is None:
            feat_cache[idx] = "Rep"
            feat_idx[0] += 1
            return x
        cache_x = x[:, :, -CACHE_T:, :, :].clone()
        if cache_x.shape[2] < 2 and not is_rep(feat_cache[idx]):
            cache_x = torch.cat([feat_cache[idx][:, :, -1, :, :].unsqueeze(2).to(cache_x.device), cache_x], dim=2)
        if cache_x.shape[2] < 2 and is_rep(feat_cache[idx]):
            cache_x = torch.cat([torch.zeros_like(cache_x).to(cache_x.device), cache_x], dim=2)
        if is_rep(feat_cache[idx]):
            x = self.time_conv(x)
        else:
            x = self.time_conv(x, feat_cache[idx])
        feat_cache[idx] = cache_x
        feat_idx[0] += 1
        x = x.reshape(b, 2, c, t, h, w)
        x = torch.stack((x[:, 0, :, :, :, :], x[:, 1, :, :, :, :]), 3)
        return x.reshape(b, c, t * 2, h, w)

    def _downsample_time(self, x: torch.Tensor, feat_cache: Cache, feat_idx: List[int]) -> torch.Tensor:
        """First call: cache the chunk, skip the time conv; later: prepend the cached last
        frame and convolve with stride 2 in time."""
        idx = feat_idx[0]
        if feat_cache[idx] is None:
            feat_cache[idx] = x.clone()
            feat_idx[0] += 1
            return x
        cache_x = x[:, :, -1:, :, :].clone()
        x = self.time_conv(torch.cat([feat_cache[idx][:, :, -1:, :, :], x], 2))
        feat_cache[idx] = cache_x
        feat_idx[0] += 1
        return x


class ResidualBlock(nn.Module):
    """norm, SiLU, conv3, norm, SiLU, dropout, conv3, plus a 1x1x1 shortcut when in != out."""

    takes_cache = True

    def __init__(self, in_dim: int, out_dim: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.in_dim = in_dim
        self.out_dim = out_dim
        self.residual = nn.Sequential(
            RMS_norm(in_dim, images=False), nn.SiLU(), CausalConv3d(in_dim, out_dim, 3, padding=1),
            RMS_norm(out_dim, images=False), nn.SiLU(), nn.Dropout(dropout),
            CausalConv3d(out_dim, out_dim, 3, padding=1))
        self.shortcut = CausalConv3d(in_dim, out_dim, 1) if in_dim != out_dim else nn.Identity()

    def forward(self, x: torch.Tensor, feat_cache: Optional[Cache] = None, feat_idx: List[int] = [0]) -> torch.Tensor:
        h = self.shortcut(x)
        for layer in self.residual:
            if isinstance(layer, CausalConv3d) and feat_cache is not None:
                x = cached_conv(layer, x, feat_cache, feat_idx)
            else:
                x = layer(x)
        return x + h


class AttentionBlock(nn.Module):
    """Single-head self-attention over the h*w positions of each frame."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.norm = RMS_norm(dim)
        self.to_qkv = nn.Conv2d(dim, dim * 3, 1)
        self.proj = nn.Conv2d(dim, dim, 1)
        nn.init.zeros_(self.proj.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        b, c, t, h, w = x.size()
        x = self.norm(to_frames(x))
        q, k, v = self.to_qkv(x).reshape(b * t, 1, c * 3, -1).permute(0, 1, 3, 2).contiguous().chunk(3, dim=-1)
        x = F.scaled_dot_product_attention(q, k, v)
        x = x.squeeze(1).permute(0, 2, 1).reshape(b * t, c, h, w)
        x = self.proj(x)
        return from_frames(x, t) + identity


def run_layers(layers, x: torch.Tensor, feat_cache: Optional[Cache], feat_idx: List[int],
               first_chunk: bool = False) -> torch.Tensor:
    """The reference's loop over a Sequential: blocks that take the cache get it (and
    `first_chunk` when they take that too: Wan 2.2's upsampling stages), a bare
    CausalConv3d goes through the cache step, everything else is called plainly."""
    for layer in layers:
        if feat_cache is None:
            x = layer(x)
        elif isinstance(layer, CausalConv3d):
            x = cached_conv(layer, x, feat_cache, feat_idx)
        elif getattr(layer, "takes_first_chunk", False):
            x = layer(x, feat_cache, feat_idx, first_chunk)
        elif getattr(layer, "takes_cache", False):
            x = layer(x, feat_cache, feat_idx)
        else:
            x = layer(x)
    return x


def count_conv3d(model: nn.Module) -> int:
    return sum(1 for m in model.modules() if isinstance(m, CausalConv3d))


class Encoder(nn.Module):
    """The encoder's forward loop; a model's subclass builds `conv1`, `downsamples`,
    `middle` and `head`."""

    def forward(self, x: torch.Tensor, feat_cache: Optional[Cache] = None, feat_idx: List[int] = [0]) -> torch.Tensor:
        x = run_layers([self.conv1], x, feat_cache, feat_idx)
        x = run_layers(self.downsamples, x, feat_cache, feat_idx)
        x = run_layers(self.middle, x, feat_cache, feat_idx)
        return run_layers(self.head, x, feat_cache, feat_idx)


class Decoder(nn.Module):
    """The decoder's forward loop; a model's subclass builds `conv1`, `middle`, `upsamples`
    and `head`. `first_chunk` reaches the blocks that take it (Wan 2.1 has none)."""

    def forward(self, x: torch.Tensor, feat_cache: Optional[Cache] = None, feat_idx: List[int] = [0],
                first_chunk: bool = False) -> torch.Tensor:
        x = run_layers([self.conv1], x, feat_cache, feat_idx)
        x = run_layers(self.middle, x, feat_cache, feat_idx)
        x = run_layers(self.upsamples, x, feat_cache, feat_idx, first_chunk)
        return run_layers(self.head, x, feat_cache, feat_idx)


class WanVAEBase(nn.Module):
    """The reference model's time loops; a model's subclass builds `encoder`, `conv1`
    (moments), `conv2` and `decoder`."""

    def encode_moments(self, x: torch.Tensor, chunk: int) -> torch.Tensor:
        """Encoder over frame [0], then 4*chunk frames per call (one fresh cache), then conv1."""
        cache: Cache = [None] * count_conv3d(self.encoder)

        def call(frames: torch.Tensor, first: bool) -> torch.Tensor:
            return self.encoder(frames, feat_cache=cache, feat_idx=[0])

        return self.conv1(wc.first_then_chunks(x, 4 * chunk, call))

    def decode_frames(self, x: torch.Tensor, chunk: int) -> torch.Tensor:
        """Decoder (after conv2) over latent frame [0] (`first_chunk`), then `chunk` latent
        frames per call; the decoder's output (Wan 2.2: still patchified)."""
        cache: Cache = [None] * count_conv3d(self.decoder)

        def call(frames: torch.Tensor, first: bool) -> torch.Tensor:
            return self.decoder(frames, feat_cache=cache, feat_idx=[0], first_chunk=first)

        return wc.first_then_chunks(x, chunk, call)


class Engine:
    """Engine `torch` for one model: normalized latents in and out, options as in candle.
    A model's subclass sets `model_name`, `label`, `scale` (spatial compression), `patch`
    (the encoder sees the video at 1/patch size), `mean` and `std`, and implements `config`
    and `build`; Wan 2.2 also `to_model` / `from_model` (patchify / unpatchify)."""

    engine = "torch"
    model_name = ""
    label = ""
    scale = 8
    patch = 1
    mean: Sequence[float] = ()
    std: Sequence[float] = ()

    def __init__(self, sd: dict, device: torch.device, precision: wc.Precision) -> None:
        self.cfg = self.config(sd)
        self.z_dim = self.cfg["z_dim"]
        model = self.build(self.cfg)
        model.load_state_dict({k: v.to(torch.float32) for k, v in sd.items()}, strict=True)
        self.model = model.eval().requires_grad_(False).to(device=device, dtype=precision.weight_dtype)
        self.device = device
        self.precision = precision

    @staticmethod
    def config(sd: dict) -> dict:
        """The widths, read from the checkpoint's shapes (`z_dim` among them)."""
        raise NotImplementedError

    @staticmethod
    def build(cfg: dict) -> WanVAEBase:
        """The reference model with those widths."""
        raise NotImplementedError

    def to_model(self, video: torch.Tensor) -> torch.Tensor:
        """The encoder's input from the video."""
        return video

    def from_model(self, out: torch.Tensor) -> torch.Tensor:
        """The video from the decoder's output."""
        return out

    def compute_dtype(self) -> str:
        return self.precision.describe(self.device)

    def lever_model(self) -> nn.Module:
        """The model the levers act on (`wan_levers`)."""
        return self.model

    def check_tiling(self, tl: Optional[wc.Tiling]) -> None:
        """Tiles are cut on latent positions: tile and overlap must be multiples of `scale`."""
        if tl is not None and (tl.tile_px % self.scale or tl.overlap_px % self.scale):
            raise ValueError(f"tile {tl.tile_px}:{tl.overlap_px} is unsupported for {self.label}: tile and overlap "
                             f"must be multiples of {self.scale} (its spatial compression)")

    def encode(self, video: torch.Tensor, opts: wc.RunOptions) -> torch.Tensor:
        """video [1,3,T,H,W] -> normalized latent [1,z,1+(T-1)//4,H/scale,W/scale] in the precision."""
        self.check_tiling(opts.tiling)
        t = wc.frames_used(video.shape[2])
        x = video[:, :, :t].to(self.device, self.precision.weight_dtype)
        h, w = x.shape[3], x.shape[4]
        p, s = self.patch, self.scale
        with torch.inference_mode(), self.precision.context(self.device):
            xm = self.to_model(x)
            fn = lambda tile: self.model.encode_moments(tile, opts.chunk)  # noqa: E731
            if wc.needs_tiling(opts.tiling, h, w):
                tl = opts.tiling
                # Tiles and stride in the encoder's input units (px / patch); blend in latent units.
                moments = wc.tiled(xm, tl.tile_px // p, tl.stride_px // p, fn, tl.overlap_px // s, tl.stride_px // s,
                                   h // s, w // s)
            else:
                moments = fn(xm)
        return wc.normalize(moments[:, :self.z_dim], self.mean, self.std, self.precision.dtype)

    def decode(self, latent: torch.Tensor, opts: wc.RunOptions) -> torch.Tensor:
        """normalized latent [1,z,t,h,w] -> video [1,3,1+4(t-1),scale*h,scale*w], not clamped."""
        self.check_tiling(opts.tiling)
        z = wc.denormalize(latent.to(self.device), self.mean, self.std, self.precision.weight_dtype)
        h, w = z.shape[3], z.shape[4]
        p, s = self.patch, self.scale
        with torch.inference_mode(), self.precision.context(self.device):
            x = self.model.conv2(z)
            fn = lambda tile: self.model.decode_frames(tile, opts.chunk)  # noqa: E731
            if wc.needs_tiling(opts.tiling, s * h, s * w):
                tl = opts.tiling
                # Tiles of TILE/scale latent px; blend in the decoder's output units (px / patch).
                out = wc.tiled(x, tl.tile_px // s, tl.stride_px // s, fn, tl.overlap_px // p, tl.stride_px // p,
                               s // p * h, s // p * w)
            else:
                out = fn(x)
            return self.from_model(out)
