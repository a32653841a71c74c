#!/usr/bin/env bash
# Benchmark of `history` (issue 41): 1,000 reports of 50 cases each, built from one real
# report (a fake-timed run of a 50-case matrix: `run --fault-hooks`, no model runs), with
# edited medians, samples, times and, from report 600 on, a torch/ROCm update that makes
# a tenth of the cases 20% slower; then `history` over the folder is timed (target < 5 s).
#
# Usage: scripts/history_bench.sh [REPORTS] [CASES]   (defaults 1000 and 50)
# Env:   WAN_VAE_BENCH (the binary; default target/release/wan-vae-bench), BENCH_DIR (the
#        folder for the reports; default a temporary one, removed at the end), SAMPLES (each
#        run's samples, default 5; 1 times the fit under a law of the run levels' residuals).
set -euo pipefail
REPORTS=${1:-1000}
CASES=${2:-50}
BIN=${WAN_VAE_BENCH:-target/release/wan-vae-bench}
DIR=${BENCH_DIR:-$(mktemp -d)}
[ -n "${BENCH_DIR:-}" ] || trap 'rm -rf "$DIR"' EXIT
mkdir -p "$DIR/reports"
# 5 frame counts x 5 sizes x 2 chunks = 50 fp32 cases (their own references).
WAN_VAE_BENCH_FAULT=fake "$BIN" run --fault-hooks -q --precision fp32 --chunk 1,2 \
  --frames 1,5,9,13,17 --size 16x16,24x24,32x32,40x40,48x48 --runs 5 --warmup 0 \
  --order as-written -o "$DIR/template.json" >/dev/null
python3 - "$DIR/template.json" "$DIR/reports" "$REPORTS" "$CASES" <<'PY'
import datetime, json, os, random, statistics, sys
template, out, n, ncases = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
base = json.load(open(template))
base["cases"] = [c for c in base["cases"] if c["status"] == "ok"][:ncases]
assert len(base["cases"]) == ncases, f"the template has {len(base['cases'])} ok cases"
rng = random.Random(41)
nsamples = int(os.environ.get("SAMPLES", "5"))
# Dated from 2000 on: 20,000 reports six hours apart end in 2013, never after now.
t0 = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
def stats(p, level):
    s = [level * (1 + 0.02 * rng.uniform(-1, 1)) for _ in range(nsamples)]
    p.update(samples_s=s, min_s=min(s), max_s=max(s), mean_s=statistics.fmean(s),
             median_s=statistics.median(s), stddev_s=(statistics.stdev(s) if len(s) > 1 else 0.0))
for i in range(n):
    r = json.loads(json.dumps(base))
    r["created_at"] = (t0 + datetime.timedelta(hours=6 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
    updated = i >= int(n * 0.6)
    r["system"]["rocm_version"] = "7.0.0" if updated else "6.4.1"
    for k, c in enumerate(r["cases"]):
        slow = 1.2 if updated and k % 10 == 0 else 1.0
        for p in ("encode", "decode"):
            if c.get(p):
                stats(c[p], (0.1 + 0.01 * k) * slow)
    json.dump(r, open(f"{out}/r{i:04d}.json", "w"))
PY
echo "history over $REPORTS reports of $CASES cases ($DIR/reports):"
start=$(date +%s.%N)
set +e
"$BIN" history "$DIR/reports" >"$DIR/history.txt"
code=$?
set -e
end=$(date +%s.%N)
echo "exit $code (1 expected: the update made a tenth of the cases slower)"
grep -c "step" "$DIR/history.txt" | sed 's/^/lines naming a step: /'
python3 -c "print(f'history took {float(\"$end\") - float(\"$start\"):.2f} s (target < 5 s)')"
