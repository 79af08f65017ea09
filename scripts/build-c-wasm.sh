#!/usr/bin/env bash
# Builds every DIR/*.c into DIR/*.wasm with Debian's clang for wasm32-wasi, or with --check
# rebuilds into a temp dir and fails if a committed .wasm differs from its source. A source may add
# flags of its own with a line `// clang-flags: ...` (e.g. -mexec-model=reactor for a library guest).
#   bash scripts/build-c-wasm.sh DIR [--check] -- CLANG_FLAGS...
# Needs: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32
set -euo pipefail
dir=$(cd "$1" && pwd)
shift
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
[ "${1:-}" = "--" ] && shift
if ! command -v clang >/dev/null; then
  echo "clang not found: apt-get install -y clang lld wasi-libc libclang-rt-dev-wasm32" >&2
  exit 1
fi
out=$dir
[ $check -eq 1 ] && out=$(mktemp -d)
for src in "$dir"/*.c; do
  name=$(basename "$src" .c)
  extra=$(sed -n 's#^// clang-flags: ##p' "$src" | head -1)
  # shellcheck disable=SC2086
  clang --target=wasm32-wasi "$@" $extra -o "$out/$name.wasm" "$src"
done
if [ $check -eq 0 ]; then
  ls -l "$out"/*.wasm
  exit 0
fi
status=0
for src in "$dir"/*.c; do
  name=$(basename "$src" .c)
  if ! cmp -s "$out/$name.wasm" "$dir/$name.wasm"; then
    echo "$dir/$name.wasm is stale: rebuild it with $dir/build.sh" >&2
    status=1
  fi
done
rm -rf "$out"
[ $status -eq 0 ] && echo "$(basename "$dir"): committed .wasm files match their sources"
exit $status
