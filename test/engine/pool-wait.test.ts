// Waiting for a guest worker: a busy pool refuses a fresh run with OVERLOADED once the call's own
// timeout has passed (nothing ran, retryable — never INTERNAL); a worker that is still starting
// for the call (a cold pool) is waited for, so a cold start with a small budget still runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createEngine } from '../../src/index.ts';
import { wat } from '../helpers/wat.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-pool-wait-');

test('every worker busy: a run waits at most its own timeout, then OVERLOADED; the pool serves again once a worker is free', async () => {
  const engine = createEngine({ poolSize: 1, maxWorkers: 1 });
  try {
    const spin = await wat('spin');
    const noop = await wat('noop');
    assert.equal((await engine.run(noop, { invoke: 'noop' })).ok, true);
    const holder = engine.run(spin, { invoke: 'run', timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 200));
    const t0 = performance.now();
    const refused = await engine.run(noop, { invoke: 'add', args: [1, 2], timeoutMs: 300 });
    const ms = performance.now() - t0;
    console.log(`# refused after ${ms.toFixed(0)} ms (timeout 300 ms)`);
    assert.equal(refused.ok, false);
    assert.equal(refused.error?.code, 'OVERLOADED', JSON.stringify(refused.error));
    assert.equal(refused.result, undefined);
    // Well before the holder's 10 s end, so the refusal came from this call's own bound.
    assert.ok(ms >= 290 && ms < 300 + LOAD_SLACK_MS, `waited ${ms.toFixed(0)} ms`);
    // The spinner ends at its budget (time or fuel, whichever it meets first) and frees the worker.
    assert.ok(['TIMEOUT', 'FUEL_EXHAUSTED'].includes((await holder).error?.code ?? ''));
    const after = await engine.run(noop, { invoke: 'add', args: [1, 2], timeoutMs: 300 });
    assert.equal(after.result, 3, JSON.stringify(after.error));
  } finally {
    await engine.close();
  }
});

test('a cold pool: the first run waits for its worker to start, even with a budget shorter than the start', async () => {
  const engine = createEngine({ poolSize: 0, maxWorkers: 1 });
  try {
    const r = await engine.run(await wat('noop'), { invoke: 'add', args: [2, 3], timeoutMs: 5 });
    assert.equal(r.result, 5, JSON.stringify(r.error));
  } finally {
    await engine.close();
  }
});
