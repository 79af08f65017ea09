// OutputTap: the one bounded, decoded stream callback every lane streams through.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OutputTap, abortedBefore, cancelled } from '../../src/lanes/controls.ts';

test('bytes are decoded across writes without splitting a character', () => {
  const got: string[] = [];
  const tap = new OutputTap((c) => got.push(c), 1024);
  const euro = Buffer.from('a€b'); // € is 3 bytes
  tap.push(euro.subarray(0, 2));
  tap.push(euro.subarray(2));
  tap.end();
  assert.equal(got.join(''), 'a€b');
  assert.ok(!got.some((c) => c.includes('\uFFFD')));
});

test('at most limitBytes are delivered, bytes or text, then the tap stops', () => {
  const bytes: string[] = [];
  const b = new OutputTap((c) => bytes.push(c), 10);
  for (let i = 0; i < 5; i++) b.push(Buffer.from('abcdef'));
  b.end();
  assert.equal(bytes.join(''), 'abcdefabcd');
  assert.equal(b.active, false);

  const text: string[] = [];
  const t = new OutputTap((c) => text.push(c), 7);
  t.push('héllo'); // 6 bytes
  t.push('€€'); // would pass 7: cut on a character boundary
  t.push('more');
  assert.equal(text.join(''), 'héllo');
  assert.equal(Buffer.byteLength(text.join('')) <= 7, true);
});

test('a callback that throws is dropped and never throws into the caller', () => {
  let calls = 0;
  const tap = new OutputTap(() => {
    calls++;
    throw new Error('consumer bug');
  }, 100);
  assert.doesNotThrow(() => {
    tap.push('one');
    tap.push('two');
    tap.end();
  });
  assert.equal(calls, 1);
});

test('no callback, or a zero cap: inactive', () => {
  assert.equal(new OutputTap(undefined, 100).active, false);
  assert.equal(new OutputTap(() => {}, 0).active, false);
});

test('cancelled() carries a fixed message and no reason; abortedBefore reads the signal', () => {
  const e = cancelled();
  assert.equal(e.code, 'CANCELLED');
  assert.deepEqual(e.toPublic().details, {});
  const c = new AbortController();
  assert.equal(abortedBefore(c.signal), false);
  c.abort(new Error('/home/secret/path'));
  assert.equal(abortedBefore(c.signal), true);
  assert.equal(abortedBefore(undefined), false);
});

test('LaneGate: a call cancelled while waiting for a place leaves the queue and runs nothing', async () => {
  const { LaneGate } = await import('../../src/lanes/gate.ts');
  const gate = new LaneGate('test', 1, 4);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const ok = { ok: true, stdout: '', stderr: '', fuelUsed: 0, durationMs: 0, warnings: [], poolHit: false } as const;
  const first = gate.run(10_000, async () => (await held, ok));
  const c = new AbortController();
  let ran = false;
  const second = gate.run(10_000, async () => ((ran = true), ok), c.signal);
  assert.equal(gate.stats().waiting, 1);
  c.abort();
  const r = await second;
  assert.equal(r.error?.code, 'CANCELLED');
  assert.equal(gate.stats().waiting, 0);
  const pre = await gate.run(10_000, async () => ((ran = true), ok), AbortSignal.abort());
  assert.equal(pre.error?.code, 'CANCELLED');
  release();
  await first;
  assert.equal(ran, false);
  assert.deepEqual(gate.stats(), { running: 0, waiting: 0, refused: 0 });
});
