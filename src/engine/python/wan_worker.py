#!/usr/bin/env python3
"""wan-vae-bench's PyTorch worker: the Python engines (`torch`, `diffusers`, `comfyui`; each
made by the module its entry in engine::ENGINES names, the spec's `python_module`), the cases
the parent names on stdin one after another (keeping its imports and, while the case allows,
its engine), speaking the candle worker's protocol (see docs/worker-protocol.md, section 9).

    python3 wan_worker.py worker --session DIR (stdin: one `SPEC_PATH\tRESULT_PATH` line per case)
    python3 wan_worker.py validate --engine E --module M --weights W --cases C [--json] ...
    python3 wan_worker.py probe [--device cpu|cuda:N]

This module owns the `worker` mode (cases one after another, each: load or reuse the model,
warm up, time, save outputs, write the result JSON, print the done marker) and the command line; `wan_validate` owns `validate`, `wan_runtime` what both
share. The Rust parent writes every .py file of this directory into one scratch directory
and runs this one; the sibling modules are imported from there. Only the standard library
is imported before torch, so a Python without torch still gets a clear `unsupported`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from wan_runtime import (BadInput, Unsupported, apply_knobs, check_options, classify, context,  # noqa: E402
                         diffusers_version, encode_input, engine_context, engine_module, engine_precision, engine_torch,
                         import_torch, make_engine, open_device, peak_rss_bytes, psnr_db, restore_knobs, run_engine,
                         run_options, snapshot_knobs)
import wan_validate  # noqa: E402

PHASE_MARKER = "@@wan-vae-bench-phase "
READY_MARKER = "@@wan-vae-bench-ready"
DONE_MARKER = "@@wan-vae-bench-done"
START_MARKER = "@@wan-vae-bench-start "
FAULT_CASE_VAR = "WAN_VAE_BENCH_FAULT_CASE"
FAULT_VAR = "WAN_VAE_BENCH_FAULT"
REPORTED_ENV_PREFIXES = ("MIOPEN_", "HSA_", "HIP_", "ROCM_", "ROCBLAS_", "HIPBLASLT_", "PYTORCH_", "TORCH_",
                         "CUDA_", "CUBLAS_", "CUDNN_", "RAYON_", "OMP_", "CANDLE_", "COMFYUI_")
OUTLIER_THRESHOLD = 1.4826 * 10.0


def phase(name: str) -> None:
    """Tell the parent which phase is running (a marker line on stderr)."""
    print(PHASE_MARKER + name, file=sys.stderr, flush=True)


def seen_env(variant_vars: List[str]) -> Dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items())
            if k in variant_vars or any(k.startswith(p) for p in REPORTED_ENV_PREFIXES)}


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


def memory_at_failure(device: str) -> Optional[dict]:
    """A GPU's total and free memory now (just after an out-of-memory, the failing pass's
    tensors still referenced by the exception), and what torch's cache holds; None on the
    CPU (the parent reads /proc/meminfo) or when torch cannot say."""
    if not device.startswith("cuda") or "torch" not in sys.modules:
        return None
    try:
        import torch
        dev = torch.device(device)
        free, total = torch.cuda.mem_get_info(dev)
        return {"device": device, "total_bytes": int(total), "free_bytes": int(free),
                "torch_reserved_bytes": int(torch.cuda.memory_reserved(dev)), "source": "torch.cuda.mem_get_info"}
    except Exception:  # noqa: BLE001 - the case stays `oom` without the numbers
        return None


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
    """f32 `latent` and `decoded` safetensors, written atomically (as the candle worker);
    a pass the case did not run (None) is left out."""
    from safetensors.torch import save_file
    tmp = path[:-len(".safetensors")] + ".safetensors.tmp" if path.endswith(".safetensors") else path + ".tmp"
    tensors = {k: v.float().cpu().contiguous() for k, v in (("latent", latent), ("decoded", decoded)) if v is not None}
    save_file(tensors, tmp)
    os.replace(tmp, path)


class Session:
    """What a worker keeps from one case to the next, in three scopes (issue 37):
    - process: the knobs as the imports left them (`process_knobs`, taken once, before any
      engine or case touched them);
    - engine: the engine it built (while the engine, its folder, the weights, the precision
      and the device stay the same), the model facts and weight shapes the next case needs,
      and the knobs as the engine's start-up left them (`knobs`); a new engine starts from
      the process's knobs, never from the last case's;
    - case: nothing is kept; `start_case_scope` resets what a case may have changed."""

    def __init__(self) -> None:
        self.process_knobs = None
        self.key = None
        self.eng = None
        self.model = None
        self.shapes = None
        self.model_name = None
        self.knobs = None

    def drop(self) -> None:
        """Let the engine go (its own `release` first: ComfyUI keeps loaded models)."""
        if self.eng is not None and hasattr(self.eng, "release"):
            try:
                self.eng.release()
            except Exception:  # noqa: BLE001 - what is left is freed with the object
                pass
        self.key = self.eng = self.model = self.shapes = self.model_name = self.knobs = None


_LIBC = None


def glibc():
    """The C library (loaded once), or None where it is not glibc: the allocator and paging
    calls below are then skipped."""
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes
            libc = ctypes.CDLL("libc.so.6")
            libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
            # glibc's own calls: another C library lacks them.
            _LIBC = libc if all(hasattr(libc, f) for f in ("malloc_trim", "mallopt")) else False
        except (OSError, AttributeError):
            _LIBC = False
    return _LIBC or None


def release_freed_memory() -> None:
    """Give the memory the allocator kept from freed blocks back to the system (glibc's
    malloc_trim: every arena, also the free pages inside the heap), so that what an earlier
    case freed no longer counts as resident when the next case's peak starts."""
    libc = glibc()
    if libc is not None:  # not glibc: the peak may then include freed memory
        libc.malloc_trim(0)


