#!/usr/bin/env bash
# Each case's peak memory in a shared worker against the same case in a process of its own
# (issue 37, item 1). One matrix per engine (candle, then torch: fp32 and bf16, 5x64x64 and
# 5x32x32, untiled and tile 48:16, on the real-size synthetic model: larger and smaller cases,
# and a model rebuilt for each precision), run with three shuffle seeds in the default mode
# (the cases of the engine share a worker) and once with `--isolate case`. For
# every case of every seed it prints the shared peak, the isolated peak and their ratio, and
# at the end the largest deviation; it exits 1 when any case is more than 5% off. A benchmark,
# not a test: its numbers are published in docs/results.md ("Peak memory, shared against
# isolated").
#
#   scripts/peak_check.sh [PYTHON] [OUT_DIR]
#
# PYTHON: the interpreter with torch (default: .venv-torch/bin/python); OUT_DIR: where the
# reports go (default: a temporary folder, printed). ENGINES (default `candle torch`) and
# TORCH_PRECISIONS (default `fp32,bf16`; `fp32` on a CPU without AVX512-BF16, where torch
# emulates bf16 and one bf16 case takes many minutes) narrow the matrix. Set WAN_VAE_BENCH to use another binary
# (default: target/release/wan-vae-bench, built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${1:-.venv-torch/bin/python}"
out="${2:-$(mktemp -d -t wan-vae-peak-XXXXXX)}"
bin="${WAN_VAE_BENCH:-target/release/wan-vae-bench}"
[ -x "$bin" ] || cargo build --release --quiet
mkdir -p "$out"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
engines=(${ENGINES:-candle torch})
for engine in "${engines[@]}"; do
  precision=fp32,bf16
  [ "$engine" = torch ] && precision=${TORCH_PRECISIONS:-fp32,bf16}
  args=(run --engine "$engine" --python "$py" --weights synthetic --frames 5 --size 64x64,32x32
        --precision "$precision" --tile none,48:16 --warmup 0 --runs 1 --quiet)
  "$bin" "${args[@]}" --isolate case --order as-written -o "$out/$engine-isolated.json" >/dev/null 2>&1 || true
  for seed in 1 2 3; do
    "$bin" "${args[@]}" --seed "$seed" -o "$out/$engine-shared-seed$seed.json" >/dev/null 2>&1 || true
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "${engines[*]}" <<'EOF'
import json, sys
out = sys.argv[1]
def peaks(name):
    r = json.load(open(f"{out}/{name}.json"))
    return r, {c["id"]: c for c in r["cases"]}
worst, bad = 0.0, 0
for engine, seed in [(e, s) for e in sys.argv[2].split() for s in (1, 2, 3)]:
    _, isolated = peaks(f"{engine}-isolated")
    r, shared = peaks(f"{engine}-shared-seed{seed}")
    print(f"{engine}, seed {seed}")
    for cid, c in shared.items():
        i = isolated.get(cid)
        if c["status"] != "ok" or not i or i["status"] != "ok":
            print(f"  {cid}: not ok ({c['status']}, isolated {i and i['status']})")
            bad += 1
            continue
        s, k = c["peak_rss_bytes"], i["peak_rss_bytes"]
        ratio = s / k
        worst = max(worst, abs(ratio - 1))
        bad += abs(ratio - 1) > 0.05
        w = c["worker"]
        print(f"  {cid:46} {w['process']:>6} after {w['cases_before']}: shared {s / 1e9:.3f} GB, "
              f"isolated {k / 1e9:.3f} GB, ratio {ratio:.3f}")
print(f"largest deviation {worst * 100:.1f}% ({bad} case(s) beyond 5%)")
sys.exit(1 if bad else 0)
EOF
echo "reports: $out"
