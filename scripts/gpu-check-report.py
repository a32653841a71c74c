#!/usr/bin/env python3
"""Verdict lines of scripts/gpu-check.sh: reads what `wan-vae-bench` wrote (system JSON,
validate JSON and exit code, run reports) and prints one line per check:

    PASS|FAIL|UNSUPPORTED|SKIP|INFO  <check>: <detail>

Standard library only (users' machines have python3, not jq). Never raises on a bad or
missing file: that is a FAIL line naming it. Exit status 0 always; gpu-check.sh counts
the lines.
"""
import argparse
import json
import math
import os
import sys

GIB = float(1 << 30)
FP32_CROSS_ENGINE_TOL = 1e-4  # cross_engine: max_abs_error <= 1e-4 x max(1, max_abs_reference)
# bf16 against the same engine's true fp32 (quality.latent and quality.decoded of an untiled,
# chunk-1 bf16 case, whose reference differs from it in precision alone): PSNR at least this.
# Measured on the synthetic weights (results/gpu-2026-11-2*): torch 45.2-47.8 dB, candle
# 45.9-47.7, diffusers 44.4-47.2, comfyui 43.3-51.8 (the lowest, its 81-frame decode); a wrong
# but finite result (a mis-indexed or mis-padded convolution) loses far more. 40 dB: 3 dB under
# the lowest any engine measured, 5-8 dB (RMSE 1.8-2.5x) under torch's.
BF16_PSNR_FLOOR_DB = 40.0
# conv-bench: one convolution's output on the probe tensors against torch's F.conv3d of the
# same: fp32 (both true fp32) the golden rule; bf16, whose outputs are rounded to 8 bits,
# 2^-6 of the largest output (a few bf16 steps).
CONV_FP32_TOL = 1e-4
CONV_BF16_TOL = 2.0**-6


def line(verdict, check, detail):
    print(f"{verdict:<11} {check}: {detail}", flush=True)


def first_line(text, limit=300):
    """The first non-empty line of an error text (the worker's stderr tail follows it)."""
    for raw in (text or "").splitlines():
        s = raw.strip()
        if s:
            return s if len(s) <= limit else s[: limit - 3] + "..."
    return "(no message)"


