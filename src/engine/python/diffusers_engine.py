"""Engine `diffusers`: diffusers' own `AutoencoderKLWan` from the user's install, fed the
original Wan checkpoint through the key conversion of diffusers'
`scripts/convert_wan_to_diffusers.py` (`convert_vae` / `convert_vae_22`), loaded strictly.

How the benchmark's settings map onto it:
  * tiling TILE:OVERLAP -> `enable_tiling(tile_sample_min_*=TILE, tile_sample_stride_*=TILE-OVERLAP)`:
    the rule candle copies, so the same setting means the same tiles;
  * chunk: diffusers always runs one latent frame per decoder call (4 frames per encoder
    call after the first), i.e. chunk 1; any other chunk is `unsupported`;
  * precision: `cast` (default, `torch_dtype` as in diffusers pipelines) or `autocast`;
  * the latent normalization (latents_mean/std) is applied here in f32, as pipelines do
    outside the VAE and as every engine does;
  * diffusers clamps decoded video to [-1, 1]; that single op is disabled (see
    `_NoFinalClamp`) because the reports and fixtures compare the unclamped output.
"""
from __future__ import annotations

import re
from typing import Dict, Optional

import torch

import wan_common as wc
from wan21_torch import LATENT_MEAN as MEAN21, LATENT_STD as STD21


# The first diffusers releases with AutoencoderKLWan (Wan 2.1) and with its Wan 2.2 options
# (`is_residual`, `patch_size`).
MIN_DIFFUSERS_WAN21 = "0.33"
MIN_DIFFUSERS_WAN22 = "0.35"


class Unsupported(Exception):
    """A setting or install this engine cannot run; the message says which and why."""


def import_diffusers():
    """diffusers' Wan VAE module, or Unsupported naming what is missing."""
    try:
        import diffusers
        from diffusers.models.autoencoders import autoencoder_kl_wan as mod
    except ImportError as e:
        raise Unsupported(f"diffusers with AutoencoderKLWan is not importable ({e}): the diffusers engine needs "
                          f"diffusers >= {MIN_DIFFUSERS_WAN21} for Wan 2.1 and >= {MIN_DIFFUSERS_WAN22} for "
                          "Wan 2.2 (`pip install 'diffusers>=0.35'` in that venv)") from e
    # Its load-time advice about `torch_dtype` concerns from_pretrained, which we do not use.
    diffusers.utils.logging.set_verbosity_error()
    return diffusers, mod


# ----------------------------------------------------------------------------------------
# Key conversion (scripts/convert_wan_to_diffusers.py)

_RESNET = {
    "residual.0.gamma": "norm1.gamma", "residual.2.weight": "conv1.weight", "residual.2.bias": "conv1.bias",
    "residual.3.gamma": "norm2.gamma", "residual.6.weight": "conv2.weight", "residual.6.bias": "conv2.bias",
    "shortcut.weight": "conv_shortcut.weight", "shortcut.bias": "conv_shortcut.bias",
}
_FIXED = {
    "encoder.conv1.weight": "encoder.conv_in.weight", "encoder.conv1.bias": "encoder.conv_in.bias",
    "decoder.conv1.weight": "decoder.conv_in.weight", "decoder.conv1.bias": "decoder.conv_in.bias",
    "conv1.weight": "quant_conv.weight", "conv1.bias": "quant_conv.bias",
    "conv2.weight": "post_quant_conv.weight", "conv2.bias": "post_quant_conv.bias",
    "encoder.head.0.gamma": "encoder.norm_out.gamma", "encoder.head.2.weight": "encoder.conv_out.weight",
    "encoder.head.2.bias": "encoder.conv_out.bias", "decoder.head.0.gamma": "decoder.norm_out.gamma",
    "decoder.head.2.weight": "decoder.conv_out.weight", "decoder.head.2.bias": "decoder.conv_out.bias",
}


def _resnet_suffix(rest: str) -> str:
    for old, new in _RESNET.items():
        if rest == old:
            return new
    return rest


def _middle(key: str) -> str:
    """`{enc,dec}.middle.{0,2}.<resnet>` -> `mid_block.resnets.{0,1}`, `middle.1.*` -> attentions.0."""
    m = re.match(r"(encoder|decoder)\.middle\.(\d)\.(.*)", key)
    part, idx, rest = m.group(1), int(m.group(2)), m.group(3)
    if idx == 1:
        return f"{part}.mid_block.attentions.0.{rest}"
    return f"{part}.mid_block.resnets.{idx // 2}.{_resnet_suffix(rest)}"


