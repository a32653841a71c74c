#!/usr/bin/env python3
"""wan-vae-bench's PyTorch worker: engines `torch` (ports of the official Wan code) and
`diffusers` (diffusers' AutoencoderKLWan), one case per process, speaking the candle
worker's protocol (see PROTOCOL-NOTES.md next to this file).

    python3 wan_worker.py worker --case-json JSON --result PATH
    python3 wan_worker.py validate --engine torch|diffusers --weights W --cases C [--json] ...
    python3 wan_worker.py probe [--device cpu|cuda:N]

The Rust parent writes every .py file of this directory into one scratch directory and
runs this one; the sibling modules are imported from there. Only the standard library is
imported before torch, so a Python without torch still gets a clear `unsupported` result.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback
from typing import Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PHASE_MARKER = "@@wan-vae-bench-phase "
FAULT_VAR = "WAN_VAE_BENCH_FAULT"
MIN_TORCH = (2, 0)
ENGINES = ("torch", "diffusers")
REPORTED_ENV_PREFIXES = ("MIOPEN_", "HSA_", "HIP_", "ROCM_", "ROCBLAS_", "HIPBLASLT_", "PYTORCH_", "TORCH_",
                         "CUDA_", "CUBLAS_", "CUDNN_", "RAYON_", "OMP_", "CANDLE_")
OUTLIER_THRESHOLD = 1.4826 * 10.0
TRACEBACK_TAIL = 3000


class Unsupported(Exception):
    """This interpreter, install, device or setting cannot run the case (status `unsupported`)."""


class BadInput(Exception):
    """The request itself is unusable (validate exits 2)."""


def phase(name: str) -> None:
    """Tell the parent which phase is running (a marker line on stderr)."""
    print(PHASE_MARKER + name, file=sys.stderr, flush=True)


def interpreter() -> str:
    return f"{sys.executable} (Python {platform.python_version()})"


def import_torch():
    """torch, or Unsupported naming the interpreter and what is missing or too old."""
    try:
        import torch
    except ImportError as e:
        raise Unsupported(f"torch is not installed for {interpreter()}: {e}") from e
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2] if p.isdigit())
    if version < MIN_TORCH:
        raise Unsupported(f"torch {torch.__version__} for {interpreter()} is too old: the engines need torch >= "
                          f"{MIN_TORCH[0]}.{MIN_TORCH[1]}")
    return torch


# ----------------------------------------------------------------------------------------
# Device, knobs and context


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
    """Set torch.backends.cudnn.{enabled,benchmark} from the spec ("on"/"off"/absent =
    torch's default) and say what applies: on the CPU neither knob does anything."""
    knobs = {}
    for key, attr in (("cudnn", "enabled"), ("cudnn_benchmark", "benchmark")):
        value = spec.get(key)
        if value not in (None, "on", "off"):
            raise BadInput(f"spec field {key} = {value!r}: expected \"on\" or \"off\"")
        if value is not None:
            setattr(torch.backends.cudnn, attr, value == "on")
        state = "on" if getattr(torch.backends.cudnn, attr) else "off"
        knobs[key] = state if device.type == "cuda" else "not applicable (cpu)"
    return knobs


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
        "device_name": platform.processor() or platform.machine(),
        "gcn_arch_name": None,
        "total_memory_bytes": None,
    }
    try:
        ctx["cudnn_version"] = torch.backends.cudnn.version()  # MIOpen's on ROCm builds
    except Exception:  # no cuDNN/MIOpen in this build
        pass
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        ctx["device_name"] = props.name
        ctx["gcn_arch_name"] = getattr(props, "gcnArchName", None)
        ctx["total_memory_bytes"] = int(props.total_memory)
    return ctx


def diffusers_version() -> Optional[str]:
    try:
        import diffusers
        return diffusers.__version__
    except ImportError:
        return None


