#!/usr/bin/env bash
# Build candle's CUDA binary (`--features cudnn`) on a machine without a GPU and pack it for a
# lent GPU (docs/gpu.md, "candle's CUDA build"): everything it needs comes from PyPI, into
# folders of this clone (or the ones given), never from fixed paths of one machine.
#
#   scripts/build-cuda.sh [--toolchain DIR] [--libs-from ENV] [--target-dir DIR]
#                         [--features F] [--optimize-gguf-kernels] [--dry-run] [--pack-only]
#
#   --toolchain DIR   where the CUDA 13.0 toolchain wheels go (nvcc, nvvm, crt, runtime
#                     headers, cccl, curand; pip install --target); default target/cuda-toolchain.
#                     Installed once; an existing folder is used as it is.
#   --libs-from ENV   a Python environment (venv or prefix) whose site-packages/nvidia holds
#                     the CUDA 13 libraries of a torch install (cu13/lib: cublas, cublasLt,
#                     nvrtc; cudnn/lib: cuDNN 9): link against them instead of downloading
#                     nvidia-cublas, nvidia-cuda-nvrtc and nvidia-cudnn-cu13 (about 1.3 GB)
#                     into the toolchain folder.
#   --target-dir DIR  CARGO_TARGET_DIR of the CUDA build; default target/cuda.
#   --features F      default cudnn.
#   --optimize-gguf-kernels   compile candle-kernels' static GGUF/MoE kernels (libmoe.a: the
#                     quantized matmuls, which the VAE never calls) optimized, as candle
#                     does. By default they are compiled with nvcc -G (device code not
#                     optimized): about 25 s of CPU each instead of 10 min or more, on a
#                     build machine of 2 shared cores; every kernel the VAE runs (candle's
#                     PTX kernels, this crate's kernels.cu) is compiled as candle compiles it.
#   --dry-run         print the folders and the steps, change nothing.
#   --pack-only       pack the binary already built (no pip, no cargo).
#
# Relative folders are taken relative to the current directory; the defaults are inside this
# clone (target/ is ignored by git). The linker also needs the driver's libcuda.so, which no
# wheel has: a stub with the driver calls cudarc declares is made in the link folder
# (TARGET/cuda-link/lib), as NVIDIA's toolkit ships one in lib/stubs; the real libcuda.so.1 of
# the GPU machine's driver is what the binary loads there.
#
# Writes .gpu/ (git-ignored; what scripts/gpu-lent.sh unpacks on the GPU machine):
#   .gpu/wan-vae-bench-cuda.xz   the stripped binary, xz -9 (python3's lzma unpacks it)
#   .gpu/manifest.json           the commit it was built from (and whether the tree had
#                                uncommitted changes), the sources' fingerprint
#                                (scripts/gpu-source-fingerprint.sh), its sha256, the
#                                libraries it needs, the build's wall time and load.
# The bundle must stay under GPU_BUNDLE_MAX_BYTES (16 MiB): with the tracked tree (about
# 37 MiB) it travels in one call of at most 64 MiB.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

toolchain=$root/target/cuda-toolchain libs_from="" target_dir=$root/target/cuda features=cudnn
dry=0 pack_only=0 optimize_gguf=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --toolchain) toolchain=$(abs "${2:?}"); shift 2 ;;
        --libs-from) libs_from=$(abs "${2:?}"); shift 2 ;;
        --target-dir) target_dir=$(abs "${2:?}"); shift 2 ;;
        --features) features=${2:?}; shift 2 ;;
        --optimize-gguf-kernels) optimize_gguf=1; shift ;;
        --dry-run) dry=1; shift ;;
        --pack-only) pack_only=1; shift ;;
        -h|--help) usage ;;
        *) echo "build-cuda: unknown argument: $1" >&2; usage ;;
    esac
done
max_bytes=${GPU_BUNDLE_MAX_BYTES:-$((16 << 20))}
# CUDA 13.0: the H200 machine's driver (580) runs CUDA 13.0; PTX from a newer nvcc would
# carry a PTX version its JIT does not know.
toolchain_wheels=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88
    nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-curand==10.4.0.35)
lib_wheels=(nvidia-cublas==13.0.2.14 nvidia-cuda-nvrtc==13.0.88 nvidia-cudnn-cu13==9.19.0.56)
tc=$toolchain/nvidia
libs=$tc
if [[ -n $libs_from ]]; then
    libs=$(ls -d "$libs_from"/lib/python3*/site-packages/nvidia 2>/dev/null | head -1 || true)
    [[ -n $libs ]] || { echo "build-cuda: --libs-from $libs_from: no lib/python3*/site-packages/nvidia" >&2; exit 2; }