_FILES_AT_START: Optional[set] = None


def page_out_lazy_libraries() -> None:
    """Page out the clean pages of the files this process mapped after its first case
    started (libraries torch loads lazily, on the first call that needs them: cuDNN's graph
    library on some CPU convolutions, 50 MB; MADV_PAGEOUT, Linux 5.4+; they stay in the page
    cache and fault back in, cheaply, when run). A library only an earlier case loaded then
    counts in a case's peak only when this case runs it, as in a process of its own. The
    first call (the first case's model in place) records the files mapped then (the imports
    and the engine's) and pages out nothing. Only read-only private mappings are advised
    (clean pages); a kernel that does not page out another owner's files skips them."""
    global _FILES_AT_START
    try:
        with open("/proc/self/maps") as f:
            maps = [line.split() for line in f]
    except OSError:
        return
    # Read-only private mappings of real files only (code and constants: their pages are
    # clean); never a writable one (its written pages are anonymous), shared memory or a
    # deleted file.
    files = [(p[0], p[5]) for p in maps if len(p) == 6 and p[5].startswith("/") and "w" not in p[1]
             and p[1].endswith("p") and not p[5].startswith(("/dev/", "/memfd:"))]
    if _FILES_AT_START is None:
        _FILES_AT_START = {path for _, path in files}
        return
    lazy = [r for r, path in files if path not in _FILES_AT_START]
    if not lazy:
        return
    libc = glibc()
    if libc is None:
        return
    for r in lazy:
        start, end = (int(x, 16) for x in r.split("-"))
        libc.madvise(start, end - start, 21)  # MADV_PAGEOUT; EINVAL on older kernels: no-op


def restart_peak_rss(page_out: bool = False) -> None:
    """The peak RSS restarts from what the process holds now, after the freed memory went
    back to the system and, with `page_out` (once the case's model is in place), the lazily
    loaded libraries were paged out (Linux: VmHWM restarts from the current resident size)."""
    release_freed_memory()
    if page_out:
        page_out_lazy_libraries()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def start_case_scope(torch) -> None:
    """The case scope starts: nothing of the last case leaks into the next: garbage
    collected, the freed memory returned to the system, the device's cached memory released
    and its peak counters reset, the peak RSS restarted from what the process holds now
    (imports and the kept model; `measure` restarts it again once the case's model is in
    place), the seeds reset. The knobs are set afresh by each case
    (`restore_knobs`, then `apply_knobs`)."""
    import gc
    import random
    gc.collect()
    if torch is not None:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        torch.manual_seed(0)
    random.seed(0)
    restart_peak_rss()


