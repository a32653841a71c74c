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
# Usage: scripts/peer_compare.sh [--frames N] [--size WxH] [--warmup N] [--runs N]
#                                [--threads N] [--chunk N] [--rounds N] [--out-dir DIR] [--no-build]
# --rounds N alternates ours / PyTorch N times (each a fresh process with its own warmup)
# and pools the timed samples, so a load spike on the machine hits both sides alike.
# Environment: PEER_PYTHON (default /work/torchenv/bin/python).
# Both sides use the same thread count (--threads, default: all cores): PyTorch via
# torch.set_num_threads, ours via RAYON_NUM_THREADS. Weights: synthetic (dim 96, z 16) on
# both sides; the values differ but timing does not depend on them.
#
# Ours is timed with `wan-vae-bench run` (fp32, untiled, synthetic weights, same shape).
set -euo pipefail

cd "$(dirname "$0")/.."

PEER_PYTHON=${PEER_PYTHON:-/work/torchenv/bin/python}
FRAMES=5
SIZE=64x64
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
        --size) SIZE=$2; shift 2 ;;
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
if [ "$BUILD" = 1 ]; then
    if ! cargo build --release --bin wan-vae-bench; then
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

rm -f "$OUT_DIR"/ours_*.json "$OUT_DIR"/pytorch_*.json
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime; }

OURS_MODE=run
RUN_ARGS=(--weights synthetic)
if [ "$CHUNK" != 1 ]; then
    RUN_ARGS+=(--chunk "$CHUNK")
fi

for r in $(seq 1 "$ROUNDS"); do
    echo "== round $r/$ROUNDS, load average: $(load)"
    echo "== ours: $FRAMES frames, $SIZE, fp32, chunk $CHUNK, $THREADS threads ($OURS_MODE)"
    RAYON_NUM_THREADS=$THREADS "$BIN" run --frames "$FRAMES" --size "$SIZE" --precision fp32 \
        "${RUN_ARGS[@]}" --warmup "$WARMUP" --runs "$RUNS" --output "$OUT_DIR/ours_$r.json" --quiet
    echo "== PyTorch ($PEER_PYTHON), load average: $(load)"
    "$PEER_PYTHON" scripts/peer_pytorch.py bench --weights synthetic --frames "$FRAMES" --size "$SIZE" \
        --warmup "$WARMUP" --runs "$RUNS" --threads "$THREADS" --chunk "$CHUNK" --json "$OUT_DIR/pytorch_$r.json"
done
echo "== load average after: $(load)"

"$PEER_PYTHON" - "$OURS_MODE" "$OUT_DIR" "$FRAMES" "$SIZE" "$CHUNK" "$ROUNDS" "$(load)" <<'EOF'
import json, statistics, sys

mode, out_dir, frames, size, chunk, rounds, load_end = sys.argv[1:8]
frames, chunk, rounds = int(frames), int(chunk), int(rounds)
w, h = (int(v) for v in size.lower().split("x"))
ours = {"encode": [], "decode": []}  # pooled timed samples, seconds
ours_gflop = {}
peer = {"encode": [], "decode": []}
peer_gflop = {}
loads = []
for r in range(1, rounds + 1):
    pj = json.load(open(f"{out_dir}/pytorch_{r}.json"))
    loads.append(pj.get("load_avg_1_5_15"))
    for p in peer:
        peer[p] += pj[p]["samples_s"]
        peer_gflop[p] = pj[p]["gflop"]
    if mode == "run":
        rep = json.load(open(f"{out_dir}/ours_{r}.json"))
        cases = [c for c in rep["cases"] if c.get("status") == "ok" and c.get("frames") == frames
                 and c.get("width") == w and c.get("height") == h and c.get("precision") == "fp32"
                 and c.get("chunk") == chunk and c.get("tile_px") is None]
        if not cases:
            sys.exit(f"peer_compare: no ok fp32 untiled case of that shape in ours_{r}.json")
        c = cases[0]
        src = f"wan-vae-bench run, case {c['id']}"
        for p in ours:
            if c.get(p):
                ours[p] += c[p]["samples_s"]
                ours_gflop[p] = c[p]["gflop"]

pj = json.load(open(f"{out_dir}/pytorch_1.json"))
print()
print(f"ours: {src}")
print(f"PyTorch {pj['torch_version']}, {pj['threads']} threads, mkldnn {pj['mkldnn_available']}; "
      f"PyTorch GFLOP {'exact' if pj['gflop_exact'] else 'approximate'} ({pj['gflop_note']})")
print(f"{frames} frames, {w}x{h} (WxH), fp32, chunk {chunk}, {rounds} round(s) alternating ours/PyTorch; "
      f"timed samples per pass: ours {len(ours['encode'])}, PyTorch {len(peer['encode'])}")
print(f"load average (1/5/15 min) at each PyTorch run end: "
      f"{[[round(v, 2) for v in l] for l in loads if l]}; at the end: {load_end}")
print()
print("| pass   | ours median s | PyTorch median s | ours/PyTorch | ours GFLOP/s | PyTorch GFLOP/s | min ratio |")
print("|--------|---------------|------------------|--------------|--------------|-----------------|-----------|")
for p in ("encode", "decode"):
    if not ours[p]:
        continue
    om, pm = statistics.median(ours[p]), statistics.median(peer[p])
    omin, pmin = min(ours[p]), min(peer[p])
    og, pg = ours_gflop[p] / om, peer_gflop[p] / pm
    print(f"| {p:6s} | {om:13.3f} | {pm:16.3f} | {om / pm:12.2f} | {og:12.1f} | {pg:15.1f} | {omin / pmin:9.2f} |")
print()
print("ratio < 1: ours is faster; > 1: PyTorch is faster. GFLOP/s = analytic cost / median.")
print("min ratio = ours fastest run / PyTorch fastest run (less sensitive to a loaded machine).")
EOF
