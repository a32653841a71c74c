"""What the worker and validate modes share: the interpreter and torch checks, opening a
device, the PyTorch knobs, the context a report keeps, finding and calling an engine's
module (the one its entry in `engine::ENGINES` names, see docs/worker-protocol.md section 9),
and how an exception becomes a status. Only the standard library at import time (torch is
imported by `import_torch`, so a Python without torch gets a clear `unsupported`).

Nothing here names an engine: what differs between engines is in their modules.
"""
from __future__ import annotations

import importlib
import math
import platform
import sys
import traceback
from typing import Callable, Dict, Optional

MIN_TORCH = (2, 4)  # the oldest torch the engine tests ran on (torch 2.4.1, README)
TRACEBACK_TAIL = 3000


class Unsupported(Exception):
    """This interpreter, install, device or setting cannot run the case (status `unsupported`)."""


class BadInput(Exception):
    """The request itself is unusable (validate exits 2)."""


def interpreter() -> str:
    return f"{sys.executable} (Python {platform.python_version()})"


def import_torch():
    """torch, or Unsupported naming the interpreter and what is missing or too old."""
    try:
        import torch
    except ImportError as e:
        raise Unsupported(f"torch is not installed for {interpreter()}: {e}; give the Python that has torch with "
                          "--python PATH or WAN_VAE_BENCH_PYTHON=PATH (your ComfyUI's venv: --comfyui DIR finds it)") from e
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2] if p.isdigit())
    if version < MIN_TORCH:
        raise Unsupported(f"torch {torch.__version__} for {interpreter()} is too old: the engines need torch >= "
                          f"{MIN_TORCH[0]}.{MIN_TORCH[1]}")
    return torch


