#!/usr/bin/env bash
# `npm run test:system`: the checks that need Debian's toolchains, kept out of `npm test` (which
# needs only Node). Each committed .wasm is rebuilt from its C source into a temp dir and compared
# byte for byte; the fuel rewriter is fuzzed differentially on 30 fresh `wasm-opt -ttf` modules;
# the Python lane's tests run again in its bubblewrap tier (`npm test` on a machine without
# bubblewrap covers only the os_process tier).
# Needs: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32 binaryen bubblewrap
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's binaryen, not the npm one that `npm run` puts first on PATH (node_modules/.bin).
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/node_modules/\.bin$' | paste -sd:)
missing=()
command -v clang >/dev/null || missing+=(clang)
command -v wasm-ld >/dev/null || missing+=(lld)
[ -e /usr/lib/wasm32-wasi/libc.a ] || missing+=(wasi-libc)
ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1 || missing+=(libclang-rt-dev-wasm32)
command -v wasm-opt >/dev/null || missing+=(binaryen)
command -v bwrap >/dev/null || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
  echo "npm run test:system needs: apt-get install ${missing[*]}" >&2
  exit 1
fi
bash test/fixtures/c/build.sh --check
bash bench/kernels/build.sh --check
bash commands/build.sh --check
bash bench/io/build.sh --check
node --import tsx scripts/fuzz-fuel.ts 30
MEMBRANE_EXPECT_BWRAP=1 node --import tsx --test --test-concurrency=2 test/lanes/python.test.ts test/security/python-*.test.ts