def error_line(path):
    """The `error: ...` line of a stderr file, else its last non-empty line."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError as e:
        return f"(cannot read {path}: {e})"
    for l in lines:
        if l.startswith("error:"):
            return first_line(l)
    return first_line(lines[-1]) if lines else "(no message)"


def load_json(path, check):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        line("FAIL", check, f"cannot read {path}: {e}")
        return None


def on_gpu(device):
    return not device.strip().lower().startswith("cpu")


def gib(b):
    return "?" if b is None else f"{b / GIB:.1f} GiB"


# ---------------------------------------------------------------- system


def cmd_system(a):
    info = load_json(a.json, "system")
    if info is None:
        return
    feats = ",".join(info.get("cargo_features") or []) or "none"
    line("INFO", "system", f"build features: {feats}; tool {info.get('tool_version')} ({info.get('git_commit')})")
    gpus = info.get("gpus") or []
    for i, g in enumerate(gpus):
        what = g.get("name") or g.get("gfx_target") or "unknown"
        line(
            "INFO",
            "system",
            f"gpu {i}: {g.get('vendor')} {what}, {gib(g.get('vram_total_bytes'))}, driver {g.get('driver_version')}",
        )
    if not on_gpu(a.device):
        line("SKIP", "system gpu", f"device {a.device}: no GPU needed")
    elif gpus:
        line("PASS", "system gpu", f"{len(gpus)} GPU(s) found for device {a.device}")
    else:
        line("FAIL", "system gpu", "no GPU found (AMD via /sys/class/kfd, NVIDIA via nvidia-smi)")


# ---------------------------------------------------------------- validate


def cmd_validate(a):
    check = f"validate {a.name}"
    if a.rc == 2:
        # The Python worker says why in its JSON (`status`, `error`); the binary on stderr.
        try:
            with open(a.stdout, encoding="utf-8") as f:
                why = json.load(f).get("error")
        except (OSError, ValueError, AttributeError):
            why = None
        line("UNSUPPORTED", check, first_line(why) if why else error_line(a.stderr))
        return
    if a.rc not in (0, 1):
        line("FAIL", check, f"exit {a.rc} (crash?): {error_line(a.stderr)}")
        return
    rep = load_json(a.stdout, check)
    if rep is None:
        return
    rule = rep.get("tolerance_rule") or "max_abs_error"
    metric = rule.split()[0]
    worst = None  # (ratio, case, output, measured, tolerance, pass)
    for case in rep.get("cases", []):
        for o in case.get("outputs", []):
            measured, tol, ok = o.get(metric), o.get("tolerance") or 0.0, o.get("pass") is True
            ratio = measured / tol if (measured is not None and tol > 0) else math.inf
            if not ok:
                ratio = math.inf
            if worst is None or ratio > worst[0]:
                worst = (ratio, case.get("case"), o.get("output"), measured, tol, ok)
    detail = ""
    if worst is not None:
        _, case, output, measured, tol, ok = worst
        shown = "?" if measured is None else f"{measured:.3e}"
        detail = f"worst {case}.{output} {metric} {shown} (tolerance {tol:.3e}){'' if ok else ' FAILS'}"
    pass_ = rep.get("pass") is True and a.rc == 0
    line("PASS" if pass_ else "FAIL", check, f"{rep.get('compute_dtype', '')}; {detail}".strip("; "))


# ---------------------------------------------------------------- run reports


def case_label(c):
    return c.get("id", "?")


def timing(c):
    parts = []
    for p in ("encode", "decode"):
        s = c.get(p)
        if s and s.get("median_s") is not None:
            parts.append(f"{p} {s['median_s']:.3f} s")
    return ", ".join(parts) or "no timings"


def bad_timings(c):
    """Why the timings of an ok case are not believable, or None."""
    passes = c.get("passes", "both")
    wanted = {"both": ("encode", "decode"), "encode": ("encode",), "decode": ("decode",)}.get(passes, ())
    for p in wanted:
        s = c.get(p)
        if not s:
            return f"no {p} timings"
        m = s.get("median_s")
        if m is None or not math.isfinite(m) or m <= 0:
            return f"{p} median {m!r}"
    return None


def process_peak(c):
    """The worker's device memory at its peak as NVML reported it (one metric for every
    engine, sampled by the parent during the passes); "" when there is none."""
    p = c.get("device_process_peak") or {}
    if p.get("peak_bytes"):
        return f"; process peak {gib(p['peak_bytes'])} (NVML, {p.get('samples')} samples)"
    return ""


def device_memory(c, device):
    """(detail, problem): the device peak memory of a case on a GPU."""
    if not on_gpu(device):
        rss = c.get("peak_rss_bytes")
        return (f"peak RSS {gib(rss)}", None)
    alloc = c.get("device_peak_allocated_bytes")
    if c.get("engine", "candle") != "candle":
        if alloc is None:
            return ("", "no device_peak_allocated_bytes (torch.cuda.max_memory_allocated)")
        reserved = gib(c.get("device_peak_reserved_bytes"))
        return (f"device peak {gib(alloc)} allocated, {reserved} reserved{process_peak(c)}", None)
    held = c.get("device_memory_bytes")
    return (f"device memory {gib(held)} (nvidia-smi){process_peak(c)}", None)


def conv_library(c):
    """What candle's convolution library ran, in one line (None if the case has none)."""
    lib = c.get("conv_library")
    if not lib:
        return None
    algos = {}
    for p in lib.get("plans") or []:
        key = f"{p.get('algorithm')} ({p.get('math')})"
        algos[key] = algos.get(key, 0) + 1
    shapes = ", ".join(f"{k} x{n}" for k, n in sorted(algos.items(), key=lambda kv: -kv[1]))
    ws = (lib.get("workspace_bytes") or 0) / 2**20
    return (
        f"{lib.get('library')} {lib.get('version')}, {lib.get('math')}; "
        f"{len(lib.get('plans') or [])} shapes: {shapes}; workspace {ws:.1f} MiB"
    )


