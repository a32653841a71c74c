#!/usr/bin/env bash
# The GPU measurement in one call on a lent GPU machine (docs/gpu.md, "One call on a lent
# GPU"): there is no Rust and no network there, each call has a hard time limit, and only a
# few files come back. So this script
#   - unpacks the binaries built here and carried along (.gpu/wan-vae-bench-cuda.gz, a
#     `--features cudnn` build; .gpu/wan-vae-bench.gz, the CPU build, if the first cannot start),
#   - runs scripts/gpu-check.sh (and scripts/conv-bench.sh) one step at a time, most wanted
#     first, each under its own time cap and never past the deadline (a step stopped by its
#     cap keeps what it measured: `run` writes its report on SIGTERM),
#   - and after every step packs everything into DEST/gpu-lent.tar.gz (one file: what comes
#     back even when the call is cut off), with the session log beside it.
#
#   scripts/gpu-lent.sh DEST [DEADLINE_S]     # DEST: e.g. $OUT; DEADLINE_S default 540
#   GPU_LENT_SMOKE=1 scripts/gpu-lent.sh /tmp/x 900   # the same plumbing on the CPU (gpu-check --smoke)
#   GPU_LENT_STEPS=levers,oom scripts/gpu-lent.sh $OUT 250   # only these steps (a second call)
#
# Steps by default (issue 57: candle through cuDNN against torch, same GPU, same shapes;
# engines torch then candle, untiled, cuDNN on, benchmark off, warmup 1 + 3 timed runs; every
# GPU case records the worker's device memory at its peak as NVML reports it):
#   setup         nvidia-smi, its telemetry query, torch's versions, the binary's libraries
#   validate      candle on cuda:0, both models, fp32 (true) and bf16, against the fixtures
#   wan21         Wan 2.1 21x832x480 encode + decode, fp32 and bf16 (torch's fp32 both with
#                 TF32, its default, and true fp32, the reference; candle's fp32 is true)
#   decode-81     Wan 2.1 decode only, 81x832x480
#   wan22-decode  Wan 2.2 decode only, 21x1280x704
#   conv-bench    each distinct convolution of the Wan 2.1 21x832x480 decode, candle and torch
#   profile       --profile, 5x320x320, fp32 and bf16 (per-layer ratios)
# More, by name only: decode-320, levers, oom (a second process holds all but 40 GiB of the
# GPU), wan22 (encode + decode), search (candle's plans by cuDNN's measured search against
# its heuristics, torch's cudnn.benchmark off and on: configs/gpu-check-cudnn-search.toml).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
dest=${1:?usage: scripts/gpu-lent.sh DEST [DEADLINE_S]}
deadline=${2:-540}
mkdir -p "$dest"
work=/tmp/wvb-lent
rm -rf "$work" && mkdir -p "$work"
log=$work/session.txt
t0=$SECONDS

say() { echo "[+$((SECONDS - t0))s] $*" | tee -a "$log"; }
left() { echo $((deadline - (SECONDS - t0))); }
pack() {
    local part="$dest/gpu-lent.tar.gz.part.$BASHPID" # the periodic packer may pack at once
    tar czf "$part" --exclude wvb-lent/bin -C /tmp wvb-lent 2>/dev/null && mv -f "$part" "$dest/gpu-lent.tar.gz"
    rm -f "$part"
    cp "$log" "$dest/session.txt.part.$BASHPID" && mv -f "$dest/session.txt.part.$BASHPID" "$dest/session.txt"
}
ballast_pid=""
# Also every 20 s while a step runs: a call cut off inside a step (killed, no trap) still
# returns what its cases wrote so far (each report is saved as each case ends).
( while sleep 20; do pack; done ) > /dev/null 2>&1 &
packer_pid=$!
cleanup() {
    [[ -n $ballast_pid ]] && kill "$ballast_pid" 2>/dev/null
    kill "$packer_pid" 2>/dev/null
    pack
}
trap cleanup EXIT

default_steps=validate,wan21,decode-81,wan22-decode,conv-bench,profile
wanted() { [[ ,${GPU_LENT_STEPS:-$default_steps}, == *,$1,* ]]; }

# step NAME NEED_S CAP_S CMD...: run CMD when NEED_S seconds are left, under min(CAP_S, left - 15)
step() {
    local name=$1 need=$2 cap=$3 l s rc
    shift 3
    wanted "$name" || return
    l=$(left)
    if ((l < need)); then
        say "SKIP step $name: $l s left, it needs about $need"
        return
    fi
    ((cap > l - 15)) && cap=$((l - 15))
    say "step $name (cap ${cap} s): $*"
    s=$SECONDS
    timeout -s TERM -k 10 "$cap" "$@" 2>&1 | tee "$work/$name.out" | grep -E '^(PASS|FAIL|UNSUPPORTED|SKIP|INFO|summary)|^\| sum|^wan2' >> "$log"
    rc=${PIPESTATUS[0]}
    # timeout returns when gpu-check.sh ends; a `run` it started may still be finishing its
    # report after the SIGTERM: wait for it (at most 20 s) before packing.
    for _ in $(seq 40); do pgrep -f "$WAN_VAE_BENCH" > /dev/null || break; sleep 0.5; done
    say "step $name: exit $rc, wall $((SECONDS - s)) s$([[ $rc == 124 ]] && echo ' (stopped by its cap)')"
    pack
}

