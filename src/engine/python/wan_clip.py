"""The benchmark clip when the parent did not write one (`input_path` absent): a torch copy
of `structured_clip` in `src/engine/clip.rs` (smooth drifting gradients, a moving disc and
square with 1.5 px anti-aliased edges), in f32. The formulas are the same but sin/cos may
round differently from Rust's, so cross-engine comparisons need the parent-written file.
"""
from __future__ import annotations

import math


def structured_clip(torch, frames: int, width: int, height: int):
    """[1,3,frames,height,width] f32 in [-1,1], a deterministic function of frames and size."""
    wf, hf = float(width), float(height)
    size = min(wf, hf)
    f32 = torch.float32
    y, x = torch.meshgrid(torch.arange(height, dtype=f32), torch.arange(width, dtype=f32), indexing="ij")
    u, v = (x + 0.5) / wf, (y + 0.5) / hf
    px, py = x + 0.5, y + 0.5
    out = torch.empty(1, 3, frames, height, width, dtype=f32)
    disc_rgb, square_rgb = (0.9, 0.7, -0.6), (-0.8, 0.2, 0.9)
    for t in range(frames):
        ph = t / max(frames, 2)
        dr, dx, dy = 0.2 * size, (0.2 + 0.6 * ph) * wf, (0.5 + 0.2 * math.sin(2 * math.pi * ph)) * hf
        sh, sx, sy = 0.125 * size, (0.75 - 0.5 * ph) * wf, (0.25 + 0.5 * ph) * hf
        cover = lambda d: (0.5 - d / 1.5).clamp(0.0, 1.0)  # noqa: E731 - 1 inside, 0 outside
        disc = cover(((px - dx) ** 2 + (py - dy) ** 2).sqrt() - dr)
        square = cover(torch.maximum((px - sx).abs(), (py - sy).abs()) - sh)
        background = (0.8 * (2.0 * u - 1.0) + 0.1 * ph, 0.6 * (2.0 * v - 1.0) * (1.0 - 0.3 * ph),
                      0.5 * torch.cos(math.pi * (u + v + ph)))
        for c in range(3):
            val = background[c]
            val = val + disc * (disc_rgb[c] - val)
            val = val + square * (square_rgb[c] - val)
            out[0, c, t] = val.clamp(-1.0, 1.0)
    return out
