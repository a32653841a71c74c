"""Engine `comfyui`: the user's own ComfyUI (`--comfyui DIR`), timed doing what its VAE nodes
do. ComfyUI is the user's code: nothing of it ships here; DIR is put first on `sys.path`
(the working directory stays the run's: ComfyUI finds its files from `__file__`).

What is timed, per node:
  * load = `VAELoader`: `comfy.utils.load_torch_file` + `comfy.sd.VAE(sd, metadata)`;
  * encode = `VAEEncode` (`vae.encode(IMAGE)`), or with a tile `VAEEncodeTiled`
    (`vae.encode_tiled`); our clip [1,3,T,H,W] in [-1,1] becomes ComfyUI's IMAGE
    [T,H,W,3] in [0,1] (`(x+1)/2`, on the CPU as a node receives it) in `prepare_video`,
    which the worker calls before the clock starts;
  * decode = `VAEDecode` (`vae.decode`), or, with a spatial or temporal tile,
    `VAEDecodeTiled` (`vae.decode_tiled`) with the node's own unit conversion: our `tile`
    TILE:OVERLAP is its `tile_size`/`overlap` in pixels, our `temporal_tile` FRAMES:OVERLAP
    its `temporal_size`/`temporal_overlap` in frames (an axis left at none covers the whole
    clip). `nodes.py` itself is not imported (it pulls in the server, PyAV, ...): the
    engine applies the node's parameter rules and calls the same `comfy.sd.VAE` methods.
  * chunk: ComfyUI picks its own latent frames per decoder call (0.3.64: one; 0.38's Wan
    2.1: one, then two), recorded per case as `decoder_call_latent_frames`; the `chunk` axis
    does not apply to it, so a chunk other than 1 is `unsupported`, saying so.

Follows ComfyUI 0.3.64 (tested whole) and the newer behaviours of 0.38 found by feature,
not by version (tested by patching 0.3.64; docs/comfyui.md): an in-place `process_output`,
`set_cudnn_benchmark()`, the AMD cuDNN rule with `COMFYUI_ENABLE_MIOPEN`, `comfy_aimdo`,
the adaptive OOM fallback's tiles, the NVIDIA conv3d workaround. What ComfyUI's `main.py`
sets up before it imports `comfy` is done here where it can be (the AOTriton variable,
`set_cudnn_benchmark`) and recorded either way (`main_py_setup`): dynamic VRAM
(comfy-aimdo) needs its init before torch is imported, which this engine cannot do.

Precision: `fp32`/`bf16`/`fp16` set ComfyUI's `--fp32-vae`/`--bf16-vae`/`--fp16-vae`;
`auto` sets none, so `model_management.vae_dtype` picks as in a user's ComfyUI. Each case
records the dtype used and ComfyUI's default pick on that device.

Ranges (quality): ComfyUI's decode ends with `process_output`, `clamp((x+1)/2, 0, 1)`.
The engine wraps the VAE's `process_output` with a recorder that keeps its input (the
decoder's float output in [-1,1], before any clamp) and then calls ComfyUI's own. Since
ComfyUI 0.38 that function works in place (`add_(1).div_(2).clamp_(0, 1)`), so when a probe
shows it mutates its argument the recorder keeps a copy (one more copy inside the timed
call, as 0.3.64's out-of-place version allocated). The saved `decoded` is that pre-clamp
tensor, so it compares like with like with the other engines' unclamped output.

Latents: ComfyUI's Wan VAE encode returns raw `mu` and its decode takes raw `z` (the
normalization lives in the diffusion model's latent format, outside the VAE nodes). The
engine normalizes `(mu - mean) / std` after encode and denormalizes before decode, in f32
with the same per-channel stats as every engine (inside the timed call, as diffusers').

Only the standard library at import time: the folder checks run before torch is imported.
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Optional

FAULT_VAR = "WAN_VAE_BENCH_FAULT"
FORCED_OOM = "comfyui-oom"
RETRY_MARK = "retrying with tiled VAE"
FLAGS = {"fp32": "fp32_vae", "bf16": "bf16_vae", "fp16": "fp16_vae"}
NEEDED = "comfy/sd.py, comfy/model_management.py and the Wan VAE (comfy/ldm/wan/vae.py; vae2_2.py for Wan 2.2)"
DTYPE_NAMES = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16"}


class Unsupported(Exception):
    """A folder, install or setting this engine cannot run; the message says which and why."""


def version_of(d: str) -> str:
    """ComfyUI's version from `comfyui_version.py` (`__version__ = "X"`), else `unknown`."""
    try:
        with open(os.path.join(d, "comfyui_version.py")) as f:
            for line in f:
                if line.startswith("__version__"):
                    return line.split("=", 1)[1].strip().strip("\"'")
    except OSError:
        pass
    return "unknown"


