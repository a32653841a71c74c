#!/usr/bin/env bash
# Sweep one environment variable over values, one report per value, under results/.
#
#   scripts/sweep_env.sh MIOPEN_FIND_MODE 1 2 3 5 -- --config configs/gfx1151-miopen.toml --env baseline
#
# Every argument after `--` goes to `wan-vae-bench run`. The variable is exported to the run,
# so every worker inherits it and records it in its case's `env` (WAN_VAE_BENCH_RECORD_ENV). Reports are written to
# results/<UTC time>-<VAR>=<value>.json; the script exits non-zero if any run did.
# Set WAN_VAE_BENCH to the binary (default: target/release/wan-vae-bench, built if missing).
set -euo pipefail

usage() { echo "usage: $0 VARIABLE VALUE... [-- RUN-ARGS...]" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
var=$1; shift
[[ $var =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "not a variable name: $var" >&2; exit 2; }
values=()
while [[ $# -gt 0 && $1 != "--" ]]; do values+=("$1"); shift; done
[[ ${1:-} == "--" ]] && shift
[[ ${#values[@]} -gt 0 ]] || usage

bin=${WAN_VAE_BENCH:-target/release/wan-vae-bench}
if [[ ! -x $bin ]]; then cargo build --release; fi
mkdir -p results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
status=0
for value in "${values[@]}"; do
    out="results/${stamp}-${var}=${value}.json"
    echo "== ${var}=${value} -> ${out}" >&2
    rc=0
    env "${var}=${value}" "WAN_VAE_BENCH_RECORD_ENV=${var}" "$bin" run --output "$out" "$@" || rc=$?
    if [[ $rc -ge 2 ]]; then echo "run failed to start (exit $rc); stopping" >&2; exit "$rc"; fi
    [[ $rc -eq 0 ]] || status=1
done
exit $status
