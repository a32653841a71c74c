"""`validate` mode: run a golden cases file (tests/fixtures/README.md) through an engine and
report each output's error with the rules and JSON shape of `src/run/validate.rs` (plus engine,
model, format, knobs and the Python context). Exit 0 within tolerance, 1 not, 2 when
something kept it from running (then stdout, with --json, is `{"status", "error"}`).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict

from wan_runtime import (BadInput, Unsupported, apply_knobs, classify, encode_input, engine_context, engine_module,
                         installed_version,
                         engine_precision, engine_torch, make_engine, open_device, psnr_db, run_engine, run_options)


def tolerance_rule(precision: str, tiled: bool, tf32: bool = False) -> tuple:
    """validate.rs's Tolerance::for_settings: (metric, factor); `auto` (the engine's own
    dtype) is judged as bf16, fp32 with TF32 in force as `tf32` (Tolerance::TF32)."""
    if tiled:
        return "mean_abs_error", 0.2
    if precision == "fp32" and tf32:
        return "max_abs_error", 1e-2
    return "max_abs_error", {"fp32": 1e-4, "fp16": 2e-2, "bf16": 1e-1, "auto": 1e-1}[precision]


def rust_e(x: float) -> str:
    """`x` as Rust's `{:e}` writes it (`1e-4`, `2e-1`), so the rule reads as in candle's validate."""
    mantissa, exp = f"{x:.15e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exp)}"


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
    mod = engine_module(args.engine, args.module)
    # What the engine's factory reads of a worker spec: its folder and the weights file.
    spec = {"engine": args.engine, "engine_dir": args.engine_dir, "weights": args.weights}
    torch = engine_torch(mod, spec)
    import wan_common as wc
    import wan_weights
    cases = read_cases(args.cases)
    device = open_device(torch, args.device)
    precision = engine_precision(mod, args.precision, args.torch_precision)
    tile = args.tile.split(":") if args.tile else None
    opts = run_options(wc, args.chunk, int(tile[0]) if tile else None, int(tile[1]) if tile and len(tile) > 1 else
                       (int(tile[0]) // 4 // 8 * 8 if tile else None))
    try:
        loaded = wan_weights.load(args.weights)
    except wan_weights.WeightsError as e:
        raise BadInput(str(e)) from e
    eng = make_engine(mod, torch, loaded, device, precision, spec)
    import wan_levers
    lever_model = wan_levers.apply_case(eng, {"layout": args.layout, "conv3d": args.conv3d})
    # After the engine's start-up (ComfyUI's changes cuDNN on AMD): ours are in force.
    knobs = apply_knobs(torch, {"cudnn": args.cudnn, "cudnn_benchmark": args.cudnn_benchmark, "tf32": args.tf32},
                        device)
    # Judged by what is in force: TF32 anywhere (`on`, `conv on, matmul off`) gets its rule.
    tf32 = knobs["tf32"] != "off" and not knobs["tf32"].startswith("not applicable")
    rule = tolerance_rule(args.precision, opts.tiling is not None, tf32)
    reports = []
    for name in sorted(cases):
        c, outputs = cases[name], []
        if "latent" in c:
            video = c["input"].to(device)
            z = run_engine(eng.encode, encode_input(eng, video), opts)
            outputs.append(check_output(torch, "latent", z, c["latent"], rule))
            y = run_engine(eng.decode, c["latent"].to(device), opts)
        else:
            y = run_engine(eng.decode, c["input"].to(device), opts)
        outputs.append(check_output(torch, "decoded", y, c["decoded"], rule))
        reports.append({"case": name, "outputs": outputs})
    if lever_model is not None:
        knobs.update(wan_levers.read_back(lever_model))  # raises when a lever did not take
    return {
        "engine": args.engine, "model": loaded.model, "weights": args.weights, "format": loaded.format,
        "precision": args.precision, "compute_dtype": eng.compute_dtype(), "chunk": args.chunk,
        "tile": f"{opts.tiling.tile_px}:{opts.tiling.overlap_px}" if opts.tiling else None, "device": args.device,
        "conv": args.engine, "knobs": knobs,
        "tolerance_rule": f"{rule[0]} <= {rust_e(rule[1])} x max(1, max|expected|)", "cases": reports,
        "pass": all(o["pass"] for r in reports for o in r["outputs"]),
        "python": interpreter_context(mod, eng, torch, device),
    }


def interpreter_context(mod, eng, torch, device) -> dict:
    """What the interpreter has (the docs show `validate --json` for that): the engine's
    context, with the installed diffusers named whichever engine ran (a run's torch engine
    records null there: it does not use diffusers)."""
    ctx = engine_context(mod, eng, torch, device)
    ctx["diffusers"] = ctx.get("diffusers") or installed_version("diffusers")
    return ctx


def print_validate_text(r: dict) -> None:
    print(f"engine {r['engine']} ({r['model']})  weights {r['weights']}  precision {r['precision']} "
          f"(computes {r['compute_dtype']})  chunk {r['chunk']}  tile {r['tile'] or 'none'}  device {r['device']}"
          + (f"  layout {r['knobs']['layout']}  conv3d {r['knobs']['conv3d']}" if "layout" in r["knobs"] else ""))
    print(f"tolerance: {r['tolerance_rule']}")
    print(f"{'case':<10} {'output':<8} {'max_abs_err':>13} {'mean_abs_err':>13} {'psnr_db':>9} {'tolerance':>11}  result")
    for c in r["cases"]:
        for o in c["outputs"]:
            psnr = "inf" if o["psnr_db"] is None else f"{o['psnr_db']:.2f}"
            print(f"{c['case']:<10} {o['output']:<8} {o['max_abs_error']:>13.3e} {o['mean_abs_error']:>13.3e} "
                  f"{psnr:>9} {o['tolerance']:>11.3e}  {'ok' if o['pass'] else 'FAIL'}")
    print("all outputs within tolerance" if r["pass"] else "some outputs exceed the tolerance")


def _finite(x):
    """`x` with every NaN or infinite float as None (strict JSON; the output's `pass` is false)."""
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def write_verdict(path, obj: dict) -> None:
    """The parent's proof that this worker ran and what it concluded (`--verdict FILE`)."""
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(_finite(obj), f, allow_nan=False)
        os.replace(tmp, path)


def cmd_validate(args: argparse.Namespace) -> int:
    """Exit 0 within tolerance, 1 not, 2 for anything that kept it from running."""
    verdict = getattr(args, "verdict", None)
    try:
        report = validate(args)
    except (Unsupported, BadInput) as e:
        status = "unsupported" if isinstance(e, Unsupported) else "bad_input"
        write_verdict(verdict, {"status": status, "error": str(e)})
        print(json.dumps({"status": status, "error": str(e)}) if args.json else f"error: {e}",
              file=sys.stdout if args.json else sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a crash of the engine is reported, exit 2
        status, msg = classify(e)
        write_verdict(verdict, {"status": status, "error": msg})
        print(json.dumps({"status": status, "error": msg}) if args.json else f"error: {msg}",
              file=sys.stdout if args.json else sys.stderr)
        return 2
    write_verdict(verdict, report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_validate_text(report)
    return 0 if report["pass"] else 1
