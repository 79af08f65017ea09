#!/usr/bin/env bash
# Rebuilds the WASI I/O benchmark guest (bench/wasi-io.ts).
#   bash bench/io/build.sh [--check]
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../../scripts/build-c-wasm.sh" "$here" ${1:+"$1"} -- -O2 -Wl,--strip-all
