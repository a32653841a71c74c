#!/usr/bin/env bash
# The tool's own overhead per case (issue 31): a sweep of the torch engine on the CPU at a
# tiny size, run both ways back to back on the same machine: `--isolate case` (one Python
# process per case: interpreter, imports, model load every time) and the default (cases of
# one engine and env variant share a worker). For each it prints
#   - the wall time of `run`,
#   - the sum of the measured passes (warmups included),
#   - the overhead per case: (wall - passes) / cases,
# and the ratio of the two overheads, with the load average before each run. A benchmark,
# not a test: its numbers are published in docs/results.md (section "Overhead per case").
#
#   scripts/overhead.sh [PYTHON] [OUT_DIR]
#
# PYTHON: the interpreter with torch (default: .venv-torch/bin/python); OUT_DIR: where the two
# reports go (default: a temporary folder, printed). Set WAN_VAE_BENCH to use another binary
# (default: target/release/wan-vae-bench, built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${1:-.venv-torch/bin/python}"
out="${2:-$(mktemp -d -t wan-vae-overhead-XXXXXX)}"
bin="${WAN_VAE_BENCH:-target/release/wan-vae-bench}"
[ -x "$bin" ] || cargo build --release --quiet
mkdir -p "$out"
# 12 cases: 2 precisions x 3 chunks x 2 sizes, one frame, 1 warmup + 2 runs each.
args=(run --engine torch --python "$py" --weights synthetic --frames 1 --size 16x16,24x24
      --precision fp32,bf16 --chunk 1,2,4 --warmup 1 --runs 2 --quiet --order as-written)
summary() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
path, wall, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
r = json.load(open(path))
cases = r["cases"]
passes = 0.0
for c in cases:
    for p in ("encode", "decode"):
        s = c.get(p)
        if s:
            passes += sum(s["samples_s"]) + sum(s["warmup_s"])
ok = sum(c["status"] == "ok" for c in cases)
pids = {(c.get("worker") or {}).get("pid") for c in cases}
print(f"{mode:>14}: {len(cases)} cases ({ok} ok) in {len(pids)} process(es); wall {wall:.2f} s; "
      f"measured passes {passes:.2f} s; overhead per case {(wall - passes) / len(cases):.3f} s")
print((wall - passes) / len(cases), file=open(path + ".overhead", "w"))
EOF
}
for mode in case worker; do
  echo "load average before --isolate $mode: $(cut -d' ' -f1-3 /proc/loadavg)"
  start=$EPOCHREALTIME
  "$bin" "${args[@]}" --isolate "$mode" -o "$out/isolate-$mode.json" >/dev/null 2>&1 || true
  end=$EPOCHREALTIME
  summary "$out/isolate-$mode.json" "$(python3 -c "print($end - $start)")" "--isolate $mode"
done
python3 -c "
a = float(open('$out/isolate-case.json.overhead').read()); b = float(open('$out/isolate-worker.json.overhead').read())
print(f'overhead per case: --isolate case {a:.3f} s, shared workers {b:.3f} s: {a / b:.1f}x smaller')"
echo "reports: $out"
