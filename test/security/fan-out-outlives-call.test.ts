// run_command_many fans a command over many inputs, a few at a time. When the calling call's
// deadline passes, the tasks running are aborted — and the ones still queued must never start:
// before this was enforced, each queued task started after the caller had its TIMEOUT, with the
// whole per-task time, and held the pool's workers for seconds after the call was over.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fanMap } from '../../src/fabric/fanout.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

test('once the caller is stopped, queued fan-out tasks never start and running ones are aborted', async () => {
  const stop = new AbortController();
  const started: number[] = [];
  const aborted: number[] = [];
  const task = (_input: number, i: number, signal: AbortSignal): Promise<number> =>
    new Promise((resolve) => {
      started.push(i);
      const done = setTimeout(() => resolve(i), 10_000);
      signal.addEventListener('abort', () => {
        clearTimeout(done);
        aborted.push(i);
        resolve(-1);
      });
    });
  setTimeout(() => stop.abort(), 50);
  const t0 = performance.now();
  const out = await fanMap(Array.from({ length: 32 }, (_, i) => i), task, { width: 4, perTaskTimeoutMs: 10_000, signal: stop.signal });
  const ms = performance.now() - t0;
  assert.deepEqual(started, [0, 1, 2, 3], `tasks started after the stop: ${started.slice(4).join(', ')}`);
  assert.deepEqual(aborted.sort((a, b) => a - b), [0, 1, 2, 3]);
  assert.ok(ms < 50 + LOAD_SLACK_MS, `the fan-out ended ${ms.toFixed(0)} ms after it began, not at the stop`);
  // The inputs that never ran are reported, not dropped.
  assert.equal(out.length, 32);
  assert.deepEqual(out.slice(4).map((o) => (o.ok ? 'ran' : o.error.code)), Array(28).fill('CANCELLED'));
});

test('a fan-out whose caller is already stopped starts nothing', async () => {
  const stop = new AbortController();
  stop.abort();
  let started = 0;
  const out = await fanMap([1, 2, 3, 4, 5, 6, 7, 8], async () => ++started, { width: 2, perTaskTimeoutMs: 10_000, signal: stop.signal });
  assert.equal(started, 0);
  assert.ok(out.every((o) => !o.ok && o.error.code === 'CANCELLED'));
});
