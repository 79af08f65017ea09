import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cGuest } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const engine = testEngine({ poolSize: 1 });

test('stdin reaches the guest through fd_read, byte for byte', async () => {
  const input = 'hello, stdin\n'.repeat(5000);
  const r = await engine.run(cGuest('upper'), { stdin: input });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, input.toUpperCase());
  assert.equal(r.stderr, `${input.length} bytes\n`);
});

test('binary stdin survives intact (no text decoding on the way in)', async () => {
  const bytes = new Uint8Array(256).map((_, i) => i);
  const r = await engine.run(cGuest('upper'), { stdin: bytes });
  assert.equal(r.stderr, '256 bytes\n');
});

test('nanosleep (poll_oneoff, ambient) works under every profile and is bounded by the deadline', async () => {
  const t = performance.now();
  const r = await engine.run(cGuest('sleeper'), { profile: 'compute', argv: ['50'] });
  assert.equal(r.stdout, 'slept 50 ms\n', JSON.stringify(r.error));
  assert.ok(performance.now() - t >= 50);
  const long = await engine.run(cGuest('sleeper'), { profile: 'compute', argv: ['60000'], timeoutMs: 200 });
  assert.equal(long.error?.code, 'TIMEOUT');
  assert.ok(long.durationMs < 200 + LOAD_SLACK_MS, `ended after ${long.durationMs} ms`);
});

test('poll_oneoff and the socket calls are linked with no cap at all', async () => {
  const r = await engine.run(cGuest('sleeper'), { caps: [], argv: ['1'] });
  assert.equal(r.stdout, 'slept 1 ms\n', JSON.stringify(r.error));
});
