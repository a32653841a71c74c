#!/usr/bin/env python3
"""Time each distinct convolution of one decode with torch, on the shapes candle's
`wan-vae-bench conv-bench` found and timed, and measure candle's output against torch's (a
benchmark and a per-shape check; docs/gpu.md):

    wan-vae-bench conv-bench --precision fp32 --dump DIR --json candle-fp32.json
    python3 scripts/conv-bench-torch.py candle-fp32.json [--runs 10] [--json both.json] [--delete-dumps]

Each shape is the input cuDNN got from candle (after the explicit padding) with the same
weight shape, stride and symmetric padding, run as torch's `F.conv3d` with a bias, as
torch's defaults run it: `cudnn.benchmark` off; fp32 with TF32 off (true fp32, as candle's
fp32), bf16 as bf16. The input, weight and bias are candle's probe tensors, made again here
from the rule the JSON states (`probe`: integer arithmetic, exact in f32 and bf16), so where
candle dumped its output (`output_file`) each shape gets `max_abs_error` (candle against
torch) and `max_abs_reference` (torch's largest |value|); `--delete-dumps` removes each dump
once read. Timing as candle's: `--runs` calls after two untimed ones, the device
synchronized around each, median and minimum. A shape candle ran on its fallback path is
listed, not timed. Prints one table row per shape, costliest (calls per decode x candle's
median) first, with candle / torch and the error, and the decode's total over the shapes;
exit 0, or 2 on bad input.
"""
import argparse
import json
import os
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("candle_json", help="the JSON `wan-vae-bench conv-bench --json` wrote")
    ap.add_argument("--runs", type=int, default=None, help="timed calls per shape (default: candle's)")
    ap.add_argument("--json", help="write candle's JSON with torch's times added here")
    ap.add_argument("--delete-dumps", action="store_true", help="remove each shape's output_file once compared")
    args = ap.parse_args()
    try:
        with open(args.candle_json) as f:
            bench = json.load(f)
        shapes = bench["shapes"]
        precision = bench["precision"]
        device = bench["device"]
    except (OSError, ValueError, KeyError) as e:
        print(f"conv-bench-torch: {args.candle_json}: not a conv-bench JSON ({e})", file=sys.stderr)
        return 2
    import torch
    import torch.nn.functional as F

    if precision not in ("fp32", "bf16"):
        print(f"conv-bench-torch: precision {precision!r}: fp32 or bf16", file=sys.stderr)
        return 2
    torch.backends.cudnn.enabled = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    runs = args.runs or bench.get("runs", 10)
    dev = torch.device(device)
    rule = bench.get("probe") or {}

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def probe(dims, salt, scale):
        # The rule of `wan-vae-bench conv-bench` (src/cli/conv_bench.rs, probe_value).
        n = 1
        for d in dims:
            n *= d
        i = torch.arange(n, dtype=torch.int64, device=dev)
        h = ((i + salt) * 2654435761) & 0xFFFFFFFF
        v = ((h >> 24) - 128).to(torch.float32) / 128.0 * scale
        return v.reshape(dims).to(dtype)

    with torch.no_grad():
        for s in shapes:
            if s.get("fallback"):
                s["torch_median_ms"] = s["torch_min_ms"] = None
                continue
            x = probe(s["input"], rule.get("x_salt", 0), 1.0)
            w = probe(s["weight"], rule.get("w_salt", 1 << 20), rule.get("w_scale", 1 / 32))
            b = probe(s["weight"][:1], rule.get("b_salt", 2 << 20), rule.get("b_scale", 1 / 4))
            ms = []
            y = None
            for i in range(runs + 2):
                sync()
                t = time.perf_counter()
                y = F.conv3d(x, w, b, stride=tuple(s["stride"]), padding=tuple(s["padding"]))
                sync()
                if i >= 2:
                    ms.append((time.perf_counter() - t) * 1e3)
            ms.sort()
            s["torch_median_ms"] = ms[len(ms) // 2]
            s["torch_min_ms"] = ms[0]
            path = s.get("output_file")
            if path:
                try:
                    raw = open(path, "rb").read()
                    want = torch.bfloat16 if s.get("output_dtype") == "bf16" else torch.float32
                    got = torch.frombuffer(bytearray(raw), dtype=want).to(dev)
                    if got.numel() != y.numel():
                        raise ValueError(f"{got.numel()} values, torch's output has {y.numel()} {list(y.shape)}")
                    ref = y.flatten().float()
                    s["max_abs_error"] = (got.float() - ref).abs().max().item()
                    s["max_abs_reference"] = ref.abs().max().item()
                except (OSError, ValueError, RuntimeError) as e:
                    s["compare_error"] = f"{path}: {e}"
                finally:
                    if args.delete_dumps:
                        try:
                            os.remove(path)
                        except OSError:
                            pass
            del x, w, b, y
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    bench["torch"] = {
        "version": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else str(dev),
        "settings": "cudnn.benchmark off, allow_tf32 off",
        "runs": runs,
    }
    order = sorted(shapes, key=lambda s: -s["calls_per_decode"] * (s["median_ms"] or 0.0))
    print(
        f"{bench['model']} decode {bench['frames']}x{bench['size']} {precision} on "
        f"{bench['torch']['device_name']}: candle {bench['library']} {bench['version']} ({bench['math']}), "
        f"torch {torch.__version__} cuDNN {bench['torch']['cudnn']}; medians of {runs}"
    )
    print("| input | weight | stride | pad | calls | candle algo | candle ms | torch ms | candle/torch | max abs error |")
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: |")
    tot_c = tot_t = 0.0
    for s in order:
        c, t, n = s["median_ms"], s["torch_median_ms"], s["calls_per_decode"]
        err = s.get("max_abs_error")
        shown = f"{err:.2e}" if err is not None else (s.get("compare_error") or "not compared")
        dims = (f"| {'x'.join(map(str, s['input']))} | {'x'.join(map(str, s['weight']))} | "
                f"{'x'.join(map(str, s['stride']))} | {'x'.join(map(str, s['padding']))} | {n} | ")
        if c is None or t is None:
            print(f"{dims}{s['algorithm']} | - | - | - | - |")
            continue
        tot_c += c * n
        tot_t += t * n
        print(f"{dims}{s['algorithm']} ({s['math']}) | {c:.3f} | {t:.3f} | {c / t:.2f} | {shown} |")
    ratio = tot_c / tot_t if tot_t else float("nan")
    print(f"| sum over one decode | | | | | | {tot_c:.1f} | {tot_t:.1f} | {ratio:.2f} | |")
    bench["sum_ms"] = {"candle": tot_c, "torch": tot_t}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(bench, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
