"""Engine `torch`, Wan 2.1: a port of the official `wan/modules/vae.py` (Wan-Video/Wan2.1
@ 9737cba, the code that produced the fixtures) with its module and parameter names, so the
original checkpoint loads with `strict=True`. The blocks, loops and the engine both models
share live in `wan_blocks` (with the differences from the reference listed there); this file
holds Wan 2.1's layer lists, widths and latent statistics.
"""
from __future__ import annotations

from typing import List

import torch.nn as nn

import wan_blocks as wt
import wan_configs

# Latent normalization of Wan 2.1 (`WanVAE.__init__` in the reference).
LATENT_MEAN = [
    -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
    0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921,
]
LATENT_STD = [
    2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
    3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160,
]


class Encoder3d(wt.Encoder):
    """`vae.py`'s encoder: residual stages with Resample downsampling."""

    def __init__(self, dim: int = 128, z_dim: int = 4, dim_mult: List[int] = [1, 2, 4, 4], num_res_blocks: int = 2,
                 attn_scales: List[float] = [], temperal_downsample: List[bool] = [True, True, False],
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        dims = [dim * u for u in [1] + dim_mult]
        scale = 1.0
        self.conv1 = wt.CausalConv3d(3, dims[0], 3, padding=1)
        downsamples = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            for _ in range(num_res_blocks):
                downsamples.append(wt.ResidualBlock(in_dim, out_dim, dropout))
                if scale in attn_scales:
                    downsamples.append(wt.AttentionBlock(out_dim))
                in_dim = out_dim
            if i != len(dim_mult) - 1:
                mode = "downsample3d" if temperal_downsample[i] else "downsample2d"
                downsamples.append(wt.Resample(out_dim, mode=mode))
                scale /= 2.0
        self.downsamples = nn.Sequential(*downsamples)
        self.middle = nn.Sequential(wt.ResidualBlock(out_dim, out_dim, dropout), wt.AttentionBlock(out_dim),
                                    wt.ResidualBlock(out_dim, out_dim, dropout))
        self.head = nn.Sequential(wt.RMS_norm(out_dim, images=False), nn.SiLU(),
                                  wt.CausalConv3d(out_dim, z_dim, 3, padding=1))



class Decoder3d(wt.Decoder):
    """`vae.py`'s decoder: residual stages with Resample upsampling (halving the width)."""

    def __init__(self, dim: int = 128, z_dim: int = 4, dim_mult: List[int] = [1, 2, 4, 4], num_res_blocks: int = 2,
                 attn_scales: List[float] = [], temperal_upsample: List[bool] = [False, True, True],
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        dims = [dim * u for u in [dim_mult[-1]] + dim_mult[::-1]]
        scale = 1.0 / 2**(len(dim_mult) - 2)
        self.conv1 = wt.CausalConv3d(z_dim, dims[0], 3, padding=1)
        self.middle = nn.Sequential(wt.ResidualBlock(dims[0], dims[0], dropout), wt.AttentionBlock(dims[0]),
                                    wt.ResidualBlock(dims[0], dims[0], dropout))
        upsamples = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            if i == 1 or i == 2 or i == 3:
                in_dim = in_dim // 2
            for _ in range(num_res_blocks + 1):
                upsamples.append(wt.ResidualBlock(in_dim, out_dim, dropout))
                if scale in attn_scales:
                    upsamples.append(wt.AttentionBlock(out_dim))
                in_dim = out_dim
            if i != len(dim_mult) - 1:
                mode = "upsample3d" if temperal_upsample[i] else "upsample2d"
                upsamples.append(wt.Resample(out_dim, mode=mode))
                scale *= 2.0
        self.upsamples = nn.Sequential(*upsamples)
        self.head = nn.Sequential(wt.RMS_norm(out_dim, images=False), nn.SiLU(),
                                  wt.CausalConv3d(out_dim, 3, 3, padding=1))


class WanVAE_(wt.WanVAEBase):
    """The reference model: encoder, conv1 (moments), conv2, decoder."""

    def __init__(self, dim: int = 128, z_dim: int = 4, dim_mult: List[int] = [1, 2, 4, 4], num_res_blocks: int = 2,
                 attn_scales: List[float] = [], temperal_downsample: List[bool] = [True, True, False],
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        self.temperal_upsample = temperal_downsample[::-1]
        self.encoder = Encoder3d(dim, z_dim * 2, dim_mult, num_res_blocks, attn_scales, temperal_downsample, dropout)
        self.conv1 = wt.CausalConv3d(z_dim * 2, z_dim * 2, 1)
        self.conv2 = wt.CausalConv3d(z_dim, z_dim, 1)
        self.decoder = Decoder3d(dim, z_dim, dim_mult, num_res_blocks, attn_scales, self.temperal_upsample, dropout)


config_from_state_dict = wan_configs.config21


def build(dim: int, z_dim: int) -> WanVAE_:
    """The reference's `_video_vae` config with the given widths."""
    return WanVAE_(dim=dim, z_dim=z_dim, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                   temperal_downsample=[False, True, True], dropout=0.0)


class Engine(wt.Engine):
    """Engine `torch` for Wan 2.1: normalized latents in and out, options as in candle."""

    model_name = "wan2.1"
    label = "Wan 2.1"
    scale = 8
    mean, std = LATENT_MEAN, LATENT_STD

    @staticmethod
    def config(sd: dict) -> dict:
        return config_from_state_dict(sd)

    @staticmethod
    def build(cfg: dict) -> WanVAE_:
        return build(cfg["dim"], cfg["z_dim"])