def peak_rss_bytes() -> Optional[int]:
    """VmHWM of this process (as the candle worker reports), bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except (ImportError, OSError):
        return None


def seen_env(variant_vars: List[str]) -> Dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items())
            if k in variant_vars or any(k.startswith(p) for p in REPORTED_ENV_PREFIXES)}


# ----------------------------------------------------------------------------------------
# Engines


def make_engine(torch, engine: str, loaded, device, precision):
    """The engine object for the checkpoint's model; Unsupported for what it cannot run."""
    if engine == "torch":
        if loaded.model == "wan2.1":
            import wan21_torch
            return wan21_torch.Engine(loaded.state_dict, device, precision)
        import wan22_torch
        return wan22_torch.Engine(loaded.state_dict, device, precision)
    if engine == "diffusers":
        import diffusers_engine
        try:
            return diffusers_engine.Engine(loaded.state_dict, loaded.model, device, precision)
        except diffusers_engine.Unsupported as e:
            raise Unsupported(f"{e} (interpreter {interpreter()})") from e
    raise BadInput(f"engine {engine!r}: expected one of {', '.join(ENGINES)} (candle runs in the Rust worker)")


def run_engine(fn: Callable, *args):
    """Call an engine method, turning the diffusers engine's Unsupported into ours."""
    try:
        return fn(*args)
    except Exception as e:
        if type(e).__name__ == "Unsupported":
            raise Unsupported(str(e)) from e
        raise


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


def precision_of(wc, name: str, mode: Optional[str], engine: str):
    """fp32/bf16/fp16 plus how 16-bit is applied; default: autocast for `torch` (the
    official WanVAE wrapper), cast for `diffusers` (pipelines' torch_dtype)."""
    if name not in wc.DTYPES:
        raise BadInput(f"precision {name!r}: expected fp32, bf16 or fp16")
    mode = mode or ("autocast" if engine == "torch" else "cast")
    if mode not in ("cast", "autocast"):
        raise BadInput(f"torch_precision {mode!r}: expected cast or autocast")
    return wc.Precision(name, mode)


# ----------------------------------------------------------------------------------------
# worker


def pass_stats(samples: List[float], warmup: List[float], frames: int, gflop: float) -> dict:
    """The candle worker's PassStats (hyperfine's MAD outlier rule)."""
    med = statistics.median(samples) if samples else 0.0
    mean = statistics.fmean(samples) if samples else 0.0
    dev = [abs(x - med) for x in samples]
    mad = statistics.median(dev) if dev else 0.0
    mad = mad if mad > 0 else sys.float_info.epsilon
    per_s = (lambda x: x / med) if med > 0 else (lambda x: 0.0)
    return {
        "samples_s": samples, "min_s": min(samples, default=0.0), "median_s": med, "mean_s": mean,
        "stddev_s": statistics.stdev(samples) if len(samples) > 1 else 0.0, "max_s": max(samples, default=0.0),
        "warmup_s": warmup, "frames_per_s": per_s(frames), "gflop": gflop, "gflop_per_s": per_s(gflop),
        "outliers": sum(1 for x in samples if abs((x - med) / mad) > OUTLIER_THRESHOLD),
    }


def empty_result(status: str, error: Optional[str]) -> dict:
    return {"status": status, "error": error, "compute_dtype": None, "encode": None, "decode": None, "load_s": None,
            "peak_rss_bytes": None, "device_memory_bytes": None, "env": {}, "model": None, "roundtrip_psnr_db": None,
            "outputs_error": None}


def psnr_db(torch, reference, other) -> Optional[float]:
    """PSNR over [-1,1] (peak-to-peak 2) as `quality::error_stats`; None when identical."""
    d = (reference.double() - other.double()).abs()
    if not bool((d > 0).any()):
        return None
    import math
    mse = float((d * d).mean())
    return 10.0 * math.log10(4.0 / mse)


def load_clip(torch, spec: dict):
    """The input clip [1,3,T,H,W] f32: the parent-written safetensors (`video`) so every
    engine sees the same bits, else this worker's own copy of the structured clip."""
    path = spec.get("input_path")
    if path:
        from safetensors.torch import load_file
        video = load_file(path)["video"].float()
        want = (1, 3, spec["frames"], spec["height"], spec["width"])
        if tuple(video.shape) != want:
            raise BadInput(f"input {path}: `video` has shape {tuple(video.shape)}, the case needs {want}")
        return video
    import wan_clip
    return wan_clip.structured_clip(torch, spec["frames"], spec["width"], spec["height"])


