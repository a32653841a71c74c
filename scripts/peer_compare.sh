#!/usr/bin/env bash
# Same-machine speed peer: our candle VAE vs PyTorch (CPU, oneDNN) running the official
# Wan 2.1 VAE computation (scripts/peer_pytorch.py) on the same shapes, in one invocation,
# so the ratio ours / PyTorch is measured under the same machine load.
#
# One-time setup of PyTorch, in a virtualenv OUTSIDE the repository:
#   python3 -m venv /work/torchenv
#   /work/torchenv/bin/pip install torch safetensors numpy
# The PyPI Linux wheel of torch is the CUDA build: even on CPU it needs the CUDA runtime
# libraries at import time (libtorch_python.so links libtorch_cuda.so, which links cudart,
# cublas, cudnn, nccl, ...), so let pip install its nvidia-* dependencies. With a wheel file
# already on disk (`pip install --no-deps torch-*.whl`), add them by hand, e.g. for 2.15:
#   pip install "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusparse,nvjitlink,nvrtc]==13.2.2" \
#     nvidia-cudnn-cu13==9.26.0.51 nvidia-cusparselt-cu13==0.8.1 nvidia-nccl-cu13==2.30.7 \
#     nvidia-nvshmem-cu13==3.7.2 filelock typing-extensions sympy networkx jinja2 fsspec numpy safetensors
# (triton, cusolver and cuda-bindings are not needed on CPU.) Or install the CPU-only wheel
# from https://download.pytorch.org/whl/cpu if that index is reachable.
# Check: $PEER_PYTHON scripts/peer_pytorch.py validate \
#          --weights tests/fixtures/wan21_tiny.weights.safetensors \
#          --cases tests/fixtures/wan21_tiny.cases.safetensors      (max errors ~1e-6 or 0)
#
# Usage: scripts/peer_compare.sh [--frames N] [--sizes WxH,...] [--precisions fp32,bf16]
#                                [--warmup N] [--runs N] [--threads N] [--chunk N] [--rounds N]
#                                [--out-dir DIR] [--no-build]
# Defaults: 5 frames; sizes 64x64,128x128; precisions fp32,bf16; 1 warmup + 3 runs; 1 round.
# Each (size, precision) case runs ours, then PyTorch, back to back; --rounds N repeats the
# whole sequence and pools the timed samples, so a load spike on the machine hits both sides
# alike. The table gives min and median seconds per pass, the ratio ours / PyTorch, and our
# GFLOP/s as a fraction of the measured peak of the instruction our kernels use
# (`examples/cpu_scaling.rs --peak`: AVX-512 FMA for fp32, vdpbf16ps for bf16).
# Environment: PEER_PYTHON (default .venv-torch/bin/python, then /work/torchenv/bin/python).
# Both sides use the same thread count (--threads, default: all cores): PyTorch via
# torch.set_num_threads, ours via RAYON_NUM_THREADS. Weights: synthetic (dim 96, z 16) on
# both sides; the values differ but timing does not depend on them.
#
# Ours is timed with `wan-vae-bench run` (untiled, synthetic weights, same shape).
set -euo pipefail

cd "$(dirname "$0")/.."

if [ -z "${PEER_PYTHON:-}" ]; then
    PEER_PYTHON=.venv-torch/bin/python
    [ -x "$PEER_PYTHON" ] || PEER_PYTHON=/work/torchenv/bin/python
fi
FRAMES=5
SIZES=64x64,128x128
PRECISIONS=fp32,bf16
WARMUP=1
RUNS=3
THREADS=$(nproc)
CHUNK=1
ROUNDS=1
OUT_DIR=target/peer
BUILD=1

while [ $# -gt 0 ]; do
    case "$1" in
        --frames) FRAMES=$2; shift 2 ;;
        --size|--sizes) SIZES=$2; shift 2 ;;
        --precision|--precisions) PRECISIONS=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --threads) THREADS=$2; shift 2 ;;
        --chunk) CHUNK=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --out-dir) OUT_DIR=$2; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "peer_compare: unknown argument $1" >&2; exit 2 ;;
    esac
done

if ! "$PEER_PYTHON" -c 'import torch, safetensors' >/dev/null 2>&1; then
    echo "peer_compare: $PEER_PYTHON cannot import torch + safetensors; set PEER_PYTHON or see the setup at the top of $0" >&2
    exit 1
fi

mkdir -p "$OUT_DIR"
BIN=target/release/wan-vae-bench
PEAK=target/release/examples/cpu_scaling
if [ "$BUILD" = 1 ]; then
    if ! cargo build --release --bin wan-vae-bench --example cpu_scaling; then
        if [ -x "$BIN" ]; then
            echo "peer_compare: build failed; using the existing $BIN" >&2
        else
            echo "peer_compare: build failed and there is no $BIN" >&2
            exit 1
        fi
    fi
elif [ ! -x "$BIN" ]; then
    echo "peer_compare: --no-build but $BIN is missing" >&2
    exit 1
fi

rm -f "$OUT_DIR"/ours_*.json "$OUT_DIR"/pytorch_*.json "$OUT_DIR"/peak.json
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime; }

