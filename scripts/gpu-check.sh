#!/usr/bin/env bash
# Run the GPU checks of issue 20 on this machine and say what passed (docs/gpu.md):
#
#   scripts/gpu-check.sh                      # cuda:0 (also ROCm builds of torch: AMD GPUs)
#   scripts/gpu-check.sh --quick              # default knobs only, one timed run per case
#   scripts/gpu-check.sh --smoke              # the same plumbing on the CPU, tiny clips (minutes)
#
# Steps (--steps picks some, comma-separated):
#   system     `wan-vae-bench system`: is a GPU visible
#   validate   `validate --device DEV` per engine, per model (the tiny golden fixtures), fp32 and bf16;
#              the Python engines also in fp32 with each lever (--layout channels_last_3d, --conv3d split)
#   wan21      configs/gpu-check-wan21.toml            21 frames 832x480, encode + decode
#   decode-320 configs/gpu-check-wan21-decode-320.toml 17 frames 320x320, decode only, under 10 s
#   decode-81  configs/gpu-check-wan21-decode-81.toml  81 frames 832x480, decode only
#   wan22      configs/gpu-check-wan22.toml            Wan 2.2, 21 frames 1280x704, encode + decode
#   levers     configs/gpu-check-levers.toml           21 frames 832x480 decode, layout x conv3d (issue 40)
#   oom        configs/gpu-check-oom.toml              a size that does not fit: `oom`, then the next case runs
#   profile    `run --profile --export-trace`: 5 frames 320x320 (64x64 with --smoke), fp32 and bf16,
#              one profiled pass per pass: every ok case has a per-layer profile whose rows sum
#              to the pass, and on a GPU the Python engines' convolutions name device kernels
# and after the matrices: decode times must grow with frames x pixels.
#
# Options:
#   --device DEV       default cuda:0
#   --engines LIST     default candle,torch,diffusers when the binary was built with
#                      `--features cuda`, else torch,diffusers (candle then runs on the CPU only)
#   --python PY        interpreter of the torch and diffusers engines (default $WAN_VAE_BENCH_PYTHON, python3)
#   --comfyui DIR      also the comfyui engine, with the ComfyUI in DIR (its matrices only:
#                      ComfyUI builds the real widths, not the tiny golden fixtures; its fp32
#                      is checked against candle in each report's cross_engine)
#   --weights21 REF    Wan 2.1 weights (default: with --comfyui DIR the Wan VAE in DIR/models/vae,
#                      found as `run` finds it, else synthetic: the real layout, random values);
#   --weights22 REF    e.g. a path to wan_2.1_vae.safetensors / Wan2.2_VAE.pth, or wan2.1 / wan2.2 (hub cache)
#   --fixtures DIR     golden cases (default tests/fixtures beside this script's folder)
#   --configs LIST     run these matrix files instead of the six gpu-check-*.toml (step name: file stem)
#   --steps LIST       the steps above to run (default all)
#   --out DIR          where reports and logs go (default results/gpu-check-<UTC time>)
#   --quick            --runs 1 --cudnn on --cudnn-benchmark off (8 cases per matrix instead of 32)
#   --smoke            --device cpu, 5 frames of 64x64 untiled, no warmup, one run; no oom step
#   --list             print each step's commands and the cases each `run` plans (run --list);
#                      run nothing, write nothing but OUT/ (for scripts/gpu-lent.sh --plan)
#   -- ARGS            passed to every `wan-vae-bench run`
#
# The binary: $WAN_VAE_BENCH, else ./wan-vae-bench beside scripts/ (a copied bundle), else
# target/release/wan-vae-bench, else wan-vae-bench on PATH. Needs python3 (standard library).
# Prints one line per check: PASS, FAIL, UNSUPPORTED (this build or machine cannot run it,
# with the reason), SKIP or INFO; then a summary. Exit 0 when nothing FAILed, 1 otherwise,
# 2 on a usage error.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "gpu-check: $*" >&2; exit 2; }

