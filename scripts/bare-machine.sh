#!/usr/bin/env bash
# Runs a command as if on a fresh machine with only Node: the apt-installed toolchains that
# `.ci/run` adds for the system checks are hidden, everything else is the real machine.
#   scripts/bare-machine.sh npm test
#   scripts/bare-machine.sh bash -c 'command -v clang chromium bwrap wasm-opt wasm-ld'   # prints nothing
#
# How: bubblewrap with the whole root bound read-write (`--dev-bind / /`, same network, same
# /tmp, same user), then
#   - an empty tmpfs over each toolchain directory: /usr/lib/llvm-* (clang, wasm-ld), the WASI
#     sysroot (/usr/lib/wasm32-wasi, /usr/share/wasi-sysroot), /usr/lib/chromium;
#   - each bin directory holding one of these programs rebuilt on a tmpfs from everything else
#     in it (links recreated, files bound one by one), leaving out clang*, wasm-ld*, lld*,
#     llvm-*, the binaryen tools (wasm-opt, wasm2js, wasm-as, ...), chromium*, chromedriver,
#     bwrap, openssl and the redis-* programs (a file bound over a program would not do: bash's `command -v` still
#     prints it).
# bwrap itself is among the hidden programs, so nothing inside can nest a namespace with it.
# Needs bubblewrap on the host (apt-get install bubblewrap). It hides programs, it does not
# confine them: it is a test harness, not a sandbox.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: scripts/bare-machine.sh CMD [ARGS...]" >&2; exit 2; }
command -v bwrap >/dev/null || { echo "scripts/bare-machine.sh needs bubblewrap: apt-get install bubblewrap" >&2; exit 2; }

hidden() {
  case "$1" in
    clang | clang-* | clang++* | wasm-ld* | lld | lld-* | ld.lld* | ld64.lld* | llvm-*) return 0 ;;
    wasm-opt | wasm-as | wasm-dis | wasm-ctor-eval | wasm-emscripten-finalize | wasm-fuzz-* | wasm-metadce | wasm-reduce | wasm-shell | wasm-split | wasm-merge | wasm2js) return 0 ;;
    chromium | chromium-browser | chromedriver | bwrap | openssl | redis-server | redis-cli | redis-benchmark | redis-check-*) return 0 ;;
  esac
  return 1
}

args=(--dev-bind / /)
shopt -s nullglob dotglob
for dir in /usr/bin /usr/local/bin /usr/sbin /usr/local/sbin /bin /sbin; do
  # /bin is a link to /usr/bin on merged-/usr systems: rebuild each real directory once.
  [ -d "$dir" ] && [ ! -L "$dir" ] || continue
  any=0
  for f in "$dir"/*; do hidden "${f##*/}" && any=1; done
  [ $any -eq 1 ] || continue
  args+=(--tmpfs "$dir")
  for f in "$dir"/*; do
    hidden "${f##*/}" && continue
    if [ -L "$f" ]; then args+=(--symlink "$(readlink "$f")" "$f"); else args+=(--dev-bind "$f" "$f"); fi
  done
  args+=(--remount-ro "$dir")
done
for d in /usr/lib/llvm-* /usr/lib/wasm32-wasi /usr/share/wasi-sysroot /usr/lib/chromium /usr/lib/chromium-browser /usr/lib/binaryen; do
  [ -d "$d" ] && args+=(--tmpfs "$d")
done
exec bwrap "${args[@]}" -- "$@"