def check_case(name, c, device):
    check = f"run {name} {case_label(c)}"
    status = c.get("status")
    if status == "ok":
        bad = bad_timings(c)
        mem, problem = device_memory(c, device)
        if bad or problem:
            line("FAIL", check, f"ok but {bad or problem}")
            return
        line("PASS", check, f"{timing(c)}; {mem}; computes {c.get('compute_dtype')}")
        lib = conv_library(c)
        if lib:
            line("INFO", f"conv_library {name} {case_label(c)}", lib)
        if on_gpu(device) and c.get("engine", "candle") == "candle":
            check_conv_plans(name, c)
        peak = c.get("device_process_peak") or {}
        if peak and not peak.get("peak_bytes"):
            # The one memory metric both engines are compared by is missing.
            line("FAIL", f"process_peak {name} {case_label(c)}", f"no NVML peak: {peak.get('error')}")
        if on_gpu(device):
            check_telemetry(name, c)
    elif status == "unsupported":
        line("UNSUPPORTED", check, first_line(c.get("error")))
    else:
        line("FAIL", check, f"{status}: {first_line(c.get('error'))}")
    for b in c.get("budgets") or []:
        verdict = {"ok": "PASS", "broken": "FAIL"}.get(b.get("verdict"), "SKIP")
        line(
            verdict,
            f"budget {name} {case_label(c)}",
            f"{b.get('budget')} {b.get('value')} vs limit {b.get('limit')} ({b.get('scope')}): {b.get('verdict')}",
        )
    if status == "ok":
        check_bf16_psnr(name, c)
    cross = (c.get("quality") or {}).get("cross_engine")
    if cross:
        err = cross.get("max_abs_error")
        bound = FP32_CROSS_ENGINE_TOL * max(1.0, cross.get("max_abs_reference") or 0.0)
        detail = f"vs {cross.get('reference_engine')} {cross.get('reference_id')}: max_abs {err:.3e}"
        if c.get("precision") == "fp32":
            ok = err is not None and err <= bound
            line("PASS" if ok else "FAIL", f"cross_engine {name} {case_label(c)}", f"{detail} (fp32 bound {bound:.3e})")
        else:
            line("INFO", f"cross_engine {name} {case_label(c)}", detail)


def shape_of(p):
    """One convolution as the library got it, for a verdict line."""
    return (f"input {p.get('input')} weight {p.get('weight')} stride {p.get('stride')} "
            f"padding {p.get('padding')} {p.get('dtype')}")


def true_fp32(c):
    """Whether an fp32 case is held to true fp32 (its tf32 knob is not `on`)."""
    return c.get("precision") == "fp32" and str(c.get("tf32")) != "on"


def check_conv_plans(name, c):
    """A candle case on a GPU is timed as its convolution library ran it: FAIL when it
    recorded no library, when a shape fell back to candle's own convolution (timed and
    labelled as the library's otherwise), or when a true-fp32 case ran a shape under any math
    but FMA (TF32 on Ampere and newer); INFO when a first choice was passed over for the
    workspace cap (torch has none)."""
    label = f"{name} {case_label(c)}"
    lib = c.get("conv_library")
    if not lib or not lib.get("plans"):
        line("FAIL", f"conv_library {label}",
             "no convolution library recorded: a build without cuDNN (`--features cudnn`), or no convolution reached it")
        return
    for p in lib["plans"]:
        if str(p.get("algorithm", "")).startswith("candle"):
            line("FAIL", f"conv_plan {label}", f"{shape_of(p)}: {p.get('algorithm')}")
        elif true_fp32(c) and p.get("math") != "FMA":
            line("FAIL", f"conv_plan {label}",
                 f"{shape_of(p)}: {p.get('algorithm')} under {p.get('math')} math in a true-fp32 case (FMA only: no TF32)")
        if p.get("passed_over"):
            line("INFO", f"conv_plan {label}", f"{shape_of(p)}: {p['passed_over']}; ran {p.get('algorithm')}")


def like_for_like_bf16(c):
    """Whether a bf16 case's quality reference differs from it in precision alone (untiled in
    space and time, chunk 1, the default layout and conv3d)."""
    return (c.get("precision") == "bf16" and not c.get("tile_px") and not c.get("temporal_tile_frames")
            and c.get("chunk", 1) == 1 and (c.get("layout") or "ncdhw") == "ncdhw"
            and (c.get("conv3d") or "native") == "native")


