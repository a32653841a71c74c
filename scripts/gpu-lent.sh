#!/usr/bin/env bash
# candle on cuDNN against torch in one call on a lent GPU machine (docs/gpu.md, "One call on a
# lent GPU"): no Rust and no network there, a hard limit per call, a few files back. So it
#   - refuses within seconds, before any step, unless the CUDA binary carried in .gpu/ (built
#     by scripts/build-cuda.sh) starts, its `system --json` lists cuDNN, it was built from the
#     commit and the sources of the tree it runs in (.gpu/manifest.json against
#     scripts/gpu-source-fingerprint.sh), and a GPU is there: it names what is missing (the
#     library the loader did not find, ...). There is no fallback to the CPU build;
#   - runs its steps in the order a short call needs them, each under a time cap and only
#     when the deadline leaves it enough (a capped step keeps what `run` measured);
#   - stops candle's timed steps when `validate` did not pass on the device (conv-bench still
#     runs: it names the convolution that is wrong);
#   - packs everything into DEST/gpu-lent.tar.gz, with the session log as DEST/session.txt,
#     after every step and every GPU_LENT_SNAPSHOT_S (20) seconds (scripts/gpu-lent-pack.sh).
#
#   scripts/gpu-lent.sh DEST [DEADLINE_S [COMMIT]]   # DEST: $OUT; DEADLINE_S default 480;
#                                                    # COMMIT: refuse a binary of another commit
#   scripts/gpu-lent.sh --plan                       # the steps, caps, budget and each run's cases
#   GPU_LENT_STEPS=decode-81,levers scripts/gpu-lent.sh $OUT 200   # only these (a second call)
#   GPU_LENT_FAKE_DEVICE=1 scripts/gpu-lent.sh /tmp/x   # rehearsal on a machine without a GPU:
#       the binary is $WAN_VAE_BENCH or target/release/wan-vae-bench (the CPU build), the device
#       cuda:0 all the same; the refusals are printed, not applied; nothing can be measured
#   GPU_LENT_SMOKE=1 scripts/gpu-lent.sh /tmp/x      # the steps' plumbing on the CPU (--smoke)
#   GPU_LENT_GATE=0                                  # time candle even after validate failed
#
# Steps by default, in this order (engines torch then candle; untiled, cuDNN on, benchmark
# off, TF32 off: torch's true-fp32 case, the reference, is the first case of every step):
#   validate      candle on cuda:0, both models, fp32 (true) and bf16, against the fixtures
#   wan21         Wan 2.1 21x832x480 encode + decode, fp32 and bf16, warmup 1 + 3 runs
#   conv-bench    each distinct convolution of that decode: candle's time and torch's, and
#                 candle's output against torch's (max abs error), fp32 and bf16
#   profile       --profile, 5x320x320, fp32 and bf16 (per-layer times, candle's algorithms)
#   wan22-decode  Wan 2.2 decode only, 21x1280x704, warmup 1 + 2 runs
#   decode-81     Wan 2.1 decode only, 81x832x480, warmup 1 + 2 runs
# By name only: decode-320, levers, oom (a second process holds all but 40 GiB of the GPU),
# wan22 (encode + decode), search (configs/gpu-check-cudnn-search.toml).
# Exit: 0 when every step ran and nothing FAILed, 1 otherwise, 2 when it refused.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
# shellcheck source=scripts/gpu-lent-pack.sh
. "$here/gpu-lent-pack.sh"
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

plan=0
[[ ${1:-} == --plan ]] && { plan=1; shift; }
[[ ${1:-} == -h || ${1:-} == --help ]] && usage
deadline=${2:-480}
want_commit=${3:-}
[[ $deadline =~ ^[0-9]+$ ]] || { echo "gpu-lent: DEADLINE_S must be whole seconds, not $deadline" >&2; exit 2; }
fake=${GPU_LENT_FAKE_DEVICE:-0} smoke=${GPU_LENT_SMOKE:-0} gate=${GPU_LENT_GATE:-1}
bundle=${GPU_LENT_BUNDLE:-$root/.gpu}

