#!/usr/bin/env bash
# Rebuilds the built-in commands: commands/src/NAME.c -> commands/bin/NAME.wasm (committed).
#   bash commands/build.sh          rebuild every .wasm
#   bash commands/build.sh --check  fail if any committed .wasm differs from its source
# scripts/build-c-wasm.sh builds DIR/*.c next to themselves, so the sources (and, for --check,
# the committed outputs) are staged in a temporary directory; common.h is found through -I.
# The stack is 1 MiB (wasm-ld defaults to 64 KiB) so that rm -r / cp -r recurse deep trees.
# Needs: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v clang >/dev/null; then
  echo "clang not found: apt-get install -y clang lld wasi-libc libclang-rt-dev-wasm32" >&2
  exit 1
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$here"/src/*.c "$stage"/
flags=(-O2 -Wall -Wextra -Werror -I "$here/src" -Wl,-z,stack-size=1048576 -Wl,--strip-all)
mode=${1:-}
if [ "$mode" = "--check" ]; then
  cp "$here"/bin/*.wasm "$stage"/
  bash "$here/../scripts/build-c-wasm.sh" "$stage" --check -- "${flags[@]}" \
    || { echo "commands/bin is stale: rebuild it with bash commands/build.sh" >&2; exit 1; }
  exit 0
fi
[ -z "$mode" ] || { echo "usage: bash commands/build.sh [--check]" >&2; exit 2; }
bash "$here/../scripts/build-c-wasm.sh" "$stage" -- "${flags[@]}" >/dev/null
mkdir -p "$here/bin"
cp "$stage"/*.wasm "$here/bin/"
ls -l "$here"/bin/*.wasm
