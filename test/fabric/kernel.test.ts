import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();
const enc = new TextEncoder();
const dec = new TextDecoder();

for (const inProcess of [false, true]) {
  const where = inProcess ? 'in process' : 'in a worker';

  test(`a kernel ${where} maps bytes to bytes through its arena, many calls on one instance`, async () => {
    const k = await engine.kernel(await wat('kernel'), { inProcess });
    assert.equal(k.placement, inProcess ? 'inProcess' : 'worker');
    for (const s of ['hello, world', '', 'MiXeD 123 abc']) {
      assert.equal(dec.decode(await k.call(enc.encode(s))), s.toUpperCase());
    }
    assert.ok(k.lastFuelUsed > 0);
    const big = new Uint8Array(32 * 1024).fill(0x61);
    assert.deepEqual(await k.call(big), new Uint8Array(32 * 1024).fill(0x41));
    await k.close();
    await assert.rejects(k.call(enc.encode('x')), (e: unknown) => e instanceof SandboxError && e.code === 'INSTANCE_DEAD');
  });

  test(`a kernel ${where} keeps its state between calls, and entry picks the export`, async () => {
    const k = await engine.kernel(await wat('kernel'), { inProcess, entry: 'count' });
    const counts: number[] = [];
    for (let i = 0; i < 3; i++) counts.push(new DataView((await k.call(new Uint8Array(0))).buffer).getUint32(0, true));
    assert.deepEqual(counts, [1, 2, 3]);
    await k.close();
    const r = await engine.kernel(await wat('kernel'), { inProcess, entry: 'reverse' });
    assert.equal(dec.decode(await r.call(enc.encode('abc'))), 'cba');
    await r.close();
  });

  test(`a kernel ${where}: input larger than the arena is refused before it runs`, async () => {
    const k = await engine.kernel(await wat('kernel'), { inProcess, entry: 'count' });
    await assert.rejects(k.call(new Uint8Array(32 * 1024 + 1)), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID' && /arena/.test(e.message));
    // Nothing ran: the next call is the first one.
    assert.equal(new DataView((await k.call(new Uint8Array(0))).buffer).getUint32(0, true), 1);
    await k.close();
  });

  test(`a kernel ${where}: fuel per call, a trap is that call's error and the kernel lives on`, async () => {
    const k = await engine.kernel(await wat('kernel'), { inProcess });
    await assert.rejects(k.call(new Uint8Array(4096).fill(0x61), { fuel: 100 }), (e: unknown) => e instanceof SandboxError && e.code === 'FUEL_EXHAUSTED');
    assert.equal(dec.decode(await k.call(enc.encode('ok'))), 'OK');
    await k.close();
    const t = await engine.kernel(await wat('kernel'), { inProcess, entry: 'trap' });
    await assert.rejects(t.call(enc.encode('x')), (e: unknown) => e instanceof SandboxError && e.code === 'GUEST_TRAP');
    await assert.rejects(t.call(enc.encode('x')), (e: unknown) => e instanceof SandboxError && e.code === 'GUEST_TRAP');
    await t.close();
  });
}

test('a kernel export must be (i32) → i32', async () => {
  await assert.rejects(engine.kernel(await wat('noop'), { entry: 'incr' }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  await assert.rejects(engine.kernel(await wat('kernel'), { entry: 'nope' }), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
});

test('an in-process kernel links nothing but fuel and memory', async () => {
  await assert.rejects(engine.kernel(await wat('log'), { inProcess: true, entry: 'log_n' }), (e: unknown) => e instanceof SandboxError && e.code === 'LINK_UNSATISFIED' && /membrane\.log/.test(e.message));
  // In a worker the same module links like any guest's (log is ambient).
  const k = await engine.kernel(await wat('log'), { entry: 'log_n' });
  await k.close();
});

test('a worker kernel that times out is replaced; the next call runs on a fresh instance', async () => {
  const k = await engine.kernel(await wat('kernel'), { entry: 'spin', timeoutMs: 200 });
  const t0 = performance.now();
  await assert.rejects(k.call(enc.encode('x')), (e: unknown) => e instanceof SandboxError && e.code === 'TIMEOUT');
  assert.ok(performance.now() - t0 < 3000);
  await assert.rejects(k.call(enc.encode('x'), { timeoutMs: 50 }), (e: unknown) => e instanceof SandboxError && e.code === 'TIMEOUT');
  await k.close();
});