# ---- the plan: order, caps, budget (tests/engine/gpu_lent.rs reads `--plan`)
# The device minutes of one session, as docs/gpu.md plans them: a fresh machine's start, this
# call (its timeout_s: the deadline, the last snapshot and the transfers), then a warm retry.
budget_s=900 start_s=120 call_timeout_s=$((deadline + 60)) retry_s=$((900 - 120 - deadline - 60))
setup_s=15
default_steps=(validate wan21 conv-bench profile wan22-decode decode-81)
declare -A need=([validate]=30 [wan21]=90 [conv-bench]=40 [profile]=30 [wan22-decode]=60 [decode-81]=60
    [decode-320]=40 [levers]=40 [wan22]=60 [search]=90 [oom]=45)
declare -A cap=([validate]=60 [wan21]=150 [conv-bench]=90 [profile]=60 [wan22-decode]=120 [decode-81]=120
    [decode-320]=90 [levers]=100 [wan22]=150 [search]=200 [oom]=90)
# Fewer timed runs on the two largest steps.
declare -A runs=([wan21]="--warmup 1 --runs 3" [wan22-decode]="--warmup 1 --runs 2" [decode-81]="--warmup 1 --runs 2")
check=("$here/gpu-check.sh")
[[ $smoke == 1 ]] && check+=(--smoke)
vs=(--tf32 off --control off --cudnn on --cudnn-benchmark off)
[[ $smoke == 1 ]] || vs+=(--tile none) # --smoke sets its own size, tiling and runs
step_args() { # the gpu-check.sh arguments of a step (OUT last but one)
    local name=$1 out=$2 r=()
    [[ $smoke == 1 ]] || read -r -a r <<< "${runs[$name]:-}"
    case $name in
        validate) echo "${check[*]} --steps system,validate --engines candle --out $out" ;;
        wan21) echo "${check[*]} --steps wan21 --engines torch,candle --out $out -- ${vs[*]} ${r[*]}" ;;
        profile) echo "${check[*]} --quick --steps profile --engines torch,candle --out $out -- --tf32 off --control off" ;;
        wan22-decode) echo "${check[*]} --steps wan22 --engines torch,candle --out $out -- ${vs[*]} ${r[*]} --passes decode" ;;
        decode-81) echo "${check[*]} --steps decode-81 --engines torch,candle --out $out -- ${vs[*]} ${r[*]}" ;;
        decode-320) echo "${check[*]} --quick --steps decode-320 --engines torch,candle --out $out -- --tf32 off --control off" ;;
        levers) echo "${check[*]} --steps levers --engines torch --out $out" ;;
        wan22) echo "${check[*]} --quick --steps wan22 --engines torch,candle --out $out -- --tf32 off --control off" ;;
        search) echo "${check[*]} --configs $root/configs/gpu-check-cudnn-search.toml --steps cudnn-search --engines torch,candle --out $out" ;;
        oom) echo "${check[*]} --steps oom --engines torch --out $out" ;;
        conv-bench) echo "$here/conv-bench.sh $out" ;;
    esac
}
if [[ $plan == 1 ]]; then
    echo "deadline $deadline s; call timeout_s $call_timeout_s; device budget $budget_s s = start $start_s + call $call_timeout_s + warm retry $retry_s"
    echo "setup $setup_s s"
    export WAN_VAE_BENCH=${WAN_VAE_BENCH:-$root/target/release/wan-vae-bench}
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    for name in "${default_steps[@]}"; do
        echo "step $name need ${need[$name]} cap ${cap[$name]} runs ${runs[$name]:-default}"
        [[ $name == conv-bench ]] && continue
        read -r -a a <<< "$(step_args "$name" "$scratch/$name")"
        "${a[0]}" --list "${a[@]:1}" 2> /dev/null | sed 's/^/    /'
    done
    exit 0
fi

dest=${1:?usage: scripts/gpu-lent.sh DEST [DEADLINE_S [COMMIT]]}
mkdir -p "$dest" || exit 2
dest=$(cd "$dest" && pwd)
work=${GPU_LENT_WORK:-/tmp/wvb-lent}
rm -rf "$work" && mkdir -p "$work" || exit 2
log=$work/session.txt
: > "$log"
lent_sweep "$dest"
t0=$SECONDS

