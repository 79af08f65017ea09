// A flood of snippets cannot queue unbounded work or start unbounded interpreters: the JS lane
// runs one call per worker and refuses past its queue; a spinner on one worker does not hold up a
// call on another; a call that cannot start within its own timeout is OVERLOADED without running;
// the Python lane's gate admits a bounded number of interpreters at once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { JsLane } from '../../src/lanes/js/index.ts';
import { LaneGate } from '../../src/lanes/gate.ts';
import type { ExecResult } from '../../src/lanes/types.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { jsRequest } from '../helpers/js-request.ts';

const req = jsRequest;

const lane = new JsLane({ poolSize: 1, cacheDir: false, workers: 2, maxQueue: 3 });
before(() => lane.warm());
after(() => lane.close());

test('a JS spinner on one worker does not hold up a call on the other', async () => {
  const spin = lane.exec(req('for(;;){}', { timeoutMs: 6000 }));
  await new Promise((r) => setTimeout(r, 50));
  const t = performance.now();
  const quick = await lane.exec(req('6*7'));
  assert.equal(quick.result, 42);
  // Long before the spinner's 6 s end.
  assert.ok(performance.now() - t < LOAD_SLACK_MS, `the quick call waited ${performance.now() - t} ms`);
  assert.equal((await spin).error?.code, 'TIMEOUT');
});

test('a JS call flood past the queue is refused OVERLOADED at once; a call that cannot start within its timeout is OVERLOADED and never runs', async () => {
  const spinners = [lane.exec(req('for(;;){}', { timeoutMs: 1500 })), lane.exec(req('for(;;){}', { timeoutMs: 1500 }))];
  await new Promise((r) => setTimeout(r, 50));
  // Both workers spin: three calls may wait, the fourth is refused at the door.
  const waiting = [0, 1, 2].map(() => lane.exec(req('globalThis.ran = 1; 1', { timeoutMs: 300 })));
  const t = performance.now();
  const refused = await lane.exec(req('1'));
  assert.equal(refused.error?.code, 'OVERLOADED');
  // Before either spinner ends (1.5 s), so it was never queued.
  assert.ok(performance.now() - t < 1000, 'refused at once');
  for (const w of await Promise.all(waiting)) {
    assert.equal(w.error?.code, 'OVERLOADED', JSON.stringify(w));
    assert.match(w.error!.message, /nothing ran/);
  }
  for (const s of await Promise.all(spinners)) assert.equal(s.error?.code, 'TIMEOUT');
  assert.equal(lane.stats().queued, 0);
  assert.equal((await lane.exec(req('6*7'))).result, 42, 'the lane serves again once the flood has passed');
});

test('the python gate: at most maxRunning interpreters at once, maxWaiting queued, the rest OVERLOADED', async () => {
  const gate = new LaneGate('python', 2, 2);
  let live = 0;
  let peak = 0;
  const work = async (): Promise<ExecResult> => {
    live++;
    peak = Math.max(peak, live);
    await new Promise((r) => setTimeout(r, 100));
    live--;
    return { ok: true, stdout: '', stderr: '', fuelUsed: 0, durationMs: 100, warnings: [], poolHit: true };
  };
  const results = await Promise.all(Array.from({ length: 10 }, () => gate.run(5000, work)));
  assert.equal(peak, 2);
  assert.equal(results.filter((r) => r.ok).length, 4, 'two ran at once, two waited');
  assert.equal(results.filter((r) => r.error?.code === 'OVERLOADED').length, 6);
  assert.deepEqual({ running: gate.stats().running, waiting: gate.stats().waiting }, { running: 0, waiting: 0 });
  // A waiter whose budget runs out first is refused and never runs.
  const slow = [gate.run(5000, work), gate.run(5000, work)];
  const late = await gate.run(20, work);
  assert.equal(late.error?.code, 'OVERLOADED');
  await Promise.all(slow);
  assert.equal(gate.stats().running, 0);
});
