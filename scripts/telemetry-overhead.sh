#!/usr/bin/env bash
# What the parent's telemetry sampler costs a sweep (issue 32): the same candle sweep (4
# cases of 5x64x64, 1 warmup + 3 runs each, one seed) run ROUNDS times with the sampler off
# (--telemetry-ms 0) and on (the default 100 ms), alternating, on a quiet machine; prints each
# wall time, the median of each side and their ratio. A benchmark, not a test: the figures are
# in docs/results.md ("Telemetry sampler overhead").
#
#   scripts/telemetry-overhead.sh [ROUNDS]      (default 6)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-6}"
bin="${WAN_VAE_BENCH:-target/release/wan-vae-bench}"
[ -x "$bin" ] || cargo build --release --quiet
out=$(mktemp -d -t wan-vae-telemetry-XXXXXX)
trap 'rm -rf "$out"' EXIT
args=(run --weights synthetic --frames 5 --size 64x64 --precision fp32,bf16 --chunk 1,2
      --warmup 1 --runs 3 --seed 1 --quiet)
: > "$out/walls"
for i in $(seq "$rounds"); do
  # Alternate which side goes first, so a drift of the machine hits both alike.
  if [ $((i % 2)) -eq 1 ]; then order="0 100"; else order="100 0"; fi
  for ms in $order; do
    start=$EPOCHREALTIME
    "$bin" "${args[@]}" --telemetry-ms "$ms" -o "$out/r.json" >/dev/null 2>&1
    end=$EPOCHREALTIME
    echo "$ms $start $end $(cut -d' ' -f1 /proc/loadavg)" >> "$out/walls"
  done
done
python3 - "$out/walls" <<'PY'
import statistics, sys
walls = {"0": [], "100": []}
for line in open(sys.argv[1]):
    ms, a, b, load = line.split()
    walls[ms].append(float(b) - float(a))
    print(f"--telemetry-ms {ms:>3}: {float(b) - float(a):.3f} s (load average {load})")
off, on = statistics.median(walls["0"]), statistics.median(walls["100"])
print(f"median wall: off {off:.3f} s, on {on:.3f} s: {100 * (on / off - 1):+.2f}%")
PY
