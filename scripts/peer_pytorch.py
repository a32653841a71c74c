#!/usr/bin/env python3
"""PyTorch peer for wan-vae-bench: the official Wan 2.1 VAE computation, on CPU, fp32 or bf16.

A faithful port of `wan/modules/vae.py` from Wan-Video/Wan2.1 @ 9737cba (the code that
produced `tests/fixtures/`), with the reference's module and parameter names, so
`load_state_dict(strict=True)` accepts the original checkpoint layout. It exists to give
the README a same-machine speed peer: `scripts/peer_compare.sh` runs it next to our binary
and prints ours / PyTorch.

Differences from the reference file, none of which change the arithmetic:
  * no `einops` dependency (`rearrange` is written as permute + reshape);
  * the `'Rep'` cache marker is tested with `isinstance` instead of `tensor != 'Rep'`;
  * `--chunk N` runs N latent frames per decoder call (4N frames per encoder call) after
    the first frame, the "temporal chunk" knob of our CLI (N=1 is exactly the reference);
  * no autocast / clamp wrapper: fp32 in, unclamped fp32 out (like the fixtures);
  * `bench --precision bf16` casts the module, input and latent scale to bfloat16 (what our
    `--precision bf16` stores; oneDNN picks its bf16 kernels).

Usage (PyTorch lives in a venv outside the repo, see scripts/peer_compare.sh):
  python scripts/peer_pytorch.py validate --weights tests/fixtures/wan21_tiny.weights.safetensors \
      --cases tests/fixtures/wan21_tiny.cases.safetensors [--chunk N]
  python scripts/peer_pytorch.py bench --weights synthetic --frames 5 --size 64x64 \
      --warmup 1 --runs 3 [--threads N] [--chunk N] [--precision fp32|bf16] [--json OUT.json]
"""
import argparse
import json
import math
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CACHE_T = 2

# Latent normalization of Wan 2.1 (WanVAE.__init__ in the reference).
LATENT_MEAN = [
    -0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
    0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921,
]
LATENT_STD = [
    2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
    3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160,
]

# Analytic cost at 5 frames, 64x64 (2 x multiply-adds of convs and matmuls), GFLOP.
ENC_GFLOP_5x64 = 109.25
DEC_GFLOP_5x64 = 182.40


def _to_frames(x):
    """'b c t h w -> (b t) c h w'"""
    b, c, t, h, w = x.shape
    return x.permute(0, 2, 1, 3, 4).reshape(b * t, c, h, w)


