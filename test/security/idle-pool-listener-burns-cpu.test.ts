// Attack: make an idle pool burn CPU. After a fresh run a pool worker listens on the channel for
// its next held run (bridge/frames.ts, channel.ts listenForRun): a bounded spin, then asleep on
// the word for at most its idle wait, then back to its event loop. Once runs stop, the process
// must use next to no CPU — a listener that kept spinning would burn a core per worker.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';

const engine = testEngine({ poolSize: 2, maxWorkers: 2 });

test('after a burst of runs an idle pool of listening workers uses next to no CPU', async () => {
  const bytes = await watText(`(module (memory 1) (func (export "run") (result i32) (i32.const 7)))`);
  // Both workers run (two at a time) and are left listening.
  for (let i = 0; i < 200; i++) {
    const rs = await Promise.all([engine.run(bytes, { invoke: 'run' }), engine.run(bytes, { invoke: 'run' })]);
    for (const r of rs) assert.equal(r.ok && Number(r.result), 7, JSON.stringify(r.error));
  }
  const idleMs = 2500;
  const before = process.cpuUsage();
  const t = performance.now();
  await new Promise((r) => setTimeout(r, idleMs));
  const used = process.cpuUsage(before);
  const cpuMs = (used.user + used.system) / 1000;
  const wallMs = performance.now() - t;
  // Two spinning workers would use ~2 × wall; listeners asleep (then in their event loops) use a
  // wake-up each. Loose: the test runner and GC share the process.
  assert.ok(cpuMs < 0.1 * wallMs, `an idle pool used ${cpuMs.toFixed(1)} ms of CPU in ${wallMs.toFixed(0)} ms`);
  // And the pool still answers at once.
  const r = await engine.run(bytes, { invoke: 'run' });
  assert.equal(r.ok && Number(r.result), 7);
});
