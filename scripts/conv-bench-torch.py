#!/usr/bin/env python3
"""Time each distinct convolution of one decode with torch, on the shapes candle's
`wan-vae-bench conv-bench` found and timed (a benchmark, not a test; docs/gpu.md):

    wan-vae-bench conv-bench --precision fp32 --json candle-fp32.json
    python3 scripts/conv-bench-torch.py candle-fp32.json [--runs 10] [--json both.json]

Each shape is the input cuDNN got from candle (after the explicit padding) with the same
weight shape, stride and symmetric padding, run as torch's `F.conv3d` with a bias, as
torch's defaults run it: `cudnn.benchmark` off; fp32 with TF32 off (true fp32, as candle's
fp32), bf16 as bf16. Timing as candle's: `--runs` calls after two untimed ones, the device
synchronized around each, median and minimum. Prints one table row per shape, costliest
(calls per decode x candle's median) first, with candle / torch, and the decode's total over
the shapes; exit 0, or 2 on bad input.
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("candle_json", help="the JSON `wan-vae-bench conv-bench --json` wrote")
    ap.add_argument("--runs", type=int, default=None, help="timed calls per shape (default: candle's)")
    ap.add_argument("--json", help="write candle's JSON with torch's times added here")
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
    gen = torch.Generator(device=dev).manual_seed(0)
    with torch.no_grad():
        for s in shapes:
            x = torch.randn(s["input"], device=dev, generator=gen).to(dtype)
            w = (torch.randn(s["weight"], device=dev, generator=gen) * 0.05).to(dtype)
            b = torch.zeros(s["weight"][0], device=dev, dtype=dtype)
            ms = []
            for i in range(runs + 2):
                torch.cuda.synchronize(dev)
                t = time.perf_counter()
                y = F.conv3d(x, w, b, stride=tuple(s["stride"]), padding=tuple(s["padding"]))
                torch.cuda.synchronize(dev)
                if i >= 2:
                    ms.append((time.perf_counter() - t) * 1e3)
                del y
            ms.sort()
            s["torch_median_ms"] = ms[len(ms) // 2]
            s["torch_min_ms"] = ms[0]
            del x, w, b
            torch.cuda.empty_cache()
    bench["torch"] = {
        "version": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "device_name": torch.cuda.get_device_name(dev),
        "settings": "cudnn.benchmark off, allow_tf32 off",
        "runs": runs,
    }
    order = sorted(shapes, key=lambda s: -s["calls_per_decode"] * s["median_ms"])
    print(
        f"{bench['model']} decode {bench['frames']}x{bench['size']} {precision} on "
        f"{bench['torch']['device_name']}: candle {bench['library']} {bench['version']} ({bench['math']}), "
        f"torch {torch.__version__} cuDNN {bench['torch']['cudnn']}; medians of {runs}"
    )
    print("| input | weight | stride | pad | calls | candle algo | candle ms | torch ms | candle/torch |")
    print("| --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: |")
    tot_c = tot_t = 0.0
    for s in order:
        c, t, n = s["median_ms"], s["torch_median_ms"], s["calls_per_decode"]
        tot_c += c * n
        tot_t += t * n
        print(
            f"| {'x'.join(map(str, s['input']))} | {'x'.join(map(str, s['weight']))} | "
            f"{'x'.join(map(str, s['stride']))} | {'x'.join(map(str, s['padding']))} | {n} | "
            f"{s['algorithm']} ({s['math']}) | {c:.3f} | {t:.3f} | {c / t:.2f} |"
        )
    ratio = tot_c / tot_t if tot_t else float("nan")
    print(f"| sum over one decode | | | | | | {tot_c:.1f} | {tot_t:.1f} | {ratio:.2f} |")
    bench["sum_ms"] = {"candle": tot_c, "torch": tot_t}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(bench, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
