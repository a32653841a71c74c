#!/usr/bin/env bash
# Build candle's CUDA binary (`--features cudnn`) on a machine without a GPU, linked against
# the CUDA 13 and cuDNN 9 libraries of a torch pip install, and pack it for a lent GPU
# (docs/gpu.md, "candle's CUDA build"):
#
#   scripts/build-cuda.sh [VENV] [FEATURES]     # defaults: /work/main/.venv-torch, cudnn
#
# Needs nvcc (Debian 12: nvidia-cuda-toolkit 11.8 from non-free) for candle's and this
# crate's kernels (PTX for compute_80, JIT-compiled by the driver for the GPU at hand), and
# Debian's libcurand.so.10 and driver stub libcuda.so (both come with the toolkit). Builds
# into $CARGO_TARGET_DIR (default /work/target-cuda) under `nice -n 19`, then writes
# .gpu/wan-vae-bench-cuda.gz (stripped, gzipped) and .gpu/wan-vae-bench.gz (the CPU build,
# target/release/wan-vae-bench, when it exists) for scripts/gpu-lent.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${1:-/work/main/.venv-torch}
features=${2:-cudnn}
site=$(ls -d "$venv"/lib/python3*/site-packages | head -1)
nv=$site/nvidia
for f in cu13/lib/libcublas.so.13 cu13/lib/libcublasLt.so.13 cu13/lib/libcudart.so.13 cudnn/lib/libcudnn.so.9; do
    [[ -f $nv/$f ]] || { echo "build-cuda: $nv/$f not found (a torch 2.9+ cu13 install?)" >&2; exit 2; }
done
command -v nvcc >/dev/null || { echo "build-cuda: no nvcc (apt-get install nvidia-cuda-toolkit, docs/gpu.md)" >&2; exit 2; }
# cudarc links by the unversioned names: a folder of links to the versioned libraries.
lib=${CUDA_LINK_DIR:-/tmp/cuda13}/lib
mkdir -p "$lib"
ln -sf "$nv/cu13/lib/libcublas.so.13" "$lib/libcublas.so"
ln -sf "$nv/cu13/lib/libcublasLt.so.13" "$lib/libcublasLt.so"
ln -sf "$nv/cu13/lib/libcudart.so.13" "$lib/libcudart.so"
ln -sf "$nv/cu13/lib/libnvrtc.so.13" "$lib/libnvrtc.so"
ln -sf "$nv/cudnn/lib/libcudnn.so.9" "$lib/libcudnn.so"
ln -sf /usr/lib/x86_64-linux-gnu/libcurand.so.10 "$lib/libcurand.so"
ln -sf /usr/lib/x86_64-linux-gnu/stubs/libcuda.so "$lib/libcuda.so"
export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-80} CUDARC_CUDA_VERSION=${CUDARC_CUDA_VERSION:-13000}
export CUDA_TOOLKIT_ROOT_DIR=$(dirname "$lib") CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-cuda}
cd "$root"
start=$SECONDS
nice -n 19 cargo build --release --features "$features"
bin=$CARGO_TARGET_DIR/release/wan-vae-bench
echo "build-cuda: built in $((SECONDS - start)) s: $(stat -c %s "$bin") bytes" >&2
ldd "$bin" | grep -E 'cuda|cublas|cudnn|curand|nvrtc' >&2 || true
mkdir -p .gpu
strip -o .gpu/wan-vae-bench-cuda "$bin"
gzip -9f .gpu/wan-vae-bench-cuda
[[ -x target/release/wan-vae-bench ]] && { strip -o .gpu/wan-vae-bench target/release/wan-vae-bench; gzip -9f .gpu/wan-vae-bench; }
ls -l .gpu >&2
