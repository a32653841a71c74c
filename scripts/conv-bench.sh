#!/usr/bin/env bash
# Each distinct convolution of one decode, candle (through cuDNN) against torch, fp32 (true)
# and bf16 (a benchmark, not a test; docs/gpu.md):
#
#   scripts/conv-bench.sh OUT [MODEL [SIZE [FRAMES]]]     # defaults: wan2.1 832x480 21
#
# Writes OUT/candle-P.json (`wan-vae-bench conv-bench`: the shapes one decode gives cuDNN and
# their times through candle), OUT/both-P.json (torch's times added by
# scripts/conv-bench-torch.py) and OUT/table-P.md (one row per shape, costliest first). The
# binary: $WAN_VAE_BENCH, else target/release/wan-vae-bench; Python: $WAN_VAE_BENCH_PYTHON,
# else python3. Exit 0 when every step ran, else the first failure's status.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: scripts/conv-bench.sh OUT [MODEL [SIZE [FRAMES]]]}
model=${2:-wan2.1} size=${3:-832x480} frames=${4:-21}
bin=${WAN_VAE_BENCH:-$here/../target/release/wan-vae-bench}
py=${WAN_VAE_BENCH_PYTHON:-python3}
mkdir -p "$out"
rc=0
fail() { [[ $rc == 0 ]] && rc=$1; }
for p in fp32 bf16; do
    echo "== conv-bench $model ${frames}x$size $p" >&2
    if "$bin" conv-bench --model "$model" --size "$size" --frames "$frames" --precision "$p" \
        --json "$out/candle-$p.json" 2> "$out/candle-$p.stderr"; then
        "$py" "$here/conv-bench-torch.py" "$out/candle-$p.json" --json "$out/both-$p.json" \
            > "$out/table-$p.md" 2> "$out/torch-$p.stderr" || fail $?
        cat "$out/table-$p.md"
    else
        fail $?
        tail -5 "$out/candle-$p.stderr" >&2
    fi
done
exit "$rc"
