#!/usr/bin/env bash
# Rebuilds the benchmark kernels (bench/fuel-overhead.ts, bench/rewriter-speed.ts) with Debian's
# clang for wasm32. Each kernel is freestanding (-nostdlib, no imports) and exports `run(n)`.
#   bash bench/kernels/build.sh          rebuild every .wasm
#   bash bench/kernels/build.sh --check  rebuild into a temp dir and fail if any differs
# Needs: apt-get install clang lld
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v clang >/dev/null; then
  echo "clang not found: apt-get install -y clang lld" >&2
  exit 1
fi
out=$here
if [ "${1:-}" = "--check" ]; then out=$(mktemp -d); fi
for src in "$here"/*.c; do
  name=$(basename "$src" .c)
  clang --target=wasm32-wasi -O2 -nostdlib -Wl,--no-entry -Wl,--strip-all -o "$out/$name.wasm" "$src"
done
if [ "${1:-}" = "--check" ]; then
  status=0
  for src in "$here"/*.c; do
    name=$(basename "$src" .c)
    if ! cmp -s "$out/$name.wasm" "$here/$name.wasm"; then
      echo "bench/kernels/$name.wasm is stale: run bash bench/kernels/build.sh" >&2
      status=1
    fi
  done
  rm -rf "$out"
  [ $status -eq 0 ] && echo "benchmark kernels match their sources"
  exit $status
fi
ls -l "$out"/*.wasm
