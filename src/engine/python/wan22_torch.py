"""Engine `torch`, Wan 2.2 (TI2V-5B VAE): a port of the official `wan/modules/vae2_2.py`
(Wan-Video/Wan2.2 @ fa96d09, the code that produced the wan22 fixtures), with its module
and parameter names. Blocks that compute the same thing as in Wan 2.1 (causal conv and its
cache step, RMS norm, residual and attention blocks, resample with a C -> C upsample conv),
the encoder/decoder loops, the time loops and the engine come from `wan_blocks`; what is new
here: the 2x2 patchify, the parameter-free AvgDown3D / DupUp3D shortcuts around each stage,
the 256-wide decoder, 48 latent channels.

Time chunking and precision as for Wan 2.1 (`wan_common`). Tiling, in pixels of the video
(`wan_blocks.Engine` with patch 2, scale 16): encode cuts the patchified video into TILE/2
tiles at a stride of (TILE-OVERLAP)/2 (TILE px of video) and blends the latents over
OVERLAP/16; decode cuts the latent into TILE/16 tiles and blends the decoder's patchified
output over OVERLAP/2 rows/cols before unpatchifying, exactly as diffusers' `tiled_decode`
does for Wan 2.2 (TILE and OVERLAP must be multiples of 16).
"""
from __future__ import annotations

from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

import wan_blocks as wt
import wan_configs
from wan_blocks import AttentionBlock, Cache, CausalConv3d, RMS_norm, Resample, ResidualBlock

# Latent normalization of Wan 2.2 (`Wan2_2_VAE.__init__` in the reference).
LATENT_MEAN = [
    -0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174, 0.1838, 0.1557, -0.1382, 0.0542, 0.2813, 0.0891,
    0.1570, -0.0098, 0.0375, -0.1825, -0.2246, -0.1207, -0.0698, 0.5109, 0.2665, -0.2108, -0.2158, 0.2502,
    -0.2055, -0.0322, 0.1109, 0.1567, -0.0729, 0.0899, -0.2799, -0.1230, -0.0313, -0.1649, 0.0117, 0.0723,
    -0.2839, -0.2083, -0.0520, 0.3748, 0.0152, 0.1957, 0.1433, -0.2944, 0.3573, -0.0548, -0.1681, -0.0667,
]
LATENT_STD = [
    0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.4990, 0.4818, 0.5013, 0.8158, 1.0344, 0.5894, 1.0901,
    0.6885, 0.6165, 0.8454, 0.4978, 0.5759, 0.3523, 0.7135, 0.6804, 0.5833, 1.4146, 0.8986, 0.5659,
    0.7069, 0.5338, 0.4889, 0.4917, 0.4069, 0.4999, 0.6866, 0.4093, 0.5709, 0.6065, 0.6415, 0.4944,
    0.5726, 1.2042, 0.5458, 1.6887, 0.3971, 1.0600, 0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744,
]
PATCH = 2