else
    toolchain_wheels+=("${lib_wheels[@]}")
fi
link=$target_dir/cuda-link/lib
bin=$target_dir/release/wan-vae-bench
echo "build-cuda: clone $root" >&2
echo "build-cuda: toolchain $toolchain (nvcc $tc/cu13/bin/nvcc)" >&2
echo "build-cuda: libraries from $libs (cu13/lib, cudnn/lib)" >&2
echo "build-cuda: link folder $link; target $target_dir; features $features" >&2
echo "build-cuda: bundle $root/.gpu (at most $max_bytes bytes)" >&2
if [[ $dry == 1 ]]; then
    echo "build-cuda: would pip install --target $toolchain: ${toolchain_wheels[*]}" >&2
    echo "build-cuda: would run: nice -n 19 cargo build --release --features $features" >&2
    exit 0
fi

if [[ $pack_only == 0 ]]; then
    if [[ ! -x $tc/cu13/bin/nvcc ]]; then
        echo "build-cuda: installing the toolchain wheels into $toolchain" >&2
        mkdir -p "$toolchain"
        ${PIP:-python3 -m pip} install --quiet --no-deps --only-binary=:all: --target "$toolchain" "${toolchain_wheels[@]}"
        chmod +x "$tc"/cu13/bin/* "$tc"/cu13/nvvm/bin/*
    fi
    for f in "$tc/cu13/bin/nvcc" "$tc/cu13/nvvm/bin/cicc" "$tc/cu13/lib/libcurand.so.10" "$tc/cu13/lib/libcudart.so.13" \
        "$libs/cu13/lib/libcublas.so.13" "$libs/cu13/lib/libcublasLt.so.13" "$libs/cu13/lib/libnvrtc.so.13" \
        "$libs/cudnn/lib/libcudnn.so.9"; do
        [[ -e $f ]] || { echo "build-cuda: $f not found" >&2; exit 2; }
    done
    command -v cc > /dev/null || { echo "build-cuda: no C compiler (cc) for the libcuda stub" >&2; exit 2; }
    # cudarc links by the unversioned names: a folder of links to the versioned libraries.
    mkdir -p "$link"
    ln -sf "$libs/cu13/lib/libcublas.so.13" "$link/libcublas.so"
    ln -sf "$libs/cu13/lib/libcublasLt.so.13" "$link/libcublasLt.so"
    ln -sf "$libs/cu13/lib/libnvrtc.so.13" "$link/libnvrtc.so"
    ln -sf "$libs/cudnn/lib/libcudnn.so.9" "$link/libcudnn.so"
    ln -sf "$tc/cu13/lib/libcudart.so.13" "$link/libcudart.so"
    ln -sf "$tc/cu13/lib/libcurand.so.10" "$link/libcurand.so"
    # The driver's stub: every cu* function cudarc's driver bindings declare.
    cudarc=$(cd "$root" && cargo metadata --format-version 1 --features "$features" |
        python3 -c 'import json, sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "cudarc"))')
    grep -oE '^pub unsafe fn cu[A-Za-z0-9_]+' "$(dirname "$cudarc")/src/driver/sys/mod.rs" | awk '{print $4}' | sort -u | awk '{print "void " $1 "(void) {}"}' \
        > "$link/libcuda-stub.c"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$link/libcuda.so" "$link/libcuda-stub.c"
    export CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-80} CUDARC_CUDA_VERSION=${CUDARC_CUDA_VERSION:-13000}
    nvcc=$tc/cu13/bin/nvcc
    if [[ $optimize_gguf == 0 ]]; then
        # nvcc, with -G for the object files of candle-kernels' static GGUF/MoE sources only
        # (in nvcc's folder: cudaforge finds the toolkit from it).
        nvcc=$tc/cu13/bin/nvcc-wvb
        cat > "$nvcc" <<'WRAP'
#!/usr/bin/env bash
# scripts/build-cuda.sh: nvcc, with -G (device code not optimized) for the object files of
# candle-kernels' static GGUF/MoE kernels, which the VAE never calls; everything else as is.
real=$(dirname "$0")/nvcc
args=("$@")
if [[ " $* " == *" -c "* && " $* " =~ src/(moe|mmq_gguf)/|src/mmvq_gguf ]]; then args+=(-G); fi
exec "$real" "${args[@]}"
WRAP
        chmod +x "$nvcc"
    fi
    export CUDA_TOOLKIT_ROOT_DIR=$(dirname "$link") CARGO_TARGET_DIR=$target_dir NVCC=$nvcc
    export PATH=$tc/cu13/bin:$PATH
    unset CUDA_HOME CUDA_PATH CUDA_ROOT CUDNN_LIB
    cd "$root"
    load_before=$(uptime)
    start=$SECONDS
    nice -n 19 cargo build --release --features "$features"
    build_s=$((SECONDS - start))
    load_after=$(uptime)
    echo "build-cuda: built in $build_s s; load before: $load_before; after: $load_after" >&2
else
    build_s=null load_before="" load_after=""
    [[ -x $bin ]] || { echo "build-cuda: --pack-only: $bin not built" >&2; exit 2; }
fi

cd "$root"
mkdir -p .gpu
rm -f .gpu/wan-vae-bench-cuda .gpu/wan-vae-bench-cuda.xz .gpu/*.gz
strip -o .gpu/wan-vae-bench-cuda "$bin"
sha=$(sha256sum .gpu/wan-vae-bench-cuda | cut -d' ' -f1)
stripped=$(stat -c %s .gpu/wan-vae-bench-cuda)
needs=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
xz -9 -T1 -f .gpu/wan-vae-bench-cuda
# The commit the binary says it was built from (build.rs embeds `git rev-parse HEAD`): the
# one of the last 500 commits whose hash is in it; else HEAD now.
commit=$(strings -n 40 "$bin" | grep -oE '[0-9a-f]{40}' | sort -u |
    grep -xF -f - <(git log --format=%H -n 500 2>/dev/null) | head -1)
[[ -n $commit ]] || commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
fingerprint=$("$root/scripts/gpu-source-fingerprint.sh" "$root")
if [[ $commit != "$(git rev-parse HEAD 2>/dev/null)" ]]; then
    echo "build-cuda: the binary is of $commit, not HEAD $(git rev-parse HEAD 2>/dev/null): rebuild to measure HEAD" >&2
    # These sources are HEAD's, not the binary's: gpu-lent.sh must refuse it.
    fingerprint="unknown: the binary is of $commit, the tree at $(git rev-parse HEAD 2>/dev/null)"
fi
dirty=false
[[ -n $(git status --porcelain --untracked-files=no -- src build.rs Cargo.toml Cargo.lock 2>/dev/null) ]] && dirty=true
BUILD_S=$build_s LOAD_BEFORE=$load_before LOAD_AFTER=$load_after COMMIT=$commit DIRTY=$dirty SHA=$sha \
    STRIPPED=$stripped BYTES=$(stat -c %s "$bin") PACKED=$(stat -c %s .gpu/wan-vae-bench-cuda.xz) NEEDS=$needs \
    FEATURES=$features OPT_GGUF=$optimize_gguf FINGERPRINT=$fingerprint CAP=${CUDA_COMPUTE_CAP:-80} \
    python3 - > .gpu/manifest.json <<'EOF'
import json, os, time
e = os.environ
print(json.dumps({
    "commit": e["COMMIT"],
    "uncommitted_source_changes": e["DIRTY"] == "true",
    "source_fingerprint": e["FINGERPRINT"],
    "features": e["FEATURES"].split(","),
    "cuda_compute_cap": e["CAP"],
    "binary_sha256": e["SHA"],
    "binary_bytes": int(e["BYTES"]),
    "stripped_bytes": int(e["STRIPPED"]),
    "packed_bytes": int(e["PACKED"]),
    "needs": e["NEEDS"].split(),
    "gguf_kernels": "optimized" if e["OPT_GGUF"] == "1" else "nvcc -G (not optimized; the VAE never calls them)",
    "build_s": None if e["BUILD_S"] == "null" else int(e["BUILD_S"]),
    "load_before": e["LOAD_BEFORE"].strip() or None,
    "load_after": e["LOAD_AFTER"].strip() or None,
    "packed_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
}, indent=2))
EOF
total=$(du -cb .gpu/* | tail -1 | cut -f1)
ls -l .gpu >&2
echo "build-cuda: .gpu holds $total bytes (limit $max_bytes); commit $commit$([[ $dirty == true ]] && echo ' with uncommitted source changes')" >&2
((total <= max_bytes)) || { echo "build-cuda: .gpu is over its limit: with the tree it would not travel" >&2; exit 1; }
