// The time wall for components: a `run` that loops forever ends TIMEOUT at its deadline (the
// fuel refill in its metered core module notices it) and the worker thread is free again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { component } from '../helpers/components.ts';

const engine = testEngine({ poolSize: 1, maxWorkers: 1 });

test('a component spinning forever ends TIMEOUT and its worker runs the next component', async () => {
  const t0 = performance.now();
  const r = await engine.run(component('spin'), { timeoutMs: 300, fuel: 1e12 });
  const took = performance.now() - t0;
  assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r.error));
  // Stopped at a fuel refill (fuelUsed > 0, the worker reused) or, on a machine too loaded for the
  // refill to come within the grace, terminated and replaced: either way the thread is free.
  assert.ok(r.fuelUsed > 0 || engine.stats().workersReplaced > 0, JSON.stringify(r));
  assert.ok(took < 10_000, `took ${took} ms`);
  // One worker in the whole engine: the next run can only happen on a freed (or replaced) thread.
  const next = await engine.run(component('hello'), { timeoutMs: 10_000 });
  assert.equal(next.ok, true, JSON.stringify(next.error));
  assert.ok(engine.stats().liveWorkers <= 1);
});

test('a caller aborting a spinning component ends it CANCELLED, and the thread runs the next one', async () => {
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 150);
  const r = await engine.run(component('spin'), { timeoutMs: 20_000, fuel: 1e12, signal: ac.signal });
  assert.equal(r.error?.code, 'CANCELLED', JSON.stringify(r.error));
  const next = await engine.run(component('hello'), { timeoutMs: 10_000 });
  assert.equal(next.ok, true, JSON.stringify(next.error));
});