RUN_ARGS=(--weights synthetic)
if [ "$CHUNK" != 1 ]; then
    RUN_ARGS+=(--chunk "$CHUNK")
fi
IFS=, read -r -a SIZE_LIST <<< "$SIZES"
IFS=, read -r -a PREC_LIST <<< "$PRECISIONS"

if [ -x "$PEAK" ]; then
    RAYON_NUM_THREADS=$THREADS "$PEAK" --peak --json "$OUT_DIR/peak.json" || true
fi
for r in $(seq 1 "$ROUNDS"); do
    for size in "${SIZE_LIST[@]}"; do
        for prec in "${PREC_LIST[@]}"; do
            tag="${size}_${prec}_$r"
            echo "== round $r/$ROUNDS, $FRAMES frames $size $prec, $THREADS threads; load average: $(load)"
            RAYON_NUM_THREADS=$THREADS "$BIN" run --frames "$FRAMES" --size "$size" --precision "$prec" \
                "${RUN_ARGS[@]}" --warmup "$WARMUP" --runs "$RUNS" --output "$OUT_DIR/ours_$tag.json" --quiet
            "$PEER_PYTHON" scripts/peer_pytorch.py bench --weights synthetic --frames "$FRAMES" --size "$size" \
                --precision "$prec" --warmup "$WARMUP" --runs "$RUNS" --threads "$THREADS" --chunk "$CHUNK" \
                --json "$OUT_DIR/pytorch_$tag.json" --quiet
        done
    done
done
echo "== load average after: $(load)"

"$PEER_PYTHON" - "$OUT_DIR" "$FRAMES" "$SIZES" "$PRECISIONS" "$CHUNK" "$ROUNDS" "$(load)" <<'EOF'
import json, os, statistics, sys

out_dir, frames, sizes, precs, chunk, rounds, load_end = sys.argv[1:8]
frames, chunk, rounds = int(frames), int(chunk), int(rounds)
peak = json.load(open(f"{out_dir}/peak.json")) if os.path.exists(f"{out_dir}/peak.json") else {}
rows, loads, torch_info, compute = [], [], None, {}
for size in sizes.split(","):
    w, h = (int(v) for v in size.lower().split("x"))
    for prec in precs.split(","):
        ours = {"encode": [], "decode": []}
        peer = {"encode": [], "decode": []}
        gflop = {}
        for r in range(1, rounds + 1):
            tag = f"{size}_{prec}_{r}"
            pj = json.load(open(f"{out_dir}/pytorch_{tag}.json"))
            torch_info = pj
            loads.append(pj.get("load_avg_1_5_15"))
            rep = json.load(open(f"{out_dir}/ours_{tag}.json"))
            cases = [c for c in rep["cases"] if c.get("status") == "ok" and c.get("frames") == frames
                     and c.get("width") == w and c.get("height") == h and c.get("precision") == prec
                     and c.get("chunk") == chunk and c.get("tile_px") is None]
            if not cases:
                sys.exit(f"peer_compare: no ok {prec} untiled {size} case in ours_{tag}.json")
            compute[prec] = cases[0].get("compute_dtype")
            for p in ours:
                ours[p] += cases[0][p]["samples_s"]
                peer[p] += pj[p]["samples_s"]
                gflop[p] = cases[0][p]["gflop"]
        for p in ("encode", "decode"):
            rows.append((prec, size, p, ours[p], peer[p], gflop[p]))

print()
print(f"ours: wan-vae-bench run; compute_dtype {compute}")
print(f"PyTorch {torch_info['torch_version']}, {torch_info['threads']} threads, mkldnn {torch_info['mkldnn_available']}")
print(f"{frames} frames, chunk {chunk}, {rounds} round(s), ours then PyTorch per case; "
      f"timed samples per pass and side: {len(rows[0][3])}")
print(f"load average (1/5/15 min) after each PyTorch case: {[[round(v, 2) for v in l] for l in loads if l]}; "
      f"at the end: {load_end}")
if peak:
    print(f"measured peak on {peak['threads']} threads (register-only loops): "
          + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in peak["gflops"].items() if v))
print()
print("| case | pass | ours min s | PyTorch min s | ours/PyTorch (min) | ours median s | PyTorch median s "
      "| ours/PyTorch (median) | ours GFLOP/s | % of peak |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
key = {"fp32": "avx512_fma", "bf16": "avx512_bf16_dot"}
for prec, size, p, o, t, g in rows:
    om, tm = statistics.median(o), statistics.median(t)
    rate = g / min(o)
    pk = peak.get("gflops", {}).get(key.get(prec, "")) if peak else None
    frac = f"{100 * rate / pk:.0f}%" if pk else "n/a"
    print(f"| {prec} {frames}x{size} | {p} | {min(o):.3f} | {min(t):.3f} | {min(o) / min(t):.2f} | "
          f"{om:.3f} | {tm:.3f} | {om / tm:.2f} | {rate:.1f} | {frac} |")
print()
print("ratio < 1: ours is faster; > 1: PyTorch is faster. GFLOP/s = analytic cost of the reference")
print("computation (including the zero-padding taps we skip) / fastest pass.")
EOF