def open_device(torch, name: str):
    """`cpu` or `cuda:N` (ROCm builds name AMD GPUs cuda too); Unsupported when torch cannot open it."""
    if name == "cpu":
        return torch.device("cpu")
    if not name.startswith("cuda"):
        raise Unsupported(f"device {name!r} is not supported by the PyTorch engines (cpu or cuda:N)")
    try:
        index = int(name.split(":", 1)[1]) if ":" in name else 0
    except ValueError:
        raise Unsupported(f"device {name!r}: expected cuda:N with N a number") from None
    if not torch.cuda.is_available():
        build = f"HIP {torch.version.hip}" if torch.version.hip else (
            f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU-only")
        raise Unsupported(f"device {name}: torch {torch.__version__} ({build}) for {interpreter()} sees no GPU "
                          "(torch.cuda.is_available() is False)")
    if index >= torch.cuda.device_count():
        raise Unsupported(f"device {name}: torch sees {torch.cuda.device_count()} GPU(s) (cuda:0..)")
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def apply_knobs(torch, spec: dict, device) -> Dict[str, str]:
    """Set torch.backends.cudnn.{enabled,benchmark} and TF32 (`wan_common.set_tf32`) from the
    spec ("on"/"off"; absent, "auto" or "n/a", the parent's words for a knob left as the
    engine leaves it or that does not apply, = untouched) and say what is in force, read back
    from torch: on the CPU no knob does anything, on ROCm TF32 does not exist (MIOpen has no
    TF32 convolutions). TF32 reads `on` or `off` when convolutions and matmuls agree, else
    e.g. `conv on, matmul off` (torch's default on NVIDIA). The worker calls it once the
    engine has started (ComfyUI's start-up sets cuDNN)."""
    import wan_common as wc
    knobs = {}
    for key, attr in (("cudnn", "enabled"), ("cudnn_benchmark", "benchmark"), ("tf32", None)):
        value = spec.get(key)
        value = None if value in ("n/a", "auto") else value
        if value not in (None, "on", "off"):
            raise BadInput(f"spec field {key} = {value!r}: expected \"on\" or \"off\"")
        hip = getattr(torch.version, "hip", None)
        if attr is not None and value is not None:
            setattr(torch.backends.cudnn, attr, value == "on")
        elif attr is None and value is not None and not hip:
            wc.set_tf32(value == "on")
        if device.type != "cuda":
            knobs[key] = "not applicable (cpu)"
        elif attr is not None:
            knobs[key] = "on" if getattr(torch.backends.cudnn, attr) else "off"
        elif hip:
            knobs[key] = "not applicable (rocm)"
        else:
            conv, matmul = wc.tf32_flags()
            word = {True: "on", False: "off"}
            knobs[key] = word[conv] if conv == matmul else f"conv {word[conv]}, matmul {word[matmul]}"
    return knobs


def snapshot_knobs(torch) -> dict:
    """The knobs as they stand (cuDNN's `enabled` and `benchmark`, and TF32 through whichever
    API this torch has: `fp32_precision` per backend and op in torch >= 2.9, else the legacy
    `allow_tf32` flags; mixing the two raises), for `restore_knobs`."""
    snap = {"cudnn": (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark)}
    places = [torch.backends, torch.backends.cudnn, getattr(torch.backends.cudnn, "conv", None),
              getattr(torch.backends.cuda, "matmul", None)]
    if all(p is not None and hasattr(p, "fp32_precision") for p in places):
        snap["fp32_precision"] = [(p, p.fp32_precision) for p in places]
    else:
        snap["allow_tf32"] = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    return snap


def restore_knobs(torch, snap: dict) -> None:
    """Put the knobs back as `snapshot_knobs` found them: a worker that keeps its engine gives
    each case the engine's own start-up state, so an `auto` knob never inherits the previous
    case's `on` or `off`."""
    torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark = snap["cudnn"]
    for place, value in snap.get("fp32_precision", []):
        place.fp32_precision = value
    if "allow_tf32" in snap:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = snap["allow_tf32"]


def context(torch, device, diffusers_version: Optional[str] = None) -> dict:
    """What the report keeps per engine: versions, device and its memory."""
    ctx = {
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "torch": torch.__version__,
        "hip": torch.version.hip,
        "cuda": torch.version.cuda,
        "cudnn_version": None,
        "diffusers": diffusers_version,
        "threads": torch.get_num_threads(),
        "device_name": cpu_name(),
        "gcn_arch_name": None,
        "compute_capability": None,
        "nvidia_driver": None,
        "total_memory_bytes": None,
    }
    try:
        ctx["cudnn_version"] = torch.backends.cudnn.version()  # MIOpen's on ROCm builds
    except Exception:  # no cuDNN/MIOpen in this build
        pass
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        ctx["device_name"] = props.name
        ctx["total_memory_bytes"] = int(props.total_memory)
        if torch.version.hip:
            # AMD's target (gfx1151, ...); CUDA builds fill gcnArchName with the device name.
            ctx["gcn_arch_name"] = getattr(props, "gcnArchName", None)
        else:
            ctx["compute_capability"] = f"{props.major}.{props.minor}"
            ctx["nvidia_driver"] = nvidia_driver()
    return ctx


def nvidia_driver(path: str = "/proc/driver/nvidia/version") -> Optional[str]:
    """The NVIDIA kernel driver's version (`580.159.04`) from `path`, else None."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("NVRM version:"):
                    words = [w for w in line.split() if w[:1].isdigit() and "." in w]
                    return words[0] if words else None
    except OSError:
        pass
    return None


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def installed_version(dist: str) -> Optional[str]:
    """The installed version of a distribution, from its metadata, without importing it."""
    try:
        from importlib import metadata
        return metadata.version(dist)
    except Exception:
        return None


def diffusers_version() -> Optional[str]:
    try:
        import diffusers
        return diffusers.__version__
    except ImportError:
        return None


def peak_rss_bytes() -> Optional[int]:
    """VmHWM of this process (as the candle worker reports), else getrusage's ru_maxrss;
    bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource
        maxrss = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        # macOS reports bytes, Linux and the BSDs KiB.
        return maxrss if sys.platform == "darwin" else maxrss * 1024
    except (ImportError, OSError):
        return None


def engine_module(engine: str, module: Optional[str]):
    """The worker's module that makes `engine`: `module`, the spec's `python_module` (validate:
    `--module`) that the parent takes from the engine's entry in `engine::ENGINES`. BadInput
    when none is named or it is not one of the worker's modules. A module that fails to import
    because torch is missing or too old gives that `unsupported` instead (`import_torch`)."""
    if not module:
        raise BadInput(f"engine {engine!r}: the spec names no python_module (the worker's module that makes the "
                       "engine, from its entry in engine::ENGINES; candle runs in the Rust worker)")
    if not module.isidentifier():
        raise BadInput(f"engine {engine!r}: python_module {module!r} is not a module name")
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if e.name == module:
            raise BadInput(f"engine {engine!r}: its module {module!r} is not part of this worker") from e
        import_torch()
        raise
    except Exception:
        import_torch()
        raise


def _ours(e: BaseException, suffix: str = "") -> BaseException:
    """An engine module's own `Unsupported` as ours (with `suffix`); other exceptions as they are."""
    if type(e).__name__ == "Unsupported" and not isinstance(e, Unsupported):
        return Unsupported(f"{e}{suffix}")
    return e


def engine_torch(mod, spec: dict):
    """torch for the engine of `mod`: through its `import_torch(spec, import_torch)` when it
    checks something first (its folder, before torch), else `import_torch()`."""
    prepare = getattr(mod, "import_torch", None)
    if prepare is None:
        return import_torch()
    try:
        return prepare(spec, import_torch)
    except Exception as e:
        raise _ours(e) from e


def engine_precision(mod, name: str, mode: Optional[str]):
    """The engine module's `precision(name, mode)`: its own rule for the precision names it
    takes and its default `torch_precision` mode (see `dtype_precision`)."""
    return mod.precision(name, mode)


def dtype_precision(name: str, mode: Optional[str], default_mode: str):
    """fp32/bf16/fp16 plus how 16-bit is applied (`cast` or `autocast`; absent: `default_mode`,
    the engine's default): `wan_common.Precision`, the rule every engine module's `precision`
    applies to those names."""
    import wan_common as wc
    if name not in wc.DTYPES:
        raise BadInput(f"precision {name!r}: expected fp32, bf16 or fp16 (auto: only an engine with its own dtype "
                       "choice)")
    mode = mode or default_mode
    if mode not in ("cast", "autocast"):
        raise BadInput(f"torch_precision {mode!r}: expected cast or autocast")
    return wc.Precision(name, mode)


def check_options(mod, opts) -> None:
    """The engine module's `check_options(opts)`, when it has one: settings it refuses before
    loading anything (diffusers: a chunk other than 1)."""
    check = getattr(mod, "check_options", None)
    if check is not None:
        try:
            check(opts)
        except Exception as e:
            raise _ours(e) from e


def make_engine(mod, torch, loaded, device, precision, spec: dict):
    """The engine object for the checkpoint's model (the module's `make_engine`); Unsupported,
    naming the interpreter, for what it cannot run. `spec` (the worker's case; validate: its
    `engine_dir` and `weights`) gives an engine its folder and weights file."""
    try:
        return mod.make_engine(torch, loaded, device, precision, spec)
    except Exception as e:
        raise _ours(e, f" (interpreter {interpreter()})") from e


def engine_context(mod, eng, torch, device) -> dict:
    """The report's `engines.<name>` context: `context(torch, device)` plus the keys the
    module's `context(eng)` adds (the diffusers version, the ComfyUI it ran)."""
    ctx = context(torch, device)
    extra = getattr(mod, "context", None)
    if extra is not None:
        ctx.update(extra(eng))
    return ctx


def run_engine(fn: Callable, *args):
    """Call an engine method, turning an engine module's own Unsupported into ours."""
    try:
        return fn(*args)
    except Exception as e:
        if type(e).__name__ == "Unsupported":
            raise Unsupported(str(e)) from e
        raise


def encode_input(eng, video):
    """What `eng.encode` takes for the clip `video`: the engine's `prepare_video(video)`
    where it has one (comfyui: ComfyUI's IMAGE), else the clip; made before any clock."""
    return eng.prepare_video(video) if hasattr(eng, "prepare_video") else video


def run_options(wc, chunk: int, tile_px: Optional[int], overlap_px: Optional[int]):
    if chunk < 1:
        raise BadInput(f"chunk {chunk}: expected a positive number of latent frames per call (1 = reference)")
    tiling = None
    if tile_px is not None:
        overlap = overlap_px or 0
        if tile_px <= 0 or tile_px % 8 or overlap % 8 or overlap >= tile_px:
            raise BadInput(f"tile {tile_px}:{overlap}: expected TILE_PX:OVERLAP_PX, multiples of 8, overlap < tile")
        tiling = wc.Tiling(tile_px, overlap)
    return wc.RunOptions(chunk=chunk, tiling=tiling)


def gpu_target_hint() -> str:
    """` (gfx1151)` / ` (compute capability 9.0)` for the first GPU when torch can say, else ``."""
    torch = sys.modules.get("torch")
    try:
        if torch is None or not torch.cuda.is_available():
            return ""
        p = torch.cuda.get_device_properties(0)
        arch = getattr(p, "gcnArchName", None)
        if arch:
            return f" ({p.name}, target {arch.split(':')[0]})"
        return f" ({p.name}, compute capability {p.major}.{p.minor})"
    except Exception:  # noqa: BLE001 - a hint only; the error itself is reported
        return ""


def torch_build() -> str:
    torch = sys.modules.get("torch")
    if torch is None:
        return "?"
    hip, cuda = getattr(torch.version, "hip", None), getattr(torch.version, "cuda", None)
    return f"{torch.__version__}, " + (f"HIP {hip}" if hip else f"CUDA {cuda}" if cuda else "CPU-only")


def classify(e: BaseException) -> tuple:
    """(status, message) of an exception that ended a case."""
    if isinstance(e, Unsupported):
        return "unsupported", str(e)
    if isinstance(e, BadInput):
        return "failed", f"unusable case: {e}"
    text = f"{type(e).__name__}: {e}"
    low = text.lower()
    if isinstance(e, MemoryError) or "out of memory" in low or "memory allocation of" in low:
        return "oom", text
    if "invalid device function" in low or "no kernel image is available" in low:
        return "unsupported", f"{text}: this torch has no GPU kernels for this GPU{gpu_target_hint()} " \
            f"(torch {torch_build()} on {interpreter()}); install a torch built for that target (on Strix Halo, a " \
            "ROCm torch with gfx1151, e.g. AMD's TheRock/ROCm 7 wheels), or try HSA_OVERRIDE_GFX_VERSION at your own risk"
    if "not implemented for" in low or "not supported" in low or "unsupported" in low:
        return "unsupported", f"{text} (torch on {interpreter()})"
    tail = traceback.format_exc()[-TRACEBACK_TAIL:]
    return "failed", f"{text}\n--- traceback (tail) ---\n{tail}"


def psnr_db(torch, reference, other) -> Optional[float]:
    """PSNR over [-1,1] (peak-to-peak 2) as `quality::error_stats`; None when identical."""
    d = (reference.double() - other.double()).abs()
    if not bool((d > 0).any()):
        return None
    mse = float((d * d).mean())
    return 10.0 * math.log10(4.0 / mse)