# ---- setup: the binary and what it needs
mkdir -p "$work/bin"
for b in wan-vae-bench-cuda wan-vae-bench; do
    [[ -f $root/.gpu/$b.gz ]] && gunzip -c "$root/.gpu/$b.gz" > "$work/bin/$b" && chmod +x "$work/bin/$b"
done
libdirs=$(python3 -c 'import glob, os, nvidia
print(":".join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "*", "lib", "lib*.so*"))})))' 2>/dev/null)
[[ -d /usr/local/cuda/lib64 ]] && libdirs="${libdirs:+$libdirs:}/usr/local/cuda/lib64"
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Any library still missing (libcurand.so.10 is not in every torch's wheels): look wider.
if [[ -x $work/bin/wan-vae-bench-cuda ]]; then
    for lib in $(ldd "$work/bin/wan-vae-bench-cuda" 2>/dev/null | awk '/not found/ {print $1}'); do
        found=$(find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -1)
        echo "== $lib not found on LD_LIBRARY_PATH; found: ${found:-nothing}" >> "$work/setup.txt"
        [[ -n $found ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
    done
fi
bin=""
for b in "$work/bin/wan-vae-bench-cuda" "$work/bin/wan-vae-bench" "$root/target/release/wan-vae-bench"; do
    if [[ -x $b ]] && "$b" --version > /dev/null 2>> "$work/setup.txt"; then bin=$b; break; fi
done
{
    echo "== date: $(date -u +%FT%TZ)"
    echo "== nvidia-smi"; nvidia-smi 2>&1
    echo "== the telemetry query (src/run/telemetry/sources.rs)"
    nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu,clocks_throttle_reasons.active \
        --format=csv,noheader,nounits 2>&1
    echo "== python"; python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name(0))' 2>&1
    echo "== nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
    echo "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    for b in "$work"/bin/*; do echo "== ldd $b"; ldd "$b" 2>&1; done
} >> "$work/setup.txt" 2>&1
[[ -n $bin ]] || { say "no binary starts (see setup.txt)"; exit 1; }
export WAN_VAE_BENCH=$bin
say "binary $bin: $("$bin" --version 2>&1 | head -1)"
check=("$root/scripts/gpu-check.sh")
[[ ${GPU_LENT_SMOKE:-0} == 1 ]] && check+=(--smoke)
cfg=$root/configs

# ---- the checks, most wanted first
vs=(--cudnn on --cudnn-benchmark off)
[[ ${GPU_LENT_SMOKE:-0} == 1 ]] || vs+=(--tile none --warmup 1 --runs 3) # --smoke sets its own
step validate 60 120 "${check[@]}" --steps system,validate --engines candle --out "$work/validate"
step wan21 90 220 "${check[@]}" --steps wan21 --engines torch,candle --out "$work/wan21" -- "${vs[@]}"
step decode-81 80 200 "${check[@]}" --steps decode-81 --engines torch,candle --out "$work/decode-81" -- "${vs[@]}"
step wan22-decode 80 180 "${check[@]}" --steps wan22 --engines torch,candle --out "$work/wan22-decode" -- "${vs[@]}" --passes decode
if [[ ${GPU_LENT_SMOKE:-0} == 1 ]]; then
    wanted conv-bench && say "SKIP step conv-bench: needs a GPU"
else
    step conv-bench 50 120 "$root/scripts/conv-bench.sh" "$work/conv-bench"
fi
step profile 40 90 "${check[@]}" --quick --steps profile --engines torch,candle --out "$work/profile"

# By name only (GPU_LENT_STEPS): the rest of the GPU check.
step decode-320 40 90 "${check[@]}" --quick --steps decode-320 --engines torch,candle --out "$work/decode-320"
step levers 40 100 "${check[@]}" --steps levers --engines torch --out "$work/levers"
step wan22 60 150 "${check[@]}" --quick --steps wan22 --engines torch,candle --out "$work/wan22"
step search 90 200 "${check[@]}" --configs "$cfg/gpu-check-cudnn-search.toml" --steps cudnn-search --engines torch,candle --out "$work/search"
# oom: hold all but 40 GiB of the GPU in a second process, as another program (ComfyUI's
# diffusion model) would, so that 5x3072x1792 fp32 cannot fit on any card.
if (($(left) > 45)) && [[ ${GPU_LENT_SMOKE:-0} != 1 ]] && wanted oom; then
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
    step oom 40 90 "${check[@]}" --steps oom --engines torch --out "$work/oom"
    kill "$ballast_pid" 2>/dev/null; wait "$ballast_pid" 2>/dev/null; ballast_pid=""
fi
say "done in $((SECONDS - t0)) s"
grep -h '^summary' "$work"/*.out 2>/dev/null | tee -a "$log"
grep -h '^FAIL' "$work"/*/checks.txt 2>/dev/null | head -40 | tee -a "$log"
