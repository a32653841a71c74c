#!/usr/bin/env bash
# Sweep one environment variable over values: a thin wrapper over `run --env-var`, kept for
# older scripts. One shuffled report holds every value and `baseline`.
#
#   scripts/sweep_env.sh MIOPEN_FIND_MODE 1 2 3 5 -- --config configs/gfx1151-miopen.toml
#   # is: wan-vae-bench run --env-var MIOPEN_FIND_MODE=1,2,3,5 --config configs/gfx1151-miopen.toml
#
# Every argument after `--` goes to `wan-vae-bench run`. Set WAN_VAE_BENCH to the binary
# (default: target/release/wan-vae-bench, built if missing). The exit code is run's.
set -euo pipefail

usage() { echo "usage: $0 VARIABLE VALUE... [-- RUN-ARGS...]" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
var=$1; shift
values=()
while [[ $# -gt 0 && $1 != "--" ]]; do
    [[ $1 != *,* ]] || { echo "value '$1' holds a comma: use an [env.NAME] table in a matrix file" >&2; exit 2; }
    values+=("$1"); shift
done
[[ ${1:-} == "--" ]] && shift
[[ ${#values[@]} -gt 0 ]] || usage

bin=${WAN_VAE_BENCH:-target/release/wan-vae-bench}
if [[ ! -x $bin ]]; then cargo build --release; fi
list=$(IFS=,; echo "${values[*]}")
exec "$bin" run --env-var "${var}=${list}" "$@"
