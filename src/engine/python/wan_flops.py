"""Analytic cost of encode and decode in GFLOP (2 x multiply-adds of every convolution and
matmul), the same walk as `src/model/flops.rs`, so every engine reports the same GFLOP for
the same case (the cost is the model's, not the engine's; tiling overlap is not counted).
"""
from __future__ import annotations

import wan_configs


class Walk:
    """Running multiply-add total plus the current activation size."""

    def __init__(self, t: int, h: int, w: int) -> None:
        self.macs, self.t, self.h, self.w = 0.0, t, h, w

    def conv(self, cin: int, cout: int, taps: int, frames: int) -> None:
        self.macs += float(cin * cout * taps) * float(frames * self.h * self.w)

    def residual(self, cin: int, cout: int) -> None:
        self.conv(cin, cout, 27, self.t)
        self.conv(cout, cout, 27, self.t)
        if cin != cout:
            self.conv(cin, cout, 1, self.t)

    def attention(self, c: int) -> None:
        l, t = float(self.h * self.w), float(self.t)
        self.macs += t * (4.0 * c * c * l + 2.0 * l * l * c)

    def middle(self, c: int) -> None:
        self.residual(c, c)
        self.attention(c)
        self.residual(c, c)


def encode(dim: int, z: int, frames: int, width: int, height: int, io_ch: int, patch: int) -> float:
    """Encode GFLOP: `io_ch` input channels at 1/`patch` of the clip's size (Wan 2.1: 3, 1;
    Wan 2.2: 12 patchified channels, 2). The 2.2 stage shortcuts have no parameters."""
    d = dim
    t = 1 + 4 * ((max(frames, 1) - 1) // 4)
    k = (t - 1) // 4
    m = Walk(t, height // patch, width // patch)
    m.conv(io_ch, d, 27, t)
    dims = [d, d, 2 * d, 4 * d, 4 * d]
    for stage in range(4):
        m.residual(dims[stage], dims[stage + 1])
        m.residual(dims[stage + 1], dims[stage + 1])
        if stage < 3:
            c = dims[stage + 1]
            m.h, m.w = -(-m.h // 2), -(-m.w // 2)
            m.conv(c, c, 9, m.t)
            if stage > 0:
                computed = 2 * k if stage == 1 else k
                m.conv(c, c, 3, computed)
                m.t = 1 + computed
    m.middle(4 * d)
    m.conv(4 * d, 2 * z, 27, m.t)
    m.conv(2 * z, 2 * z, 1, m.t)
    return 2.0 * m.macs / 1e9


def decode(dim: int, z: int, frames: int, width: int, height: int, io_ch: int, patch: int,
           upsample_halves: bool) -> float:
    """Decode GFLOP at decoder width `dim`, `io_ch` output channels at 1/`patch` of the
    clip's size; `upsample_halves`: each upsampling conv halves the width (Wan 2.1) or
    keeps it (Wan 2.2)."""
    d = dim
    lt = 1 + (max(frames, 1) - 1) // 4
    m = Walk(lt, height // (8 * patch), width // (8 * patch))
    m.conv(z, z, 1, lt)
    m.conv(z, 4 * d, 27, lt)
    m.middle(4 * d)
    dims = [4 * d, 4 * d, 4 * d, 2 * d, d]
    for stage in range(4):
        out = dims[stage + 1]
        inp = dims[stage] // 2 if upsample_halves and stage > 0 else dims[stage]
        m.residual(inp, out)
        m.residual(out, out)
        m.residual(out, out)
        if stage < 3:
            if stage < 2:
                computed = m.t - 1
                m.conv(out, 2 * out, 3, computed)
                m.t = 1 + 2 * computed
            m.h, m.w = m.h * 2, m.w * 2
            m.conv(out, out // 2 if upsample_halves else out, 9, m.t)
    m.conv(d, io_ch, 27, m.t)
    return 2.0 * m.macs / 1e9


def encode21(dim: int, z: int, frames: int, width: int, height: int) -> float:
    return encode(dim, z, frames, width, height, 3, 1)


def decode21(dim: int, z: int, frames: int, width: int, height: int) -> float:
    return decode(dim, z, frames, width, height, 3, 1, True)


def gflop22(cfg: dict, frames: int, width: int, height: int) -> tuple:
    """Wan 2.2's (encode, decode): the walk with its 12-channel patchified input/output at
    half size and C -> C upsample convs."""
    d, dd, z = cfg["dim"], cfg["dec_dim"], cfg["z_dim"]
    return (encode(d, z, frames, width, height, 12, 2), decode(dd, z, frames, width, height, 12, 2, False))


def gflop(model: str, sd: dict, frames: int, width: int, height: int) -> tuple:
    """(encode, decode) GFLOP of one pass of the model whose state dict (or its shapes) is `sd`."""
    if model == "wan2.1":
        cfg = wan_configs.config21(sd)
        return (encode21(cfg["dim"], cfg["z_dim"], frames, width, height),
                decode21(cfg["dim"], cfg["z_dim"], frames, width, height))
    return gflop22(wan_configs.config22(sd), frames, width, height)
