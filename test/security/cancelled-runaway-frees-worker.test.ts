// Attack: start a runaway — a metered spinner, uncharged code (fuel off), a guest parked in a
// sleep or in a host function that never answers — and cancel it, again and again. Each cancel
// settles within 50 ms; the thread stops burning a core (the guest stops at its next refill and
// keeps its worker, or the worker is terminated and replaced); no worker leaks; the engine goes
// on serving runs; a persistent instance's cancelled runaway takes its thread down with it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { HostFunctionContext, RunResult } from '../../src/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { hostGuest } from '../helpers/host-functions.ts';
import { controlsGuest, eventually, sleep } from '../helpers/controls-guest.ts';
import { LOAD_SLACK_MS, quietCpuMs } from '../helpers/timing.ts';

const SETTLE_MS = 50 + LOAD_SLACK_MS;
const SPIN = { profile: 'network', timeoutMs: 60_000 } as const;
const reasons: unknown[] = [];
const hostFunctions = {
  'hang:t': {
    never: (_a: unknown, ctx: HostFunctionContext) => {
      ctx.signal.addEventListener('abort', () => reasons.push(ctx.signal.reason));
      return new Promise<null>(() => {});
    },
  },
};


async function cancelAfter(ms: number, start: (signal: AbortSignal) => Promise<RunResult>): Promise<{ r: RunResult; settleMs: number }> {
  const ac = new AbortController();
  const p = start(ac.signal);
  await sleep(ms);
  const t = performance.now();
  ac.abort();
  const r = await p;
  return { r, settleMs: performance.now() - t };
}

async function assertIdle(what: string): Promise<void> {
  await sleep(100);
  const cpu = await quietCpuMs(500);
  assert.ok(cpu < 150, `${what}: the process used ${cpu.toFixed(0)} ms of CPU in the quieter of two 500 ms windows after the cancel`);
}

test('a cancelled metered spinner stops within 50 ms, keeps no core, and its worker serves the next run', async () => {
  const engine = testEngine({ poolSize: 2 });
  const g = await controlsGuest();
  assert.equal((await engine.run(g, { invoke: 'incr' })).result, 1);
  for (let i = 0; i < 10; i++) {
    const { r, settleMs } = await cancelAfter(30, (signal) => engine.run(g, { ...SPIN, invoke: 'spin', signal }));
    assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r));
    assert.ok(settleMs < SETTLE_MS, `settled ${settleMs.toFixed(1)} ms after the abort`);
  }
  await assertIdle('metered');
  assert.equal((await engine.run(g, { invoke: 'incr' })).result, 1);
  // Idle, the pool holds its warm workers plus the one a run just gave back: nothing more.
  assert.ok(await eventually(() => engine.stats().liveWorkers <= 3), JSON.stringify(engine.stats()));
});

test('uncharged code (fuel off) is terminated at the abort and its worker replaced; nothing leaks', async () => {
  // At most two threads: a terminated worker that never exited would hold one of them for good,
  // and the runs below (and the last one) could not get a worker.
  const engine = testEngine({ poolSize: 1, maxWorkers: 2, fuel: false });
  const g = await controlsGuest();
  assert.equal((await engine.run(g, { invoke: 'incr' })).result, 1);
  const replaced = engine.stats().workersReplaced;
  for (let i = 0; i < 5; i++) {
    await engine.run(g, { invoke: 'incr' }); // the replacement worker is up: the cancel meets a running guest
    const { r, settleMs } = await cancelAfter(30, (signal) => engine.run(g, { ...SPIN, invoke: 'spin', signal }));
    assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r));
    assert.ok(settleMs < SETTLE_MS, `settled ${settleMs.toFixed(1)} ms after the abort`);
  }
  assert.equal(engine.stats().workersReplaced, replaced + 5);
  await assertIdle('fuel off');
  assert.ok(await eventually(() => engine.stats().liveWorkers <= 2), JSON.stringify(engine.stats()));
  assert.equal((await engine.run(g, { invoke: 'incr' })).result, 1);
});

test('a guest parked in a sleep or in a host function that never answers is cancelled within 50 ms and frees its worker', async () => {
  const engine = testEngine({ poolSize: 1, maxWorkers: 1, hostFunctions });
  const g = await controlsGuest();
  const hung = await hostGuest('hang:t', 'never', '{}');
  assert.equal((await engine.run(g, { invoke: 'incr' })).result, 1);
  for (let i = 0; i < 3; i++) {
    const slept = await cancelAfter(50, (signal) => engine.run(g, { invoke: 'line_then_sleep', args: [3_600_000], timeoutMs: 60_000, signal }));
    assert.equal(slept.r.error?.code, 'CANCELLED', JSON.stringify(slept.r));
    assert.ok(slept.settleMs < SETTLE_MS, `sleep: settled ${slept.settleMs.toFixed(1)} ms after the abort`);
    const before = reasons.length;
    const blocked = await cancelAfter(50, (signal) => engine.run(hung.bytes, { invoke: 'call', args: [2, 4096], caps: ['hang:t'], timeoutMs: 60_000, signal }));
    assert.equal(blocked.r.error?.code, 'CANCELLED', JSON.stringify(blocked.r));
    assert.ok(blocked.settleMs < SETTLE_MS, `host function: settled ${blocked.settleMs.toFixed(1)} ms after the abort`);
    assert.ok(await eventually(() => reasons.length === before + 1));
    assert.equal((reasons.at(-1) as { code?: string }).code, 'CANCELLED');
  }
  // One worker in all (maxWorkers 1): were it still held, this run would wait and be OVERLOADED.
  const next = await engine.run(g, { invoke: 'incr', timeoutMs: 1_000 + LOAD_SLACK_MS });
  assert.equal(next.result, 1, JSON.stringify(next.error));
  assert.ok(engine.stats().liveWorkers <= 1);
});

test('a persistent instance\'s cancelled runaway takes its thread down (retire), and the engine keeps serving', async () => {
  const engine = testEngine({ poolSize: 1 });
  const g = await controlsGuest();
  const inst = await engine.start('runaway-cancelled', g, SPIN);
  assert.equal((await inst.call('incr')).result, 1);
  const { r, settleMs } = await cancelAfter(50, (signal) => inst.call('spin', [], { signal }));
  assert.equal(r.error?.code, 'CANCELLED');
  assert.ok(settleMs < SETTLE_MS, `settled ${settleMs.toFixed(1)} ms after the abort`);
  assert.equal((await inst.call('incr')).error?.code, 'INSTANCE_DEAD');
  await assertIdle('instance');
  assert.equal((await engine.run(g, { invoke: 'incr' })).result, 1);
  await inst.stop();
  assert.equal(engine.stats().instances, 0);
});
