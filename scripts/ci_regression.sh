#!/usr/bin/env bash
# CI regression job: run configs/ci.toml, print the results table, compare with a baseline.
#
# Usage: scripts/ci_regression.sh [BASELINE.json]   (default: results/baseline.json)
# Environment:
#   WAN_VAE_BENCH      binary to use (default: target/release/wan-vae-bench, built if missing)
#   CI_CONFIG          matrix file (default: configs/ci.toml)
#   CI_OUT_DIR         where the report, tables and chart go (default: results/ci)
#   CI_DEVICE          passed as --device when set (e.g. cuda:0)
#   COMPARE_ARGS       extra arguments for `compare` (e.g. "--threshold 10")
# Writes CI_OUT_DIR/{current.json,results.md,compare.md,compare.json,chart.svg}; when
# $GITHUB_STEP_SUMMARY is set, appends both Markdown tables to it.
# Exit status: compare's (0 no regression, 1 regression, 2 unusable input). Only a report
# this run wrote is compared: last night's outputs are removed first, and a run that ends
# with anything but 0 or 1 (2: unusable input; 101: a panic; 128+N: stopped by signal N,
# e.g. 137 killed, 143 SIGTERM) fails the job with its own code, comparing nothing; a run
# that ends 0 or 1 without writing its report is 2.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

baseline="${1:-results/baseline.json}"
config="${CI_CONFIG:-configs/ci.toml}"
out_dir="${CI_OUT_DIR:-results/ci}"
bin="${WAN_VAE_BENCH:-target/release/wan-vae-bench}"

if [[ ! -f "$baseline" ]]; then
    echo "error: baseline report $baseline not found (see docs/ci.md to create one)" >&2
    exit 2
fi
if [[ ! -x "$bin" ]]; then
    echo "building $bin" >&2
    cargo build --release --locked >&2
fi
mkdir -p "$out_dir"

# Last night's outputs go first: a runner that keeps $out_dir (self-hosted, a cached
# workspace) must never show, upload or compare them as tonight's.
outputs=(current.json results.md chart.svg compare.md compare.json)
for f in "${outputs[@]}"; do
    if ! rm -f -- "$out_dir/$f" || [[ -e "$out_dir/$f" || -L "$out_dir/$f" ]]; then
        echo "error: cannot remove the previous $out_dir/$f: a report this run did not write would be compared" >&2
        exit 2
    fi
done

run_args=(run --config "$config" --output "$out_dir/current.json" --export-markdown "$out_dir/results.md"
    --export-svg "$out_dir/chart.svg" --quiet)
if [[ -n "${CI_DEVICE:-}" ]]; then
    run_args+=(--device "$CI_DEVICE")
fi
# A failed case is recorded in the report (and judged by compare), exit 1; any other end of
# the run fails the job here, with the run's own code.
run_status=0
"$bin" "${run_args[@]}" || run_status=$?
if [[ $run_status != 0 && $run_status != 1 ]]; then
    why="unusable input or a failure before measuring"
    if ((run_status == 101)); then
        why="the tool panicked"
    elif ((run_status > 128)); then
        why="stopped by signal $((run_status - 128)) ($(kill -l "$run_status" 2>/dev/null || echo '?')): killed, out of memory or timed out"
    fi
    echo "error: the benchmark run failed (exit $run_status: $why); nothing compared" >&2
    exit "$run_status"
fi
if [[ ! -s "$out_dir/current.json" ]]; then
    echo "error: the benchmark run wrote no report (exit $run_status)" >&2
    exit 2
fi

if [[ ! -f "$out_dir/results.md" ]]; then
    echo "_(the run wrote no results table)_" >"$out_dir/results.md"
fi
echo "## Results"
cat "$out_dir/results.md"
echo

if [[ ! -f "$out_dir/chart.svg" ]]; then
    "$bin" plot "$out_dir/current.json" -o "$out_dir/chart.svg" || echo "warning: could not draw the chart" >&2
fi

# shellcheck disable=SC2086 # COMPARE_ARGS is a list of words on purpose
extra=(${COMPARE_ARGS:-})
status=0
"$bin" compare "$baseline" "$out_dir/current.json" --markdown "${extra[@]}" >"$out_dir/compare.md" || status=$?
"$bin" compare "$baseline" "$out_dir/current.json" --json "${extra[@]}" >"$out_dir/compare.json" 2>/dev/null || true
cat "$out_dir/compare.md"

if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
    { echo "## Results"; cat "$out_dir/results.md"; echo; cat "$out_dir/compare.md"; } >>"$GITHUB_STEP_SUMMARY"
fi

# Fail closed: a run that broke a budget or had a failing case (exit 1) is a regression even
# when its timings compare well; any other end of the run was stopped above.
if [[ $status == 0 && $run_status == 1 ]]; then
    echo "the run itself exited 1 (a failed case or a broken budget): counted as a regression" >&2
    status=1
fi
case "$status" in
    0) echo "no regression against $baseline" >&2 ;;
    1) echo "REGRESSION against $baseline" >&2 ;;
    *) echo "error: compare could not use its input (exit $status)" >&2 ;;
esac
exit "$status"