def save_outputs(torch, path: str, latent, decoded) -> None:
    """f32 `latent` and `decoded` safetensors, written atomically (as the candle worker)."""
    from safetensors.torch import save_file
    tmp = path[:-len(".safetensors")] + ".safetensors.tmp" if path.endswith(".safetensors") else path + ".tmp"
    save_file({"latent": latent.float().cpu().contiguous(), "decoded": decoded.float().cpu().contiguous()}, tmp)
    os.replace(tmp, path)


def measure(spec: dict) -> dict:
    """Load, warm up, time `runs` encode+decode passes (device synchronized before each
    clock read), save the last pass's outputs. Raises Unsupported/BadInput/others."""
    engine = spec.get("engine") or "torch"
    if engine not in ENGINES:
        raise BadInput(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    phase("device")
    torch = import_torch()
    import wan_common as wc
    import wan_flops
    import wan_weights
    device = open_device(torch, spec["device"])
    knobs = apply_knobs(torch, spec, device)
    precision = precision_of(wc, spec["precision"], spec.get("torch_precision"), engine)
    opts = run_options(wc, spec["chunk"], spec.get("tile_px"), spec.get("overlap_px"))
    if engine == "diffusers" and opts.chunk != 1:
        # Refused before loading: diffusers has no temporal chunk setting.
        import diffusers_engine
        raise Unsupported(diffusers_engine.chunk_message(opts.chunk))

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    phase("load")
    weights_file = spec.get("weights_path") or spec["weights"]
    if weights_file == "synthetic":
        raise BadInput("weights are `synthetic` but the spec has no weights_path: the parent must write the "
                       "synthetic weights to a safetensors file once and pass it, so all engines share them")
    t0 = time.perf_counter()
    try:
        loaded = wan_weights.load(weights_file)
    except wan_weights.WeightsError as e:
        raise BadInput(str(e)) from e
    if spec.get("model") and spec["model"] != loaded.model:
        raise BadInput(f"{weights_file} holds a {loaded.model} VAE, but the case asks for {spec['model']}")
    eng = make_engine(torch, engine, loaded, device, precision)
    sync()
    load_s = time.perf_counter() - t0
    model = {"format": loaded.format, "on_disk_dtype": loaded.on_disk_dtype, "params": loaded.params,
             "dim": int(loaded.state_dict["encoder.conv1.weight"].shape[0]), "z_dim": eng.z_dim,
             "model": loaded.model}
    f, w, h = spec["frames"], spec["width"], spec["height"]
    enc_gflop, dec_gflop = wan_flops.gflop(loaded.model, loaded.state_dict, f, w, h)
    del loaded

    phase("inputs")
    video = load_clip(torch, spec).to(device)
    enc_w, dec_w, enc, dec = [], [], [], []
    last = None
    total = spec["warmup"] + spec["runs"]
    for i in range(total):
        warm = i < spec["warmup"]
        label = f"warmup {i + 1}/{spec['warmup']}" if warm else f"run {i + 1 - spec['warmup']}/{spec['runs']}"
        phase(f"encode {label}")
        sync()
        t = time.perf_counter()
        z = run_engine(eng.encode, video, opts)
        sync()
        e = time.perf_counter() - t
        phase(f"decode {label}")
        sync()
        t = time.perf_counter()
        out = run_engine(eng.decode, z, opts)
        sync()
        d = time.perf_counter() - t
        last = (z, out) if i + 1 == total else None
        (enc_w if warm else enc).append(e)
        (dec_w if warm else dec).append(d)

    result = empty_result("ok", None)
    if last is not None:
        phase("outputs")
        latent, decoded = last[0].float(), last[1].float()
        if spec["weights"] != "synthetic":
            used = decoded.shape[2]
            result["roundtrip_psnr_db"] = psnr_db(torch, video[:, :, :used].float(), decoded.clamp(-1, 1))
        if spec.get("outputs"):
            try:
                save_outputs(torch, spec["outputs"], latent, decoded)
            except Exception as e:  # the timings stay valid
                result["outputs_error"] = f"{type(e).__name__}: {e}"
    out_frames = wc.frames_used(f)
    result.update({
        "compute_dtype": eng.compute_dtype(),
        "encode": pass_stats(enc, enc_w, f, enc_gflop),
        "decode": pass_stats(dec, dec_w, out_frames, dec_gflop),
        "load_s": load_s,
        "model": model,
        "engine": engine,
        "model_name": model["model"],
        "knobs": knobs,
        "python": context(torch, device, diffusers_version() if engine == "diffusers" else None),
    })
    if device.type == "cuda":
        result["device_peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated(device))
        result["device_peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved(device))
        result["device_memory_bytes"] = result["device_peak_reserved_bytes"]
    return result


def inject_fault(spec: dict) -> Optional[dict]:
    """The candle worker's testing hook (WAN_VAE_BENCH_FAULT), plus `garbage` (an unparsable
    result file) for the parent's error path."""
    fault = os.environ.get(FAULT_VAR, "")
    if not fault:
        return None
    if fault == "crash":
        print(f"wan-vae-bench python worker: injected crash ({FAULT_VAR}=crash)", file=sys.stderr, flush=True)
        os.abort()
    if fault == "oom":
        print(f"memory allocation of 1099511627776 bytes failed ({FAULT_VAR}=oom)", file=sys.stderr, flush=True)
        os.abort()
    if fault == "hang":
        phase("hang")
        while True:
            time.sleep(3600)
    if fault == "fail":
        return empty_result("failed", f"injected failure ({FAULT_VAR}=fail)")
    if fault == "unsupported":
        return empty_result("unsupported", f"injected unsupported setting ({FAULT_VAR}=unsupported)")
    if fault == "garbage":
        return {"__garbage__": True}
    if fault == "fake":
        return fake(spec)
    return empty_result("failed", f"unknown {FAULT_VAR} value {fault!r} (crash, oom, hang, fail, unsupported, "
                                  "garbage, fake)")


def fake(spec: dict) -> dict:
    """Made-up but well-formed timings (a few ms of sleep per pass), no torch needed."""
    def one(ms: float, name: str) -> dict:
        warm, samples = [], []
        for i in range(spec["warmup"]):
            phase(f"warmup {name} {i + 1}/{spec['warmup']}")
            t = time.perf_counter()
            time.sleep(2 * ms / 1000)
            warm.append(time.perf_counter() - t)
        for i in range(spec["runs"]):
            phase(f"{name} {i + 1}/{spec['runs']}")
            t = time.perf_counter()
            time.sleep(ms / 1000)
            samples.append(time.perf_counter() - t)
        return pass_stats(samples, warm, spec["frames"], 0.0)

    r = empty_result("ok", None)
    r.update({"compute_dtype": "fake", "encode": one(5, "encode"), "decode": one(10, "decode"), "load_s": 0.0,
              "engine": spec.get("engine") or "torch"})
    return r


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
    if "not implemented for" in low or "not supported" in low or "unsupported" in low:
        return "unsupported", f"{text} (torch on {interpreter()})"
    tail = traceback.format_exc()[-TRACEBACK_TAIL:]
    return "failed", f"{text}\n--- traceback (tail) ---\n{tail}"


def cmd_worker(args: argparse.Namespace) -> int:
    try:
        spec = json.loads(args.case_json)
    except json.JSONDecodeError as e:
        print(f"--case-json is not JSON: {e}", file=sys.stderr)
        return 2
    result = inject_fault(spec)
    if result is None:
        try:
            result = measure(spec)
        except BaseException as e:  # noqa: BLE001 - every failure becomes the result
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            status, msg = classify(e)
            result = empty_result(status, msg)
    if "__garbage__" in result:
        text = "this is not JSON {"
    else:
        result["env"] = seen_env(spec.get("variant_vars") or [])
        result["peak_rss_bytes"] = result.get("peak_rss_bytes") or peak_rss_bytes()
        text = json.dumps(result, indent=2)
    tmp = args.result + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.result)
    return 0 if result.get("status") == "ok" else 1


# ----------------------------------------------------------------------------------------
# validate


def tolerance_rule(precision: str, tiled: bool) -> tuple:
    """validate.rs's Tolerance::for_settings: (metric, factor)."""
    if tiled:
        return "mean_abs_error", 0.2
    return "max_abs_error", {"fp32": 1e-4, "fp16": 2e-2, "bf16": 1e-1}[precision]


def check_output(torch, name: str, got, want, rule: tuple) -> dict:
    if tuple(got.shape) != tuple(want.shape):
        raise BadInput(f"{name}: computed shape {tuple(got.shape)} differs from expected {tuple(want.shape)}")
    g, e = got.detach().float().cpu(), want.float()
    d = (g.double() - e.double()).abs()
    max_abs_expected = float(e.abs().max())
    tol = rule[1] * max(1.0, max_abs_expected)
    max_err, mean_err = float(d.max()), float(d.mean())
    measured = mean_err if rule[0] == "mean_abs_error" else max_err
    return {"output": name, "shape": list(got.shape), "max_abs_error": max_err, "mean_abs_error": mean_err,
            "psnr_db": psnr_db(torch, e, g), "max_abs_expected": max_abs_expected, "tolerance": tol,
            "pass": bool(torch.isfinite(g).all()) and measured <= tol}


def read_cases(path: str) -> Dict[str, dict]:
    """`<case>.input`, optional `<case>.latent`, `<case>.decoded` (tests/fixtures/README.md)."""
    from safetensors import safe_open
    if not os.path.isfile(path):
        raise BadInput(f"{path}: cases file not found")
    cases: Dict[str, dict] = {}
    try:
        with safe_open(path, framework="pt") as f:
            for k in f.keys():
                case, _, role = k.rpartition(".")
                if role not in ("input", "latent", "decoded") or not case:
                    raise BadInput(f"{path}: tensor {k!r} is not <case>.input|latent|decoded")
                cases.setdefault(case, {})[role] = f.get_tensor(k).float()
    except BadInput:
        raise
    except Exception as e:
        raise BadInput(f"{path}: cannot read cases file (expected safetensors): {e}") from e
    for name, roles in cases.items():
        for role in ("input", "decoded"):
            if role not in roles:
                raise BadInput(f"{path}: case {name!r} has no {name}.{role}")
    if not cases:
        raise BadInput(f"{path}: no cases in file")
    return cases


def validate(args: argparse.Namespace) -> dict:
    torch = import_torch()
    import wan_common as wc
    import wan_weights
    cases = read_cases(args.cases)
    device = open_device(torch, args.device)
    knobs = apply_knobs(torch, {"cudnn": args.cudnn, "cudnn_benchmark": args.cudnn_benchmark}, device)
    precision = precision_of(wc, args.precision, args.torch_precision, args.engine)
    tile = args.tile.split(":") if args.tile else None
    opts = run_options(wc, args.chunk, int(tile[0]) if tile else None, int(tile[1]) if tile and len(tile) > 1 else
                       (int(tile[0]) // 4 // 8 * 8 if tile else None))
    try:
        loaded = wan_weights.load(args.weights)
    except wan_weights.WeightsError as e:
        raise BadInput(str(e)) from e
    eng = make_engine(torch, args.engine, loaded, device, precision)
    rule = tolerance_rule(args.precision, opts.tiling is not None)
    reports = []
    for name in sorted(cases):
        c, outputs = cases[name], []
        if "latent" in c:
            z = run_engine(eng.encode, c["input"].to(device), opts)
            outputs.append(check_output(torch, "latent", z, c["latent"], rule))
            y = run_engine(eng.decode, c["latent"].to(device), opts)
        else:
            y = run_engine(eng.decode, c["input"].to(device), opts)
        outputs.append(check_output(torch, "decoded", y, c["decoded"], rule))
        reports.append({"case": name, "outputs": outputs})
    return {
        "engine": args.engine, "model": loaded.model, "weights": args.weights, "format": loaded.format,
        "precision": args.precision, "compute_dtype": eng.compute_dtype(), "chunk": args.chunk,
        "tile": f"{opts.tiling.tile_px}:{opts.tiling.overlap_px}" if opts.tiling else None, "device": args.device,
        "conv": args.engine, "knobs": knobs,
        "tolerance_rule": f"{rule[0]} <= {rule[1]:.0e} x max(1, max|expected|)", "cases": reports,
        "pass": all(o["pass"] for r in reports for o in r["outputs"]),
        "python": context(torch, device, diffusers_version() if args.engine == "diffusers" else None),
    }


def print_validate_text(r: dict) -> None:
    print(f"engine {r['engine']} ({r['model']})  weights {r['weights']}  precision {r['precision']} "
          f"(computes {r['compute_dtype']})  chunk {r['chunk']}  tile {r['tile'] or 'none'}  device {r['device']}")
    print(f"tolerance: {r['tolerance_rule']}")
    print(f"{'case':<10} {'output':<8} {'max_abs_err':>13} {'mean_abs_err':>13} {'psnr_db':>9} {'tolerance':>11}  result")
    for c in r["cases"]:
        for o in c["outputs"]:
            psnr = "inf" if o["psnr_db"] is None else f"{o['psnr_db']:.2f}"
            print(f"{c['case']:<10} {o['output']:<8} {o['max_abs_error']:>13.3e} {o['mean_abs_error']:>13.3e} "
                  f"{psnr:>9} {o['tolerance']:>11.3e}  {'ok' if o['pass'] else 'FAIL'}")
    print("all outputs within tolerance" if r["pass"] else "some outputs exceed the tolerance")


def cmd_validate(args: argparse.Namespace) -> int:
    """Exit 0 within tolerance, 1 not, 2 for anything that kept it from running."""
    try:
        report = validate(args)
    except (Unsupported, BadInput) as e:
        status = "unsupported" if isinstance(e, Unsupported) else "bad_input"
        print(json.dumps({"status": status, "error": str(e)}) if args.json else f"error: {e}",
              file=sys.stdout if args.json else sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a crash of the engine is reported, exit 2
        status, msg = classify(e)
        print(json.dumps({"status": status, "error": msg}) if args.json else f"error: {msg}",
              file=sys.stdout if args.json else sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_validate_text(report)
    return 0 if report["pass"] else 1


def cmd_probe(args: argparse.Namespace) -> int:
    """Print the context JSON (or the unsupported reason) for `system` and error messages."""
    try:
        torch = import_torch()
        device = open_device(torch, args.device)
        print(json.dumps({"status": "ok", **context(torch, device, diffusers_version())}, indent=2))
        return 0
    except Unsupported as e:
        print(json.dumps({"status": "unsupported", "error": str(e), "python_executable": sys.executable}))
        return 2


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker", help="measure one case (spec JSON in, result JSON file out)")
    w.add_argument("--case-json", required=True)
    w.add_argument("--result", required=True)
    v = sub.add_parser("validate", help="run a golden cases file through an engine")
    v.add_argument("--engine", required=True, choices=ENGINES)
    v.add_argument("--weights", required=True, help=".safetensors or .pth with the original Wan key names")
    v.add_argument("--cases", required=True)
    v.add_argument("--precision", default="fp32", choices=("fp32", "bf16", "fp16"))
    v.add_argument("--torch-precision", choices=("cast", "autocast"), default=None)
    v.add_argument("--chunk", type=int, default=1)
    v.add_argument("--tile", default=None, help="TILE_PX[:OVERLAP_PX]")
    v.add_argument("--device", default="cpu")
    v.add_argument("--cudnn", choices=("on", "off"), default=None)
    v.add_argument("--cudnn-benchmark", choices=("on", "off"), default=None)
    v.add_argument("--json", action="store_true")
    p = sub.add_parser("probe", help="print interpreter, torch and device context as JSON")
    p.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    return {"worker": cmd_worker, "validate": cmd_validate, "probe": cmd_probe}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
