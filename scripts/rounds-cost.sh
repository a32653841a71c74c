#!/usr/bin/env bash
# What interleaved rounds cost against blocks (issue 63, docs/results.md#rounds-against-blocks):
# runs the README's sweep (fp32,bf16 x chunk 1,2 x untiled,256:64), scaled to this machine
# (FRAMES, default 5; SIZE, default 256x256; TILE, default 256:64; candle on the CPU; synthetic weights of the real
# size), once per schedule and repetition (REPS, default 2; the order of the schedules
# alternates), and measures for each the wall time of the whole command and the peak of the
# resident memory of its process tree (the run and every worker alive at once, summed, sampled
# every 50 ms from /proc), beside the report's own figures. Prints a Markdown table.
#
# Usage: scripts/rounds-cost.sh [OUT_DIR]     (default: a new folder under ${TMPDIR:-/tmp})
# Settings: WAN_VAE_BENCH (the binary; default target/release/wan-vae-bench), FRAMES, SIZE,
# RUNS (default 5), WARMUP (default 1), REPS. Needs python3 (the sampler). Run it on a quiet
# machine: the load average is printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${WAN_VAE_BENCH:-target/release/wan-vae-bench}
[ -x "$bin" ] || { echo "rounds-cost: $bin not found: cargo build --release first" >&2; exit 2; }
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/rounds-cost.XXXXXX")}
mkdir -p "$out"
frames=${FRAMES:-5} size=${SIZE:-256x256} tile=${TILE:-256:64} runs=${RUNS:-5} warmup=${WARMUP:-1} reps=${REPS:-2}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
rows=()
for rep in $(seq "$reps"); do
  if (( rep % 2 )); then order=(blocks rounds); else order=(rounds blocks); fi
  for schedule in "${order[@]}"; do
    report="$out/$schedule-$rep.json"
    line=$(python3 - "$report" "$bin" run --weights synthetic --engine candle --device cpu \
      --frames "$frames" --size "$size" --precision fp32,bf16 --chunk 1,2 --tile "none,$tile" \
      --warmup "$warmup" --runs "$runs" --schedule "$schedule" --quiet -o "$report" <<'EOF'
import os, subprocess, sys, time
report, cmd = sys.argv[1], sys.argv[2:]
def tree_rss(root):
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(ppid, []).append(int(pid))
    total, procs, todo = 0, 0, [root]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for l in f:
                    if l.startswith("VmRSS:"):
                        total += int(l.split()[1]) * 1024
                        procs += 1
        except OSError:
            pass
        todo.extend(children.get(p, []))
    return total, procs
start = time.monotonic()
child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
peak, most = 0, 0
while child.poll() is None:
    rss, procs = tree_rss(child.pid)
    peak, most = max(peak, rss), max(most, procs)
    time.sleep(0.05)
wall = time.monotonic() - start
err = child.stderr.read().decode(errors="replace")
if child.returncode != 0:
    print(f"FAIL\trun exited {child.returncode}: {err.strip().splitlines()[-1:]}")
    sys.exit(0)
import json
r = json.load(open(report))
ok = sum(c["status"] == "ok" for c in r["cases"])
timed = sum((c.get("decode") or {}).get("median_s", 0) + (c.get("encode") or {}).get("median_s", 0) for c in r["cases"])
case_peak = max((c.get("peak_rss_bytes") or 0) for c in r["cases"])
print(f"ok\t{wall:.1f}\t{peak / 1e9:.2f}\t{most}\t{case_peak / 1e9:.2f}\t{ok} of {len(r['cases'])}\t{timed:.3f}")
EOF
)
    IFS=$'\t' read -r ok wall peak procs case_peak cases timed <<<"$line"
    echo "$schedule (repetition $rep): $line"
    rows+=("| $schedule | $rep | $wall | $peak | $procs | $case_peak | $cases | $timed |")
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| schedule | repetition | wall s | peak RSS of the process tree GB | processes at most | largest case's peak_rss GB | cases ok | sum of the cases' medians s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
echo "reports: $out"
