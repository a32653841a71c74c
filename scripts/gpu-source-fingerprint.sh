#!/usr/bin/env bash
# The fingerprint of what a binary is built from: sha256 over the names and contents of
# Cargo.toml, Cargo.lock, build.rs and every file under src/ (sorted by name), in the folder
# given (default: this clone). scripts/build-cuda.sh records it in .gpu/manifest.json;
# scripts/gpu-lent.sh compares it with the tree it runs in, where git may be absent: a
# binary built from other sources than the tree being measured is refused.
#
#   scripts/gpu-source-fingerprint.sh [ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$root"
{ ls Cargo.toml Cargo.lock build.rs; find src -type f -not -name '*.tmp*' -not -name '*.pyc'; } | LC_ALL=C sort | while IFS= read -r f; do
    printf '%s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f"
done | sha256sum | cut -d' ' -f1
