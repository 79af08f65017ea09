// The host keeps the noun: no host path, environment variable or stack trace reaches a guest
// or an API caller.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cGuest, wat, watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine({ poolSize: 1 });

test('a guest sees no host environment variable', async () => {
  process.env['MEMBRANE_TEST_SECRET'] = 'hunter2';
  process.env['WHO'] = 'host-user';
  const r = await engine.run(cGuest('hello'));
  assert.equal(r.stdout, 'hello from a wasm guest\n');
  delete process.env['MEMBRANE_TEST_SECRET'];
  delete process.env['WHO'];
});

test('argv[0] is the instance id, not a host path', async () => {
  const m = await watText(`(module
    (import "wasi_snapshot_preview1" "args_sizes_get" (func $sizes (param i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "args_get" (func $get (param i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
    (memory (export "memory") 1)
    (func (export "_start")
      (drop (call $sizes (i32.const 0) (i32.const 4)))
      (drop (call $get (i32.const 16) (i32.const 256)))
      (i32.store (i32.const 100) (i32.const 256))
      (i32.store (i32.const 104) (i32.sub (i32.load (i32.const 4)) (i32.const 1)))
      (drop (call $write (i32.const 1) (i32.const 100) (i32.const 1) (i32.const 108)))))`);
  const r = await engine.run(m, { id: 'job-7' });
  assert.equal(r.stdout, 'job-7');
});

test('no error a caller sees carries a stack trace or a host path', async () => {
  const results = await Promise.all([
    engine.run(await wat('unreachable'), { invoke: 'run' }),
    engine.run(await wat('recurse'), { invoke: 'run', args: [0] }),
    engine.run(await wat('kv-import'), { invoke: 'run' }),
    engine.run(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 99])),
    engine.run(await wat('big-initial'), { invoke: 'run' }),
  ]);
  for (const r of results) {
    const text = JSON.stringify(r);
    assert.ok(r.error, text);
    assert.doesNotMatch(text, /\n\s+at |\/work\/|\/home\/|\/root\/|node_modules|\.ts:\d/, text);
  }
});

test('a guest pointer outside its memory is an error value, never a host exception', async () => {
  const m = await watText(`(module
    (import "membrane" "session_info" (func $s (param i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
    (import "wasi_snapshot_preview1" "random_get" (func $r (param i32 i32) (result i32)))
    (memory (export "memory") 1)
    (func (export "run") (result i32 i32 i32)
      (call $s (i32.const 65530) (i32.const 4096))
      (call $w (i32.const 1) (i32.const 65532) (i32.const 4) (i32.const 0))
      (call $r (i32.const -16) (i32.const 32))))`);
  const r = await engine.run(m, { invoke: 'run' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(r.result, [-6, 21, 21]);
});
