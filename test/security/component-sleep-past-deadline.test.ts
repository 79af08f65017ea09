// The time wall for a component that sleeps (wasi:clocks/monotonic-clock + wasi:io/poll, through
// the p1 adapter's poll_oneoff): a sleep longer than the call's budget ends TIMEOUT at the
// deadline, stopped by the guest's own thread — the worker is not terminated.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { component } from '../helpers/components.ts';

const engine = testEngine({ poolSize: 1 });

test('a short sleep completes; a sleep past the deadline ends TIMEOUT without replacing the worker', async () => {
  const short = await engine.run(component('sleeper'), { argv: ['30'], timeoutMs: 20_000 });
  assert.equal(short.stdout, 'slept 30 ms\n', JSON.stringify(short.error));
  const before = engine.stats().workersReplaced;
  const t0 = performance.now();
  const r = await engine.run(component('sleeper'), { argv: ['60000'], timeoutMs: 300 });
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.equal(r.stdout, '');
  assert.ok(performance.now() - t0 < 5_000);
  assert.equal(engine.stats().workersReplaced, before, 'the sleep stopped itself at the deadline');
});
