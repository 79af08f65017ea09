// An in-process kernel shares the host thread: nothing can preempt it, so its walls are fuel
// (and the deadline, checked at fuel refills). A spinner ends FUEL_EXHAUSTED or TIMEOUT at a
// refill and the host thread is free again; a memory.grow bomb hits the space cap.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();
const isCode = (code: string) => (e: unknown) => e instanceof SandboxError && e.code === code;

test('a spinning in-process kernel ends FUEL_EXHAUSTED and the host thread is free again', async () => {
  const k = await engine.kernel(await wat('kernel'), { inProcess: true, entry: 'spin', fuel: 5_000_000 });
  const t0 = performance.now();
  await assert.rejects(k.call(new Uint8Array(1)), isCode('FUEL_EXHAUSTED'));
  assert.ok(performance.now() - t0 < 5000);
  assert.equal(k.lastFuelUsed, 5_000_000);
  // The timer queue runs: the event loop was only held for the call.
  await new Promise((r) => setTimeout(r, 1));
  await k.close();
});

test('a spinning in-process kernel with fuel to spare ends TIMEOUT at a refill past its deadline', async () => {
  const k = await engine.kernel(await wat('kernel'), { inProcess: true, entry: 'spin', profile: 'network', timeoutMs: 100 });
  const t0 = performance.now();
  await assert.rejects(k.call(new Uint8Array(1)), isCode('TIMEOUT'));
  const took = performance.now() - t0;
  assert.ok(took >= 90 && took < 3000, `took ${took} ms`);
  await k.close();
});

for (const inProcess of [true, false]) {
  test(`a memory.grow bomb in a kernel ${inProcess ? 'in process' : 'in a worker'} is MEMORY_LIMIT at the cap`, async () => {
    const k = await engine.kernel(await wat('kernel'), { inProcess, entry: 'grow', memoryBytes: 4 * 1024 * 1024 });
    await assert.rejects(k.call(new Uint8Array(1)), isCode('MEMORY_LIMIT'));
    await k.close();
  });
}
