"""The widths of a Wan VAE checkpoint, read from its shapes (a state dict of tensors, or of
meta tensors: only `.shape` is read). The models (`wan21_torch`, `wan22_torch`) build from
them and the FLOP walk (`wan_flops`) counts with them; this module imports nothing of
either, so their imports point one way.
"""
from __future__ import annotations


def config21(sd: dict) -> dict:
    """Wan 2.1: dim and z_dim; encoder.conv1.weight is [dim,3,3,3,3], conv2 [z,z,1,1,1]."""
    return {"dim": int(sd["encoder.conv1.weight"].shape[0]), "z_dim": int(sd["conv2.weight"].shape[0])}


def config22(sd: dict) -> dict:
    """Wan 2.2: dim from encoder.conv1 [dim,12,3,3,3], dec_dim from decoder.head.2
    [12,dec_dim,3,3,3], z_dim from conv2."""
    return {"dim": int(sd["encoder.conv1.weight"].shape[0]), "dec_dim": int(sd["decoder.head.2.weight"].shape[1]),
            "z_dim": int(sd["conv2.weight"].shape[0])}