device=cuda:0 engines="" python="" comfyui="" w21="" w22="" fixtures="$root/tests/fixtures"
configs="" steps="" out="" quick=0 smoke=0 device_given=0 list=0
extra=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --device) device=${2:?}; device_given=1; shift 2 ;;
        --engines) engines=${2:?}; shift 2 ;;
        --python) python=${2:?}; shift 2 ;;
        --comfyui) comfyui=${2:?}; shift 2 ;;
        --weights21) w21=${2:?}; shift 2 ;;
        --weights22) w22=${2:?}; shift 2 ;;
        --fixtures) fixtures=${2:?}; shift 2 ;;
        --configs) configs=${2:?}; shift 2 ;;
        --steps) steps=${2:?}; shift 2 ;;
        --out) out=${2:?}; shift 2 ;;
        --quick) quick=1; shift ;;
        --smoke) smoke=1; shift ;;
        --list) list=1; shift ;;
        -h|--help) usage ;;
        --) shift; extra=("$@"); break ;;
        *) echo "gpu-check: unknown argument: $1" >&2; usage ;;
    esac
done
if [[ $smoke == 1 ]]; then
    [[ $device_given == 1 && $device != cpu ]] && die "--smoke runs on the CPU; drop --device $device"
    device=cpu
fi
command -v python3 >/dev/null || die "python3 is needed to read the reports"
[[ -z $comfyui || -f $comfyui/comfy/sd.py ]] || die "--comfyui $comfyui: not a ComfyUI folder (no comfy/sd.py)"

bin=${WAN_VAE_BENCH:-}
if [[ -z $bin ]]; then
    for b in "$root/wan-vae-bench" "$root/target/release/wan-vae-bench"; do
        [[ -x $b ]] && { bin=$b; break; }
    done
    [[ -z $bin ]] && bin=$(command -v wan-vae-bench || true)
fi
[[ -n $bin && -x $bin ]] || die "no wan-vae-bench binary: set WAN_VAE_BENCH, or build it (cargo build --release)"

# A `--features cuda` build links libcuda, libcublas, libcudart, libcurand: look for the
# missing ones among the CUDA libraries of torch's pip wheels (site-packages/nvidia/*/lib)
# and /usr/local/cuda/lib64 (docs/gpu.md, "candle's CUDA build").
missing_libs() { ldd "$bin" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' '; }
if [[ -n $(missing_libs) ]]; then
    py=${python:-${WAN_VAE_BENCH_PYTHON:-python3}}
    dirs=$("$py" -c 'import glob, os, nvidia
print(":".join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "*", "lib", "lib*.so*"))})))' \
        2>/dev/null || true)
    [[ -d /usr/local/cuda/lib64 ]] && dirs="${dirs:+$dirs:}/usr/local/cuda/lib64"
    echo "== $bin needs $(missing_libs)- looking in ${dirs:-(nothing found)}" >&2
    export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    [[ -z $(missing_libs) ]] || die "$bin cannot start: $(missing_libs)not found; add their folder to LD_LIBRARY_PATH or use the build without CUDA"
fi

if [[ -z $configs ]]; then
    configs="$root/configs/gpu-check-wan21.toml,$root/configs/gpu-check-wan21-decode-320.toml,$root/configs/gpu-check-wan21-decode-81.toml,$root/configs/gpu-check-wan22.toml,$root/configs/gpu-check-levers.toml,$root/configs/gpu-check-oom.toml"
fi
IFS=, read -r -a config_list <<< "$configs"
for c in "${config_list[@]}"; do [[ -f $c ]] || die "matrix file not found: $c"; done
step_name() { local n; n=$(basename "$1" .toml); n=${n#gpu-check-}; echo "${n#wan21-}"; }
known_steps=" system validate profile "
for c in "${config_list[@]}"; do known_steps+="$(step_name "$c") "; done
if [[ -n $steps ]]; then
    IFS=, read -r -a wanted <<< "$steps"
    for s in "${wanted[@]}"; do
        [[ $known_steps == *" $s "* ]] || die "unknown step $s; known:$known_steps"
    done
    steps=" ${steps//,/ } "
else
    steps=$known_steps
fi
wants() { [[ $steps == *" $1 "* ]]; }

out=${out:-results/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out" || die "cannot create $out"
checks="$out/checks.txt"
: > "$checks"
report() { python3 "$here/gpu-check-report.py" "$@" | tee -a "$checks"; }
say() { echo "== $*" >&2; }

say "binary $bin, device $device, results in $out"
"$bin" system --json > "$out/system.json" 2> "$out/system.stderr" || true
features=$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1])).get("cargo_features") or []))' \
    "$out/system.json" 2>/dev/null || true)
