#!/usr/bin/env bash
# Rebuilds the benchmark kernels (bench/fuel-overhead.ts, bench/rewriter-speed.ts) with the
# in-sandbox compiler (scripts/build-c.ts). Each kernel is freestanding (-nostdlib, no imports)
# and exports `run(n)`.
#   bash bench/kernels/build.sh          rebuild every .wasm
#   bash bench/kernels/build.sh --check  fail if any committed .wasm differs from what its source builds to
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
exec node --import tsx scripts/build-c.ts ${1:+"$1"} bench-kernels
