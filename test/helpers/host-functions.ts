/**
 * Test helper for embedder host functions (DESIGN §9): a core guest that calls one host function
 * with the JSON byte ABI of docs/abi.md, built from WAT at test time.
 *
 * `hostGuest(cap, fn)` exports `call(args_len, out_cap) → n`: the argument is the JSON the test
 * wrote at offset 0 (`withArgs`), the answer lands at 65536 and, when it fits, is written to
 * stdout — so a run's `result` is the import's return value and its `stdout` the answer.
 */

import { watText } from './wat.ts';

export const ARGS_AT = 0;
export const OUT_AT = 65536;

/** The guest's WAT text: `args` is stored as a data segment at offset 0. */
export function hostGuestWat(cap: string, fn: string, args: string): string {
  const bytes = Buffer.from(args, 'utf8');
  const data = [...bytes].map((b) => `\\${b.toString(16).padStart(2, '0')}`).join('');
  const pages = Math.max(2, Math.ceil((bytes.length + 1) / 65536) + 2);
  return `(module
  (import "${cap}" "${fn}" (func $host (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") ${pages})
  (data (i32.const ${ARGS_AT}) "${data}")
  (func (export "call") (param $len i32) (param $cap i32) (result i32)
    (local $n i32)
    (local.set $n (call $host (i32.const ${ARGS_AT}) (local.get $len) (i32.const ${OUT_AT}) (local.get $cap)))
    (if (i32.ge_s (local.get $n) (i32.const 0))
      (then (if (i32.le_u (local.get $n) (local.get $cap))
        (then
          (i32.store (i32.const 65520) (i32.const ${OUT_AT}))
          (i32.store (i32.const 65524) (local.get $n))
          (drop (call $fd_write (i32.const 1) (i32.const 65520) (i32.const 1) (i32.const 65528)))))))
    (local.get $n))
  ;; Two calls with the same request: a first with a 1-byte buffer (the size comes back), then
  ;; one with out_cap — the retry rule of docs/abi.md.
  (func (export "retry") (param $len i32) (param $cap i32) (result i32)
    (local $n i32)
    (local.set $n (call $host (i32.const ${ARGS_AT}) (local.get $len) (i32.const ${OUT_AT}) (i32.const 1)))
    (if (i32.lt_s (local.get $n) (i32.const 2)) (then (return (local.get $n))))
    (call 2 (local.get $len) (local.get $cap))))`;
}

export async function hostGuest(cap: string, fn: string, args = ''): Promise<{ bytes: Uint8Array; len: number }> {
  return { bytes: await watText(hostGuestWat(cap, fn, args), `${cap}-${fn}.wat`), len: Buffer.byteLength(args) };
}
