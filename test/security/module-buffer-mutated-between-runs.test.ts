// A caller may change its module buffer between runs (or hand the engine a view of a buffer it
// changes elsewhere). The module cache remembers a buffer's hash only with a private copy of the
// bytes that were hashed (src/engine/module-cache.ts): a run always runs what the buffer holds now.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const SAY = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "hi!\\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 4))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))))`;

/** Where the data segment's text sits in the binary. */
function textAt(bytes: Uint8Array): number {
  const at = Buffer.from(bytes).indexOf('hi!\n');
  assert.ok(at > 0);
  return at;
}

test('a buffer changed in place between runs runs its new content, and its old content again when changed back', async () => {
  const engine = testEngine({ poolSize: 1 });
  const bytes = await watText(SAY);
  const at = textAt(bytes);
  assert.equal((await engine.run(bytes)).stdout, 'hi!\n');
  assert.equal((await engine.run(bytes)).stdout, 'hi!\n');
  bytes[at + 1] = 'o'.charCodeAt(0);
  assert.equal((await engine.run(bytes)).stdout, 'ho!\n');
  bytes[at + 1] = 'i'.charCodeAt(0);
  assert.equal((await engine.run(bytes)).stdout, 'hi!\n');
  // Broken in place: refused, never the module it held before.
  bytes[1] = 0; // "\0asm" → "\0\0sm"
  assert.equal((await engine.run(bytes)).error?.code, 'INVALID_MODULE');
});

test('a view whose underlying memory is changed through another view runs the changed bytes', async () => {
  const engine = testEngine({ poolSize: 1 });
  const wasm = await watText(SAY);
  const backing = new Uint8Array(wasm.length + 16);
  backing.set(wasm, 8);
  const view = backing.subarray(8, 8 + wasm.length);
  assert.equal((await engine.run(view)).stdout, 'hi!\n');
  backing[8 + textAt(wasm)] = 'H'.charCodeAt(0);
  assert.equal((await engine.run(view)).stdout, 'Hi!\n');
});

test('two buffers with the same bytes run the same, and changing one leaves the other alone', async () => {
  const engine = testEngine({ poolSize: 1 });
  const a = await watText(SAY);
  const b = new Uint8Array(a);
  assert.equal((await engine.run(a)).stdout, 'hi!\n');
  assert.equal((await engine.run(b)).stdout, 'hi!\n');
  b[textAt(b)] = 'y'.charCodeAt(0);
  assert.equal((await engine.run(b)).stdout, 'yi!\n');
  assert.equal((await engine.run(a)).stdout, 'hi!\n');
});
