#!/usr/bin/env bash
# Rebuilds the built-in commands: commands/src/NAME.c -> commands/bin/NAME.wasm (committed), with
# the in-sandbox compiler (scripts/build-c.ts: engine.build, LLVM run as a sandboxed WASI guest;
# needs only `npm ci`). The flags are listed there: -O2 -Wall -Wextra -Werror -I commands/src, and
# a 1 MiB stack (wasm-ld defaults to 64 KiB) so that rm -r / cp -r recurse deep trees.
#   bash commands/build.sh          rebuild every .wasm
#   bash commands/build.sh --check  fail if any committed .wasm differs from what its source builds to
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
exec node --import tsx scripts/build-c.ts ${1:+"$1"} commands