def check_bf16_psnr(name, c):
    """bf16 judged against the same engine's fp32 (`quality.latent`, `quality.decoded`): PSNR
    at least BF16_PSNR_FLOOR_DB; a tiled or chunked case's is its tiling's too (INFO)."""
    q = c.get("quality") or {}
    if c.get("precision") != "bf16":
        return
    for what in ("latent", "decoded"):
        m = q.get(what)
        if not m:
            continue
        psnr = m.get("psnr_db")
        detail = f"{what} vs {q.get('reference_id')}: PSNR {'?' if psnr is None else f'{psnr:.1f}'} dB, max_abs {m.get('max_abs')}"
        check = f"bf16 {name} {case_label(c)}"
        if not like_for_like_bf16(c):
            line("INFO", check, f"{detail} (tiled or chunked: not judged)")
        elif m.get("identical"):
            line("PASS", check, f"{what} identical to the fp32 reference")
        elif psnr is None or not math.isfinite(psnr) or psnr < BF16_PSNR_FLOOR_DB:
            line("FAIL", check, f"{detail}: under the floor of {BF16_PSNR_FLOOR_DB:.0f} dB")
        else:
            line("PASS", check, f"{detail} (floor {BF16_PSNR_FLOOR_DB:.0f} dB)")


def cmd_conv_bench(a):
    """conv-bench (scripts/conv-bench.sh): per shape, candle's output on the probe tensors
    against torch's F.conv3d of the same (max abs error), or why it was not compared; every
    shape named."""
    check = f"conv-bench {a.name}"
    rep = load_json(a.report, check)
    if rep is None:
        return
    precision = rep.get("precision")
    shapes = rep.get("shapes") or []
    if not shapes:
        line("FAIL", check, "no shape in the report")
        return
    tol_rel = CONV_FP32_TOL if precision == "fp32" else CONV_BF16_TOL
    for i, s in enumerate(shapes):
        label = f"{check} shape {i}"
        if s.get("fallback"):
            line("FAIL", label, f"{shape_of(s)}: {s.get('algorithm')}")
            continue
        err, ref = s.get("max_abs_error"), s.get("max_abs_reference")
        times = ""
        if s.get("median_ms") is not None and s.get("torch_median_ms") is not None:
            times = f"; candle {s['median_ms']:.3f} ms, torch {s['torch_median_ms']:.3f} ms"
        if err is None or ref is None:
            line("FAIL", label, f"{shape_of(s)}: not compared with torch ({s.get('compare_error') or 'no output'})")
            continue
        bound = tol_rel * max(1.0, ref)
        ok = math.isfinite(err) and err <= bound
        line("PASS" if ok else "FAIL", label,
             f"{shape_of(s)} {s.get('algorithm')} ({s.get('math')}): max_abs_error {err:.3e} vs torch "
             f"(bound {bound:.3e}, max |torch| {ref:.3g}){times}")


def check_telemetry(name, c):
    """A GPU case's telemetry: where it was read, the clock, temperature and power of its timed
    passes, and the throttle verdict. A case marked throttled FAILs unless the driver named a
    thermal or power limit: a low clock alone on short passes is the false verdict to catch."""
    check = f"telemetry {name} {case_label(c)}"
    t = c.get("telemetry")
    if not t:
        line("FAIL", check, "no telemetry in the case")
        return
    if not t.get("source"):
        line("FAIL", check, f"unavailable: {first_line(json.dumps(t.get('unavailable')))}")
        return
    parts, missing = [], []
    for kind in ("encode", "decode"):
        p = t.get(kind)
        if not p:
            continue
        vals = {k: p.get(k) for k in ("clock_median_mhz", "temp_peak_c", "power_mean_w")}
        missing += [f"{kind}.{k}" for k, v in vals.items() if v is None]
        frac = p.get("clock_median_fraction")
        parts.append(
            f"{kind}: {p.get('samples')} samples, clock {vals['clock_median_mhz']} MHz"
            f" ({'?' if frac is None else f'{frac:.0%}'} of {t.get('clock_max_mhz')}), "
            f"{vals['temp_peak_c']} C peak, {vals['power_mean_w']} W mean"
            + (f", reasons {','.join(p['throttle_reasons'])}" if p.get("throttle_reasons") else "")
        )
    if not parts:
        line("FAIL", check, f"no timed pass sampled ({t.get('samples')} samples; {json.dumps(t.get('unavailable'))})")
        return
    detail = f"{t.get('source')}; " + "; ".join(parts)
    verdicts = t.get("unavailable") or {}
    if t.get("throttled"):
        limits = [r for k in ("encode", "decode") for r in ((t.get(k) or {}).get("throttle_reasons") or [])
                  if any(w in r for w in ("thermal", "power"))]
        line("INFO" if limits else "FAIL", check,
             f"throttled ({t.get('throttle_why')}){'' if limits else ' with no thermal or power reason: false verdict?'}; {detail}")
    elif missing:
        line("FAIL", check, f"missing {', '.join(missing)}; {detail}")
    else:
        verdict = "no verdict: " + "; ".join(f"{k} {v}" for k, v in verdicts.items()) if any(
            k.endswith("_verdict") for k in verdicts) else "not throttled"
        line("PASS", check, f"{verdict}; {detail}")