def convert_wan21(sd: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """`convert_vae`: flat `downsamples.N` stay flat (`down_blocks.N`); `upsamples.N` group
    into up_blocks of three resnets plus an upsampler (indices 3, 7, 11)."""
    out = {}
    for key, v in sd.items():
        if key in _FIXED:
            new = _FIXED[key]
        elif ".middle." in key:
            new = _middle(key)
        elif key.startswith("encoder.downsamples."):
            _, _, n, rest = key.split(".", 3)
            new = f"encoder.down_blocks.{n}.{_resnet_suffix(rest)}"
        elif key.startswith("decoder.upsamples."):
            _, _, n, rest = key.split(".", 3)
            block, pos = divmod(int(n), 4)
            if pos == 3:
                new = f"decoder.up_blocks.{block}.upsamplers.0.{rest}"
            else:
                new = f"decoder.up_blocks.{block}.resnets.{pos}.{_resnet_suffix(rest)}"
        else:
            new = key
        out[new] = v
    return out


def convert_wan22(sd: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """`convert_vae_22`: `{down,up}samples.X.{down,up}samples.Y.<resnet>` ->
    `{down,up}_blocks.X.resnets.Y`, and `.{down,up}samples.X.{down,up}samples.Y.<resample>`
    -> `{down,up}_blocks.X.{down,up}sampler.<resample>`."""
    out = {}
    for key, v in sd.items():
        if key in _FIXED:
            new = _FIXED[key]
        elif ".middle." in key:
            new = _middle(key)
        elif key.startswith(("encoder.downsamples.", "decoder.upsamples.")):
            part, kind, x, inner, y, rest = key.split(".", 5)
            block = "down_blocks" if kind == "downsamples" else "up_blocks"
            if rest.startswith(("residual", "shortcut")):
                new = f"{part}.{block}.{x}.resnets.{y}.{_resnet_suffix(rest)}"
            else:
                sampler = "downsampler" if kind == "downsamples" else "upsampler"
                new = f"{part}.{block}.{x}.{sampler}.{rest}"
        else:
            new = key
        out[new] = v
    return out


# ----------------------------------------------------------------------------------------
# The engine


def chunk_message(chunk: int) -> str:
    return (f"chunk {chunk} is not supported by the diffusers engine: AutoencoderKLWan always decodes one latent "
            "frame per call (4 frames per encoder call after the first), i.e. chunk 1")


class _NoFinalClamp:
    """Stands in for `torch` inside diffusers' Wan module while we call it: every attribute
    is torch's, except `clamp`, which diffusers uses there only for the final [-1, 1] clamp
    of decoded video (checked at load time)."""

    def __getattr__(self, name: str):
        return getattr(torch, name)

    @staticmethod
    def clamp(x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        return x


def _check_clamp_sites(mod) -> None:
    """Refuse to run when this diffusers uses `torch.clamp` elsewhere than the decode outputs,
    where the proxy would change its arithmetic."""
    import inspect
    src = inspect.getsource(mod)
    sites = [line.strip() for line in src.splitlines() if "torch.clamp(" in line]
    allowed = {"out = torch.clamp(out, min=-1.0, max=1.0)", "dec = torch.clamp(dec, min=-1.0, max=1.0)"}
    unknown = [s for s in sites if s not in allowed]
    if unknown:
        raise Unsupported(f"this diffusers' autoencoder_kl_wan.py clamps elsewhere ({unknown[0]!r}); the engine "
                          "only knows how to keep decoded video unclamped for the known sites")


class Engine:
    """Engine `diffusers`: normalized latents in and out, options as in candle."""

    engine = "diffusers"

    def __init__(self, sd: Dict[str, torch.Tensor], model_name: str, device: torch.device,
                 precision: wc.Precision) -> None:
        diffusers, mod = import_diffusers()
        self.version = diffusers.__version__
        self._mod = mod
        self.tiling_calls: dict = {}
        _check_clamp_sites(mod)
        self.model_name = model_name
        if model_name == "wan2.1":
            cfg, converted, self.scale = self._config21(sd), convert_wan21(sd), 8
            self.mean, self.std = MEAN21, STD21
        else:
            import wan22_torch
            cfg, converted, self.scale = self._config22(mod, sd), convert_wan22(sd), 16
            self.mean, self.std = wan22_torch.LATENT_MEAN, wan22_torch.LATENT_STD
        self.z_dim = cfg["z_dim"]
        vae = mod.AutoencoderKLWan(**cfg)
        vae.load_state_dict({k: v.to(torch.float32) for k, v in converted.items()}, strict=True)
        self.vae = vae.eval().requires_grad_(False).to(device=device, dtype=precision.weight_dtype)
        self.device = device
        self.precision = precision

    @staticmethod
    def _config21(sd: Dict[str, torch.Tensor]) -> dict:
        return {"base_dim": int(sd["encoder.conv1.weight"].shape[0]), "z_dim": int(sd["conv2.weight"].shape[0])}

    def _config22(self, mod, sd: Dict[str, torch.Tensor]) -> dict:
        """diffusers' `vae22_diffusers_config` with the widths read from the checkpoint."""
        import inspect
        params = inspect.signature(mod.AutoencoderKLWan.__init__).parameters
        if "is_residual" not in params or "patch_size" not in params:
            raise Unsupported(f"diffusers {self.version} has no Wan 2.2 VAE support (AutoencoderKLWan lacks "
                              f"is_residual/patch_size; added in diffusers {MIN_DIFFUSERS_WAN22})")
        return {
            "base_dim": int(sd["encoder.conv1.weight"].shape[0]),
            "decoder_base_dim": int(sd["decoder.conv1.weight"].shape[0]) // 4,
            "z_dim": int(sd["conv2.weight"].shape[0]), "is_residual": True, "in_channels": 12, "out_channels": 12,
            "scale_factor_temporal": 4, "scale_factor_spatial": 16, "patch_size": 2,
        }

    def compute_dtype(self) -> str:
        return self.precision.describe(self.device)

    def lever_model(self):
        """The model the levers act on (`wan_levers`): its WanCausalConv3d are causal convs."""
        return self.vae

    def _apply(self, opts: wc.RunOptions, encode: bool, height_px: int, width_px: int) -> None:
        """Set diffusers' tiling for one call so that TILE:OVERLAP means what it means in
        candle: tiles only when the frame exceeds one tile; for Wan 2.2 encode (tiled on the
        patchified video, whose size diffusers compares with the pixel tile size) the tile
        and stride are given in patchified pixels, i.e. halved."""
        if opts.chunk != 1:
            raise Unsupported(chunk_message(opts.chunk))
        tl = opts.tiling
        calls = self.tiling_calls
        if not wc.needs_tiling(tl, height_px, width_px):
            self.vae.disable_tiling()
            calls["encode" if encode else "decode"] = None
            return
        if self.model_name == "wan2.2" and (tl.tile_px % 16 or tl.overlap_px % 16):
            raise Unsupported(f"tile {tl.tile_px}:{tl.overlap_px} is unsupported for Wan 2.2: tile and overlap "
                              "must be multiples of 16 (its spatial compression)")
        div = 2 if (self.model_name == "wan2.2" and encode) else 1
        kwargs = {"tile_sample_min_height": tl.tile_px // div, "tile_sample_min_width": tl.tile_px // div,
                  "tile_sample_stride_height": tl.stride_px // div, "tile_sample_stride_width": tl.stride_px // div}
        calls["encode" if encode else "decode"] = kwargs
        self.vae.enable_tiling(**kwargs)

    def start_case(self) -> None:
        """Before each case of a worker that keeps this engine: `facts` are the case's own."""
        self.tiling_calls = {}

    def facts(self) -> dict:
        """For the case record (`engine_case`): the `enable_tiling` keywords each pass ran with
        (null: tiling off), the answer's advice."""
        return {"diffusers_version": self.version, "enable_tiling": dict(self.tiling_calls)}

    def encode(self, video: torch.Tensor, opts: wc.RunOptions) -> torch.Tensor:
        self._apply(opts, True, video.shape[3], video.shape[4])
        t = wc.frames_used(video.shape[2])
        x = video[:, :, :t].to(self.device, self.precision.weight_dtype)
        with torch.inference_mode(), self.precision.context(self.device):
            mu = self.vae.encode(x).latent_dist.mode()
        return wc.normalize(mu, self.mean, self.std, self.precision.dtype)

    def decode(self, latent: torch.Tensor, opts: wc.RunOptions) -> torch.Tensor:
        self._apply(opts, False, self.scale * latent.shape[3], self.scale * latent.shape[4])
        z = wc.denormalize(latent.to(self.device), self.mean, self.std, self.precision.weight_dtype)
        saved = self._mod.torch
        self._mod.torch = _NoFinalClamp()
        try:
            with torch.inference_mode(), self.precision.context(self.device):
                return self.vae.decode(z).sample
        finally:
            self._mod.torch = saved


# ----------------------------------------------------------------------------------------
# Engine `diffusers`'s module interface (its `python_module`; docs/worker-protocol.md, section 9)

def make_engine(torch_, loaded, device, precision: wc.Precision, spec: dict) -> Engine:
    return Engine(loaded.state_dict, loaded.model, device, precision)


def precision(name: str, mode: Optional[str]) -> wc.Precision:
    """fp32/bf16/fp16; 16-bit cast unless `autocast` is asked (pipelines' `torch_dtype`)."""
    import wan_runtime
    return wan_runtime.dtype_precision(name, mode, "cast")


def check_options(opts: wc.RunOptions) -> None:
    """Refused before loading: diffusers has no temporal chunk setting."""
    if opts.chunk != 1:
        raise Unsupported(chunk_message(opts.chunk))


def context(eng: Engine) -> dict:
    """The report's `engines.diffusers.diffusers`: the version that ran."""
    return {"diffusers": eng.version}