def patchify(x: torch.Tensor) -> torch.Tensor:
    """'b c f (h q) (w r) -> b (c r q) f h w' with q = r = 2."""
    b, c, f, h, w = x.shape
    x = x.reshape(b, c, f, h // PATCH, PATCH, w // PATCH, PATCH)  # b c f h q w r
    x = x.permute(0, 1, 6, 4, 2, 3, 5)  # b c r q f h w
    return x.reshape(b, c * PATCH * PATCH, f, h // PATCH, w // PATCH)


def unpatchify(x: torch.Tensor) -> torch.Tensor:
    """'b (c r q) f h w -> b c f (h q) (w r)'."""
    b, crq, f, h, w = x.shape
    c = crq // (PATCH * PATCH)
    x = x.reshape(b, c, PATCH, PATCH, f, h, w)  # b c r q f h w
    x = x.permute(0, 1, 4, 5, 3, 6, 2)  # b c f h q w r
    return x.reshape(b, c, f, h * PATCH, w * PATCH)


class AvgDown3D(nn.Module):
    """Parameter-free shortcut: fold factor_t x factor_s x factor_s into channels and
    average groups down to out_channels (time padded in front to a multiple of factor_t)."""

    def __init__(self, in_channels: int, out_channels: int, factor_t: int, factor_s: int = 1) -> None:
        super().__init__()
        self.out_channels = out_channels
        self.factor_t = factor_t
        self.factor_s = factor_s
        self.factor = factor_t * factor_s * factor_s
        assert in_channels * self.factor % out_channels == 0
        self.group_size = in_channels * self.factor // out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad_t = (self.factor_t - x.shape[2] % self.factor_t) % self.factor_t
        x = F.pad(x, (0, 0, 0, 0, pad_t, 0))
        b, c, t, h, w = x.shape
        ft, fs = self.factor_t, self.factor_s
        x = x.view(b, c, t // ft, ft, h // fs, fs, w // fs, fs)
        x = x.permute(0, 1, 3, 5, 7, 2, 4, 6).contiguous()
        x = x.view(b, c * self.factor, t // ft, h // fs, w // fs)
        x = x.view(b, self.out_channels, self.group_size, t // ft, h // fs, w // fs)
        return x.mean(dim=2)


class DupUp3D(nn.Module):
    """Parameter-free shortcut: repeat channels, unfold (out, ft, fs, fs) into time and
    space; the first decoder call drops the first ft - 1 frames."""

    def __init__(self, in_channels: int, out_channels: int, factor_t: int, factor_s: int = 1) -> None:
        super().__init__()
        self.out_channels = out_channels
        self.factor_t = factor_t
        self.factor_s = factor_s
        self.factor = factor_t * factor_s * factor_s
        assert out_channels * self.factor % in_channels == 0
        self.repeats = out_channels * self.factor // in_channels

    def forward(self, x: torch.Tensor, first_chunk: bool = False) -> torch.Tensor:
        x = x.repeat_interleave(self.repeats, dim=1)
        ft, fs = self.factor_t, self.factor_s
        x = x.view(x.size(0), self.out_channels, ft, fs, fs, x.size(2), x.size(3), x.size(4))
        x = x.permute(0, 1, 5, 2, 6, 3, 7, 4).contiguous()
        x = x.view(x.size(0), self.out_channels, x.size(2) * ft, x.size(4) * fs, x.size(6) * fs)
        if first_chunk:
            x = x[:, :, ft - 1:, :, :]
        return x


class Down_ResidualBlock(nn.Module):
    """`mult` residual blocks then an optional downsample, plus AvgDown3D of the input."""

    takes_cache = True

    def __init__(self, in_dim: int, out_dim: int, dropout: float, mult: int, temperal_downsample: bool = False,
                 down_flag: bool = False) -> None:
        super().__init__()
        self.avg_shortcut = AvgDown3D(in_dim, out_dim, factor_t=2 if temperal_downsample else 1,
                                      factor_s=2 if down_flag else 1)
        downsamples: List[nn.Module] = []
        for _ in range(mult):
            downsamples.append(ResidualBlock(in_dim, out_dim, dropout))
            in_dim = out_dim
        if down_flag:
            downsamples.append(Resample(out_dim, mode="downsample3d" if temperal_downsample else "downsample2d",
                                        up_out=out_dim))
        self.downsamples = nn.Sequential(*downsamples)

    def forward(self, x: torch.Tensor, feat_cache: Optional[Cache] = None, feat_idx: List[int] = [0]) -> torch.Tensor:
        x_copy = x.clone()
        for module in self.downsamples:
            x = module(x, feat_cache, feat_idx)
        return x + self.avg_shortcut(x_copy)


class Up_ResidualBlock(nn.Module):
    """`mult` residual blocks then an optional upsample (C -> C), plus DupUp3D of the input
    when the stage upsamples."""

    takes_cache = True
    takes_first_chunk = True

    def __init__(self, in_dim: int, out_dim: int, dropout: float, mult: int, temperal_upsample: bool = False,
                 up_flag: bool = False) -> None:
        super().__init__()
        self.avg_shortcut = (DupUp3D(in_dim, out_dim, factor_t=2 if temperal_upsample else 1,
                                     factor_s=2 if up_flag else 1) if up_flag else None)
        upsamples: List[nn.Module] = []
        for _ in range(mult):
            upsamples.append(ResidualBlock(in_dim, out_dim, dropout))
            in_dim = out_dim
        if up_flag:
            upsamples.append(Resample(out_dim, mode="upsample3d" if temperal_upsample else "upsample2d",
                                      up_out=out_dim))
        self.upsamples = nn.Sequential(*upsamples)

    def forward(self, x: torch.Tensor, feat_cache: Optional[Cache] = None, feat_idx: List[int] = [0],
                first_chunk: bool = False) -> torch.Tensor:
        x_main = x.clone()
        for module in self.upsamples:
            x_main = module(x_main, feat_cache, feat_idx)
        if self.avg_shortcut is not None:
            return x_main + self.avg_shortcut(x, first_chunk)
        return x_main


class Encoder3d(wt.Encoder):
    """`vae2_2.py`'s encoder: 12 patchified input channels, stages with AvgDown3D shortcuts."""

    def __init__(self, dim: int = 128, z_dim: int = 4, dim_mult: List[int] = [1, 2, 4, 4], num_res_blocks: int = 2,
                 attn_scales: List[float] = [], temperal_downsample: List[bool] = [True, True, False],
                 dropout: float = 0.0) -> None:
        super().__init__()
        dims = [dim * u for u in [1] + dim_mult]
        self.conv1 = CausalConv3d(12, dims[0], 3, padding=1)
        downsamples = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            t_down = temperal_downsample[i] if i < len(temperal_downsample) else False
            downsamples.append(Down_ResidualBlock(in_dim, out_dim, dropout, num_res_blocks, t_down,
                                                  down_flag=i != len(dim_mult) - 1))
        self.downsamples = nn.Sequential(*downsamples)
        self.middle = nn.Sequential(ResidualBlock(out_dim, out_dim, dropout), AttentionBlock(out_dim),
                                    ResidualBlock(out_dim, out_dim, dropout))
        self.head = nn.Sequential(RMS_norm(out_dim, images=False), nn.SiLU(),
                                  CausalConv3d(out_dim, z_dim, 3, padding=1))


class Decoder3d(wt.Decoder):
    """`vae2_2.py`'s decoder: stages with DupUp3D shortcuts, 12 patchified output channels."""

    def __init__(self, dim: int = 128, z_dim: int = 4, dim_mult: List[int] = [1, 2, 4, 4], num_res_blocks: int = 2,
                 attn_scales: List[float] = [], temperal_upsample: List[bool] = [False, True, True],
                 dropout: float = 0.0) -> None:
        super().__init__()
        dims = [dim * u for u in [dim_mult[-1]] + dim_mult[::-1]]
        self.conv1 = CausalConv3d(z_dim, dims[0], 3, padding=1)
        self.middle = nn.Sequential(ResidualBlock(dims[0], dims[0], dropout), AttentionBlock(dims[0]),
                                    ResidualBlock(dims[0], dims[0], dropout))
        upsamples = []
        for i, (in_dim, out_dim) in enumerate(zip(dims[:-1], dims[1:])):
            t_up = temperal_upsample[i] if i < len(temperal_upsample) else False
            upsamples.append(Up_ResidualBlock(in_dim, out_dim, dropout, num_res_blocks + 1, t_up,
                                              up_flag=i != len(dim_mult) - 1))
        self.upsamples = nn.Sequential(*upsamples)
        self.head = nn.Sequential(RMS_norm(out_dim, images=False), nn.SiLU(), CausalConv3d(out_dim, 12, 3, padding=1))


class WanVAE_(wt.WanVAEBase):
    """The reference model (patchify and normalization live in the engine)."""

    def __init__(self, dim: int = 160, dec_dim: int = 256, z_dim: int = 16, dim_mult: List[int] = [1, 2, 4, 4],
                 num_res_blocks: int = 2, attn_scales: List[float] = [],
                 temperal_downsample: List[bool] = [True, True, False], dropout: float = 0.0) -> None:
        super().__init__()
        self.z_dim = z_dim
        self.temperal_upsample = temperal_downsample[::-1]
        self.encoder = Encoder3d(dim, z_dim * 2, dim_mult, num_res_blocks, attn_scales, temperal_downsample, dropout)
        self.conv1 = CausalConv3d(z_dim * 2, z_dim * 2, 1)
        self.conv2 = CausalConv3d(z_dim, z_dim, 1)
        self.decoder = Decoder3d(dec_dim, z_dim, dim_mult, num_res_blocks, attn_scales, self.temperal_upsample,
                                 dropout)


config_from_state_dict = wan_configs.config22


def build(dim: int, dec_dim: int, z_dim: int) -> WanVAE_:
    """`Wan2_2_VAE`'s config: temperal_downsample [False, True, True]."""
    return WanVAE_(dim=dim, dec_dim=dec_dim, z_dim=z_dim, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                   temperal_downsample=[False, True, True], dropout=0.0)


class Engine(wt.Engine):
    """Engine `torch` for Wan 2.2: normalized latents in and out, options as in candle."""

    model_name = "wan2.2"
    label = "Wan 2.2"
    scale = 16
    patch = PATCH
    mean, std = LATENT_MEAN, LATENT_STD

    @staticmethod
    def config(sd: dict) -> dict:
        return config_from_state_dict(sd)

    @staticmethod
    def build(cfg: dict) -> WanVAE_:
        return build(cfg["dim"], cfg["dec_dim"], cfg["z_dim"])

    def to_model(self, video: torch.Tensor) -> torch.Tensor:
        return patchify(video)

    def from_model(self, out: torch.Tensor) -> torch.Tensor:
        return unpatchify(out)

