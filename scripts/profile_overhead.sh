#!/usr/bin/env bash
# What `run --profile` costs, on the CPU, per engine (issue 39): the profiled pass's wall time
# over the timed median (`profile.<pass>.overhead`), and that the timed medians with and
# without --profile agree within noise (`compare`, Welch's test). Run it on a quiet machine.
#
#   scripts/profile_overhead.sh [--engines candle,torch] [--python PY] [--size 64x64] [--frames 5]
#                               [--runs 10] [--out DIR]
#
# Needs a release build (target/release/wan-vae-bench, or WAN_VAE_BENCH) and, for the Python
# engines, a Python with torch (--python, else $WAN_VAE_BENCH_PYTHON). Synthetic weights at the
# real widths, fp32. Prints the load average before and after, the overhead per case and pass,
# and `compare`'s verdicts (no-profile run as the baseline).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${WAN_VAE_BENCH:-$here/../target/release/wan-vae-bench}
engines=candle,torch python=${WAN_VAE_BENCH_PYTHON:-} size=64x64 frames=5 runs=10
out=results/profile-overhead-$(date -u +%Y%m%dT%H%M%SZ)
while [[ $# -gt 0 ]]; do
    case $1 in
        --engines) engines=${2:?}; shift 2 ;;
        --python) python=${2:?}; shift 2 ;;
        --size) size=${2:?}; shift 2 ;;
        --frames) frames=${2:?}; shift 2 ;;
        --runs) runs=${2:?}; shift 2 ;;
        --out) out=${2:?}; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[[ -x $bin ]] || { echo "no binary at $bin: cargo build --release" >&2; exit 2; }
mkdir -p "$out"
py=()
[[ -n $python ]] && py=(--python "$python")
common=(--engine "$engines" "${py[@]}" --precision fp32 --frames "$frames" --size "$size" --tile none
    --warmup 2 --runs "$runs" --seed 1)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" run "${common[@]}" --output "$out/plain.json" --quiet
"$bin" run "${common[@]}" --profile --output "$out/profiled.json" --quiet
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out/profiled.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{'case':<50} {'pass':<7} {'timed median':>13} {'profiled':>10} {'overhead':>9}")
for c in r["cases"]:
    p = c.get("profile") or {}
    for kind in ("encode", "decode"):
        pp = p.get(kind)
        if pp:
            print(f"{c['id']:<50} {kind:<7} {pp['timed_median_ms']:>10.1f} ms {pp['total_ms']:>7.1f} ms {pp['overhead']:>8.2f}x")
PY
echo "timed medians, without (baseline) and with --profile:"
"$bin" compare "$out/plain.json" "$out/profiled.json" || true
echo "reports in $out"
