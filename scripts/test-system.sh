#!/usr/bin/env bash
# `npm run test:system`: the checks that need Debian's toolchains, kept out of `npm test` (which
# needs only Node): the fuel rewriter is fuzzed differentially on 30 fresh `wasm-opt -ttf`
# modules. The committed .wasm are checked against
# their C sources by `npm run check:c` (scripts/build-c.ts, the in-sandbox compiler), not here.
# The os_process tier inside bubblewrap (test/fabric/os-process-bwrap.system.ts: namespaces, no
# shared network, empty environment; `npm test` covers the permission-model path without it).
# Needs: apt-get install binaryen bubblewrap
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's binaryen, not the npm one that `npm run` puts first on PATH (node_modules/.bin).
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/node_modules/\.bin$' | paste -sd:)
missing=()
command -v wasm-opt >/dev/null || missing+=(binaryen)
command -v bwrap >/dev/null || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
  echo "npm run test:system needs: apt-get install ${missing[*]}" >&2
  exit 1
fi
# The fuzz leaves nothing in the temp dir but a failing module it names (kept on purpose); the
# bwrap tests run under a TMPDIR of their own, removed at the end whatever the outcome
# (scripts/with-tmpdir.mjs).
node --import tsx scripts/fuzz-fuel.ts 30
node scripts/with-tmpdir.mjs node --import tsx --test test/fabric/os-process-bwrap.system.ts
