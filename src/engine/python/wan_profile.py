"""`run --profile` in the Python worker (docs/worker-protocol.md, `profile`): the timed pass of
each kind runs once more under torch.profiler, with forward hooks on the model's leaf layers
named in the official Wan naming (the checkpoint keys' prefixes, `decoder.upsamples.4.residual.2`).
Each hook synchronizes the device when an outermost layer starts and ends, so a layer's time
is its own; a layer inside another (an attention block's norm and projections) counts in the
outer one. The kernels (CUDA/ROCm) or, on the CPU, the leaf operators that ran inside each
layer come from the profiler's events, under a `record_function` range per layer call
(on the CPU: each operator's own time).

Each engine only maps its module names onto the checkpoint keys: `torch` and `comfyui` use
them as they are, `diffusers` through the inverse of its own key conversion. A module is a
layer when its own parameters are checkpoint tensors; the rest (SiLU, padding, the frame
caches' copies and concatenations) is the pass's time outside any layer.

Imports only the standard library at the top; `diffusers_engine` only for a diffusers engine.
"""
from __future__ import annotations

import json
import os
import re
import time
from typing import Callable, Dict, List, Optional, Tuple

_ATTENTION_PART = re.compile(r"^(.*\.middle\.1)\.(norm|to_qkv|proj)$")
_PREFIX = "layer::"


def _identity(official: set, eng) -> Dict[str, str]:
    return {k: k for k in official}


def _diffusers(official: set, eng) -> Dict[str, str]:
    """diffusers' parameter names -> the official keys, by running its own conversion on
    the official keys (it renames keys, never splits or joins them)."""
    import diffusers_engine as de
    convert = de.convert_wan21 if eng.model_name == "wan2.1" else de.convert_wan22
    return {new: old for new, old in convert({k: k for k in official}).items()}


# Per engine module (the spec's `python_module`): its parameter names -> the official keys.
NAME_MAPS: Dict[str, Callable] = {"wan_torch": _identity, "comfyui_engine": _identity, "diffusers_engine": _diffusers}


def model_root(eng):
    """The engine's torch module: `model` (torch), `vae` (diffusers), `vae.first_stage_model`
    (ComfyUI's VAE object)."""
    import torch
    for attr in ("model", "vae"):
        obj = getattr(eng, attr, None)
        if isinstance(obj, torch.nn.Module):
            return obj
        inner = getattr(obj, "first_stage_model", None)
        if isinstance(inner, torch.nn.Module):
            return inner
    raise RuntimeError(f"cannot find the torch model of engine {type(eng).__name__}")


def layer_names(root, official: set, python_module: str, eng) -> Dict[str, str]:
    """Engine module name -> official layer name, for every module whose own parameters are
    checkpoint tensors (attention blocks as one layer)."""
    own = {name: [p for p, _ in mod.named_parameters(recurse=False)] for name, mod in root.named_modules()}
    translate = NAME_MAPS.get(python_module, _identity)(official, eng)
    layers: Dict[str, str] = {}
    for m, ps in own.items():
        keys = [translate.get(f"{m}.{p}" if m else p) for p in ps]
        keys = [k for k in keys if k in official]
        if not keys:
            continue
        off = keys[0].rsplit(".", 1)[0]
        part = _ATTENTION_PART.match(off)
        if part:
            layers[m.rsplit(".", 1)[0]] = part.group(1)
        else:
            layers[m] = off
    return layers


def _dtype(t) -> str:
    return {"torch.float32": "f32", "torch.bfloat16": "bf16", "torch.float16": "f16"}.get(str(t.dtype), str(t.dtype))


