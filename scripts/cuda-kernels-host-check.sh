#!/usr/bin/env bash
# Run the per-element arithmetic of src/model/cuda/kernels.cu on the CPU (no GPU needed, but
# nvcc is: the `--features cuda` build's toolkit, docs/gpu.md) against plain references
# (tests/cuda/kernels_host_check.cu), and check that the kernels compile to PTX for
# compute_80 and assemble for sm_80 and sm_90. Exit 0 when all holds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null || { echo "cuda-kernels-host-check: no nvcc (set NVCC or install the CUDA toolkit)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$nvcc" -std=c++17 -O1 -o "$tmp/check" "$root/tests/cuda/kernels_host_check.cu"
"$tmp/check"
"$nvcc" --ptx -arch=compute_80 -O3 -std=c++17 "$root/src/model/cuda/kernels.cu" -o "$tmp/k.ptx"
for sm in sm_80 sm_90; do
    ptxas -arch=$sm "$tmp/k.ptx" -o "$tmp/k-$sm.cubin"
done
echo "kernels PTX: $(grep -c '\.entry' "$tmp/k.ptx") entry points; assembles for sm_80 and sm_90"