def measure(spec: dict, session: Optional[Session] = None) -> dict:
    """Load (or reuse the session's engine), warm up, time `runs` encode+decode passes
    (device synchronized before each clock read), save the last pass's outputs. Raises
    Unsupported/BadInput/others."""
    session = session or Session()
    engine = spec.get("engine") or "torch"
    phase("device")
    t_import = time.perf_counter()
    mod = engine_module(engine, spec.get("python_module"))
    torch = engine_torch(mod, spec)
    if session.process_knobs is None:
        session.process_knobs = snapshot_knobs(torch)  # the process scope: before any engine
    import wan_common as wc
    import wan_flops
    import wan_levers
    import wan_weights
    import_s = time.perf_counter() - t_import
    device = open_device(torch, spec["device"])
    precision = engine_precision(mod, spec["precision"], spec.get("torch_precision"))
    opts = run_options(wc, spec["chunk"], spec.get("tile_px"), spec.get("overlap_px"))
    check_options(mod, opts)  # what the engine refuses before loading

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    phase("load")
    weights_file = spec.get("weights_path") or spec["weights"]
    if str(weights_file).startswith("synthetic"):
        raise BadInput("weights are `synthetic` but the spec has no weights_path: the parent must write the "
                       "synthetic weights to a safetensors file once and pass it, so all engines share them")
    key = json.dumps([engine, spec.get("engine_dir"), str(weights_file), spec.get("model"), spec["device"],
                      spec["precision"], spec.get("torch_precision"), bool(spec.get("fault_hooks"))])
    t0 = time.perf_counter()
    model_reused = session.key == key
    if not model_reused:
        session.drop()  # the previous model goes before the next is built: never both in memory
        # The engine scope starts from the process's knobs, not from the last case's.
        restore_knobs(torch, session.process_knobs)
        start_case_scope(torch)
        try:
            loaded = wan_weights.load(weights_file)
        except wan_weights.WeightsError as e:
            raise BadInput(str(e)) from e
        if spec.get("model") and spec["model"] != loaded.model:
            raise BadInput(f"{weights_file} holds a {loaded.model} VAE, but the case asks for {spec['model']}")
        eng = make_engine(mod, torch, loaded, device, precision, spec)
        session.model = {"format": loaded.format, "on_disk_dtype": loaded.on_disk_dtype, "params": loaded.params,
                         "dim": int(loaded.state_dict["encoder.conv1.weight"].shape[0]), "z_dim": eng.z_dim,
                         "model": loaded.model}
        # Shapes only (meta tensors): the FLOP count of later cases needs no weights.
        session.shapes = {k: torch.empty(tuple(v.shape), device="meta") for k, v in loaded.state_dict.items()}
        session.model_name = loaded.model
        del loaded
        session.key, session.eng = key, eng
        # The knobs as the engine's start-up left them: each later case starts from these.
        session.knobs = snapshot_knobs(torch)
    eng = session.eng
    restore_knobs(torch, session.knobs)
    if hasattr(eng, "start_case"):
        eng.start_case()  # its per-case facts (comfyui: retries, the last decode) start afresh
    lever_model = wan_levers.apply_case(eng, spec)  # the case's layout and conv3d, on the kept model
    # The knobs after the engine started: ComfyUI's start-up switches cuDNN (MIOpen) off on
    # AMD, and the case's own setting must be the one in force when the clocks run.
    knobs = apply_knobs(torch, spec, device)
    sync()
    load_s = 0.0 if model_reused else time.perf_counter() - t0
    model = dict(session.model)
    f, w, h = spec["frames"], spec["width"], spec["height"]
    enc_gflop, dec_gflop = wan_flops.gflop(session.model_name, session.shapes, f, w, h)

    # Each case's peak memory is its own, the same in a shared worker as in a process of its
    # own: it restarts once this case's model is in place (kept or loaded; the loading's
    # transient is not the setting's), so it holds the model and the case's inputs and passes.
    # The device's peak counters likewise.
    restart_peak_rss(page_out=True)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    phase("inputs")
    # `passes` and `input` (docs/worker-protocol.md): a decode-only case decodes the given
    # latent and never encodes; an `input` video replaces the clip.
    passes = spec.get("passes") or "both"
    given = spec.get("input") or {}
    encodes, decodes = passes != "decode", passes != "encode"
    video, given_z = None, None
    if encodes and given.get("kind") == "video":
        from safetensors.torch import load_file
        video = load_file(given["path"])["video"].float().to(device)
    elif encodes:
        video = load_clip(torch, spec).to(device)
    elif given.get("kind") == "latent":
        from safetensors.torch import load_file
        given_z = load_file(given["path"])["latent"].to(device)
    else:
        raise BadInput("a decode-only case needs `input` of kind `latent`")
    tt = (spec.get("temporal_tile_frames"), spec.get("temporal_overlap_frames"))
    # What the engine's encode takes, made before any clock (comfyui: ComfyUI's IMAGE).
    enc_in = None if video is None else encode_input(eng, video)

    def decode(z):
        if getattr(eng, "tiles_time", False):  # the engine's own temporal tiling (comfyui)
            return run_engine(eng.decode, z, opts, tt)
        if tt[0] is None:
            return run_engine(eng.decode, z, opts)
        return wc.temporal_tiled_decode(z, tt[0], tt[1], 4, lambda t: run_engine(eng.decode, t, opts))

    enc_w, dec_w, enc, dec = [], [], [], []
    last = None
    import wan_profile  # `run --profile`: the timed pass of a profiled lease, per layer
    rec = wan_profile.Recorder(torch, eng, device, spec.get("profile"), set(session.shapes), spec.get("python_module"))
    total = spec["warmup"] + spec["runs"]
    retries_warm = 0  # an engine's out-of-memory retries during warmup (comfyui's `retries`)
    for i in range(total):
        warm = i < spec["warmup"]
        if i == spec["warmup"] and hasattr(eng, "retries"):
            retries_warm = eng.retries()
        label = f"warmup {i + 1}/{spec['warmup']}" if warm else f"run {i + 1 - spec['warmup']}/{spec['runs']}"
        z, out = given_z, None
        if encodes:
            phase(f"encode {label}")
            sync()
            t = time.perf_counter()
            z = rec.call("encode", warm, lambda: run_engine(eng.encode, enc_in, opts))
            sync()
            (enc_w if warm else enc).append(time.perf_counter() - t)
        if decodes:
            phase(f"decode {label}")
            sync()
            t = time.perf_counter()
            out = rec.call("decode", warm, lambda: decode(z))
            sync()
            (dec_w if warm else dec).append(time.perf_counter() - t)
        last = (z if encodes else None, out) if i + 1 == total else None

    result = empty_result("ok", None)
    if last is not None:
        phase("outputs")
        latent, decoded = (None if t is None else t.float() for t in last)
        # As the candle worker: checked after the clocks stopped, on the last timed pass; a
        # pass that produced NaN or Inf makes the case `failed`, naming the pass and the count.
        non_finite = []
        for pass_name, what, t in (("encode", "latent", latent), ("decode", "decoded video", decoded)):
            if t is None:
                continue
            n = int((~torch.isfinite(t)).sum().item())
            if n > 0:
                non_finite.append(f"{pass_name} produced {n} non-finite value(s) (NaN or Inf) of {t.numel()} in the {what}")
        if non_finite:
            result = empty_result("failed", "; ".join(non_finite))
        # Real weights only: "synthetic" and "synthetic:SEED" have no meaningful round trip.
        if (not non_finite and not str(spec["weights"]).startswith("synthetic") and video is not None
                and decoded is not None):
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
        # Both passes process the first 1+4k frames: encode reads them, decode returns them.
        "encode": pass_stats(enc, enc_w, out_frames, enc_gflop) if encodes else None,
        "decode": pass_stats(dec, dec_w, out_frames, dec_gflop) if decodes else None,
        "load_s": load_s,
        "model": model,
        "engine": engine,
        "model_name": model["model"],
        # The levers as the convolutions saw them (a lever that did not take fails the case).
        "knobs_in_force": {**knobs, **(wan_levers.read_back(lever_model) if lever_model is not None else {})},
        "python": engine_context(mod, eng, torch, device),
        "worker": {"import_s": import_s, "model_reused": model_reused},
    })
    if hasattr(eng, "facts"):
        # What the engine's own code did (comfyui: dtype, version, retries, estimate, knobs).
        facts = eng.facts()
        if hasattr(eng, "retries"):
            # The flag is about the timed passes; a retry in warmup only stays in the count.
            facts["oom_tiled_retries_timed"] = eng.retries() - retries_warm
            result["oom_tiled_retry"] = facts["oom_tiled_retries_timed"] > 0
        result["engine_case"] = facts
    if device.type == "cuda":
        result["device_peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated(device))
        result["device_peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved(device))
        result["device_memory_bytes"] = result["device_peak_reserved_bytes"]
    if rec.result() is not None:
        result["profile"] = rec.result()
    return result


def inject_fault(spec: dict) -> Optional[dict]:
    """The candle worker's testing hook (WAN_VAE_BENCH_FAULT), plus `garbage` (an unparsable
    result file) for the parent's error path; `comfyui-oom` is the comfyui engine's (its
    first decoder call raises ComfyUI's OOM exception) and runs the case normally here. Each
    acts only when the spec's `fault_hooks` is set (the parent's hidden `run --fault-hooks`)."""
    fault = os.environ.get(FAULT_VAR, "")
    if not fault:
        return None
    only = os.environ.get(FAULT_CASE_VAR, "")
    if only and only not in spec.get("id", ""):
        return None  # the hook acts on the cases whose id holds WAN_VAE_BENCH_FAULT_CASE
    if not spec.get("fault_hooks", False):
        print(f"wan-vae-bench python worker: {FAULT_VAR} ignored (a testing hook, enabled only by "
              "`run --fault-hooks`)", file=sys.stderr, flush=True)
        return None
    if fault in ("comfyui-oom", "candle-lacks-device", "candle-prepare-fails"):  # others' hooks
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
    if fault in ("fake", "exit-between", "deaf-between"):
        return fake(spec)
    return empty_result("failed", f"unknown {FAULT_VAR} value {fault!r} (crash, oom, hang, fail, unsupported, "
                                  "garbage, fake, exit-between, deaf-between, comfyui-oom, candle-lacks-device, "
                                  "candle-prepare-fails)")


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


def run_case(spec_path: str, result_path: str, session: Session) -> dict:
    """One case: its spec from the file, its result JSON written atomically to the other;
    returns the spec (empty when it could not be read)."""
    try:
        with open(spec_path) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        spec, result = {}, empty_result("failed", f"cannot read the spec {spec_path}: {e}")
    else:
        torch = sys.modules.get("torch")
        if torch is not None:
            try:
                start_case_scope(torch)  # a device left broken by the last case raises here
            except Exception as e:  # noqa: BLE001 - the worker's failure: it ends unacknowledged
                print(f"wan-vae-bench python worker: the device is unusable after the last case, so this worker "
                      f"ends before taking the next ({type(e).__name__}: {e})", file=sys.stderr, flush=True)
                os._exit(3)
        # The acknowledgement, before any work: from here on the case is ours.
        print(START_MARKER + str(spec.get("id", "")), file=sys.stderr, flush=True)
        result = inject_fault(spec)
    if result is None:
        try:
            result = measure(spec, session)
        except BaseException as e:  # noqa: BLE001 - every failure becomes the result
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            status, msg = classify(e)
            result = empty_result(status, msg)
            if status == "oom":
                session.drop()  # what failed to fit is not kept for the next case
                result["memory_at_failure"] = memory_at_failure(spec.get("device") or "cpu")
    if "__garbage__" in result:
        text = "this is not JSON {"
    else:
        result["env"] = seen_env(spec.get("variant_vars") or [])
        result["peak_rss_bytes"] = result.get("peak_rss_bytes") or peak_rss_bytes()
        text = json.dumps(result, indent=2)
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, result_path)
    return spec


def steady_allocator() -> None:
    """glibc's steady state, fixed from the start (the candle worker's `steady_allocator`):
    the mmap threshold at 32 MiB, the most its dynamic threshold reaches once a process has
    freed large blocks, and the trim threshold at twice that. A fresh worker then places its
    allocations as one that ran earlier cases does, so a case's peak memory does not depend
    on what ran before it in the process."""
    libc = glibc()
    if libc is not None:  # not glibc: left as it is
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD


def cmd_worker(args: argparse.Namespace) -> int:
    """The session: ready marker, then one case per stdin line, the done marker after each;
    ends at the end of stdin."""
    steady_allocator()
    print(READY_MARKER, file=sys.stderr, flush=True)
    session = Session()
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        if "\t" not in line:
            print(f"worker: expected `SPEC\\tRESULT` on stdin, got {line!r}", file=sys.stderr, flush=True)
            return 2
        spec_path, result_path = line.split("\t", 1)
        spec = run_case(spec_path, result_path, session)
        print(DONE_MARKER, file=sys.stderr, flush=True)
        fault_between_cases(spec)
    return 0


def fault_between_cases(spec: dict) -> None:
    """The candle worker's `exit-between` (end, exit 0, when the next case arrives, without
    acknowledging it) and `deaf-between` (stop reading stdin), after a case they act on."""
    fault = os.environ.get(FAULT_VAR, "")
    only = os.environ.get(FAULT_CASE_VAR, "")
    if fault not in ("exit-between", "deaf-between") or not spec.get("fault_hooks", False):
        return
    if only and only not in spec.get("id", ""):
        return
    if fault == "exit-between":
        sys.stdin.readline()
        os._exit(0)
    while True:
        time.sleep(3600)


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
    w = sub.add_parser("worker", help="measure the cases named on stdin (spec JSON files in, result JSON files out)")
    w.add_argument("--session", required=True, metavar="SCRATCH_DIR",
                   help="the run's scratch folder (it names the run on the command line)")
    v = sub.add_parser("validate", help="run a golden cases file through an engine")
    v.add_argument("--engine", required=True, help="the engine's name (messages and the JSON)")
    v.add_argument("--module", required=True, help="the module that makes it (its entry's python_module)")
    v.add_argument("--engine-dir", default=None, help="the engine's folder (its --<flag> DIR), if it has one")
    v.add_argument("--weights", required=True, help=".safetensors or .pth with the original Wan key names")
    v.add_argument("--cases", required=True)
    v.add_argument("--verdict", default=None,
                   help="also write the JSON (the report, or {status, error}) to this file: the parent's proof")
    v.add_argument("--precision", default="fp32", choices=("fp32", "bf16", "fp16", "auto"))
    v.add_argument("--torch-precision", choices=("cast", "autocast"), default=None)
    v.add_argument("--chunk", type=int, default=1)
    v.add_argument("--tile", default=None, help="TILE_PX[:OVERLAP_PX]")
    v.add_argument("--device", default="cpu")
    v.add_argument("--cudnn", choices=("on", "off"), default=None)
    v.add_argument("--cudnn-benchmark", choices=("on", "off"), default=None)
    # True fp32 unless asked: validate checks fp32 against the golden tolerance.
    v.add_argument("--tf32", choices=("auto", "on", "off"), default="off")
    v.add_argument("--layout", choices=("ncdhw", "channels_last_3d"), default="ncdhw")
    v.add_argument("--conv3d", choices=("native", "split"), default="native")
    v.add_argument("--json", action="store_true")
    p = sub.add_parser("probe", help="print interpreter, torch and device context as JSON")
    p.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    return {"worker": cmd_worker, "validate": wan_validate.cmd_validate, "probe": cmd_probe}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
