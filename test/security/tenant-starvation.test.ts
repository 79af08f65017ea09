// One tenant fills the engine with spinners (each holds a worker for its whole budget); another
// tenant's calls must still run promptly: the engine admits top-level calls per tenant (a cap on
// what one tenant holds) and round-robin across tenants, never one FIFO the spinners sit at the
// head of (src/fabric/tenant-scheduler.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const engine = testEngine({ poolSize: 4, maxWorkers: 4 });

test('a hostile tenant filling the pool with spinners does not stop another tenant\'s calls', async () => {
  const spin = await wat('spin');
  const noop = await wat('noop');
  await engine.run(noop, { invoke: 'noop' }); // compiled and warm
  const SPIN_MS = 3000;
  const hostile = Array.from({ length: 24 }, () => engine.run(spin, { invoke: 'run', tenant: 'hostile', timeoutMs: SPIN_MS }));
  await new Promise((r) => setTimeout(r, 100)); // the spinners hold what they may
  const t0 = performance.now();
  const honest = await Promise.all(Array.from({ length: 8 }, () => engine.run(noop, { invoke: 'noop', tenant: 'honest' })));
  const took = performance.now() - t0;
  for (const r of honest) assert.equal(r.ok, true, JSON.stringify(r.error));
  // With one FIFO the honest calls would wait behind 24 spinners of 3 s on 4 workers (~18 s).
  assert.ok(took < SPIN_MS / 2 + LOAD_SLACK_MS, `honest calls took ${took.toFixed(0)} ms behind the spinners`);
  const rs = await Promise.all(hostile);
  assert.ok(rs.every((r) => ['TIMEOUT', 'FUEL_EXHAUSTED', 'OVERLOADED'].includes(r.error?.code ?? '')), JSON.stringify([...new Set(rs.map((r) => r.error?.code))]));
});
