"""Engine `torch`, Wan 2.1: a port of the official `wan/modules/vae.py` (Wan-Video/Wan2.1
@ 9737cba, the code that produced the fixtures) with its module and parameter names, so the
original checkpoint loads with `strict=True`.

Differences from the reference, none of which change the arithmetic:
  * no `einops` (`rearrange` is permute + reshape), the `'Rep'` marker is tested with
    `isinstance` (comparing a tensor with a string is an error on recent torch);
  * the cached-conv step inlined at every call site there is one helper here;
  * the time loop takes a `chunk` (latent frames per call after the first; 1 = reference),
    spatial tiling and the precision as `wan_common` defines them for every engine.
The blocks shared with Wan 2.2 (`wan22_torch.py`) are imported from here.
"""
from __future__ import annotations

from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

import wan_common as wc

CACHE_T = 2

# Latent normalization of Wan 2.1 (`WanVAE.__init__` in the reference).
LATENT_MEAN = [
    -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
    0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921,
]
LATENT_STD = [
    2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
    3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160,
]

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
    conv's output width: dim // 2 in Wan 2.1."""

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


def run_layers(layers: nn.Module, x: torch.Tensor, feat_cache: Optional[Cache], feat_idx: List[int]) -> torch.Tensor:
    """The reference's loop over a Sequential: cache-aware blocks get the cache, a bare
    CausalConv3d goes through the cache step, everything else is called plainly."""
    for layer in layers:
        if feat_cache is None:
            x = layer(x)
        elif isinstance(layer, CausalConv3d):
            x = cached_conv(layer, x, feat_cache, feat_idx)
        elif isinstance(layer, (ResidualBlock, Resample)):
            x = layer(x, feat_cache, feat_idx)
        else:
            x = layer(x)
    return x


