// The CPython lane's walls: a runaway loop ends TIMEOUT at its deadline
// and frees its worker, a spin under a small fuel budget ends FUEL_EXHAUSTED within the refill's
// overshoot, and a memory bomb — one huge allocation or a growing list, caught or not — ends
// MEMORY_LIMIT at the call's cap; the host survives each and the next call works.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import type { ExecOptions } from '../../src/index.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS, cpuMsDuring } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-cpython-walls-');
const engine = testEngine({ poolSize: 1 });
const MiB = 1 << 20;

/** One memory cap for every call (one prepared interpreter): compute's 64 MiB. */
const BASE = { profile: 'network', memoryBytes: 64 * MiB, timeoutMs: 30_000 } as const;
const py = (code: string, extra: Partial<ExecOptions> = {}) => engine.exec({ language: 'python', code, ...BASE, ...extra });

async function stillAnswers(): Promise<void> {
  const r = await py('print(sum(range(10)))');
  assert.equal(r.stdout, '45\n', JSON.stringify(r.error));
}

before(async () => {
  assert.equal((await py('1')).ok, true); // prepares the interpreter (seconds, once)
});

test('while True: pass with timeoutMs 2000 → TIMEOUT by the deadline (plus slack); the worker is freed', async () => {
  const t0 = performance.now();
  const r = await py('while True: pass', { timeoutMs: 2_000 });
  const ms = performance.now() - t0;
  console.log(`# spin ended ${r.error?.code} after ${ms.toFixed(0)} ms`);
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'TIMEOUT', JSON.stringify(r.error));
  assert.equal(r.error?.message, 'the call ran past its 2000 ms budget');
  assert.ok(ms < 2_000 + LOAD_SLACK_MS, `ended after ${ms.toFixed(0)} ms`);
  // The deadline counts from the call's start (the interpreter's boot included), not from an idle wait.
  assert.ok(r.durationMs >= 1_500, `ended after ${r.durationMs.toFixed(0)} ms: not by its deadline`);
  // Nothing keeps spinning: once the lane's pool has refilled (boots are real work), this process
  // spends (almost) no CPU while idle ...
  await (await (engine as unknown as { lanes: { get(l: 'python'): Promise<{ warm(): Promise<void> }> } }).lanes.get('python')).warm();
  const cpu = await cpuMsDuring(500);
  assert.ok(cpu < 250, `${cpu.toFixed(0)} ms of CPU in 500 ms after the timeout`);
  // ... and the engine's one worker takes the next call.
  await stillAnswers();
});

test('fuel: 1e4 (lane units) on a spin → FUEL_EXHAUSTED, within one refill of the budget', async () => {
  const r = await py("print('started')\nwhile True: pass", { fuel: 1e4 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(r.error));
  // The snippet ran: the budget is the snippet's, not spent on the interpreter's boot (~3e5 units).
  assert.equal(r.stdout, 'started\n');
  assert.equal(r.error?.message, 'the call used more than its 10000 units of fuel');
  assert.ok(r.fuelUsed >= 1e4 && r.fuelUsed <= 1e4 + 1_000, String(r.fuelUsed));
  // The interpreter's boot is not billed: the same budget runs a small snippet.
  const small = await py('sum(range(1000))', { fuel: 1e4 });
  assert.equal(small.result, 499500, JSON.stringify(small.error));
  assert.ok(small.fuelUsed < 1e4, String(small.fuelUsed));
  await stillAnswers();
});

test("bytearray(10**9) under profile 'compute' → MEMORY_LIMIT at its 64 MiB cap", async () => {
  const r = await engine.exec({ language: 'python', code: 'bytearray(10**9)', profile: 'compute' });
  assert.equal(r.profile, 'compute');
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r.error));
  assert.match(r.error?.message ?? '', /past the 67108864-byte limit/);
  // Catching the MemoryError does not help: the refused growth is the wall, not an exception.
  const caught = await py("try:\n    b = bytearray(10**9)\nexcept MemoryError:\n    b = 'survived'\nb");
  assert.equal(caught.error?.code, 'MEMORY_LIMIT', JSON.stringify(caught.result ?? caught.error));
  await stillAnswers();
});

test('a memory bomb growing a list in a loop → MEMORY_LIMIT, never a host crash', async () => {
  const bombs = [
    'l = []\nwhile True: l.append(bytearray(1 << 20))',
    "l = []\nwhile True: l.append('x' * 1000 + str(len(l)))",
    's = [0]\nwhile True: s = s + s',
  ];
  for (const code of bombs) {
    const rss = process.memoryUsage().rss;
    const r = await py(code);
    assert.equal(r.ok, false, code);
    assert.equal(r.error?.code, 'MEMORY_LIMIT', `${code}: ${JSON.stringify(r.error)}`);
    assert.match(r.error?.message ?? '', /past the 67108864-byte limit/);
    // The host holds about the interpreter's memory, not more than the bomb asked for.
    const grew = process.memoryUsage().rss - rss;
    assert.ok(grew < 512 * MiB, `RSS grew ${(grew / MiB).toFixed(0)} MiB`);
  }
  await stillAnswers();
});