class Recorder:
    """The profiled passes of one case: `wants(warm)`, then `run(pass, fn)` for each."""

    def __init__(self, torch, eng, device, request: Optional[dict], official: set, python_module: str) -> None:
        self.torch, self.eng, self.device, self.request = torch, eng, device, request
        self.official, self.python_module = official, python_module
        self.profile = {"method": "torch.profiler", "trace_files": []}

    def wants(self, warm: bool) -> bool:
        return self.request is not None and not warm

    def call(self, pass_name: str, warm: bool, fn: Callable):
        """`fn()`, profiled when this pass is (the caller's clock stays around it)."""
        return self.run(pass_name, fn)[0] if self.wants(warm) else fn()

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def run(self, pass_name: str, fn: Callable) -> Tuple[object, float]:
        torch = self.torch
        root = model_root(self.eng)
        names = layer_names(root, self.official, self.python_module, self.eng)
        modules = dict(root.named_modules())
        rows: Dict[str, dict] = {}
        state = {"depth": 0, "start": 0.0, "range": None}

        def pre(name):
            def hook(_mod, args):
                state["depth"] += 1
                if state["depth"] > 1:
                    return
                row = rows.get(name)
                if row is None:
                    x = next((a for a in args if isinstance(a, torch.Tensor)), None)
                    row = rows[name] = {"layer": name, "calls": 0, "ms": 0.0,
                                        "input_shape": [] if x is None else list(x.shape),
                                        "dtype": "" if x is None else _dtype(x)}
                self.sync()
                state["range"] = torch.autograd.profiler.record_function(_PREFIX + name)
                state["range"].__enter__()
                state["start"] = time.perf_counter()
            return hook

        def post(name):
            def hook(_mod, _args, _out):
                state["depth"] -= 1
                if state["depth"] > 0:
                    return
                self.sync()
                ms = (time.perf_counter() - state["start"]) * 1e3
                state["range"].__exit__(None, None, None)
                rows[name]["calls"] += 1
                rows[name]["ms"] += ms
            return hook

        handles = []
        for mod_name, official in names.items():
            m = modules[mod_name]
            handles.append(m.register_forward_pre_hook(pre(official)))
            handles.append(m.register_forward_hook(post(official)))
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        try:
            with torch.profiler.profile(activities=activities, record_shapes=False) as prof:
                self.sync()
                t = time.perf_counter()
                out = fn()
                self.sync()
                secs = time.perf_counter() - t
        finally:
            for h in handles:
                h.remove()
        kernels = layer_kernels(prof, self.device.type == "cuda")
        for name, row in rows.items():
            row["kernels"] = [{"name": k, "calls": c, "ms": ms} for k, (c, ms) in kernels.get(name, {}).items()]
        self.profile[pass_name] = {"total_ms": secs * 1e3, "layers": list(rows.values())}
        trace = (self.request or {}).get("trace")
        if trace:
            path = f"{trace}.{pass_name}.json"
            prof.export_chrome_trace(path)
            engine = getattr(self.eng, "engine", "torch")
            name_trace(path, f"wan-vae-bench {engine}: {os.path.basename(trace)}", f"{pass_name} pass")
            self.profile["trace_files"].append(path)
        return out, secs

    def result(self) -> Optional[dict]:
        return self.profile if self.request is not None else None


def layer_kernels(prof, device_kernels: bool) -> Dict[str, Dict[str, Tuple[int, float]]]:
    """Per layer (its `record_function` range), the kernels that ran inside it: the device
    kernels on a GPU, else the CPU operators' own time; name -> (calls, ms)."""
    out: Dict[str, Dict[str, Tuple[int, float]]] = {}
    for evt in prof.events():
        if not evt.name.startswith(_PREFIX):
            continue
        layer = evt.name[len(_PREFIX):]
        acc = out.setdefault(layer, {})
        stack = list(evt.cpu_children)
        while stack:
            e = stack.pop()
            stack.extend(e.cpu_children)
            if device_kernels:
                items = [(k.name, k.duration / 1e3) for k in getattr(e, "kernels", [])]
            else:  # the CPU: each operator's own time, its children's apart
                items = [(e.name, e.self_cpu_time_total / 1e3)] if e.self_cpu_time_total > 0 else []
            for name, ms in items:
                c, t = acc.get(name, (0, 0.0))
                acc[name] = (c + 1, t + ms)
    return out


def name_trace(path: str, process: str, thread: str) -> None:
    """Add the trace-event format's metadata records torch leaves out: a `process_name` for
    each process and a `thread_name` for each thread of the trace that has none (a viewer
    otherwise shows "pid N / Thread 1"); GPU streams keep the names torch gave them."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    named_p = {e.get("pid") for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    named_t = {(e.get("pid"), e.get("tid")) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    meta = []
    for e in events:
        pid, tid = e.get("pid"), e.get("tid")
        if pid is None or e.get("ph") == "M":
            continue
        if pid not in named_p:
            named_p.add(pid)
            meta.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": process}})
        if tid is not None and (pid, tid) not in named_t:
            named_t.add((pid, tid))
            meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": thread}})
    if not meta:
        return
    events[:0] = meta
    tmp = path + ".named"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)