class Encoder3d(nn.Module):

    def __init__(self, dim: int = 128, z_dim: int = 4, dim_mult: List[int] = [1, 2, 4, 4], num_res_blocks: int = 2,
                 attn_scales: List[float] = [], temperal_downsample: List[bool] = [True, True, False],
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        dims = [dim * u for u in [1] + dim_mult]
        scale = 1.0
        self.conv1 = CausalConv3d(3, dims[0], 3, padding=1)
        downsamples = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            for _ in range(num_res_blocks):
                downsamples.append(ResidualBlock(in_dim, out_dim, dropout))
                if scale in attn_scales:
                    downsamples.append(AttentionBlock(out_dim))
                in_dim = out_dim
            if i != len(dim_mult) - 1:
                mode = "downsample3d" if temperal_downsample[i] else "downsample2d"
                downsamples.append(Resample(out_dim, mode=mode))
                scale /= 2.0
        self.downsamples = nn.Sequential(*downsamples)
        self.middle = nn.Sequential(ResidualBlock(out_dim, out_dim, dropout), AttentionBlock(out_dim),
                                    ResidualBlock(out_dim, out_dim, dropout))
        self.head = nn.Sequential(RMS_norm(out_dim, images=False), nn.SiLU(),
                                  CausalConv3d(out_dim, z_dim, 3, padding=1))

    def forward(self, x: torch.Tensor, feat_cache: Optional[Cache] = None, feat_idx: List[int] = [0]) -> torch.Tensor:
        x = run_layers([self.conv1], x, feat_cache, feat_idx)
        x = run_layers(self.downsamples, x, feat_cache, feat_idx)
        x = run_layers(self.middle, x, feat_cache, feat_idx)
        return run_layers(self.head, x, feat_cache, feat_idx)


class Decoder3d(nn.Module):

    def __init__(self, dim: int = 128, z_dim: int = 4, dim_mult: List[int] = [1, 2, 4, 4], num_res_blocks: int = 2,
                 attn_scales: List[float] = [], temperal_upsample: List[bool] = [False, True, True],
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        dims = [dim * u for u in [dim_mult[-1]] + dim_mult[::-1]]
        scale = 1.0 / 2**(len(dim_mult) - 2)
        self.conv1 = CausalConv3d(z_dim, dims[0], 3, padding=1)
        self.middle = nn.Sequential(ResidualBlock(dims[0], dims[0], dropout), AttentionBlock(dims[0]),
                                    ResidualBlock(dims[0], dims[0], dropout))
        upsamples = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            if i == 1 or i == 2 or i == 3:
                in_dim = in_dim // 2
            for _ in range(num_res_blocks + 1):
                upsamples.append(ResidualBlock(in_dim, out_dim, dropout))
                if scale in attn_scales:
                    upsamples.append(AttentionBlock(out_dim))
                in_dim = out_dim
            if i != len(dim_mult) - 1:
                mode = "upsample3d" if temperal_upsample[i] else "upsample2d"
                upsamples.append(Resample(out_dim, mode=mode))
                scale *= 2.0
        self.upsamples = nn.Sequential(*upsamples)
        self.head = nn.Sequential(RMS_norm(out_dim, images=False), nn.SiLU(), CausalConv3d(out_dim, 3, 3, padding=1))

    def forward(self, x: torch.Tensor, feat_cache: Optional[Cache] = None, feat_idx: List[int] = [0]) -> torch.Tensor:
        x = run_layers([self.conv1], x, feat_cache, feat_idx)
        x = run_layers(self.middle, x, feat_cache, feat_idx)
        x = run_layers(self.upsamples, x, feat_cache, feat_idx)
        return run_layers(self.head, x, feat_cache, feat_idx)


def count_conv3d(model: nn.Module) -> int:
    return sum(1 for m in model.modules() if isinstance(m, CausalConv3d))


class WanVAE_(nn.Module):
    """The reference model: encoder, conv1 (moments), conv2, decoder."""

    def __init__(self, dim: int = 128, z_dim: int = 4, dim_mult: List[int] = [1, 2, 4, 4], num_res_blocks: int = 2,
                 attn_scales: List[float] = [], temperal_downsample: List[bool] = [True, True, False],
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        self.temperal_upsample = temperal_downsample[::-1]
        self.encoder = Encoder3d(dim, z_dim * 2, dim_mult, num_res_blocks, attn_scales, temperal_downsample, dropout)
        self.conv1 = CausalConv3d(z_dim * 2, z_dim * 2, 1)
        self.conv2 = CausalConv3d(z_dim, z_dim, 1)
        self.decoder = Decoder3d(dim, z_dim, dim_mult, num_res_blocks, attn_scales, self.temperal_upsample, dropout)

    def encode_moments(self, x: torch.Tensor, chunk: int) -> torch.Tensor:
        """Encoder over [0], then 4*chunk frames per call (fresh cache), then conv1."""
        cache: Cache = [None] * count_conv3d(self.encoder)

        def call(frames: torch.Tensor, first: bool) -> torch.Tensor:
            return self.encoder(frames, feat_cache=cache, feat_idx=[0])

        return self.conv1(wc.first_then_chunks(x, 4 * chunk, call))

    def decode_frames(self, x: torch.Tensor, chunk: int) -> torch.Tensor:
        """Decoder (after conv2) over [0], then `chunk` latent frames per call."""
        cache: Cache = [None] * count_conv3d(self.decoder)

        def call(frames: torch.Tensor, first: bool) -> torch.Tensor:
            return self.decoder(frames, feat_cache=cache, feat_idx=[0])

        return wc.first_then_chunks(x, chunk, call)


def config_from_state_dict(sd: dict) -> dict:
    """dim and z_dim from shapes: encoder.conv1.weight is [dim,3,3,3,3], conv2 [z,z,1,1,1]."""
    return {"dim": int(sd["encoder.conv1.weight"].shape[0]), "z_dim": int(sd["conv2.weight"].shape[0])}


def build(dim: int, z_dim: int) -> WanVAE_:
    """The reference's `_video_vae` config with the given widths."""
    return WanVAE_(dim=dim, z_dim=z_dim, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                   temperal_downsample=[False, True, True], dropout=0.0)


class Engine:
    """Engine `torch` for Wan 2.1: normalized latents in and out, options as in candle."""

    engine = "torch"
    model_name = "wan2.1"
    scale = 8  # spatial compression

    def __init__(self, sd: dict, device: torch.device, precision: wc.Precision) -> None:
        cfg = config_from_state_dict(sd)
        self.dim, self.z_dim = cfg["dim"], cfg["z_dim"]
        model = build(self.dim, self.z_dim)
        model.load_state_dict({k: v.to(torch.float32) for k, v in sd.items()}, strict=True)
        self.model = model.eval().requires_grad_(False).to(device=device, dtype=precision.weight_dtype)
        self.device = device
        self.precision = precision
        self.mean, self.std = LATENT_MEAN, LATENT_STD

    def compute_dtype(self) -> str:
        return self.precision.describe(self.device)

    def encode(self, video: torch.Tensor, opts: wc.RunOptions) -> torch.Tensor:
        """video [1,3,T,H,W] -> normalized latent [1,z,1+(T-1)//4,H/8,W/8] in the precision."""
        t = wc.frames_used(video.shape[2])
        x = video[:, :, :t].to(self.device, self.precision.weight_dtype)
        h, w = x.shape[3], x.shape[4]
        with torch.inference_mode(), self.precision.context(self.device):
            fn = lambda tile: self.model.encode_moments(tile, opts.chunk)  # noqa: E731
            if wc.needs_tiling(opts.tiling, h, w):
                moments = wc.tiled_encode(x, opts.tiling, self.scale, fn)
            else:
                moments = fn(x)
        mu = moments[:, :self.z_dim]
        return wc.normalize(mu, self.mean, self.std, self.precision.dtype)

    def decode(self, latent: torch.Tensor, opts: wc.RunOptions) -> torch.Tensor:
        """normalized latent [1,z,t,h,w] -> video [1,3,1+4(t-1),8h,8w], not clamped."""
        z = wc.denormalize(latent.to(self.device), self.mean, self.std, self.precision.weight_dtype)
        h, w = z.shape[3], z.shape[4]
        with torch.inference_mode(), self.precision.context(self.device):
            x = self.model.conv2(z)
            fn = lambda tile: self.model.decode_frames(tile, opts.chunk)  # noqa: E731
            if wc.needs_tiling(opts.tiling, self.scale * h, self.scale * w):
                return wc.tiled_decode(x, opts.tiling, self.scale, fn)
            return fn(x)
