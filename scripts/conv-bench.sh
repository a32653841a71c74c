#!/usr/bin/env bash
# Each distinct convolution of one decode, candle (through cuDNN) against torch, fp32 (true)
# and bf16 (a benchmark, and a check per shape; docs/gpu.md):
#
#   scripts/conv-bench.sh OUT [MODEL [SIZE [FRAMES]]]     # defaults: wan2.1 832x480 21
#
# Writes OUT/candle-P.json (`wan-vae-bench conv-bench`: the shapes one decode gives cuDNN and
# their times through candle, on probe tensors), OUT/both-P.json (torch's times on the same
# tensors and, per shape, candle's max abs error against torch's F.conv3d, from
# scripts/conv-bench-torch.py), OUT/table-P.md (one row per shape, costliest first) and
# OUT/checks.txt (one verdict line per shape: scripts/gpu-check-report.py conv-bench).
# candle's outputs go to $CONV_BENCH_DUMP (default a fresh folder under /tmp, not OUT: a
# shape's output can be 600 MB) and are deleted once compared. CONV_BENCH_RUNS: timed calls
# per shape (default 10). The binary: $WAN_VAE_BENCH, else target/release/wan-vae-bench;
# Python: $WAN_VAE_BENCH_PYTHON, else python3. Exit 0 when every step ran and every shape
# passed, else 1.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: scripts/conv-bench.sh OUT [MODEL [SIZE [FRAMES]]]}
model=${2:-wan2.1} size=${3:-832x480} frames=${4:-21}
bin=${WAN_VAE_BENCH:-$here/../target/release/wan-vae-bench}
py=${WAN_VAE_BENCH_PYTHON:-python3}
runs=${CONV_BENCH_RUNS:-10}
mkdir -p "$out"
dump=${CONV_BENCH_DUMP:-$(mktemp -d /tmp/conv-bench-dump.XXXXXX)}
trap 'rm -rf "$dump"' EXIT
: > "$out/checks.txt"
rc=0
for p in fp32 bf16; do
    echo "== conv-bench $model ${frames}x$size $p" >&2
    if "$bin" conv-bench --model "$model" --size "$size" --frames "$frames" --precision "$p" --runs "$runs" \
        --dump "$dump" --json "$out/candle-$p.json" 2> "$out/candle-$p.stderr"; then
        "$py" "$here/conv-bench-torch.py" "$out/candle-$p.json" --json "$out/both-$p.json" --delete-dumps \
            > "$out/table-$p.md" 2> "$out/torch-$p.stderr" || rc=1
        cat "$out/table-$p.md"
        python3 "$here/gpu-check-report.py" conv-bench --name "$p" "$out/both-$p.json" | tee -a "$out/checks.txt"
    else
        rc=1
        echo "FAIL        conv-bench $p: \`conv-bench\` failed: $(grep -m1 '^error' "$out/candle-$p.stderr" || tail -1 "$out/candle-$p.stderr")" |
            tee -a "$out/checks.txt"
    fi
done
grep -q '^FAIL' "$out/checks.txt" && rc=1
pass=$(grep -c '^PASS' "$out/checks.txt") fail=$(grep -c '^FAIL' "$out/checks.txt")
echo "summary: $pass PASS, $fail FAIL (conv-bench, in $out)"
exit "$rc"