def _from_frames(x, t):
    """'(b t) c h w -> b c t h w'"""
    bt, c, h, w = x.shape
    return x.reshape(bt // t, t, c, h, w).permute(0, 2, 1, 3, 4)


def _is_rep(v):
    return isinstance(v, str) and v == "Rep"


class CausalConv3d(nn.Conv3d):
    """Causal 3d convolution: 2*pt zero frames in front, none behind."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._padding = (self.padding[2], self.padding[2], self.padding[1],
                         self.padding[1], 2 * self.padding[0], 0)
        self.padding = (0, 0, 0)

    def forward(self, x, cache_x=None):
        padding = list(self._padding)
        if cache_x is not None and self._padding[4] > 0:
            cache_x = cache_x.to(x.device)
            x = torch.cat([cache_x, x], dim=2)
            padding[4] -= cache_x.shape[2]
        x = F.pad(x, padding)
        return super().forward(x)


class RMS_norm(nn.Module):

    def __init__(self, dim, channel_first=True, images=True, bias=False):
        super().__init__()
        broadcastable_dims = (1, 1, 1) if not images else (1, 1)
        shape = (dim, *broadcastable_dims) if channel_first else (dim,)
        self.channel_first = channel_first
        self.scale = dim**0.5
        self.gamma = nn.Parameter(torch.ones(shape))
        self.bias = nn.Parameter(torch.zeros(shape)) if bias else 0.

    def forward(self, x):
        return F.normalize(x, dim=(1 if self.channel_first else -1)) * self.scale * self.gamma + self.bias


class Upsample(nn.Upsample):

    def forward(self, x):
        # reference: fix bfloat16 support for nearest neighbour interpolation
        return super().forward(x.float()).type_as(x)


class Resample(nn.Module):

    def __init__(self, dim, mode):
        assert mode in ("none", "upsample2d", "upsample3d", "downsample2d", "downsample3d")
        super().__init__()
        self.dim = dim
        self.mode = mode
        if mode == "upsample2d":
            self.resample = nn.Sequential(
                Upsample(scale_factor=(2., 2.), mode="nearest-exact"),
                nn.Conv2d(dim, dim // 2, 3, padding=1))
        elif mode == "upsample3d":
            self.resample = nn.Sequential(
                Upsample(scale_factor=(2., 2.), mode="nearest-exact"),
                nn.Conv2d(dim, dim // 2, 3, padding=1))
            self.time_conv = CausalConv3d(dim, dim * 2, (3, 1, 1), padding=(1, 0, 0))
        elif mode == "downsample2d":
            self.resample = nn.Sequential(
                nn.ZeroPad2d((0, 1, 0, 1)),
                nn.Conv2d(dim, dim, 3, stride=(2, 2)))
        elif mode == "downsample3d":
            self.resample = nn.Sequential(
                nn.ZeroPad2d((0, 1, 0, 1)),
                nn.Conv2d(dim, dim, 3, stride=(2, 2)))
            self.time_conv = CausalConv3d(dim, dim, (3, 1, 1), stride=(2, 1, 1), padding=(0, 0, 0))
        else:
            self.resample = nn.Identity()

    def forward(self, x, feat_cache=None, feat_idx=[0]):
        b, c, t, h, w = x.size()
        if self.mode == "upsample3d":
            if feat_cache is not None:
                idx = feat_idx[0]
                if feat_cache[idx] is None:
                    feat_cache[idx] = "Rep"
                    feat_idx[0] += 1
                else:
                    cache_x = x[:, :, -CACHE_T:, :, :].clone()
                    if cache_x.shape[2] < 2 and feat_cache[idx] is not None and not _is_rep(feat_cache[idx]):
                        # cache last frame of last two chunk
                        cache_x = torch.cat([feat_cache[idx][:, :, -1, :, :].unsqueeze(2).to(cache_x.device),
                                             cache_x], dim=2)
                    if cache_x.shape[2] < 2 and feat_cache[idx] is not None and _is_rep(feat_cache[idx]):
                        cache_x = torch.cat([torch.zeros_like(cache_x).to(cache_x.device), cache_x], dim=2)
                    if _is_rep(feat_cache[idx]):
                        x = self.time_conv(x)
                    else:
                        x = self.time_conv(x, feat_cache[idx])
                    feat_cache[idx] = cache_x
                    feat_idx[0] += 1

                    x = x.reshape(b, 2, c, t, h, w)
                    x = torch.stack((x[:, 0, :, :, :, :], x[:, 1, :, :, :, :]), 3)
                    x = x.reshape(b, c, t * 2, h, w)
        t = x.shape[2]
        x = _to_frames(x)
        x = self.resample(x)
        x = _from_frames(x, t)

        if self.mode == "downsample3d":
            if feat_cache is not None:
                idx = feat_idx[0]
                if feat_cache[idx] is None:
                    feat_cache[idx] = x.clone()
                    feat_idx[0] += 1
                else:
                    cache_x = x[:, :, -1:, :, :].clone()
                    x = self.time_conv(torch.cat([feat_cache[idx][:, :, -1:, :, :], x], 2))
                    feat_cache[idx] = cache_x
                    feat_idx[0] += 1
        return x


def _cached_conv(layer, x, feat_cache, feat_idx):
    """The reference's cache step around one CausalConv3d (inlined there at every site)."""
    idx = feat_idx[0]
    cache_x = x[:, :, -CACHE_T:, :, :].clone()
    if cache_x.shape[2] < 2 and feat_cache[idx] is not None:
        # cache last frame of last two chunk
        cache_x = torch.cat([feat_cache[idx][:, :, -1, :, :].unsqueeze(2).to(cache_x.device), cache_x], dim=2)
    x = layer(x, feat_cache[idx])
    feat_cache[idx] = cache_x
    feat_idx[0] += 1
    return x


class ResidualBlock(nn.Module):

    def __init__(self, in_dim, out_dim, dropout=0.0):
        super().__init__()
        self.in_dim = in_dim
        self.out_dim = out_dim
        self.residual = nn.Sequential(
            RMS_norm(in_dim, images=False), nn.SiLU(),
            CausalConv3d(in_dim, out_dim, 3, padding=1),
            RMS_norm(out_dim, images=False), nn.SiLU(), nn.Dropout(dropout),
            CausalConv3d(out_dim, out_dim, 3, padding=1))
        self.shortcut = CausalConv3d(in_dim, out_dim, 1) if in_dim != out_dim else nn.Identity()

    def forward(self, x, feat_cache=None, feat_idx=[0]):
        h = self.shortcut(x)
        for layer in self.residual:
            if isinstance(layer, CausalConv3d) and feat_cache is not None:
                x = _cached_conv(layer, x, feat_cache, feat_idx)
            else:
                x = layer(x)
        return x + h


class AttentionBlock(nn.Module):
    """Causal self-attention with a single head (per frame)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.norm = RMS_norm(dim)
        self.to_qkv = nn.Conv2d(dim, dim * 3, 1)
        self.proj = nn.Conv2d(dim, dim, 1)
        nn.init.zeros_(self.proj.weight)

    def forward(self, x):
        identity = x
        b, c, t, h, w = x.size()
        x = _to_frames(x)
        x = self.norm(x)
        q, k, v = self.to_qkv(x).reshape(b * t, 1, c * 3, -1).permute(0, 1, 3, 2).contiguous().chunk(3, dim=-1)
        x = F.scaled_dot_product_attention(q, k, v)
        x = x.squeeze(1).permute(0, 2, 1).reshape(b * t, c, h, w)
        x = self.proj(x)
        x = _from_frames(x, t)
        return x + identity


class Encoder3d(nn.Module):

    def __init__(self, dim=128, z_dim=4, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                 temperal_downsample=[True, True, False], dropout=0.0):
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        self.dim_mult = dim_mult
        self.num_res_blocks = num_res_blocks
        self.attn_scales = attn_scales
        self.temperal_downsample = temperal_downsample

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
        self.middle = nn.Sequential(
            ResidualBlock(out_dim, out_dim, dropout), AttentionBlock(out_dim),
            ResidualBlock(out_dim, out_dim, dropout))
        self.head = nn.Sequential(
            RMS_norm(out_dim, images=False), nn.SiLU(),
            CausalConv3d(out_dim, z_dim, 3, padding=1))

    def forward(self, x, feat_cache=None, feat_idx=[0]):
        if feat_cache is not None:
            x = _cached_conv(self.conv1, x, feat_cache, feat_idx)
        else:
            x = self.conv1(x)
        for layer in self.downsamples:
            if feat_cache is not None:
                x = layer(x, feat_cache, feat_idx)
            else:
                x = layer(x)
        for layer in self.middle:
            if isinstance(layer, ResidualBlock) and feat_cache is not None:
                x = layer(x, feat_cache, feat_idx)
            else:
                x = layer(x)
        for layer in self.head:
            if isinstance(layer, CausalConv3d) and feat_cache is not None:
                x = _cached_conv(layer, x, feat_cache, feat_idx)
            else:
                x = layer(x)
        return x


class Decoder3d(nn.Module):

    def __init__(self, dim=128, z_dim=4, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                 temperal_upsample=[False, True, True], dropout=0.0):
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        self.dim_mult = dim_mult
        self.num_res_blocks = num_res_blocks
        self.attn_scales = attn_scales
        self.temperal_upsample = temperal_upsample

        dims = [dim * u for u in [dim_mult[-1]] + dim_mult[::-1]]
        scale = 1.0 / 2**(len(dim_mult) - 2)
        self.conv1 = CausalConv3d(z_dim, dims[0], 3, padding=1)
        self.middle = nn.Sequential(
            ResidualBlock(dims[0], dims[0], dropout), AttentionBlock(dims[0]),
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
        self.head = nn.Sequential(
            RMS_norm(out_dim, images=False), nn.SiLU(),
            CausalConv3d(out_dim, 3, 3, padding=1))

    def forward(self, x, feat_cache=None, feat_idx=[0]):
        if feat_cache is not None:
            x = _cached_conv(self.conv1, x, feat_cache, feat_idx)
        else:
            x = self.conv1(x)
        for layer in self.middle:
            if isinstance(layer, ResidualBlock) and feat_cache is not None:
                x = layer(x, feat_cache, feat_idx)
            else:
                x = layer(x)
        for layer in self.upsamples:
            if feat_cache is not None:
                x = layer(x, feat_cache, feat_idx)
            else:
                x = layer(x)
        for layer in self.head:
            if isinstance(layer, CausalConv3d) and feat_cache is not None:
                x = _cached_conv(layer, x, feat_cache, feat_idx)
            else:
                x = layer(x)
        return x


def count_conv3d(model):
    return sum(1 for m in model.modules() if isinstance(m, CausalConv3d))


class WanVAE_(nn.Module):

    def __init__(self, dim=128, z_dim=4, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                 temperal_downsample=[True, True, False], dropout=0.0):
        super().__init__()
        self.dim = dim
        self.z_dim = z_dim
        self.dim_mult = dim_mult
        self.num_res_blocks = num_res_blocks
        self.attn_scales = attn_scales
        self.temperal_downsample = temperal_downsample
        self.temperal_upsample = temperal_downsample[::-1]

        self.encoder = Encoder3d(dim, z_dim * 2, dim_mult, num_res_blocks, attn_scales,
                                 self.temperal_downsample, dropout)
        self.conv1 = CausalConv3d(z_dim * 2, z_dim * 2, 1)
        self.conv2 = CausalConv3d(z_dim, z_dim, 1)
        self.decoder = Decoder3d(dim, z_dim, dim_mult, num_res_blocks, attn_scales,
                                 self.temperal_upsample, dropout)

    def encode(self, x, scale, chunk=1):
        """Reference encode; `chunk` > 1 feeds 4*chunk frames per encoder call after frame 0."""
        self.clear_cache()
        t = x.shape[2]
        iter_ = 1 + (t - 1) // 4
        # chunk == 1 gives exactly the reference's calls: [0:1], [1:5], [5:9], ...
        bounds = [(0, 1)]
        i = 1
        while i < iter_:
            j = min(i + chunk, iter_)
            bounds.append((1 + 4 * (i - 1), 1 + 4 * (j - 1)))
            i = j
        out = None
        for (s, e) in bounds:
            self._enc_conv_idx = [0]
            out_ = self.encoder(x[:, :, s:e, :, :], feat_cache=self._enc_feat_map, feat_idx=self._enc_conv_idx)
            out = out_ if out is None else torch.cat([out, out_], 2)
        mu, log_var = self.conv1(out).chunk(2, dim=1)
        if isinstance(scale[0], torch.Tensor):
            mu = (mu - scale[0].view(1, self.z_dim, 1, 1, 1)) * scale[1].view(1, self.z_dim, 1, 1, 1)
        else:
            mu = (mu - scale[0]) * scale[1]
        self.clear_cache()
        return mu

    def decode(self, z, scale, chunk=1):
        """Reference decode; `chunk` > 1 feeds `chunk` latent frames per decoder call after frame 0."""
        self.clear_cache()
        if isinstance(scale[0], torch.Tensor):
            z = z / scale[1].view(1, self.z_dim, 1, 1, 1) + scale[0].view(1, self.z_dim, 1, 1, 1)
        else:
            z = z / scale[1] + scale[0]
        iter_ = z.shape[2]
        x = self.conv2(z)
        bounds = [(0, 1)]
        i = 1
        while i < iter_:
            j = min(i + chunk, iter_)
            bounds.append((i, j))
            i = j
        out = None
        for (s, e) in bounds:
            self._conv_idx = [0]
            out_ = self.decoder(x[:, :, s:e, :, :], feat_cache=self._feat_map, feat_idx=self._conv_idx)
            out = out_ if out is None else torch.cat([out, out_], 2)
        self.clear_cache()
        return out

    def clear_cache(self):
        self._conv_num = count_conv3d(self.decoder)
        self._conv_idx = [0]
        self._feat_map = [None] * self._conv_num
        # cache encode
        self._enc_conv_num = count_conv3d(self.encoder)
        self._enc_conv_idx = [0]
        self._enc_feat_map = [None] * self._enc_conv_num


# --------------------------------------------------------------------------------------
# Loading


def latent_scale():
    mean = torch.tensor(LATENT_MEAN, dtype=torch.float32)
    std = torch.tensor(LATENT_STD, dtype=torch.float32)
    return [mean, 1.0 / std]


def build_model(dim, z_dim):
    # the `_video_vae` config of the reference
    return WanVAE_(dim=dim, z_dim=z_dim, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                   temperal_downsample=[False, True, True], dropout=0.0)


def load_state_dict_file(path):
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file
        return load_file(path, device="cpu")
    sd = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    return sd


def load_model(weights, seed=0):
    """`weights`: a .safetensors / .pth path, or `synthetic` (dim 96, z 16, seeded random)."""
    if weights == "synthetic":
        model = build_model(96, 16)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("gamma"):
                    p.fill_(1.0)
                elif name.endswith("bias"):
                    p.zero_()
                else:
                    fan_in = p[0].numel()
                    p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))
        return model.eval(), "synthetic"
    sd = load_state_dict_file(weights)
    dim = sd["encoder.conv1.weight"].shape[0]
    z_dim = sd["conv2.weight"].shape[0]
    model = build_model(dim, z_dim)
    sd = {k: v.to(torch.float32) for k, v in sd.items()}
    model.load_state_dict(sd, strict=True)
    return model.eval(), weights


# --------------------------------------------------------------------------------------
# validate


def cmd_validate(args):
    from safetensors import safe_open
    model, _ = load_model(args.weights)
    scale = latent_scale()
    cases = {}
    with safe_open(args.cases, framework="pt") as f:
        for k in f.keys():
            case, role = k.rsplit(".", 1)
            cases.setdefault(case, {})[role] = f.get_tensor(k)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, dim {model.dim}, z_dim {model.z_dim}, "
          f"chunk {args.chunk}")
    ok = True
    worst = 0.0

    def check(case, role, got, want):
        nonlocal ok, worst
        if tuple(got.shape) != tuple(want.shape):
            print(f"  {case:8s} {role:8s} SHAPE MISMATCH got {tuple(got.shape)} want {tuple(want.shape)}")
            ok = False
            return
        err = (got - want).abs().max().item()
        tol = 1e-4 * max(1.0, want.abs().max().item())
        worst = max(worst, err)
        flag = "ok" if err <= tol else "FAIL"
        ok = ok and err <= tol
        print(f"  {case:8s} {role:8s} shape {str(tuple(want.shape)):22s} max|err| {err:.3e}  "
              f"(max|want| {want.abs().max().item():.3f}, tol {tol:.1e})  {flag}")

    with torch.inference_mode():
        for case in sorted(cases):
            c = cases[case]
            if "latent" in c:
                z = model.encode(c["input"], scale, chunk=args.chunk)
                check(case, "latent", z, c["latent"])
                y = model.decode(c["latent"], scale, chunk=args.chunk)
                check(case, "decoded", y, c["decoded"])
            else:
                y = model.decode(c["input"], scale, chunk=args.chunk)
                check(case, "decoded", y, c["decoded"])
    print(f"worst max|err| {worst:.3e}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


# --------------------------------------------------------------------------------------
# bench


def pass_stats(samples, warmup, gflop, frames):
    med = statistics.median(samples)
    return {
        "samples_s": samples,
        "warmup_s": warmup,
        "min_s": min(samples),
        "median_s": med,
        "mean_s": statistics.fmean(samples),
        "stddev_s": statistics.stdev(samples) if len(samples) > 1 else 0.0,
        "max_s": max(samples),
        "frames_per_s": frames / med,
        "gflop": gflop,
        "gflop_per_s": gflop / med,
    }


def cmd_bench(args):
    threads = args.threads or os.cpu_count()
    torch.set_num_threads(threads)
    try:
        w, h = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        sys.exit(f"--size must be WxH, got {args.size!r}")
    frames = args.frames
    if frames < 1:
        sys.exit("--frames must be >= 1")
    t_used = 1 + 4 * ((frames - 1) // 4)  # the reference ignores frames past the last group of 4
    n_lat = 1 + (frames - 1) // 4
    dec_frames = 1 + 4 * (n_lat - 1)
    exact = (frames == 5 and w == 64 and h == 64)
    factor = (w * h) / (64 * 64) * (t_used / 5)
    enc_gflop = ENC_GFLOP_5x64 * factor
    dec_gflop = DEC_GFLOP_5x64 * factor

    t0 = time.perf_counter()
    model, source = load_model(args.weights, seed=args.seed)
    load_s = time.perf_counter() - t0
    if (model.dim, model.z_dim) != (96, 16):
        exact = False
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.precision]
    model = model.to(dtype)
    scale = [s.to(dtype) for s in latent_scale()]
    # Same clip as ours: sin(0.001 * i) over the flattened [1,3,T,H,W] tensor.
    x = (torch.arange(3 * frames * h * w, dtype=torch.float32) * 0.001).sin().reshape(1, 3, frames, h, w).to(dtype)

    enc_w, dec_w, enc_s, dec_s = [], [], [], []
    with torch.inference_mode():
        for i in range(args.warmup + args.runs):
            t = time.perf_counter()
            z = model.encode(x, scale, chunk=args.chunk)
            te = time.perf_counter() - t
            t = time.perf_counter()
            y = model.decode(z, scale, chunk=args.chunk)
            td = time.perf_counter() - t
            warm = i < args.warmup
            (enc_w if warm else enc_s).append(te)
            (dec_w if warm else dec_s).append(td)
            if not args.quiet:
                print(f"{'warmup' if warm else 'run'} {i if warm else i - args.warmup}: encode {te:.3f}s "
                      f"({enc_gflop / te:.1f} GFLOP/s)  decode {td:.3f}s ({dec_gflop / td:.1f} GFLOP/s)  "
                      f"z={tuple(z.shape)} y={tuple(y.shape)} max|y|={y.abs().max().item():.3f}",
                      file=sys.stderr, flush=True)

    try:
        load_avg = list(os.getloadavg())
    except OSError:
        load_avg = None
    rep = {
        "tool": "peer_pytorch",
        "reference": f"Wan-Video/Wan2.1 wan/modules/vae.py @ 9737cba (ported, CPU {args.precision})",
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "mkldnn_available": bool(torch.backends.mkldnn.is_available()),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "load_avg_1_5_15": load_avg,
        "weights": source,
        "dim": model.dim,
        "z_dim": model.z_dim,
        "precision": args.precision,
        "chunk": args.chunk,
        "frames": frames,
        "frames_used": t_used,
        "width": w,
        "height": h,
        "warmup": args.warmup,
        "runs": args.runs,
        "load_s": load_s,
        "gflop_exact": exact,
        "gflop_note": ("analytic cost for 5 frames at 64x64" if exact else
                       "APPROXIMATE: 109.25/182.40 GFLOP (5x64x64) scaled by pixels x used frames"
                       + ("" if (model.dim, model.z_dim) == (96, 16) else
                          f"; the cost is that of the real model (dim 96, z 16), NOT of this dim {model.dim} "
                          f"model, so GFLOP/s is not meaningful here")),
        "encode": pass_stats(enc_s, enc_w, enc_gflop, t_used),
        "decode": pass_stats(dec_s, dec_w, dec_gflop, dec_frames),
    }
    text = json.dumps(rep, indent=2)
    if args.json:
        d = os.path.dirname(args.json)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(args.json, "w") as f:
            f.write(text + "\n")
    if not args.quiet:
        print(f"torch {rep['torch_version']}, threads {rep['threads']}, mkldnn {rep['mkldnn_available']}, "
              f"weights {source}, {frames}x{h}x{w} (W x H = {w}x{h}), chunk {args.chunk}, load avg {load_avg}")
        for p in ("encode", "decode"):
            s = rep[p]
            print(f"{p}: median {s['median_s']:.3f}s  min {s['min_s']:.3f}s  samples "
                  f"{[round(v, 3) for v in s['samples_s']]}  {s['gflop_per_s']:.1f} GFLOP/s "
                  f"({s['gflop']:.2f} GFLOP{'' if exact else ', approximate'})")
    if not args.json and args.quiet:
        print(text)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate", help="compare encode/decode against the golden fixtures")
    v.add_argument("--weights", required=True, help=".safetensors or .pth with the original key names")
    v.add_argument("--cases", required=True, help="the cases .safetensors (inputs and expected outputs)")
    v.add_argument("--chunk", type=int, default=1, help="latent frames per decoder call after the first")
    v.add_argument("--threads", type=int, default=0, help="torch threads (default: all cores)")
    b = sub.add_parser("bench", help="time encode and decode")
    b.add_argument("--weights", default="synthetic", help="`synthetic` (dim 96, z 16) or a checkpoint path")
    b.add_argument("--frames", type=int, default=5)
    b.add_argument("--size", default="64x64", help="WxH in pixels (multiples of 8)")
    b.add_argument("--warmup", type=int, default=1)
    b.add_argument("--runs", type=int, default=3)
    b.add_argument("--threads", type=int, default=0, help="torch threads (default: all cores)")
    b.add_argument("--chunk", type=int, default=1, help="latent frames per decoder call after the first")
    b.add_argument("--seed", type=int, default=0, help="seed of the synthetic weights")
    b.add_argument("--precision", choices=["fp32", "bf16"], default="fp32", help="module and input dtype")
    b.add_argument("--json", help="write the result here")
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    args = ap.parse_args()
    if getattr(args, "chunk", 1) < 1:
        sys.exit("--chunk must be >= 1")
    if args.cmd == "validate":
        if args.threads:
            torch.set_num_threads(args.threads)
        return cmd_validate(args)
    if args.runs < 1:
        sys.exit("--runs must be >= 1")
    return cmd_bench(args)


if __name__ == "__main__":
    sys.exit(main())
