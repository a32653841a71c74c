#!/usr/bin/env bash
# The README's test command (and CI's, through .ci/run): makes the test Python when it is
# absent, runs `cargo test --release` (arguments are passed on), and closes with a count of
# the tests that skipped because something they read from outside the repository was absent
# (each says why in a SKIPPED line; under CI=true such a test fails instead).
#
# What a second run on the same machine reuses, as CI systems cache (docs/ci.md, "The test
# command and its cache"): a cache folder outside the clone, WAN_VAE_BENCH_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/wan-vae-bench; `off` for none), holding
#   python-KEY/  the test Python: a venv filled from scripts/test-python.lock (every package
#                pinned), KEY the hash of that file and of python3's version, so a change of
#                either makes a new one; the two newest are kept;
#   target/      the build, when the clone has no target/ of its own (the clone's target is
#                then a link to it); removed before a build once it is over
#                WAN_VAE_BENCH_CACHE_MAX_GB (default 8) GiB.
# Nothing depends on the cache: a new machine (or `off`) makes both, in the clone, and passes.
# The test Python is WAN_VAE_BENCH_TEST_PYTHON when set (used as it is). Its first making
# downloads about 3.1 GB (PyPI's torch wheel brings its CUDA libraries) and installs about
# 5.9 GB; pip's own cache keeps the wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo not found: install a Rust toolchain (rustup) first" >&2
  exit 1
fi
cargo --version
started=$(date +%s)

# The modules the tests import from the test Python (a made Python that lacks one is made
# again): torch, diffusers and safetensors for the torch and diffusers engines, asv for
# history's agreement tests, the rest what ComfyUI's VAE code (comfy.sd, imported from the
# ComfyUI test tarball) needs from its requirements.txt. The versions are the lock file's.
PACKAGES=(torch diffusers safetensors psutil einops transformers tokenizers sentencepiece
          scipy torchsde torchvision pyyaml:yaml asv:asv.step_detect)
LOCK=scripts/test-python.lock

cache=${WAN_VAE_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wan-vae-bench}
if [ "$cache" = off ] || ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
  [ "$cache" = off ] || echo "scripts/test.sh: cache folder $cache is not writable: building without it" >&2
  cache=
fi

# The build: the cache's target/ where the clone has none (a fresh clone), bounded in size.
if [ -n "$cache" ] && [ -z "${CARGO_TARGET_DIR:-}" ] && [ ! -e target ] && [ ! -L target ]; then
  max_kib=$(( ${WAN_VAE_BENCH_CACHE_MAX_GB:-8} * 1024 * 1024 ))
  if [ -d "$cache/target" ] && [ "$(du -sk "$cache/target" | cut -f1)" -gt "$max_kib" ]; then
    echo "scripts/test.sh: $cache/target is over ${WAN_VAE_BENCH_CACHE_MAX_GB:-8} GiB: removed (a cold build follows)" >&2
    rm -rf "$cache/target"
  fi
  mkdir -p "$cache/target"
  ln -s "$cache/target" target
  echo "scripts/test.sh: building in $cache/target (target -> it)" >&2
fi

# The test Python: its folder, keyed by the lock file and python3's version.
python_dir() {
  local key
  key=$( (cat "$LOCK"; python3 -c 'import sys; print(sys.version)' 2>/dev/null || echo no-python3) | sha256sum | cut -c1-16)
  if [ -n "$cache" ]; then
    echo "$cache/python-$key"
  else
    echo .venv-torch
  fi
}

# Make the test Python (under a lock, so that two runs never fill one folder), or reuse a
# complete one (its `complete` marker is written last); prune all but the two newest.
make_python() {
  command -v python3 >/dev/null 2>&1 || {
    echo "scripts/test.sh: python3 not found: install Python 3.10 or newer with its venv module" >&2
    return 1
  }
  local dir imports=() p
  dir=$(python_dir)
  for p in "${PACKAGES[@]}"; do imports+=("${p##*:}"); done
  exec 9>"$dir.lock"
  flock 9
  if [ ! -f "$dir/complete" ] || ! "$dir/bin/python" -c "import $(IFS=,; echo "${imports[*]}")" >/dev/null 2>&1; then
    rm -rf "$dir"
    echo "scripts/test.sh: making the test Python $dir from $LOCK (first run: about 3.1 GB from PyPI)" >&2
    python3 -m venv "$dir" || {
      echo "scripts/test.sh: python3 -m venv failed (on Debian/Ubuntu: apt-get install python3-venv)" >&2
      rm -rf "$dir"
      return 1
    }
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$LOCK" || return 1
    "$dir/bin/python" -c "import $(IFS=,; echo "${imports[*]}")" || return 1
    touch "$dir/complete"
  fi
  touch "$dir"
  flock -u 9
  if [ -n "$cache" ]; then
    # shellcheck disable=SC2012 # our own folder names, no newlines
    ls -1dt "$cache"/python-*/ 2>/dev/null | tail -n +3 | while read -r old; do
      old=${old%/}
      (exec 8>"$old.lock"; flock -n 8 && rm -rf "$old" "$old.lock") || true
    done
  fi
  "$dir/bin/python" -c "import torch, diffusers; print('test python: torch', torch.__version__, 'diffusers', diffusers.__version__)"
}

skips=$(mktemp "${TMPDIR:-/tmp}/test-skips.XXXXXX")
python_pid=
# pip runs in a process group of its own, so that stopping this script (Ctrl-C, TERM, HUP)
# stops pip and its children too instead of leaving them writing the test Python. A build
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
  WAN_VAE_BENCH_TEST_PYTHON=$(python_dir)/bin/python
  export WAN_VAE_BENCH_TEST_PYTHON
  set -m
  make_python &
  python_pid=$!
  set +m
fi
build=0
cargo test --release --no-run "$@" || build=$?
if [ -n "$python_pid" ]; then
  [ "$build" -eq 0 ] || echo "scripts/test.sh: the build failed (above); waiting for pip to finish the test Python" >&2
  python=0
  wait "$python_pid" || python=$?
  python_pid=
  if [ "$python" -ne 0 ]; then
    echo "scripts/test.sh: making the test Python failed (exit $python; its error is above)" >&2
    exit 1
  fi
fi
[ "$build" -eq 0 ] || exit "$build"
built=$(date +%s)

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
now=$(date +%s)
echo "scripts/test.sh: build and test Python $((built - started)) s, tests $((now - built)) s (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
exit "$status"