def check_context(name, rep, device):
    if not on_gpu(device):
        return
    for engine, ctx in sorted((rep.get("engines") or {}).items()):
        check = f"context {name} {engine}"
        dev, mem = ctx.get("device_name"), ctx.get("total_memory_bytes")
        runtime = ", ".join(
            f"{k} {ctx[k]}" for k in ("torch", "cuda", "hip", "cudnn_version", "diffusers") if ctx.get(k) is not None
        )
        # AMD: its gfx target; NVIDIA: compute capability and driver (gcn_arch_name is null there).
        arch = ctx.get("gcn_arch_name") or (
            f"compute capability {ctx['compute_capability']}" if ctx.get("compute_capability") else None)
        driver = f", driver {ctx['nvidia_driver']}" if ctx.get("nvidia_driver") else ""
        if ctx.get("gcn_arch_name") and ctx.get("gcn_arch_name") == dev:
            line("FAIL", check, f"gcn_arch_name repeats the device name {dev!r} (it is AMD's gfx target, null elsewhere)")
        elif dev and mem:
            line("PASS", check, f"{dev}{' (' + arch + ')' if arch else ''}, {gib(mem)}{driver}; {runtime}")
        else:
            line("FAIL", check, f"device name {dev!r} / total memory {mem!r} missing from the report; {runtime}")


def cmd_run(a):
    check = f"run {a.name}"
    if not os.path.isfile(a.report):
        line("FAIL", check, f"no report (exit {a.rc}): {error_line(a.log)}")
        return
    rep = load_json(a.report, check)
    if rep is None:
        return
    cases = rep.get("cases") or []
    if rep.get("run", {}).get("interrupted"):
        line("FAIL", check, f"interrupted: {rep['run']['interrupted']}")
    if not cases:
        line("FAIL", check, f"no case in the report (exit {a.rc}): {error_line(a.log)}")
        return
    if a.oom:
        check_oom(a.name, cases)
        return
    check_context(a.name, rep, rep.get("run", {}).get("device", a.device))
    for c in cases:
        check_case(a.name, c, rep.get("run", {}).get("device", a.device))


def size_of(c):
    return f"{c.get('width')}x{c.get('height')}"


def check_oom(name, cases):
    """The first case (largest size) must be `oom` with a message that names its size, its
    precision and the device's memory when it failed (GiB total and free); the next must be ok."""
    # Every case of the largest size must fail (the fp32 case's true-fp32 reference, added by
    # `run` on NVIDIA, is as large); every smaller one must then run.
    px = lambda c: c.get("width", 0) * c.get("height", 0)
    largest = max(px(c) for c in cases)
    for big in [c for c in cases if px(c) == largest]:
        check_oom_case(name, big)
    for c in [c for c in cases if px(c) < largest]:
        ok = c.get("status") == "ok"
        line(
            "PASS" if ok else "FAIL",
            f"oom {name} next case {case_label(c)}",
            (timing(c) if ok else f"{c.get('status')}: {first_line(c.get('error'))}"),
        )


def check_oom_case(name, big):
    check = f"oom {name} {case_label(big)}"
    status, err = big.get("status"), big.get("error") or ""
    if status == "ok":
        line("SKIP", check, f"did not run out of memory ({timing(big)}): the GPU has more memory than this size needs")
    elif status == "oom":
        w, h = big.get("width"), big.get("height")
        lacks = []
        if not any(s in err for s in (f"{w}x{h}", f"{h}x{w}", f"{h}, {w}")):
            lacks.append("the size " + size_of(big))
        if big.get("precision") and big["precision"] not in err:
            lacks.append("the precision " + big["precision"])
        if "GiB total" not in err:
            lacks.append("the device memory")
        line(
            "FAIL" if lacks else "PASS",
            check,
            f"status oom, {'the message does not name ' + ', '.join(lacks) if lacks else 'the message names the size'}: "
            + first_line(err),
        )
    else:
        line("FAIL", check, f"expected status oom, got {status}: {first_line(err)}")


