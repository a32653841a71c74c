#!/usr/bin/env bash
# The levers' benchmark (issue 40): each lever (layout channels_last_3d, conv3d split, both)
# against the default (ncdhw, native), per engine (torch, diffusers), per pass, 5 frames of
# 128x128 on the CPU in fp32; with LEVERS_BF16=1 also bf16 (emulated on a CPU without native
# bf16, such as an AVX2-only one: hours, not minutes). Not a test: run it on a quiet machine.
#
#   scripts/levers_bench.sh [--out DIR] [--runs N] [--device DEV] [--python PY] [-- RUN_ARGS]
#
# One `wan-vae-bench run` measures every case in shuffled order (so a drift of the machine
# spreads over all of them), then, per lever case and pass, prints the medians, their ratio
# (lever / default: below 1 is faster) and its 95% interval: Welch's interval of the
# difference of the log samples (as `compare`'s Welch test, src/analysis/compare/welch.rs), back to a
# ratio of geometric means. An interval that holds 1 is "no difference"; losses are printed
# as gains are. The machine's load (/proc/loadavg) before and after, the CPU and the thread
# count are printed with it, for docs/results.md.
#
# Options: --out DIR (default results/levers-<UTC time>), --runs N timed passes per case
# (default 10), --device DEV (default cpu), --python PY (interpreter of the engines, default
# $WAN_VAE_BENCH_PYTHON, python3). The binary: $WAN_VAE_BENCH, else target/release/wan-vae-bench.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
out="" runs=10 device=cpu python=""
extra=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --out) out=${2:?}; shift 2 ;;
        --runs) runs=${2:?}; shift 2 ;;
        --device) device=${2:?}; shift 2 ;;
        --python) python=${2:?}; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
bin=${WAN_VAE_BENCH:-$root/target/release/wan-vae-bench}
[[ -x $bin ]] || { echo "levers_bench: no binary at $bin (cargo build --release, or set WAN_VAE_BENCH)" >&2; exit 2; }
out=${out:-$root/results/levers-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
precision=fp32
[[ ${LEVERS_BF16:-0} == 1 ]] && precision=fp32,bf16
py_args=()
[[ -n $python ]] && py_args=(--python "$python")

{
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "threads: $(nproc)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"
args=(run --engine torch,diffusers --device "$device" --precision "$precision" --frames 5 --size 128x128
    --tile none --layout ncdhw,channels_last_3d --conv3d native,split --warmup 1 --runs "$runs"
    --order shuffled --weights synthetic --output "$out/levers.json" "${py_args[@]}" "${extra[@]}")
echo "command: $bin ${args[*]}" | tee -a "$out/machine.txt"
"$bin" "${args[@]}" 2>&1 | tee "$out/run.log" >&2 || [[ -f $out/levers.json ]]
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"

python3 - "$out/levers.json" <<'EOF' | tee "$out/ratios.txt"
import json, math, statistics, sys

def betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta (Numerical Recipes)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
    h = d
    for m in range(1, 300):
        for aa in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
            c = 1.0 + aa / c if abs(1.0 + aa / c) > 1e-300 else 1e-300
            h *= d * c
    return h

def ibeta(x, a, b):
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    return front * betacf(a, b, x) / a if x < (a + 1) / (a + b + 2) else 1 - front * betacf(b, a, 1 - x) / b

def t_quantile(p, df):
    """The p-quantile (p > 0.5) of Student's t with df degrees of freedom, by bisection."""
    lo, hi = 0.0, 1000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        upper = 0.5 * ibeta(df / (df + mid * mid), df / 2, 0.5)
        lo, hi = (mid, hi) if 1 - upper < p else (lo, mid)
    return (lo + hi) / 2

def interval(base, lever):
    """Ratio of geometric means (lever / base) and its 95% Welch interval."""
    a, b = [math.log(x) for x in base], [math.log(x) for x in lever]
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(b) - statistics.fmean(a)
    se = math.sqrt(va + vb)
    if se == 0:
        return math.exp(diff), math.exp(diff), math.exp(diff)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    q = t_quantile(0.975, df)
    return math.exp(diff), math.exp(diff - q * se), math.exp(diff + q * se)

r = json.load(open(sys.argv[1]))
cases = {c["id"]: c for c in r["cases"]}
print(f"{'engine':<10} {'precision':<9} {'lever':<24} {'pass':<7} {'default_s':>10} {'lever_s':>10} {'ratio':>7}  "
      f"{'95% interval':<17} verdict")
for c in r["cases"]:
    lever = (c["layout"], c["conv3d"])
    if lever == ("ncdhw", "native"):
        continue
    base_id = c["id"].replace("-cl3d", "").replace("-split", "")
    base = cases.get(base_id)
    name = "+".join(v for v in ("channels_last_3d" if lever[0] != "ncdhw" else "", "split" if lever[1] != "native" else "") if v)
    for p in ("encode", "decode"):
        if not base or c["status"] != "ok" or base["status"] != "ok" or not c.get(p) or not base.get(p):
            print(f"{c['engine']:<10} {c['precision']:<9} {name:<24} {p:<7} not measured ({c['status']}, default "
                  f"{base['status'] if base else 'absent'})")
            continue
        a, b = base[p]["samples_s"], c[p]["samples_s"]
        ratio, lo, hi = interval(a, b)
        verdict = "faster" if hi < 1 else "slower" if lo > 1 else "no difference"
        print(f"{c['engine']:<10} {c['precision']:<9} {name:<24} {p:<7} {base[p]['median_s']:>10.4f} "
              f"{c[p]['median_s']:>10.4f} {ratio:>7.3f}  [{lo:.3f}, {hi:.3f}]  {verdict}")
EOF
echo "report, log and ratios in $out"
