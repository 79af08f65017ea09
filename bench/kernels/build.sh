#!/usr/bin/env bash
# Rebuilds the benchmark kernels (bench/fuel-overhead.ts, bench/rewriter-speed.ts) with Debian's
# clang for wasm32. Each kernel is freestanding (-nostdlib, no imports) and exports `run(n)`.
#   bash bench/kernels/build.sh          rebuild every .wasm
#   bash bench/kernels/build.sh --check  fail if any committed .wasm differs from its source
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../../scripts/build-c-wasm.sh" "$here" ${1:+"$1"} -- -O2 -nostdlib -Wl,--no-entry -Wl,--strip-all