# ---------------------------------------------------------------- times grow with work


def cmd_growth(a):
    """Decode medians of the same engine/precision/tiling/knobs must grow with the work:
    frames x width x height (a decode-only case and a both-passes case decode the same)."""
    by_key = {}
    for path in a.reports:
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                rep = json.load(f)
        except (OSError, ValueError):
            continue
        model = rep.get("model", {}).get("z_dim"), rep.get("model", {}).get("dim"), rep.get("model", {}).get("params")
        for c in rep.get("cases") or []:
            d = c.get("decode") or {}
            if c.get("status") != "ok" or d.get("median_s") is None:
                continue
            key = (
                model,
                c.get("engine", "candle"),
                c.get("precision"),
                c.get("tile_px"),
                c.get("overlap_px"),
                c.get("cudnn"),
                c.get("cudnn_benchmark"),
            )
            work = (c.get("frames_used") or c.get("frames")) * c["width"] * c["height"]
            by_key.setdefault(key, {})[work] = (d["median_s"], c.get("id"))
    compared, wrong = 0, []
    for points in by_key.values():
        ordered = sorted(points.items())
        for (w0, (t0, id0)), (w1, (t1, id1)) in zip(ordered, ordered[1:]):
            compared += 1
            if not t1 > t0:
                wrong.append(f"{id1} {t1:.3f} s <= {id0} {t0:.3f} s")
    if compared == 0:
        line("SKIP", "times grow with work", "no two decode sizes with the same settings finished ok")
    elif wrong:
        line("FAIL", "times grow with work", f"{len(wrong)} of {compared} pairs do not: " + "; ".join(wrong[:5]))
    else:
        line("PASS", "times grow with work", f"decode median grows with frames x pixels in all {compared} pairs")


def cmd_profile(a):
    """`run --profile`: each ok case carries a profile of every pass it timed, its rows sum to
    the pass, and on a GPU the Python engines' convolutions name the device kernels behind them
    (printed with their family, the check of the kernel classifier on a real device)."""
    rep = load_json(a.report, a.name)
    if rep is None:
        return
    if a.rc not in (0, 1):
        line("FAIL", a.name, f"run exited {a.rc}: {error_line(a.log)}")
    for c in rep.get("cases", []):
        label = f"{a.name} {case_label(c)}"
        if c.get("status") != "ok":
            line("UNSUPPORTED" if c.get("status") == "unsupported" else "FAIL", label,
                 first_line(c.get("error") or c.get("status")))
            continue
        if c.get("added_as_control"):
            continue  # an A/A control is its default again: it is not profiled
        p = c.get("profile") or {}
        if p.get("error") or not any(p.get(k) for k in ("encode", "decode")):
            line("FAIL", label, f"no profile: {p.get('error')}")
            continue
        problems, kernels = [], []
        for kind in ("encode", "decode"):
            pp = p.get(kind)
            if not pp:
                continue
            rows = sum(r["ms"] for r in pp["layers"])
            if abs(rows - pp["total_ms"]) > 1e-6 * max(pp["total_ms"], 1.0):
                problems.append(f"{kind} rows {rows:.3f} ms != pass {pp['total_ms']:.3f} ms")
            convs = [r for r in pp["layers"] if r.get("op", "").startswith("conv")]
            top = max(convs, key=lambda r: r["ms"], default=None)
            if top and top.get("kernels"):
                k = top["kernels"][0]
                kernels.append(f"{kind} {top['layer']}: {k['family']} {first_line(k['name'], 80)}")
                if on_gpu(a.device) and c.get("engine") != "candle" and k["name"].startswith("aten::"):
                    problems.append(f"{kind} {top['layer']}: no device kernel, only {k['name']}")
        if problems:
            line("FAIL", label, "; ".join(problems))
        else:
            line("PASS", label, "; ".join(kernels) or "per-layer profile")


def lever_of(c):
    return (c.get("layout") or "ncdhw", c.get("conv3d") or "native")


def tf32_in_force(c):
    """Whether TF32 computed this case's fp32 convolutions (torch's default on NVIDIA)."""
    return "conv on" in str((c.get("knobs_in_force") or {}).get("tf32", ""))


