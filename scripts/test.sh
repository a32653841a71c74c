#!/usr/bin/env bash
# The README's test command (and CI's, through .ci/run): makes the Python the engine tests
# use when it is absent or lacks a package, runs `cargo test --release` (arguments are passed
# on), and closes with a count of the tests that skipped because something they read from
# outside the repository was absent (each says why in a SKIPPED line; under CI=true such a
# test fails instead).
#
# The test Python is WAN_VAE_BENCH_TEST_PYTHON when set (used as it is), else
# .venv-torch/bin/python (outside git): created with `python3 -m venv` and filled from PyPI
# on the first run, reused after. The first run downloads about 3.1 GB (PyPI's torch wheel
# brings its CUDA libraries) and installs about 5.9 GB (`du -sh .venv-torch`, 2026-11-26).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo not found: install a Rust toolchain (rustup) first" >&2
  exit 1
fi
cargo --version

# The one list of the test Python's packages, as `pip-name[:import-name]`: torch, diffusers
# and safetensors for the torch and diffusers engines; the rest are what ComfyUI's VAE code
# (comfy.sd, imported from the ComfyUI test tarball) needs from its requirements.txt.
PACKAGES=(torch diffusers safetensors psutil einops transformers tokenizers sentencepiece
          scipy torchsde torchvision pyyaml:yaml asv:asv.step_detect)

# Make (or top up) .venv-torch. It runs beside the build below: pip mostly downloads and
# unpacks, cargo compiles, so the first run costs the longer of the two, not their sum.
make_python() {
  local py=.venv-torch/bin/python
  if [ ! -x "$py" ]; then
    command -v python3 >/dev/null 2>&1 || {
      echo "scripts/test.sh: python3 not found: install Python 3.10 or newer with its venv module" >&2
      return 1
    }
    echo "scripts/test.sh: creating .venv-torch (first run: about 3.1 GB from PyPI)" >&2
    python3 -m venv .venv-torch || {
      echo "scripts/test.sh: python3 -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
      rm -rf .venv-torch
      return 1
    }
  fi
  local pips=() imports=() p
  for p in "${PACKAGES[@]}"; do
    pips+=("${p%%:*}")
    imports+=("${p##*:}")
  done
  if ! "$py" -c "import $(IFS=,; echo "${imports[*]}")" >/dev/null 2>&1; then
    echo "scripts/test.sh: installing into .venv-torch: ${pips[*]}" >&2
    "$py" -m pip install --quiet --disable-pip-version-check "${pips[@]}" || return 1
  fi
  "$py" -c "import torch, diffusers; print('test python: torch', torch.__version__, 'diffusers', diffusers.__version__)"
}

skips=$(mktemp "${TMPDIR:-/tmp}/test-skips.XXXXXX")
python_pid=
# pip runs in a process group of its own, so that stopping this script (Ctrl-C, TERM, HUP)
# stops pip and its children too instead of leaving them writing .venv-torch. A build
# that fails still lets pip finish (a pip killed half way can leave a package that pip
# calls installed but that does not import).
cleanup() {
  rm -f "$skips"
  if [ -n "$python_pid" ]; then
    kill -TERM -- "-$python_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
if [ -z "${WAN_VAE_BENCH_TEST_PYTHON:-}" ]; then
  set -m
  make_python &
  python_pid=$!
  set +m
fi
build=0
cargo test --release --no-run "$@" || build=$?
if [ -n "$python_pid" ]; then
  [ "$build" -eq 0 ] || echo "scripts/test.sh: the build failed (above); waiting for pip to finish .venv-torch" >&2
  python=0
  wait "$python_pid" || python=$?
  python_pid=
  if [ "$python" -ne 0 ]; then
    echo "scripts/test.sh: making the test Python .venv-torch failed (exit $python; its error is above)" >&2
    exit 1
  fi
fi
[ "$build" -eq 0 ] || exit "$build"

export WAN_VAE_BENCH_SKIP_LOG=$skips
status=0
cargo test --release "$@" || status=$?
n=$(wc -l <"$skips")
if [ "$n" -eq 0 ]; then
  echo "scripts/test.sh: no test skipped"
else
  echo "scripts/test.sh: $n tests skipped (they pass; set what each line names to run them):"
  sed 's/^SKIPPED /  /' "$skips"
fi
exit "$status"