say() { echo "[+$((SECONDS - t0))s] $*" | tee -a "$log"; }
left() { echo $((deadline - (SECONDS - t0))); }
lent_packer "$dest" "$work" "$log" "${GPU_LENT_SNAPSHOT_S:-20}" > /dev/null 2>&1 &
packer_pid=$!
ballast_pid=""
cleanup() {
    [[ -n $ballast_pid ]] && kill "$ballast_pid" 2> /dev/null
    kill -TERM "$packer_pid" 2> /dev/null
    wait "$packer_pid" 2> /dev/null
    lent_pack "$dest" "$work" "$log"
    lent_sweep "$dest"
}
trap cleanup EXIT
trap 'say "stopped by a signal"; exit 143' TERM INT HUP

refusals=()
refuse() { refusals+=("$*"); }
# ---- setup: the binary, what it needs, and whether this call may measure anything
mode="the GPU measurement"
[[ $fake == 1 ]] && mode="a rehearsal without a GPU (GPU_LENT_FAKE_DEVICE=1): nothing below is a measurement"
[[ $smoke == 1 ]] && mode="the CPU plumbing (GPU_LENT_SMOKE=1): nothing below is a GPU measurement"
say "gpu-lent: $mode; deadline $deadline s"
mkdir -p "$work/bin"
libdirs=$(python3 -c 'import glob, os, nvidia
print(":".join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "*", "lib", "lib*.so*"))})))' 2> /dev/null)
[[ -d /usr/local/cuda/lib64 ]] && libdirs="${libdirs:+$libdirs:}/usr/local/cuda/lib64"
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [[ $fake == 1 || $smoke == 1 ]]; then
    bin=${WAN_VAE_BENCH:-$root/target/release/wan-vae-bench}
elif [[ -f $bundle/wan-vae-bench-cuda.xz ]]; then
    bin=$work/bin/wan-vae-bench-cuda
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        "$bundle/wan-vae-bench-cuda.xz" "$bin" 2>> "$work/setup.txt" && chmod +x "$bin" ||
        refuse "cannot unpack $bundle/wan-vae-bench-cuda.xz (setup.txt)"
else
    bin=""
    refuse "no CUDA binary: $bundle/wan-vae-bench-cuda.xz is missing (build it with scripts/build-cuda.sh, then carry .gpu)"
