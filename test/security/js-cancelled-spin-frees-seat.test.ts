// Attack: hold a JS lane's only seat with a snippet that spins under a long deadline, and keep it
// after the caller gave up — catching the stop, spinning inside a power wait, or re-entering a
// loop from a finally block. Aborting the caller's signal must end the call CANCELLED within
// 50 ms (plus load slack), free the seat for the next call at once, and never be mistaken for a
// TIMEOUT; the interpreter stops by itself (no worker terminated).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { JsLane } from '../../src/lanes/js/index.ts';
import type { ExecRequest } from '../../src/lanes/types.ts';
import type { PowerServer } from '../../src/lanes/powers.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { jsRequest } from '../helpers/js-request.ts';

const lane = new JsLane({ poolSize: 2, cacheDir: false, workers: 1, maxQueue: 4 });
const LONG_MS = 60_000;
const req = (code: string, more: Partial<ExecRequest> = {}): ExecRequest => jsRequest(code, { timeoutMs: LONG_MS, ...more });
before(() => lane.warm());
after(() => lane.close());

/** A power server whose answers never come (until the test ends). */
const never: PowerServer = () => new Promise(() => {});

const spins: [string, Partial<ExecRequest>][] = [
  ['for (;;) {}', {}],
  ['for (;;) { try { for (;;) {} } catch (e) {} finally { for (;;) {} } }', {}],
  ['await 0; for (;;) {}', {}],
  ['for (;;) { try { kv.get("k") } catch (e) {} }', { caps: ['kv'], powers: never }],
];

for (const [code, more] of spins) {
  test(`cancelling ${JSON.stringify(code)} frees the only seat at once`, async () => {
    const ac = new AbortController();
    const running = lane.exec(req(code, { ...more, signal: ac.signal }));
    // A second call queues behind it for the only seat.
    const queued = lane.exec(req('"next"', { timeoutMs: LONG_MS }));
    await new Promise((r) => setTimeout(r, 150));
    const abortedAt = performance.now();
    ac.abort();
    const r = await running;
    const settled = performance.now();
    assert.deepEqual(r.error, { code: 'CANCELLED', message: 'the call was cancelled' });
    assert.ok(settled - abortedAt < 50 + LOAD_SLACK_MS, `settled ${settled - abortedAt} ms after the abort`);
    const next = await queued;
    assert.equal(next.result, 'next', JSON.stringify(next));
    assert.ok(performance.now() - abortedAt < 1000 + LOAD_SLACK_MS, 'the queued call ran right after');
    assert.ok(!r.warnings.some((w) => /terminated/.test(w)), JSON.stringify(r.warnings));
    assert.deepEqual([lane.stats().busy, lane.stats().queued], [0, 0]);
  });
}