def commit_of(d: str) -> Optional[str]:
    """`git rev-parse HEAD` of DIR when it is a git checkout."""
    if not os.path.exists(os.path.join(d, ".git")):
        return None
    try:
        r = subprocess.run(["git", "-C", d, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def check_folder(d: Optional[str]) -> str:
    """DIR's absolute path, or Unsupported naming the folder, the version found and what
    is missing."""
    if not d:
        raise Unsupported("the comfyui engine needs its folder (--comfyui DIR): none reached the worker")
    d = os.path.abspath(d)
    if not os.path.isfile(os.path.join(d, "comfy", "sd.py")):
        raise Unsupported(f"{d} is not a ComfyUI checkout: it has no comfy/sd.py (ComfyUI needs {NEEDED})")
    if not os.path.isfile(os.path.join(d, "comfy", "ldm", "wan", "vae.py")):
        raise Unsupported(f"ComfyUI {version_of(d)} at {d} is too old: it has no Wan VAE (comfy/ldm/wan/vae.py); "
                          "update ComfyUI")
    return d


def check_model(d: str, model_name: str) -> None:
    """Unsupported when the ComfyUI in DIR predates the Wan 2.2 VAE and the case needs it."""
    if model_name == "wan2.2" and not os.path.isfile(os.path.join(d, "comfy", "ldm", "wan", "vae2_2.py")):
        raise Unsupported(f"ComfyUI {version_of(d)} at {d} is too old for Wan 2.2: it has no Wan 2.2 VAE "
                          "(comfy/ldm/wan/vae2_2.py); update ComfyUI")


def describe_folder(d: str) -> str:
    return f"ComfyUI {version_of(d)} at {d}"


class _RetryWatch(logging.Handler):
    """Counts ComfyUI's "Ran out of memory ... retrying with tiled VAE ..." warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if RETRY_MARK in record.getMessage():
            self.count += 1


AOTRITON = "TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL"


def _start(d: str, precision: str, device):
    """Import ComfyUI from DIR with its switches set first (`args` holds defaults: ComfyUI
    parses no command line when imported), doing what its `main.py` does around that import
    where an importer can (the AOTriton variable before, `set_cudnn_benchmark()` after, when
    this ComfyUI has it); returns (model_management, sd module, utils, what main.py's set-up
    left in force)."""
    if d not in sys.path:
        sys.path.insert(0, d)
    setup = {AOTRITON: os.environ.get(AOTRITON)}
    # The launch flags a user passes to main.py for what this start-up sets in `args`.
    setup["launch_flags"] = (["--cpu"] if device.type == "cpu" else []) + \
        ([f"--{precision}-vae"] if precision in FLAGS else [])
    if setup[AOTRITON] is None and getattr(sys.modules.get("torch"), "version", None) is not None \
            and getattr(sys.modules["torch"].version, "hip", None):
        os.environ[AOTRITON] = "1"  # as main.py, before comfy probes attention on AMD (ROCm only)
        setup[AOTRITON] = "1 (set by this engine on ROCm, as ComfyUI's main.py does)"
    try:
        from comfy.cli_args import args
        args.cpu = device.type == "cpu"
        for name, flag in FLAGS.items():
            setattr(args, flag, precision == name)
        import comfy.model_management as mm
        import comfy.sd
        import comfy.utils
    except ImportError as e:
        missing = getattr(e, "name", None) or ""
        hint = (f"its package `{missing.replace('_', '-')}` (in ComfyUI's requirements.txt) is missing"
                if missing.startswith("comfy_") else "install ComfyUI's requirements.txt into that interpreter")
        raise Unsupported(f"{describe_folder(d)}: cannot import its VAE code under {sys.executable}: {e} ({hint}; "
                          f"or pass --python)") from e
    if hasattr(mm, "set_cudnn_benchmark"):
        try:
            mm.set_cudnn_benchmark()  # ComfyUI >= 0.38: main.py applies --fast autotune's rule here
            setup["set_cudnn_benchmark"] = "called, as main.py does"
        except Exception as e:  # noqa: BLE001 - recorded; the case runs with what is in force
            setup["set_cudnn_benchmark"] = f"failed: {type(e).__name__}: {e}"
    else:
        setup["set_cudnn_benchmark"] = "not in this ComfyUI (its ops.py applies --fast autotune at import)"
    return mm, comfy.sd, comfy.utils, setup


def _main_py_state(mm, setup: dict) -> dict:
    """What ComfyUI's main.py would have set up, as it stands in this process: dynamic VRAM
    (comfy-aimdo: main.py initializes it before torch is imported, so an importer cannot;
    recorded as found), pinned memory, async offload streams, the AMD MIOpen switch."""
    state = dict(setup)
    mem = sys.modules.get("comfy.memory_management")
    state["dynamic_vram"] = ("on" if getattr(mem, "aimdo_enabled", False) else
                             "off (ComfyUI's main.py turns it on for NVIDIA with torch >= 2.8 and ROCm >= 7.14; "
                             "this engine imports comfy without it)" if "comfy_aimdo" in sys.modules or mem else
                             "not in this ComfyUI")
    pinned = getattr(mm, "MAX_PINNED_MEMORY", None)
    state["pinned_memory_bytes"] = None if pinned is None else max(int(pinned), 0)
    state["async_offload_streams"] = getattr(mm, "NUM_STREAMS", None)
    state["COMFYUI_ENABLE_MIOPEN"] = os.environ.get("COMFYUI_ENABLE_MIOPEN")
    return state


def _switches(mm, device) -> dict:
    """What this ComfyUI offers its users for the PyTorch knobs, found by feature (the advice
    names only what the user's own ComfyUI has): `--fast autotune` (cuDNN benchmark; ops.py
    or main.py's `set_cudnn_benchmark`), `COMFYUI_ENABLE_MIOPEN=1` (cuDNN/MIOpen kept on AMD;
    read from model_management's source), and whether it turns cuDNN off on AMD at start-up."""
    try:
        from comfy.cli_args import PerformanceFeature
        autotune = hasattr(PerformanceFeature, "AutoTune")
    except ImportError:
        autotune = False
    try:
        with open(mm.__file__, encoding="utf-8", errors="replace") as f:
            source = f.read()
    except OSError:
        source = ""
    torch = sys.modules.get("torch")
    rocm = device.type == "cuda" and getattr(getattr(torch, "version", None), "hip", None) is not None
    return {"fast_autotune": autotune, "enable_miopen_env": "COMFYUI_ENABLE_MIOPEN" in source,
            "cudnn_off_on_amd": "cudnn.enabled = False" in source, "rocm": rocm, "tf32_switch": False}


class Engine:
    """Engine `comfyui`: normalized latents in and out; tiles in ComfyUI's units."""

    engine = "comfyui"
    tiles_time = True  # temporal tiling is ComfyUI's own (VAEDecodeTiled), not the worker's

    def __init__(self, torch, dir_: Optional[str], weights_path: str, model_name: str, device, precision: str,
                 fault_hooks: bool = False) -> None:
        self.dir = check_folder(dir_)
        check_model(self.dir, model_name)
        self.torch = torch
        # The worker applies the case's knobs after this start-up, so that they win over
        # ComfyUI's (it turns cuDNN/MIOpen off on AMD when imported); both states are kept.
        self.knobs_before_startup = _knobs(torch)
        mm, sd_mod, utils, setup = _start(self.dir, precision, device)
        self.mm = mm
        self.knobs_after_startup = _knobs(torch)
        self.main_py_setup = _main_py_state(mm, setup)
        self.switches = _switches(mm, device)
        self.nodes = {}
        self.watch = _RetryWatch()
        logging.getLogger().addHandler(self.watch)
        if model_name == "wan2.1":
            import wan21_torch as m
        else:
            import wan22_torch as m
        self.mean, self.std, self.model_name = m.LATENT_MEAN, m.LATENT_STD, model_name
        sd, metadata = utils.load_torch_file(weights_path, return_metadata=True)
        try:
            self.vae = sd_mod.VAE(sd=sd, metadata=metadata)
        except RuntimeError as e:
            if "size mismatch" not in str(e):
                raise
            dim = int(sd["encoder.conv1.weight"].shape[0])
            raise Unsupported(f"{describe_folder(self.dir)} cannot build this {model_name} checkpoint (dim {dim}): it "
                              f"expects the real checkpoint's width for {model_name} (0.3.64: 96 for Wan 2.1 and 160 "
                              "for Wan 2.2; newer ComfyUI reads Wan 2.1's from the file); "
                              f"{str(e).splitlines()[0]}") from e
        self.vae.throw_exception_if_invalid()
        self.z_dim = int(self.vae.latent_channels)
        self.scale = 8 if model_name == "wan2.1" else 16
        self.device = device
        self.precision = precision
        self.pre_clamp = None
        self.last_latent_shape = None
        own = self.vae.process_output
        probe = torch.tensor([-3.0])
        own(probe)
        self.process_output_in_place = bool(probe.item() != -3.0)
        keep = (lambda t: t.clone()) if self.process_output_in_place else (lambda t: t)

        def recorder(image):
            self.pre_clamp = keep(image)
            return own(image)

        self.vae.process_output = recorder
        self._watch_calls()
        if fault_hooks and os.environ.get(FAULT_VAR) == FORCED_OOM:
            self._force_first_decode_oom()

    def _watch_calls(self) -> None:
        """Record ComfyUI's own choices as it makes them: the latent frames of each decoder
        call (its chunking) and the tiles of each `decode_tiled_3d` call its untiled decode
        falls back to after an out-of-memory (0.38 adapts them to a memory budget)."""
        self.decoder_frames, self.fallback_tiles, self._plain_decode = [], [], False
        self.decoder_frames_last = None
        decoder = getattr(self.vae.first_stage_model, "decoder", None)
        if decoder is not None:  # a VAE of another layout is timed without the record
            real_forward = decoder.forward

            def forward(x, *a, **k):
                self.decoder_frames.append(int(x.shape[2]))
                return real_forward(x, *a, **k)

            decoder.forward = forward
        real_tiled = getattr(self.vae, "decode_tiled_3d", None)
        if real_tiled is None:
            return

        def tiled(samples, *a, **k):
            if self._plain_decode:
                names = ("tile_t", "tile_x", "tile_y", "overlap")
                given = dict(zip(names, a))  # decode_tiled_3d(samples, tile_t, tile_x, tile_y, overlap)
                given.update({n: k[n] for n in names if n in k})
                self.fallback_tiles.append({n: (list(v) if isinstance(v, tuple) else v) for n, v in given.items()})
            return real_tiled(samples, *a, **k)

        self.vae.decode_tiled_3d = tiled

    def _force_first_decode_oom(self) -> None:
        """Testing hook (WAN_VAE_BENCH_FAULT=comfyui-oom): the first decoder call raises
        ComfyUI's OOM exception, as a real out-of-memory would."""
        model = self.vae.first_stage_model
        real = model.decode
        state = {"raised": False}

        def decode(*a, **k):
            if not state["raised"]:
                state["raised"] = True
                raise self.mm.OOM_EXCEPTION(f"injected out of memory ({FAULT_VAR}={FORCED_OOM})")
            return real(*a, **k)

        model.decode = decode

    # ------------------------------------------------------------------------------------

    def compute_dtype(self) -> str:
        return DTYPE_NAMES.get(str(self.vae.vae_dtype), str(self.vae.vae_dtype)).replace("fp", "f") + \
            " (ComfyUI's own VAE code, model and activations in its vae_dtype)"

    def lever_model(self):
        """The model the levers act on (`wan_levers`): ComfyUI's `comfy.ldm.wan` WanVAE, whose
        CausalConv3d are causal convs (its weight casting is kept: `wan_levers._weights`)."""
        return self.vae.first_stage_model

    def default_dtype(self) -> str:
        """What ComfyUI picks with no switch on this device (`vae_dtype` without flags)."""
        from comfy.cli_args import args
        saved = {f: getattr(args, f) for f in FLAGS.values()}
        try:
            for f in FLAGS.values():
                setattr(args, f, False)
            dt = self.mm.vae_dtype(self.vae.device, self.vae.working_dtypes)
        finally:
            for f, v in saved.items():
                setattr(args, f, v)
        return DTYPE_NAMES.get(str(dt), str(dt))

    def start_case(self) -> None:
        """Before each case of a worker that keeps this engine: what `facts` reports is the
        case's own (retries, the last decode's latent, chunking and fallback tiles)."""
        self.watch.count = 0
        self.last_latent_shape = self.pre_clamp = self.decoder_frames_last = None
        self.decoder_frames, self.fallback_tiles = [], []
        self.nodes = {}

    def release(self) -> None:
        """Before the worker builds its next engine: ComfyUI keeps the models it loaded in
        its own list; unload them and empty its cache (the next case starts as a first), and
        stop watching its log."""
        logging.getLogger().removeHandler(self.watch)
        for name in ("unload_all_models", "soft_empty_cache"):
            fn = getattr(self.mm, name, None)
            if callable(fn):
                fn()

    def retries(self) -> int:
        """ComfyUI's out-of-memory tiled retries so far (the worker tells warmup from timed)."""
        return self.watch.count

    def facts(self) -> dict:
        """What ComfyUI did, for the case record (`engine_case`); the memory estimate is
        ComfyUI's `memory_used_decode` for the last decoded latent (None without a decode)."""
        dt = self.vae.vae_dtype
        shape = self.last_latent_shape
        est_dec = int(self.vae.memory_used_decode(shape, dt)) if shape is not None else None
        return {
            "comfyui_dir": self.dir, "comfyui_version": version_of(self.dir), "comfyui_commit": commit_of(self.dir),
            "vae_dtype": DTYPE_NAMES.get(str(dt), str(dt)), "default_vae_dtype": self.default_dtype(),
            "oom_tiled_retries": self.watch.count, "memory_estimate_decode_bytes": est_dec,
            "knobs_before_startup": self.knobs_before_startup, "knobs_after_startup": self.knobs_after_startup,
            "knobs_after_ours": _knobs(self.torch),
            "process_output_in_place": self.process_output_in_place,
            # Of the last decode: ComfyUI's chunking, and the tiles an OOM made it fall back to.
            "decoder_call_latent_frames": self.decoder_frames_last,
            "oom_fallback_tiles": self.fallback_tiles,
            "nvidia_conv3d_workaround": bool(getattr(sys.modules.get("comfy.ops"),
                                                     "NVIDIA_MEMORY_CONV_BUG_WORKAROUND", False)),
            "main_py_setup": self.main_py_setup,
            # The node and widget values each pass ran as (the last call), the flags of the
            # launch it stands for, and the switches this ComfyUI offers (the answer's advice).
            "nodes": self.nodes, "launch_flags": self.main_py_setup.get("launch_flags", []),
            "switches": self.switches,
        }

    def _check(self, opts) -> None:
        if opts.chunk != 1:
            raise Unsupported(f"chunk {opts.chunk} is not supported by the comfyui engine: ComfyUI picks its own "
                              "latent frames per decoder call (recorded as engine_case.decoder_call_latent_frames); "
                              "the chunk axis does not apply to it")

    def prepare_video(self, video):
        """Our clip [1,3,T,H,W] in [-1,1] as the IMAGE a `VAEEncode` node receives: [T,H,W,3]
        in [0,1] on the CPU, T the 1+4k frames used. The worker calls it before the clock."""
        import wan_common as wc
        t = wc.frames_used(video.shape[2])
        return ((video[0, :, :t].float() + 1.0) / 2.0).permute(1, 2, 3, 0).contiguous().cpu()

    def encode(self, image, opts):
        """VAEEncode (or VAEEncodeTiled with a tile) on ComfyUI's IMAGE (`prepare_video`)."""
        self._check(opts)
        torch = self.torch
        import wan_common as wc
        t = image.shape[0]
        tl = opts.tiling
        with torch.inference_mode():
            if wc.needs_tiling(tl, image.shape[1], image.shape[2]):
                # VAEEncodeTiled's widgets; temporal_size covers the clip (one tile in time:
                # the encode is never tiled in time here), rounded to the widget's step of 4.
                node = {"node": "VAEEncodeTiled", "tile_size": tl.tile_px, "overlap": tl.overlap_px,
                        "temporal_size": _widget_frames(t), "temporal_overlap": 8}
                self.nodes["encode"] = node
                mu = self.vae.encode_tiled(image, tile_x=node["tile_size"], tile_y=node["tile_size"],
                                           overlap=node["overlap"], tile_t=node["temporal_size"],
                                           overlap_t=node["temporal_overlap"])
            else:
                self.nodes["encode"] = {"node": "VAEEncode"}
                mu = self.vae.encode(image)
        return wc.normalize(mu.to(self.device), self.mean, self.std, torch.float32)

    def decode(self, latent, opts, temporal=(None, None)):
        """VAEDecode, or VAEDecodeTiled when a spatial or temporal tile is set; returns the
        decoder output before ComfyUI's final clamp ([1,3,T,H,W], in [-1,1] unclamped)."""
        self._check(opts)
        torch = self.torch
        import wan_common as wc
        z = wc.denormalize(latent.to(self.device), self.mean, self.std, torch.float32)
        h, w = self.scale * latent.shape[3], self.scale * latent.shape[4]
        tl = opts.tiling
        spatial = wc.needs_tiling(tl, h, w)
        self.pre_clamp = None
        self.last_latent_shape = tuple(z.shape)
        self.decoder_frames, self.fallback_tiles = [], []
        with torch.inference_mode():
            if spatial or temporal[0] is not None:
                self._decode_tiled(z, tl if spatial else None, h, w, temporal)
            else:
                self.nodes["decode"] = {"node": "VAEDecode"}
                self._plain_decode = True
                try:
                    self.vae.decode(z)
                finally:
                    self._plain_decode = False
        self.decoder_frames_last = _runs(self.decoder_frames)
        return self.pre_clamp

    def _decode_tiled(self, z, tl, h: int, w: int, temporal) -> None:
        """VAEDecodeTiled's widget values (an axis left untiled: one tile covering the frame or
        the clip, the smallest value the widget takes), recorded, then its parameter rules and
        `vae.decode_tiled`."""
        tile_size, overlap = (tl.tile_px, tl.overlap_px) if tl else (_widget_pixels(max(h, w)), 0)
        # The node decodes temporal_size // 4 latent frames per tile: 4 per latent frame.
        t_size, t_overlap = (temporal[0], temporal[1] or 0) if temporal[0] is not None else \
            (max(TEMPORAL_SIZE_MIN, 4 * z.shape[2]), 8)
        self.nodes["decode"] = {"node": "VAEDecodeTiled", "tile_size": tile_size, "overlap": overlap,
                                "temporal_size": t_size, "temporal_overlap": t_overlap}
        if tile_size < overlap * 4:
            overlap = tile_size // 4
        if t_size < t_overlap * 2:
            t_overlap = t_overlap // 2
        tc = self.vae.temporal_compression_decode()
        t_size = max(2, t_size // tc)
        t_overlap = max(1, min(t_size // 2, t_overlap // tc))
        c = self.vae.spacial_compression_decode()
        self.vae.decode_tiled(z, tile_x=tile_size // c, tile_y=tile_size // c, overlap=overlap // c, tile_t=t_size,
                              overlap_t=t_overlap)


# The widget limits of 0.3.64's VAEDecodeTiled / VAEEncodeTiled (nodes.py; the tests read them
# there): tile_size >= 64 in steps of 32 (encode: 64), temporal_size >= 8 in steps of 4.
TILE_SIZE_MIN, TILE_SIZE_STEP, TEMPORAL_SIZE_MIN = 64, 32, 8


def _widget_pixels(px: int) -> int:
    """The smallest `tile_size` the widget takes that covers `px` pixels."""
    return max(TILE_SIZE_MIN, -(-px // TILE_SIZE_STEP) * TILE_SIZE_STEP)


def _widget_frames(frames: int) -> int:
    """The smallest `temporal_size` the widget takes that covers `frames` video frames."""
    return max(TEMPORAL_SIZE_MIN, -(-frames // 4) * 4)


def _runs(values: list) -> list:
    """`[1, 2, 2]` as `[[1, 1], [2, 2]]`: each value with how many times in a row it came."""
    out: list = []
    for v in values:
        if out and out[-1][0] == v:
            out[-1][1] += 1
        else:
            out.append([v, 1])
    return out


def _knobs(torch) -> dict:
    """cuDNN/MIOpen switches as they stand: torch's before ComfyUI's start-up, ComfyUI's
    after it (cuDNN off on AMD), the case's once the worker applied its knobs."""
    return {"cudnn": "on" if torch.backends.cudnn.enabled else "off",
            "cudnn_benchmark": "on" if torch.backends.cudnn.benchmark else "off"}


# ----------------------------------------------------------------------------------------
# Engine `comfyui`'s module interface (its `python_module`; docs/worker-protocol.md, section 9)

def import_torch(spec: dict, import_torch_):
    """Its checks before torch: its folder (stdlib only), then torch (`import_torch_`), named
    with the folder and ComfyUI version when missing or too old."""
    d = check_folder(spec.get("engine_dir"))
    try:
        return import_torch_()
    except Exception as e:
        if type(e).__name__ != "Unsupported":
            raise
        raise Unsupported(f"{describe_folder(d)}: {e}") from e


def make_engine(torch, loaded, device, precision, spec: dict) -> Engine:
    """The VAE of `spec`'s `engine_dir` on `spec`'s weights file."""
    return Engine(torch, spec.get("engine_dir"), spec.get("weights_path") or spec["weights"], loaded.model, device,
                  precision.name, fault_hooks=bool(spec.get("fault_hooks", False)))


def precision(name: str, mode: Optional[str]):
    """fp32/bf16/fp16 (ComfyUI's `--fp32-vae`, ... switches), or `auto`: no switch, ComfyUI's
    own pick; the model is always cast (its `vae_dtype`)."""
    import wan_runtime
    if name == "auto":
        import wan_common as wc
        return wc.Precision(name, "cast")
    return wan_runtime.dtype_precision(name, mode, "cast")


def context(eng: Engine) -> dict:
    """The report's `engines.comfyui` keys beyond PyTorch's: the ComfyUI that ran."""
    return {"comfyui_version": version_of(eng.dir), "comfyui_commit": commit_of(eng.dir), "comfyui_dir": eng.dir}
