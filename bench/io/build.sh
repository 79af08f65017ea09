#!/usr/bin/env bash
# Rebuilds the WASI I/O benchmark guest (bench/wasi-io.ts) with the in-sandbox compiler
# (scripts/build-c.ts).
#   bash bench/io/build.sh [--check]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
exec node --import tsx scripts/build-c.ts ${1:+"$1"} bench-io
