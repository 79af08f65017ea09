// Attack: flood a streamed stdout — far past the output cap, or with many small writes while the
// consumer is slow, blocked or throwing. The callback receives at most the cap (exactly what the
// result keeps); the host holds at most a window of unread output messages (never one per write);
// the guest never waits for the consumer, so its walls hold — the deadline ends it on time; a
// callback that throws is dropped and the guest never notices.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { controlsGuest } from '../helpers/controls-guest.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { WINDOW } from '../../src/engine/worker/output-forward.ts';

const MARKER = /\n\[membrane: stdout truncated at (\d+) bytes\]\n$/;

function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // the consumer is slow
  }
}

test('a guest writing 4 MiB streams exactly the 1 MiB cap: the chunks are the result text before its marker', async () => {
  const engine = testEngine({ poolSize: 1 });
  let bytes = 0;
  const chunks: string[] = [];
  const r = await engine.run(await controlsGuest(), {
    invoke: 'flood',
    args: [64],
    onStdout: (c) => {
      bytes += Buffer.byteLength(c);
      chunks.push(c);
    },
  });
  assert.equal(r.ok, true);
  assert.equal(bytes, 1024 * 1024);
  assert.match(r.stdout, MARKER);
  assert.equal(chunks.join(''), r.stdout.replace(MARKER, ''));
});

test('flooding forever under a small cap: at most the cap reaches the callback, host memory stays flat, the deadline holds', async () => {
  const cap = 64 * 1024;
  const engine = testEngine({ poolSize: 1, outputLimitBytes: cap });
  const g = await controlsGuest();
  await engine.run(g, { invoke: 'incr' });
  const base = process.memoryUsage();
  let peak = 0;
  let bytes = 0;
  const r = await engine.run(g, {
    invoke: 'flood_forever',
    timeoutMs: 1_000,
    profile: 'network',
    onStdout: (c) => {
      bytes += Buffer.byteLength(c);
      const m = process.memoryUsage();
      peak = Math.max(peak, m.heapUsed + m.arrayBuffers - base.heapUsed - base.arrayBuffers);
    },
  });
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(r.durationMs < 1_000 + LOAD_SLACK_MS, `ran ${r.durationMs} ms`);
  assert.equal(bytes, cap);
  assert.ok(peak < 16 * 1024 * 1024, `host heap grew ${(peak / 1048576).toFixed(1)} MiB while the guest flooded`);
});

test('a consumer blocked while the guest writes line after line receives a window of messages, not one per write', async () => {
  const engine = testEngine({ poolSize: 1 });
  const g = await controlsGuest();
  await engine.run(g, { invoke: 'incr' });
  let calls = 0;
  const chunks: string[] = [];
  const r = await engine.run(g, {
    invoke: 'lines',
    args: [300, 1], // 300 lines, a 1 ms sleep (a flush point) after each
    timeoutMs: 20_000,
    onStdout: (c) => {
      chunks.push(c);
      // The first chunk blocks the main thread while the guest writes the rest.
      if (calls++ === 0) busy(1_000);
    },
  });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(chunks.join(''), r.stdout);
  assert.equal(r.stdout.length, 300 * 6);
  // One chunk, then at most the window the worker may have unread, then the rest from the result.
  assert.ok(calls <= WINDOW + 2, `${calls} callbacks for 300 writes (window ${WINDOW})`);
});

test('a very slow consumer does not hold the guest past its deadline', async () => {
  const engine = testEngine({ poolSize: 1, outputLimitBytes: 8 * 1024 * 1024 });
  const g = await controlsGuest();
  await engine.run(g, { invoke: 'incr' });
  let calls = 0;
  const t0 = performance.now();
  const r = await engine.run(g, {
    invoke: 'lines',
    args: [1e9, 1],
    timeoutMs: 1_000,
    onStdout: () => {
      calls++;
      busy(30);
    },
  });
  const took = performance.now() - t0;
  assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r.error));
  assert.ok(took < 1_000 + LOAD_SLACK_MS, `the call ended after ${took.toFixed(0)} ms`);
  assert.ok(calls > 0);
});

test('a callback that throws is dropped; the guest and the other stream never notice', async () => {
  const engine = testEngine({ poolSize: 1 });
  let outCalls = 0;
  const err: string[] = [];
  const r = await engine.run(await controlsGuest(), {
    invoke: 'lines',
    args: [50, 1],
    onStdout: () => {
      outCalls++;
      throw new Error('consumer bug');
    },
    onStderr: (c) => err.push(c),
  });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(outCalls, 1);
  assert.equal(r.stdout.length, 50 * 6);
  assert.equal(err.join(''), r.stderr);
  assert.equal(r.stderr, 'err\n'.repeat(50));
});
