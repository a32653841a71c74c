#!/usr/bin/env bash
# The real sweep of issue 63 under a generated on/off load: does the answer survive a busy
# machine? For each seed (SEEDS, default "1 2 3"; each also seeds the load's switching and
# the run's round order), in the background a load generator switches LOAD_PROCS busy loops
# (default: as many as the CPUs) on and off every 1 to 6 s, while `run` sweeps on the CPU:
#   candle: --env-var MIOPEN_FIND_MODE=2,@unset --env-var RAYON_NUM_THREADS=1,N (N = the CPUs,
#           rayon's default: identical to the default setting)
#   torch:  --env-var MIOPEN_FIND_MODE=2,@unset --env-var MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD=0,1
#           (every variant identical: MIOpen is never loaded on the CPU)
# and checks each answer: no setting identical to the default called faster or slower, and
# never a MIOpen variable in `apply.env_set` on the CPU. Prints one line per run and a table
# (Markdown) for docs/results.md; exits 1 when a check fails.
#
# Usage: scripts/busy-sweep.sh [OUT_DIR]     (default: a new folder under ${TMPDIR:-/tmp})
# Settings: WAN_VAE_BENCH (the binary; default target/release/wan-vae-bench), SEEDS, RUNS
# (default 6), ENGINES (default "candle torch"), PYTHON (for torch; default the test Python
# or python3), LOAD_PROCS.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${WAN_VAE_BENCH:-target/release/wan-vae-bench}
[ -x "$bin" ] || { echo "busy-sweep: $bin not found: cargo build --release first" >&2; exit 2; }
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/busy-sweep.XXXXXX")}
mkdir -p "$out"
cpus=$(nproc)
procs=${LOAD_PROCS:-$cpus}
runs=${RUNS:-6}
py=${PYTHON:-${WAN_VAE_BENCH_TEST_PYTHON:-python3}}
load_pid=

# The load: a seeded on/off square wave of busy loops, until killed.
load() {
  local seed=$1
  RANDOM=$seed
  local pids=()
  while :; do
    for _ in $(seq "$procs"); do
      (while :; do :; done) &
      pids+=($!)
    done
    sleep "$((1 + RANDOM % 6))"
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
    pids=()
    sleep "$((1 + RANDOM % 6))"
  done
}

stop_load() {
  if [ -n "$load_pid" ]; then
    kill -- "-$load_pid" 2>/dev/null || kill "$load_pid" 2>/dev/null || true
    wait "$load_pid" 2>/dev/null || true
    load_pid=
  fi
}
trap stop_load EXIT

failed=0
rows=()
for seed in ${SEEDS:-1 2 3}; do
  for engine in ${ENGINES:-candle torch}; do
    case $engine in
      candle) sweep=(--env-var MIOPEN_FIND_MODE=2,@unset --env-var "RAYON_NUM_THREADS=1,$cpus") ;;
      torch) sweep=(--env-var MIOPEN_FIND_MODE=2,@unset --env-var MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD=0,1 --python "$py") ;;
      *) echo "busy-sweep: unknown engine $engine" >&2; exit 2 ;;
    esac
    report="$out/$engine-seed$seed.json"
    set -m
    load "$seed" &
    load_pid=$!
    set +m
    start=$(date +%s)
    status=0
    "$bin" run --engine "$engine" --device cpu --precision fp32 --frames 5 --size 64x64 --passes decode \
      --warmup 1 --runs "$runs" --seed "$seed" --quiet "${sweep[@]}" -o "$report" >"$out/$engine-seed$seed.txt" 2>&1 || status=$?
    stop_load
    took=$(( $(date +%s) - start ))
    # The checks, on the report's answer.
    verdict=$("$py" - "$report" "$cpus" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])); cpus = sys.argv[2]
a = r["summary"]["answers"][0]
fast = (a.get("fastest") or {}).get("id", "")
apply = a.get("apply") or {}
busy = len(a.get("busy_cases", []))
problems = []
# Identical to the default: every variant of torch on the CPU; on candle, RAYON at the CPUs
# (rayon's default) or unset, whatever MIOpen's value.
identical = r["cases"][0]["engine"] == "torch" or f"RAYON_NUM_THREADS={cpus}" in fast or "RAYON_NUM_THREADS=@" in fast or "RAYON" not in fast
if a["verdict"] in ("faster", "slower") and identical:
    problems.append(f"{a['verdict']} for a setting identical to the default: {fast}")
if any(k.startswith("MIOPEN_") for k in apply.get("env_set", {})):
    problems.append(f"a MIOpen variable advised on the CPU: {apply['env_set']}")
drift = (a.get("drift") or {}).get("floor_ratio")
print("FAIL" if problems else "ok", a["verdict"], fast or "-", f"{drift:.3f}" if drift else "-", busy, len(r["cases"]), "; ".join(problems), sep="\t")
EOF
)
    IFS=$'\t' read -r ok v fastest drift busy cases why <<<"$verdict"
    echo "seed $seed $engine: run exit $status, ${took}s: $ok $v (fastest $fastest, drift floor $drift, busy $busy of $cases) $why"
    rows+=("| $seed | $engine | $v | \`$fastest\` | $drift | $busy of $cases | $ok${why:+: $why} |")
    [ "$ok" = ok ] && [ "$status" -eq 0 ] || failed=1
  done
done
echo
echo "| seed | engine | verdict | fastest | drift floor | busy cases | check |"
echo "| ---: | --- | --- | --- | ---: | ---: | --- |"
printf '%s\n' "${rows[@]}"
echo "reports: $out"
exit "$failed"
