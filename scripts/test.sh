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
# Nothing another run uses is removed: each run holds a shared lock (flock) on what it uses
# for as long as it runs (python-KEY.lock, target.lock; the kernel drops a lock when its
# holder ends, however it ends), and a removal takes the exclusive lock without waiting, or
# leaves the folder. A `target` link that leads nowhere (its cache is gone) or into a cache
# this run does not use (another one, or `off`) is replaced, never followed.
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
else
  cache=$(cd "$cache" && pwd)
fi

# Whether the link text $1 leads to the `target` of a cache folder of this script's (one
# with its lock file or its test Pythons), whether or not it is this run's cache.
cache_link() {
  local dir
  [ "$(basename -- "$1")" = target ] || return 1
  dir=$(dirname -- "$1")
  [ -e "$dir/target.lock" ] || compgen -G "$dir/python-*" >/dev/null
}

# The build: the cache's target/ where the clone has none (a fresh clone), bounded in size.
# A `target` link left by an earlier run is replaced when it leads nowhere (cargo could not
# build through it: exit 101) or into a cache this run does not use; a link of the user's
# own to a folder of theirs is kept, and built in.
if [ -z "${CARGO_TARGET_DIR:-}" ] && [ -L target ]; then
  to=$(readlink target)
  if [ -n "$cache" ] && [ "$to" = "$cache/target" ]; then
    : # this cache's: kept (made again below if the cache lost it)
  elif [ ! -e target ]; then
    echo "scripts/test.sh: target -> $to leads nowhere (its cache is gone): the link is replaced" >&2
    rm -f -- target
  elif cache_link "$to"; then
    echo "scripts/test.sh: target -> $to is a cache this run does not use: the link is replaced (that build is left as it is)" >&2
    rm -f -- target
  fi
fi
if [ -n "$cache" ] && [ -z "${CARGO_TARGET_DIR:-}" ] && { { [ ! -e target ] && [ ! -L target ]; } || [ "$(readlink target 2>/dev/null)" = "$cache/target" ]; }; then
  # A shared lock on the cache's build for the whole run (fd 6, held by this script, cargo
  # and the tests): another run's size check never removes the build this one is using.
  exec 6>>"$cache/target.lock"
  max_gb=${WAN_VAE_BENCH_CACHE_MAX_GB:-8}
  max_kib=$(( max_gb * 1024 * 1024 ))
  if [ -d "$cache/target" ] && [ "$(du -sk "$cache/target" | cut -f1)" -gt "$max_kib" ]; then
    if flock -n -x 6; then
      echo "scripts/test.sh: $cache/target is over $max_gb GiB: removed (a cold build follows)" >&2
      rm -rf "$cache/target"
    else
      echo "scripts/test.sh: $cache/target is over $max_gb GiB, but it is in use by another run: not removed" >&2
    fi
  fi
  flock -s 6
  mkdir -p "$cache/target"
  if [ ! -L target ]; then
    ln -s "$cache/target" target
    echo "scripts/test.sh: building in $cache/target (target -> it)" >&2
  fi
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

# Make the test Python in folder $1 (under its lock, so that two runs never fill one folder),
# or reuse a complete one (its `complete` marker is written last); prune all but the two
# newest. The lock is on fd 7, opened by the caller, who holds it shared for the whole run
# once this returns (a pruning never removes a folder a run holds).
make_python() {
  command -v python3 >/dev/null 2>&1 || {
    echo "scripts/test.sh: python3 not found: install Python 3.10 or newer with its venv module" >&2
    return 1
  }
  local dir=$1 imports=() p
  for p in "${PACKAGES[@]}"; do imports+=("${p##*:}"); done
  ready() { [ -f "$dir/complete" ] && "$dir/bin/python" -c "import $(IFS=,; echo "${imports[*]}")" >/dev/null 2>&1; }
  flock -s 7
  if ! ready; then
    # Exclusive to make it: waits for the runs using it (none: it is not complete) and for
    # another run making it, after which it is checked again.
    flock -x 7
    if ! ready; then
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
    flock -s 7
  fi
  touch "$dir"
  if [ -n "$cache" ]; then
    # Each older one only when no run holds it (an exclusive lock taken without waiting); its
    # lock file stays (removing it would let two runs lock different files of one name).
    # shellcheck disable=SC2012 # our own folder names, no newlines
    ls -1dt "$cache"/python-*/ 2>/dev/null | tail -n +3 | while read -r old; do
      old=${old%/}
      if (exec 8>>"$old.lock"; flock -n -x 8 && rm -rf "$old"); then
        echo "scripts/test.sh: removed the older test Python $old" >&2
      else
        echo "scripts/test.sh: kept the older test Python $old: another run is using it" >&2
      fi
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
  pydir=$(python_dir)
  WAN_VAE_BENCH_TEST_PYTHON=$pydir/bin/python
  export WAN_VAE_BENCH_TEST_PYTHON
  # The folder's lock, held by this script for the whole run (make_python takes it).
  exec 7>>"$pydir.lock"
  set -m
  make_python "$pydir" &
  python_pid=$!
  set +m
elif [ -n "$cache" ]; then
  # A test Python of the cache's, named by the caller: held too, so no pruning removes it.
  p=$(cd "$(dirname -- "$WAN_VAE_BENCH_TEST_PYTHON")/.." 2>/dev/null && pwd -P) || p=
  case "$p" in
    "$(cd "$cache" && pwd -P)"/python-*)
      exec 7>>"$p.lock"
      flock -s 7
      touch "$p";;
  esac
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
