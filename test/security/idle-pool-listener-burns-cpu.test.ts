// Attack: make an idle pool burn CPU. After a fresh run a pool worker listens on the channel for
// its next held run (bridge/frames.ts, channel.ts listenForRun): a bounded spin, then asleep on
// the word for at most its idle wait, then back to its event loop. Once runs stop, the process
// must use next to no CPU — a listener that kept spinning would burn a core per worker.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { watText } from '../helpers/wat.ts';
import { quietCpuMs } from '../helpers/timing.ts';

const engine = testEngine({ poolSize: 2, maxWorkers: 2 });

test('after a burst of runs an idle pool of listening workers uses next to no CPU', async () => {
  const bytes = await watText(`(module (memory 1) (func (export "run") (result i32) (i32.const 7)))`);
  // Both workers run (two at a time) and are left listening.
  for (let i = 0; i < 200; i++) {
    const rs = await Promise.all([engine.run(bytes, { invoke: 'run' }), engine.run(bytes, { invoke: 'run' })]);
    for (const r of rs) assert.equal(r.ok && Number(r.result), 7, JSON.stringify(r.error));
  }
  // The quieter of two 1.25 s windows: two spinning listeners burn ~2 × wall in both, while
  // start-up's transient work (a GC after the burst, a lazy import compiled — 340–360 ms seen on
  // Node 24 in the first window) seldom fills both. Loose: the test runner shares the process.
  const windowMs = 1250;
  const cpuMs = await quietCpuMs(windowMs);
  assert.ok(cpuMs < 0.1 * windowMs, `an idle pool used ${cpuMs.toFixed(1)} ms of CPU in the quieter of two ${windowMs} ms windows`);
  // And the pool still answers at once.
  const r = await engine.run(bytes, { invoke: 'run' });
  assert.equal(r.ok && Number(r.result), 7);
});