def cmd_levers(a):
    """The levers' matrix: each lever case against the default (ncdhw, native) case of the same
    engine and precision. fp32: the same arithmetic, so its decoded video within 1e-4 of the
    default's (quality.decoded, which the report takes against the fp32 default); every lever:
    the decode median's ratio to the default's (INFO: a timing, not a pass/fail)."""
    rep = load_json(a.report, f"levers {a.name}")
    if rep is None:
        return
    groups = {}
    for c in rep.get("cases") or []:
        if c.get("status") == "ok" and (c.get("decode") or {}).get("median_s"):
            # The knobs too: a lever is compared with the default of the same knobs (the true
            # fp32 reference `run` adds on NVIDIA is no default of TF32 cases).
            key = (c.get("engine", "candle"), c.get("precision"), c.get("tf32"), c.get("cudnn"),
                   c.get("cudnn_benchmark"))
            groups.setdefault(key, {})[lever_of(c)] = c
    if not groups:
        line("FAIL", f"levers {a.name}", "no ok case with a decode median")
        return
    for (engine, precision, tf32, *_), by_lever in sorted(groups.items(), key=lambda kv: str(kv[0])):
        base = by_lever.get(("ncdhw", "native"))
        for lever, c in sorted(by_lever.items()):
            if lever == ("ncdhw", "native"):
                continue
            label = f"levers {a.name} {engine} {precision}{'' if tf32 in (None, 'auto') else ' tf32=' + tf32} layout={lever[0]} conv3d={lever[1]}"
            q = (c.get("quality") or {}).get("decoded")
            if precision == "fp32":
                bq = ((base or {}).get("quality") or {}).get("decoded")
                if not q:
                    line("FAIL", label, "no decoded quality against the default case")
                elif tf32_in_force(c):
                    # TF32's own error is in both; exactness is judged in true fp32 (--tf32 off).
                    line("INFO", label, f"TF32 in force: max_abs {q['max_abs']:.3e} against the true-fp32 reference, "
                         f"the default's own {bq['max_abs']:.3e}" if bq else f"TF32 in force: max_abs {q['max_abs']:.3e}")
                else:
                    ok = q.get("max_abs") is not None and q["max_abs"] <= FP32_CROSS_ENGINE_TOL
                    line("PASS" if ok else "FAIL", label,
                         f"vs {(c.get('quality') or {}).get('reference_id')}: max_abs {q['max_abs']:.3e} (bound 1e-4)")
            if base:
                b, m = base["decode"]["median_s"], c["decode"]["median_s"]
                psnr = "" if not q else (" identical" if q.get("identical") else f", PSNR {q.get('psnr_db')} dB vs the fp32 default")
                line("INFO", f"{label} speed",
                     f"decode median {m:.3f} s vs default {b:.3f} s: {b / m:.2f}x{psnr}"
                     f" ({len(c['decode'].get('samples_s') or [])} timed runs)")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("system")
    s.add_argument("--device", required=True)
    s.add_argument("json")
    v = sub.add_parser("validate")
    v.add_argument("--name", required=True)
    v.add_argument("--rc", type=int, required=True)
    v.add_argument("--stdout", required=True)
    v.add_argument("--stderr", required=True)
    r = sub.add_parser("run")
    r.add_argument("--name", required=True)
    r.add_argument("--device", required=True)
    r.add_argument("--rc", type=int, required=True)
    r.add_argument("--log", required=True)
    r.add_argument("--oom", action="store_true")
    r.add_argument("report")
    pr = sub.add_parser("profile")
    pr.add_argument("--name", required=True)
    pr.add_argument("--device", required=True)
    pr.add_argument("--rc", type=int, required=True)
    pr.add_argument("--log", required=True)
    pr.add_argument("report")
    lv = sub.add_parser("levers")
    lv.add_argument("--name", required=True)
    lv.add_argument("report")
    cb = sub.add_parser("conv-bench")
    cb.add_argument("--name", required=True)
    cb.add_argument("report")
    g = sub.add_parser("growth")
    g.add_argument("reports", nargs="*")
    a = p.parse_args(argv)
    {"system": cmd_system, "validate": cmd_validate, "run": cmd_run, "growth": cmd_growth,
     "profile": cmd_profile, "levers": cmd_levers, "conv-bench": cmd_conv_bench}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
