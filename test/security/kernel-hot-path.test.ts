// The kernel lane's hot paths (issue #20): a worker kernel's call answered within the spin
// (kernel-lane.ts → worker-handle.ts pollDone) and an in-process kernel's callSync. The walls of
// the slow paths hold on them: a result frame with garbage in its length word or blob lengths is
// INTERNAL (never a host read past the frame) and the worker is replaced; a spinner with no fuel
// meter is still TIMEOUT at its deadline; callSync keeps fuel, the deadline and the arena cap;
// calls on one handle stay serialized.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { State, type Channel } from '../../src/engine/bridge/channel.ts';
import type { KernelFrame } from '../../src/engine/bridge/frames.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();
const isCode = (code: string) => (e: unknown) => e instanceof SandboxError && e.code === code;
const enc = new TextEncoder();
const dec = new TextDecoder();

interface Posting {
  channel: Channel;
  postKernel(f: KernelFrame): void;
}

/** Make the handle's current worker "answer" the next call with `garbage` written into the channel. */
function hostileAnswer(k: unknown, garbage: (ch: Channel) => void): void {
  const w = (k as { worker: Posting }).worker;
  w.postKernel = () => {
    garbage(w.channel);
    w.channel.set(State.DONE);
  };
}

const frames: Record<string, (ch: Channel) => void> = {
  'a length word past the buffer': (ch) => ch.setFrameLength(0x7fffffff),
  'an output blob longer than its frame': (ch) => {
    ch.data.fill(0, 0, 64);
    ch.data[0] = 2; // FRAME_DONE
    ch.data[1] = 1 | 16; // ok, a kernel's output follows
    ch.view.setUint32(44, 0x7ffffff0, true); // the output's length; the frame is 48 bytes
    ch.setFrameLength(48);
  },
  'a JSON frame that is not JSON': (ch) => {
    ch.data[0] = 0;
    ch.view.setUint32(1, 4, true);
    ch.data.set(enc.encode('{{{{'), 5);
    ch.view.setUint32(9, 0, true);
    ch.setFrameLength(13);
  },
};

for (const [what, garbage] of Object.entries(frames)) {
  test(`a worker kernel whose result frame has ${what} is INTERNAL, the worker is replaced, the next call works`, async () => {
    const k = await engine.kernel(await wat('kernel'), { entry: 'process' });
    assert.equal(dec.decode(await k.call(enc.encode('warm'))), 'WARM'); // the hot path is live
    hostileAnswer(k, garbage);
    await assert.rejects(k.call(enc.encode('x')), isCode('INTERNAL'));
    assert.equal(dec.decode(await k.call(enc.encode('again'))), 'AGAIN');
    await k.close();
  });
}

test('a spinning worker kernel with no fuel meter is TIMEOUT at its deadline on the hot path, and replaced', async () => {
  const unmetered = testEngine({ fuel: false });
  const k = await unmetered.kernel(await wat('kernel'), { entry: 'spin', timeoutMs: 150 });
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await assert.rejects(k.call(enc.encode('x')), isCode('TIMEOUT'));
    const took = performance.now() - t0;
    assert.ok(took >= 140 && took < 5000, `took ${took} ms`);
  }
  await k.close();
});

test('calls on one worker kernel stay serialized on the hot path: a burst sees 1..n in order', async () => {
  const k = await engine.kernel(await wat('kernel'), { entry: 'count' });
  const n = 200;
  const outs = await Promise.all(Array.from({ length: n }, () => k.call(new Uint8Array(1))));
  assert.deepEqual(
    outs.map((o) => new DataView(o.buffer, o.byteOffset).getUint32(0, true)),
    Array.from({ length: n }, (_, i) => i + 1),
  );
  await k.close();
});

test('callSync in process keeps the walls: fuel, the deadline at a refill, the arena cap; a closed handle is dead', async () => {
  const k = await engine.kernel(await wat('kernel'), { inProcess: true, entry: 'spin', fuel: 2_000_000 });
  assert.throws(() => k.callSync(new Uint8Array(1)), isCode('FUEL_EXHAUSTED'));
  assert.equal(k.lastFuelUsed, 2_000_000);
  const t0 = performance.now();
  assert.throws(() => k.callSync(new Uint8Array(1), { fuel: 1e12, timeoutMs: 50 }), (e: unknown) => isCode('TIMEOUT')(e) || isCode('FUEL_EXHAUSTED')(e));
  assert.ok(performance.now() - t0 < 5000);
  assert.throws(() => k.callSync(new Uint8Array(32 * 1024 + 1)), isCode('POLICY_INVALID'));
  assert.throws(() => k.callSync('text' as unknown as Uint8Array), isCode('POLICY_INVALID'));
  await k.close();
  assert.throws(() => k.callSync(new Uint8Array(1)), isCode('INSTANCE_DEAD'));
});

test('callSync answers what call answers in process, and is NOT_CAPABLE on a worker kernel', async () => {
  const bytes = await wat('kernel');
  const k = await engine.kernel(bytes, { inProcess: true, entry: 'process' });
  assert.equal(dec.decode(k.callSync(enc.encode('hello'))), 'HELLO');
  assert.equal(dec.decode(await k.call(enc.encode('world'))), 'WORLD');
  const out = k.callSync(enc.encode('abc'));
  assert.equal(dec.decode(k.callSync(enc.encode('xyz'))), 'XYZ');
  assert.equal(dec.decode(out), 'ABC', 'an output is a copy: the next call does not change it');
  await k.close();
  const w = await engine.kernel(bytes, { entry: 'process' });
  assert.throws(() => w.callSync(enc.encode('x')), isCode('NOT_CAPABLE'));
  await w.close();
});