has_cuda=0
[[ ,$features, == *,cuda,* ]] && has_cuda=1
if [[ -z $engines ]]; then
    if [[ $has_cuda == 1 || $device == cpu ]]; then engines=candle,torch,diffusers; else engines=torch,diffusers; fi
fi
py_args=()
[[ -n $python ]] && py_args=(--python "$python")
[[ -n $comfyui ]] && [[ ,$engines, != *,comfyui,* ]] && engines+=,comfyui

if wants system && [[ $list == 1 ]]; then
    echo "step system: $bin system --json"
elif wants system; then
    say "system"
    report system --device "$device" "$out/system.json"
fi

if wants validate; then
    IFS=, read -r -a engine_list <<< "$engines"
    for engine in "${engine_list[@]}"; do
        if [[ $engine == comfyui ]]; then
            echo "SKIP        validate comfyui: ComfyUI builds only the real widths; its fp32 is checked against candle in the matrices (cross_engine)" | tee -a "$checks"
            continue
        fi
        for model in wan21 wan22; do
            for precision in fp32 bf16; do
                name="$engine-$model-$precision"
                if [[ $list == 1 ]]; then
                    echo "step validate: $bin validate --engine $engine --device $device --precision $precision ($model fixtures)"
                    continue
                fi
                say "validate $name"
                vargs=(validate --engine "$engine" --device "$device" --precision "$precision" --json
                    --weights "$fixtures/${model}_tiny.weights.safetensors"
                    --cases "$fixtures/${model}_tiny.cases.safetensors")
                [[ $engine != candle ]] && vargs+=("${py_args[@]}")
                "$bin" "${vargs[@]}" > "$out/validate-$name.json" 2> "$out/validate-$name.stderr"
                report validate --name "$name $device" --rc $? \
                    --stdout "$out/validate-$name.json" --stderr "$out/validate-$name.stderr"
            done
            # The levers (issue 40): the same arithmetic, so fp32 within the golden tolerance.
            [[ $engine == candle || $list == 1 ]] && continue
            for lever in "--layout channels_last_3d" "--conv3d split"; do
                name="$engine-$model-fp32-${lever##* }"
                say "validate $name"
                # shellcheck disable=SC2086 # the lever is a flag and its value
                "$bin" validate --engine "$engine" --device "$device" --precision fp32 --json $lever "${py_args[@]}" \
                    --weights "$fixtures/${model}_tiny.weights.safetensors" \
                    --cases "$fixtures/${model}_tiny.cases.safetensors" \
                    > "$out/validate-$name.json" 2> "$out/validate-$name.stderr"
                report validate --name "$name $device" --rc $? \
                    --stdout "$out/validate-$name.json" --stderr "$out/validate-$name.stderr"
            done
        done
    done
fi

base=(--device "$device" --engine "$engines" "${py_args[@]}")
[[ -n $comfyui ]] && base+=(--comfyui "$comfyui")
common=("${base[@]}")
[[ $quick == 1 ]] && common+=(--cudnn on --cudnn-benchmark off)
[[ $quick == 1 && $smoke == 0 ]] && common+=(--runs 1) # --smoke sets --runs 1 itself
[[ $smoke == 1 ]] && common+=(--frames 5 --size 64x64 --tile none --warmup 0 --runs 1)

