#!/usr/bin/env bash
# Gather what scripts/gpu-check.sh needs on a GPU machine that has no Rust and no network
# (docs/gpu.md) into one folder and a .tar.gz beside it:
#
#   scripts/gpu-check-bundle.sh OUT_DIR [--cuda-binary PATH] [--wheels PYTHON_VERSION] [--comfyui-tarball FILE]
#
#   OUT_DIR/wan-vae-bench              the release binary (target/release, built if missing)
#   OUT_DIR/wan-vae-bench-cuda         --cuda-binary: a `--features cuda` build (docs/gpu.md)
#   OUT_DIR/scripts/gpu-check.sh, scripts/gpu-check-report.py
#   OUT_DIR/configs/gpu-check-*.toml
#   OUT_DIR/tests/fixtures/wan2{1,2}_tiny.{weights,cases}.safetensors (the golden cases)
#   OUT_DIR/wheels/                    --wheels 3.12: diffusers, safetensors and their
#                                      dependencies for that Python (pip download, Linux x86-64;
#                                      $PIP names pip, default `python3 -m pip`); with
#                                      --comfyui-tarball also the packages ComfyUI's VAE imports
#   OUT_DIR/comfyui/                   --comfyui-tarball FILE: a ComfyUI .tar.xz (e.g.
#                                      ../shared/comfyui/), unpacked, for gpu-check.sh --comfyui
#
# There: pip install --no-index --find-links wheels diffusers safetensors  (if missing)
#        scripts/gpu-check.sh                      # uses ./wan-vae-bench
#        scripts/gpu-check.sh --comfyui comfyui/*  # the comfyui engine too
#        WAN_VAE_BENCH=./wan-vae-bench-cuda scripts/gpu-check.sh   # candle on the GPU too
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ $# -ge 1 && $1 != -* ]] || usage
dest=$1; shift
cuda="" wheels="" comfy=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --cuda-binary) cuda=${2:?}; shift 2 ;;
        --wheels) wheels=${2:?}; shift 2 ;;
        --comfyui-tarball) comfy=${2:?}; shift 2 ;;
        *) usage ;;
    esac
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -e $dest ]] && { echo "gpu-check-bundle: $dest exists; give a new folder" >&2; exit 2; }
[[ -z $cuda || -x $cuda ]] || { echo "gpu-check-bundle: not an executable: $cuda" >&2; exit 2; }
[[ -z $comfy || -f $comfy ]] || { echo "gpu-check-bundle: no such ComfyUI tarball: $comfy" >&2; exit 2; }

bin="$root/target/release/wan-vae-bench"
[[ -x $bin ]] || (cd "$root" && cargo build --release)
mkdir -p "$dest/scripts" "$dest/configs" "$dest/tests/fixtures"
cp "$bin" "$dest/wan-vae-bench"
[[ -n $cuda ]] && cp "$cuda" "$dest/wan-vae-bench-cuda"
cp "$root/scripts/gpu-check.sh" "$root/scripts/gpu-check-report.py" "$dest/scripts/"
cp "$root"/configs/gpu-check-*.toml "$dest/configs/"
for m in wan21 wan22; do
    cp "$root/tests/fixtures/${m}_tiny.weights.safetensors" "$root/tests/fixtures/${m}_tiny.cases.safetensors" \
        "$dest/tests/fixtures/"
done
if [[ -n $comfy ]]; then
    mkdir -p "$dest/comfyui"
    tar -xJf "$comfy" -C "$dest/comfyui"
fi
comfy_packages=()
# The packages of ComfyUI's requirements.txt that its VAE code imports (as .ci/run installs).
[[ -n $comfy ]] && comfy_packages=(psutil einops transformers tokenizers sentencepiece scipy torchsde pyyaml)
if [[ -n $wheels ]]; then
    ${PIP:-python3 -m pip} download --quiet --dest "$dest/wheels" --only-binary=:all: \
        --python-version "$wheels" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        diffusers safetensors "${comfy_packages[@]}"
fi
tar -czf "$dest.tar.gz" -C "$(dirname "$dest")" "$(basename "$dest")"
du -sh "$dest" "$dest.tar.gz"