fi
if [[ -n $bin && -f $bin ]]; then
    # A library the loader cannot find: look wider (libcurand.so.10 is not in every torch).
    for lib in $(ldd "$bin" 2> /dev/null | awk '/not found/ {print $1}'); do
        found=$(timeout 10 find /usr/local /opt /usr/lib -name "$lib" 2> /dev/null | head -1)
        echo "== $lib not found on LD_LIBRARY_PATH; found: ${found:-nothing}" >> "$work/setup.txt"
        [[ -n $found ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
    done
    if ! "$bin" --version > /dev/null 2> "$work/start.stderr"; then
        missing=$(sed -n 's/.*error while loading shared libraries: \([^:]*\):.*/\1/p' "$work/start.stderr" | head -1)
        others=$(ldd "$bin" 2> /dev/null | awk '/not found/ {print $1}' | tr '\n' ' ')
        if [[ -n $missing || -n $others ]]; then
            refuse "the binary cannot start: ${missing:-$others} not found${others:+ (ldd: not found: $others)}; looked in LD_LIBRARY_PATH=$LD_LIBRARY_PATH and /usr/local, /opt, /usr/lib"
        else
            refuse "the binary cannot start: $(head -c 300 "$work/start.stderr")"
        fi
    elif ! "$bin" system --json > "$work/system.json" 2>> "$work/setup.txt"; then
        refuse "\`$bin system --json\` failed (setup.txt)"
    fi
elif [[ -n $bin ]]; then
    refuse "no binary at $bin"
fi
if [[ -s $work/system.json ]]; then
    # What the binary says of itself and of this machine, against the manifest and the tree.
    fingerprint=$("$here/gpu-source-fingerprint.sh" "$root" 2> /dev/null)
    while IFS= read -r why; do [[ -n $why ]] && refuse "$why"; done < <(
        FINGERPRINT=$fingerprint WANT=$want_commit MANIFEST=$bundle/manifest.json FAKE=$fake$smoke python3 - "$work/system.json" <<'EOF'
import json, os, sys
s = json.load(open(sys.argv[1]))
feats, commit = s.get("cargo_features") or [], s.get("git_commit")
if "cudnn" not in feats:
    print(f"the binary has no cuDNN: `system --json` lists features {feats or 'none'} (a `--features cudnn` build is needed; the CPU build would time torch alone)")
if os.environ["WANT"] and commit != os.environ["WANT"]:
    print(f"the binary was built from {commit}, not {os.environ['WANT']}, the commit being measured")
try:
    m = json.load(open(os.environ["MANIFEST"]))
except (OSError, ValueError) as e:
    m = None
    if os.environ["FAKE"] == "00":
        print(f"no readable {os.environ['MANIFEST']} ({e}): which sources the binary was built from is unknown")
if m is not None:
    if m.get("commit") != commit:
        print(f"the manifest's commit {m.get('commit')} is not the binary's {commit}")
    if m.get("uncommitted_source_changes"):
        print(f"the binary was built from {m.get('commit')} with uncommitted source changes")
    if m.get("source_fingerprint") != os.environ["FINGERPRINT"]:
        print("the binary was built from other sources than this tree's (scripts/gpu-source-fingerprint.sh differs): rebuild it at the commit being measured")
if not s.get("gpus"):
    print("NO GPU: `system --json` lists none (nvidia-smi and /sys/class/kfd show nothing)")
EOF
    )
fi
{
    echo "== date: $(date -u +%FT%TZ)"
    echo "== nvidia-smi"; nvidia-smi 2>&1
    echo "== the telemetry query (src/run/telemetry/sources.rs)"
    nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,clocks_throttle_reasons.active \
        --format=csv,noheader,nounits 2>&1
    echo "== python"; python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), torch.cuda.is_available() and torch.cuda.get_device_name(0))' 2>&1
    echo "== nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
    echo "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    [[ -n $bin ]] && { echo "== ldd $bin"; ldd "$bin" 2>&1; }
    echo "== manifest"; cat "$bundle/manifest.json" 2>&1
} >> "$work/setup.txt" 2>&1
if ((${#refusals[@]} > 0)); then
    for r in "${refusals[@]}"; do
        if [[ $fake == 1 || $smoke == 1 ]]; then say "a real call would refuse: $r"; else say "REFUSED: $r"; fi
    done
    if [[ $fake != 1 && $smoke != 1 ]]; then
        printf '%s\n' "${refusals[@]}" > "$work/refused.txt"
        say "refused in $((SECONDS - t0)) s: nothing was run (setup.txt says what this machine has)"
        exit 2
    fi
fi
export WAN_VAE_BENCH=$bin
say "binary $bin: $("$bin" --version 2>&1 | head -1)"

wanted() { [[ ,${GPU_LENT_STEPS:-$(IFS=,; echo "${default_steps[*]}")}, == *,$1,* ]]; }
gate_closed=""
# step NAME: run it when NEED seconds are left, under min(CAP, left - 15)
step() {
    local name=$1 l c s rc a
    wanted "$name" || return
    if [[ -n $gate_closed && $name != conv-bench && $name != levers && $name != oom ]]; then
        say "SKIP step $name: $gate_closed"
        return
    fi
    l=$(left)
    if ((l < need[$name])); then
        say "SKIP step $name: $l s left, it needs about ${need[$name]}"
        return
    fi
    c=${cap[$name]}
    ((c > l - 15)) && c=$((l - 15))
    read -r -a a <<< "$(step_args "$name" "$work/$name")"
    say "step $name (cap ${c} s): ${a[*]}"
    s=$SECONDS
    timeout -s TERM -k 10 "$c" "${a[@]}" 2>&1 | tee "$work/$name.out" | grep -E '^(PASS|FAIL|UNSUPPORTED|SKIP|INFO|summary)|^\| sum|^wan2' >> "$log"
    rc=${PIPESTATUS[0]}
    # A `run` stopped by the cap writes its report after the SIGTERM: wait for it (20 s at most).
    for _ in $(seq 40); do pgrep -f -- "$work/$name/" > /dev/null || break; sleep 0.5; done
    say "step $name: exit $rc, wall $((SECONDS - s)) s$([[ $rc == 124 ]] && echo ' (stopped by its cap)')"
    lent_pack "$dest" "$work" "$log"
}

# ---- the steps, in the order a short call needs them
step validate
if wanted validate; then
    passed=$(grep -c '^PASS *validate candle-' "$work/validate/checks.txt" 2> /dev/null)
    if [[ ${passed:-0} != 4 ]]; then
        why="validate did not pass on the device (${passed:-0} of 4 candle checks PASS; $work/validate/checks.txt): candle's timings would be of a wrong or missing result"
        if [[ $gate == 0 ]]; then say "GPU_LENT_GATE=0: timing candle all the same; $why"; else gate_closed=$why; fi
    fi
fi
step wan21
if [[ $smoke == 1 ]]; then
    wanted conv-bench && say "SKIP step conv-bench: needs a GPU"
else
    CONV_BENCH_RUNS=5 step conv-bench
fi
step profile
step wan22-decode
step decode-81
# By name only (GPU_LENT_STEPS).
step decode-320
step levers
step wan22
step search
if wanted oom && [[ $smoke != 1 ]] && (($(left) > need[oom])); then
    # Hold all but 40 GiB of the GPU in a second process, as ComfyUI's diffusion model would.
    rm -f "$work/ballast.ready"
    python3 -c '
import sys, time, torch
free, total = torch.cuda.mem_get_info()
n = max(0, free - (40 << 30))
x = torch.empty(n, dtype=torch.uint8, device="cuda")
print(f"ballast: holding {n / 2**30:.1f} GiB of {total / 2**30:.1f} GiB; {(free - n) / 2**30:.1f} GiB left free", flush=True)
open(sys.argv[1], "w").close()
time.sleep(600)
' "$work/ballast.ready" >> "$log" 2>&1 &
    ballast_pid=$!
    for _ in $(seq 60); do [[ -f $work/ballast.ready ]] && break; sleep 0.5; done
    step oom
    kill "$ballast_pid" 2> /dev/null; wait "$ballast_pid" 2> /dev/null; ballast_pid=""
fi

# ---- what came of it
say "done in $((SECONDS - t0)) s"
grep -h '^summary' "$work"/*.out 2> /dev/null | tee -a "$log"
grep -h '^FAIL' "$work"/*/checks.txt 2> /dev/null | head -40 | tee -a "$log"
grep -h 'FAILED' "$log" | grep '^\[snapshot' > /dev/null && say "some snapshots failed (above); the last one is whole"
figures=$(python3 - "$work" <<'EOF'
import glob, json, os, sys
n, where = 0, []
for f in glob.glob(os.path.join(sys.argv[1], "*", "*.json")):
    try:
        r = json.load(open(f))
    except (OSError, ValueError):
        continue
    dev = str((r.get("run") or {}).get("device", "")) if isinstance(r, dict) else ""
    if not dev.startswith("cuda"):
        continue
    k = sum(1 for c in r.get("cases") or [] if c.get("status") == "ok")
    if k:
        n += k
        where.append(f"{os.path.basename(os.path.dirname(f))}: {k}")
print(f"{n} case(s) measured on the GPU" + (f" ({', '.join(where)})" if where else ""))
EOF
)
if printf '%s\n' "${refusals[@]}" | grep -q '^NO GPU'; then
    say "NO GPU on this machine: $figures; no figure here is a measurement"
else
    say "$figures"
fi
fails=$(cat "$work"/*/checks.txt 2> /dev/null | grep -c '^FAIL')
[[ ${fails:-0} == 0 && -z $gate_closed ]]