matrix_reports=()
for cfg in "${config_list[@]}"; do
    name=$(step_name "$cfg")
    wants "$name" || continue
    is_oom=0
    [[ $(basename "$cfg") == gpu-check-oom.toml ]] && is_oom=1
    if [[ $is_oom == 1 && $device == cpu ]]; then
        echo "SKIP        oom $name: needs a GPU" | tee -a "$checks"
        continue
    fi
    weights=$w21
    grep -q '^model *= *"wan2.2"' "$cfg" && weights=$w22
    # No --weights21/22: the run's own rule (the --comfyui folder's Wan VAE, else synthetic).
    args=(run --config "$cfg" --output "$out/$name.json" "${common[@]}")
    [[ -n $weights ]] && args+=(--weights "$weights")
    if [[ $is_oom == 1 ]]; then
        # One Python engine is enough to see the allocator fail.
        first=$(tr ',' '\n' <<< "$engines" | grep -v '^candle$' | head -1)
        [[ -n $first ]] || first=candle
        args=(run --config "$cfg" --output "$out/$name.json" --device "$device" --engine "$first" "${py_args[@]}")
    fi
    # Decode-only cases decode a latent that `run` has encoded on the run's device: by candle
    # in a CUDA build, else by the run's first Python engine. With neither, `run` refuses.
    if grep -q '^passes *= *\["decode"\]' "$cfg" && [[ $device != cpu && $has_cuda == 0 ]] &&
        ! tr ',' '\n' <<< "$engines" | grep -qv '^candle$'; then
        echo "UNSUPPORTED $name: decode-only on $device needs a CUDA build of candle or a Python engine" | tee -a "$checks"
        continue
    fi
    if [[ $list == 1 ]]; then
        echo "step $name: $bin ${args[*]} ${extra[*]}"
        "$bin" "${args[@]}" "${extra[@]}" --list 2>&1
        continue
    fi
    say "run $name: ${args[*]} ${extra[*]}"
    "$bin" "${args[@]}" "${extra[@]}" 2>&1 | tee "$out/$name.log" >&2
    rc=${PIPESTATUS[0]}
    oom_flag=()
    [[ $is_oom == 1 ]] && oom_flag=(--oom)
    report run --name "$name" --device "$device" --rc "$rc" --log "$out/$name.log" "${oom_flag[@]}" "$out/$name.json"
    # The levers: exact in fp32 against the default case, and their speed against it.
    [[ $name == levers && -f $out/$name.json ]] && report levers --name "$name" "$out/$name.json"
    # The growth check compares default cases across sizes; the levers' matrix is one size.
    [[ $is_oom == 0 && $name != levers ]] && matrix_reports+=("$out/$name.json")
done
if [[ ${#matrix_reports[@]} -gt 1 ]]; then
    report growth "${matrix_reports[@]}"
fi

if wants profile; then
    size=320x320
    [[ $smoke == 1 ]] && size=64x64
    # Its own sizes and runs: --quick's and --smoke's would repeat these flags.
    args=(run --output "$out/profile.json" "${base[@]}" --frames 5 --size "$size" --tile none
        --precision fp32,bf16 --warmup 1 --runs 1 --profile --export-trace "$out/traces")
    [[ -n $w21 ]] && args+=(--weights "$w21")
    if [[ $list == 1 ]]; then
        echo "step profile: $bin ${args[*]} ${extra[*]}"
        "$bin" "${args[@]}" "${extra[@]}" --list 2>&1
        exit 0
    fi
    say "run profile: ${args[*]} ${extra[*]}"
    "$bin" "${args[@]}" "${extra[@]}" 2>&1 | tee "$out/profile.log" >&2
    report profile --name profile --device "$device" --rc "${PIPESTATUS[0]}" --log "$out/profile.log" "$out/profile.json"
fi

[[ $list == 1 ]] && exit 0
count() { grep -c "^$1 " "$checks" || true; }
pass=$(count PASS) fail=$(count FAIL) unsup=$(count UNSUPPORTED) skip=$(count SKIP)
echo "summary: $pass PASS, $fail FAIL, $unsup UNSUPPORTED, $skip SKIP (checks, reports and logs in $out)"
[[ $fail == 0 ]]
