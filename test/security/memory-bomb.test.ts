// The space wall: memory maxima are rewritten to the cap, growth past it traps with
// MEMORY_LIMIT, oversized declarations fail at start, and the host's RSS stays bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cGuest, wat, watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = testEngine();
const MiB = 1024 * 1024;

test('a memory.grow loop under compute traps with MEMORY_LIMIT, reporting the size reached', async () => {
  const r = await engine.run(await wat('grow-loop'), { invoke: 'run' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  const d = r.error!.details as Record<string, number>;
  assert.equal(d['limitBytes'], 64 * MiB);
  assert.equal(d['requestedPages'], 16);
  assert.ok(d['reachedBytes']! > 64 * MiB, JSON.stringify(d));
  assert.ok(d['currentPages']! * 65536 <= 64 * MiB);
});

test('a lowered per-call memory cap is the one enforced', async () => {
  const r = await engine.run(await wat('grow-loop'), { invoke: 'run', memoryBytes: 4 * MiB });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.equal((r.error!.details as Record<string, number>)['limitBytes'], 4 * MiB);
});

test('with trapOnGrowFailure: false a failed grow returns -1 and the guest sees the cap', async () => {
  const e = testEngine({ poolSize: 1, trapOnGrowFailure: false });
  const r = await e.run(await wat('grow-loop'), { invoke: 'run', memoryBytes: 8 * MiB });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.result, 1 + 16 * 7, "1 initial page plus seven 16-page grows fit in 128 pages; the eighth fails");
});

test('a module declaring 2000 initial pages fails with MEMORY_LIMIT before it starts', async () => {
  const r = await engine.run(await wat('big-initial'), { invoke: 'run' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
  assert.equal((r.error!.details as Record<string, number>)['initialPages'], 2000);
});

test('an imported memory over the cap fails at start; within it, it gets the cap as maximum', async () => {
  const over = await watText('(module (import "env" "memory" (memory 1100)) (func (export "run")))');
  assert.equal((await engine.run(over, { invoke: 'run' })).error?.code, 'MEMORY_LIMIT');
  const ok = await watText(`(module (import "env" "memory" (memory 1))
    (func (export "run") (result i32) (memory.grow (i32.const 2000))))`);
  const r = await engine.run(ok, { invoke: 'run' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
});

test('a C program that mallocs forever is stopped with MEMORY_LIMIT', async () => {
  const r = await engine.run(cGuest('membomb'));
  assert.equal(r.error?.code, 'MEMORY_LIMIT', JSON.stringify(r));
});

test('a 10 000 000-element table is refused with MEMORY_LIMIT', async () => {
  const r = await engine.run(await wat('big-table'), { invoke: 'run' });
  assert.equal(r.error?.code, 'MEMORY_LIMIT');
});

test('twenty concurrent memory bombs leave the host RSS bounded', async () => {
  const bomb = await wat('grow-loop');
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const rs = await Promise.all(Array.from({ length: 20 }, () => engine.run(bomb, { invoke: 'run', memoryBytes: 32 * MiB })));
  clearInterval(timer);
  assert.ok(rs.every((r) => r.error?.code === 'MEMORY_LIMIT'));
  // At most maxWorkers (8) bombs are live at once, each capped at 32 MiB.
  const grown = (peak - before) / MiB;
  assert.ok(grown < 8 * 32 + 128, `RSS grew by ${grown.toFixed(0)} MiB`);
});
