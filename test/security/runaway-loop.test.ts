// The time wall: runaways get TIMEOUT at their budget — a metered guest stops itself at its next
// fuel refill, anything else has its thread terminated and replaced — and neighbours never
// notice (DESIGN §3 "time"). fuel-runaway.test.ts covers the fuel side.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS, quietCpuMs } from '../helpers/timing.ts';

const engine = testEngine({ poolSize: 2 });
// Spinners run under `network` (1e10 fuel): compute's 1e9 lasts ~150 ms of a bare loop once V8 has
// optimized it, which would race these deadlines — this file is about the time wall.
const SPIN = { profile: 'network' } as const;


test('an export that loops forever is stopped with TIMEOUT at its budget, and its thread is freed', async () => {
  const r = await engine.run(await wat('spin'), { ...SPIN, invoke: 'run', timeoutMs: 300 });
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(r.durationMs >= 300 && r.durationMs < 300 + LOAD_SLACK_MS, `stopped after ${r.durationMs} ms`);
  assert.deepEqual(r.error?.details, { timeoutMs: 300, elapsedMs: r.durationMs });
  // The runaway no longer burns a core: the whole process is near idle afterwards.
  await new Promise((res) => setTimeout(res, 100));
  const cpu = await quietCpuMs(500);
  assert.ok(cpu < 150, `process used ${cpu} ms of CPU in the quieter of two 500 ms windows after the timeout`);
});

test('a start function that spins forever is stopped with TIMEOUT', async () => {
  const r = await engine.run(await wat('spin-start'), { invoke: 'ok', timeoutMs: 250 });
  assert.equal(r.error?.code, 'TIMEOUT');
});

test('after runaways, the pool serves the next run normally', async () => {
  for (let i = 0; i < 3; i++) {
    const r = await engine.run(await wat('spin'), { ...SPIN, invoke: 'run', timeoutMs: 100 });
    assert.equal(r.error?.code, 'TIMEOUT');
  }
  const ok = await engine.run(await wat('spin'), { invoke: 'ok' });
  assert.equal(ok.result, 42);
  assert.ok(engine.stats().liveWorkers <= engine.config.maxWorkers);
});

test('a healthy instance keeps answering within its normal latency while another spins', async () => {
  const healthy = await engine.start('healthy', await wat('noop'));
  const baseline: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    await healthy.call('incr');
    baseline.push(performance.now() - t);
  }
  // network: 1e10 fuel, so the wall that ends this runaway is time, not work.
  const spinning = engine.run(await wat('spin'), { invoke: 'run', timeoutMs: 1500, profile: 'network' });
  await new Promise((res) => setTimeout(res, 50));
  const during: number[] = [];
  const until = performance.now() + 1000;
  while (performance.now() < until) {
    const t = performance.now();
    const r = await healthy.call('incr');
    assert.equal(r.ok, true);
    during.push(performance.now() - t);
  }
  assert.equal((await spinning).error?.code, 'TIMEOUT');
  const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;
  // Blocked behind the spinner, a call would wait out its 1.5 s budget: a handful of answers, p99 ≥ 1 s.
  assert.ok(during.length > 100, `only ${during.length} calls answered in 1 s while a neighbour spun`);
  assert.ok(p99(during) < Math.max(50, p99(baseline) * 20), `p99 ${p99(during).toFixed(3)} ms during vs ${p99(baseline).toFixed(3)} ms before`);
  await healthy.stop();
});

test('a persistent instance whose call times out is retired: later calls get INSTANCE_DEAD', async () => {
  const inst = await engine.start('runaway', await wat('spin'), { ...SPIN, timeoutMs: 200 });
  assert.equal((await inst.call('ok')).result, 42);
  assert.equal((await inst.call('run')).error?.code, 'TIMEOUT');
  assert.equal(inst.info().state, 'dead');
  assert.equal((await inst.call('ok')).error?.code, 'INSTANCE_DEAD');
  await inst.stop();
});

test('with onTimeout: restart, a timed-out instance comes back with fresh state', async () => {
  const e = testEngine({ poolSize: 1, onTimeout: 'restart' });
  const inst = await e.start('phoenix', await wat('noop'), { timeoutMs: 5000 });
  assert.equal((await inst.call('incr')).result, 1);
  assert.equal((await inst.call('incr')).result, 2);
  const spin = await e.start('phoenix-spin', await wat('spin'), { ...SPIN, timeoutMs: 150 });
  assert.equal((await spin.call('run')).error?.code, 'TIMEOUT');
  assert.equal(spin.info().state, 'running');
  assert.equal((await spin.call('ok')).result, 42);
  await inst.stop();
  await spin.stop();
});

test('a call may lower its instance budget but never raise it', async () => {
  const inst = await engine.start('lower', await wat('spin'), { ...SPIN, timeoutMs: 10_000 });
  const t = performance.now();
  const r = await inst.call('run', [], { timeoutMs: 100 });
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(performance.now() - t < 100 + LOAD_SLACK_MS);
  await inst.stop();
  const inst2 = await engine.start('raise', await wat('spin'), { ...SPIN, timeoutMs: 150 });
  const r2 = await inst2.call('run', [], { timeoutMs: 60_000 });
  assert.equal(r2.error?.code, 'TIMEOUT');
  assert.ok(r2.durationMs < 150 + LOAD_SLACK_MS, `ran ${r2.durationMs} ms`);
  assert.match(r2.warnings.join('\n'), /clamped/);
  await inst2.stop();
});

test('stopping an instance mid-call ends that call with INSTANCE_DEAD, without a hang', async () => {
  const inst = await engine.start('stopme', await wat('log'), { timeoutMs: 5000 });
  const pending = inst.call('log_n', [2_000_000_000]);
  await new Promise((res) => setTimeout(res, 100));
  await inst.stop();
  const r = await pending;
  assert.equal(r.error?.code, 'INSTANCE_DEAD');
});
