// The work wall: fuel bounds what a guest computes, deterministically, and a deadline stops a
// metered runaway at its next refill without losing its worker.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cGuest, wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const engine = testEngine({ poolSize: 2 });

test('a loop of 1e9 iterations with 1 000 000 fuel ends with FUEL_EXHAUSTED well under a second', async () => {
  const t = performance.now();
  const r = await engine.run(await wat('count'), { invoke: 'count', args: [1_000_000_000n], fuel: 1_000_000 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED');
  assert.deepEqual(r.error?.details, { fuelUsed: 1_000_000, budget: 1_000_000 });
  assert.equal(r.fuelUsed, 1_000_000);
  assert.ok(performance.now() - t < LOAD_SLACK_MS, `took ${performance.now() - t} ms`);
});

test('with ample fuel the same program returns its value and the same fuelUsed on every run', async () => {
  const m = await wat('count');
  const runs = await Promise.all(Array.from({ length: 5 }, () => engine.run(m, { invoke: 'count', args: [100_000n] })));
  for (const r of runs) assert.equal(r.result, 4_999_950_000);
  const used = new Set(runs.map((r) => r.fuelUsed));
  assert.equal(used.size, 1, `fuelUsed varied: ${[...used].join(', ')}`);
  const [u] = used;
  assert.ok(u! > 100_000 * 5 && u! < 100_000 * 20, `fuelUsed ${u} is not proportional to the work`);
  // Twice the work, about twice the fuel.
  const double = await engine.run(m, { invoke: 'count', args: [200_000n] });
  assert.ok(Math.abs(double.fuelUsed - 2 * u!) < 100, `${double.fuelUsed} vs 2 × ${u}`);
});

test('memory.fill over 60 MB in a loop is charged by size: FUEL_EXHAUSTED, not TIMEOUT', async () => {
  const r = await engine.run(await wat('count'), { invoke: 'fill', args: [1_000_000], fuel: 1e9 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(r.error));
});

test('a metered runaway is stopped at its deadline by its next refill, and its worker is reused', async () => {
  const before = engine.stats().workersReplaced;
  for (let i = 0; i < 5; i++) {
    const r = await engine.run(await wat('spin'), { profile: 'network', invoke: 'run', timeoutMs: 100 });
    assert.equal(r.error?.code, 'TIMEOUT');
    // Precision is the benchmark's job (p99 ≤ 10 ms past the deadline on a quiet machine); here,
    // beside CPU-heavy suites, the refill stops it (the worker is reused, never terminated).
    assert.ok(r.durationMs < 100 + LOAD_SLACK_MS, `stopped ${r.durationMs - 100} ms late`);
    assert.ok(r.fuelUsed > 0);
  }
  assert.equal(engine.stats().workersReplaced, before, 'a worker was replaced');
});

test('with fuel off (trusted code), the watchdog terminates the runaway and replaces its worker', async () => {
  const trusted = testEngine({ poolSize: 1, fuel: false });
  const r = await trusted.run(await wat('spin'), { invoke: 'run', timeoutMs: 100 });
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.equal(r.fuelUsed, 0);
  assert.equal(trusted.stats().workersReplaced, 1);
  const ok = await trusted.run(await wat('count'), { invoke: 'count', args: [10n] });
  assert.equal(ok.result, 45);
  assert.equal(ok.fuelUsed, 0);
});

test('a persistent instance meters every call, accumulates fuel in info(), and calls can lower fuel', async () => {
  const inst = await engine.start('metered', await wat('count'), { fuel: 5_000_000 });
  const a = await inst.call('count', [1000n]);
  const b = await inst.call('count', [1000n]);
  assert.equal(a.fuelUsed, b.fuelUsed);
  assert.equal(inst.info().fuelUsed, a.fuelUsed + b.fuelUsed);
  const low = await inst.call('count', [1_000_000n], { fuel: 10_000 });
  assert.equal(low.error?.code, 'FUEL_EXHAUSTED');
  assert.equal(inst.info().state, 'running', 'fuel exhaustion is the call’s end, not the instance’s');
  const high = await inst.call('count', [1_000_000_000n], { fuel: 1e12 });
  assert.equal(high.error?.code, 'FUEL_EXHAUSTED', 'a call cannot raise the instance budget');
  assert.match(high.warnings.join('\n'), /fuel .* clamped/);
  await inst.stop();
});

test('a C program uses the same fuel on every run', async () => {
  const runs = await Promise.all([1, 2, 3].map(() => engine.run(cGuest('hello'), { argv: ['x'] })));
  assert.ok(runs.every((r) => r.ok));
  assert.equal(new Set(runs.map((r) => r.fuelUsed)).size, 1);
  assert.ok(runs[0]!.fuelUsed > 1000);
});

test('work that ends in a trap is still billed: never less than it used, at most twice plus the first chunk', async () => {
  const { watText } = await import('../helpers/wat.ts');
  const m = await watText(`(module
    (func (export "spin_then_trap") (param $n i32) (local $i i32)
      (loop $l (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
      unreachable)
    (func (export "spin") (param $n i32) (local $i i32)
      (loop $l (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))))`);
  const clean = await engine.run(m, { invoke: 'spin', args: [10_000_000] });
  const trapped = await engine.run(m, { invoke: 'spin_then_trap', args: [10_000_000] });
  assert.equal(trapped.error?.code, 'GUEST_TRAP');
  assert.ok(trapped.fuelUsed >= clean.fuelUsed, `${trapped.fuelUsed} < ${clean.fuelUsed}`);
  assert.ok(trapped.fuelUsed <= 2 * clean.fuelUsed + 10_000, `${trapped.fuelUsed} vs ${clean.fuelUsed}`);
  const again = await engine.run(m, { invoke: 'spin_then_trap', args: [10_000_000] });
  assert.equal(again.fuelUsed, trapped.fuelUsed, 'billing after a trap is deterministic too');
});
