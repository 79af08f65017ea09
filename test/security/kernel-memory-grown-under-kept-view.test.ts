// Attack: grow the kernel's memory so the host's kept view of it is stale. A worker kernel keeps
// one view of its guest memory between calls (engine/worker/kernel-call.ts) instead of making one
// per call; a kernel that grows its memory detaches the buffer that view was made over. The host
// must then read and write through a view of the memory as it is now: an output placed in the new
// pages comes back byte for byte, and a range past the memory as it is (an input arena in pages
// not grown yet, an output past them) is still GUEST_TRAP — never a read of a detached buffer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();
const isCode = (code: string) => (e: unknown) => e instanceof SandboxError && e.code === code;

test('a worker kernel whose input arena lies in pages it has not grown is refused before it runs, every call', async () => {
  const bytes = await watText(`(module
    (memory (export "memory") 1 8)
    (func (export "grow") (param $len i32) (result i32) (drop (memory.grow (i32.const 3))) (i32.const 0)))`);
  const k = await engine.kernel(bytes, { entry: 'grow', inOff: 70000, outOff: 0, inCap: 4096 });
  for (let i = 0; i < 3; i++) await assert.rejects(k.call(new Uint8Array(16)), isCode('GUEST_TRAP'));
  await k.close();
});

test('a worker kernel grown by its calls reads its output from the new pages, call after call', async () => {
  const bytes = await watText(`(module
    (memory (export "memory") 1 8)
    (func (export "grow_fill") (param $len i32) (result i32)
      (if (i32.lt_u (memory.size) (i32.const 4)) (then (drop (memory.grow (i32.const 1)))))
      (memory.fill (i32.const 200000) (i32.add (i32.const 65) (memory.size)) (local.get $len))
      (local.get $len)))`);
  const k = await engine.kernel(bytes, { entry: 'grow_fill', inOff: 0, outOff: 200000, inCap: 4096 });
  // Calls 1 and 2 leave 2 and 3 pages: the output (page 4) lies past the memory.
  await assert.rejects(k.call(new Uint8Array(64)), isCode('GUEST_TRAP'));
  await assert.rejects(k.call(new Uint8Array(64)), isCode('GUEST_TRAP'));
  for (let i = 0; i < 3; i++) {
    const out = await k.call(new Uint8Array(64));
    assert.deepEqual(out, new Uint8Array(64).fill(65 + 4), `call ${i + 3}: the bytes the guest wrote in its fourth page`);
  }
  await k.close();
});
