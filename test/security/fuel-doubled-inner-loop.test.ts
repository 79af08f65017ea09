// The work wall around a doubled inner loop (rewriter v6, src/wasm/fuel/body.ts): an innermost
// loop without calls inside another loop is written twice, a fast writing whose refill cannot
// branch back into it and a second writing that a refill moves on to. An attacker who builds
// such loops — endless, with a long path hidden behind a branch, branching out of both loops
// with results, or refilled at every check — must still be charged every iteration exactly as
// before, end FUEL_EXHAUSTED within one iteration's cost of the budget, and be stopped at its
// deadline by a refill, its worker reused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeInstructions, instrumentFuel, parseModule } from '../../src/wasm/index.ts';
import { watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { FuelExhausted, metered } from '../wasm/fuel/host.ts';

const engine = testEngine({ poolSize: 1 });

/** 400 units of straight-line code: `local.get $s; i32.const 1; i32.add; local.set $s` × 100. */
const LONG = 'local.get $s i32.const 1 i32.add local.set $s '.repeat(100);

const MODULE = `(module
  ;; n × m iterations of a counting inner loop
  (func (export "nest") (param $n i32) (param $m i32) (result i32)
    (local $i i32) (local $j i32) (local $s i32)
    loop $outer
      i32.const 0  local.set $j
      loop $inner
        local.get $s  i32.const 1  i32.add  local.set $s
        local.get $j  i32.const 1  i32.add  local.tee $j
        local.get $m  i32.lt_u  br_if $inner
      end
      local.get $i  i32.const 1  i32.add  local.tee $i
      local.get $n  i32.lt_u  br_if $outer
    end
    local.get $s)
  ;; an inner loop that never ends
  (func (export "forever") (param $n i32)
    loop $outer
      loop $inner
        br $inner
      end
      br $outer
    end)
  ;; a 400-unit path behind a branch taken only on odd iterations
  (func (export "hidden") (param $n i32) (result i32)
    (local $j i32) (local $s i32)
    loop $outer
      loop $inner
        local.get $j  i32.const 1  i32.and
        if
          ${LONG}
        end
        local.get $j  i32.const 1  i32.add  local.tee $j
        local.get $n  i32.lt_u  br_if $inner
      end
      local.get $n  i32.eqz  br_if $outer
    end
    local.get $s)
  ;; leaving the inner loop from inside: out of the function with a result, or through a
  ;; br_table to a block after it or to the outer loop
  (func (export "escape") (param $n i32) (result i32)
    (local $i i32) (local $j i32)
    block $out (result i32)
        loop $outer
        block $next
          loop $inner (result i32)
            local.get $j  i32.const 1  i32.add  local.tee $j
            local.get $n  i32.ge_u  if  local.get $j  local.get $i  i32.add  return  end
            local.get $i  local.get $j  i32.mul
            local.get $j  i32.const 3  i32.rem_u
            br_table $inner $next 2
          end
          drop
          unreachable
        end
        local.get $i  i32.const 1  i32.add  local.set $i
        br $outer
      end
      i32.const -1
    end)
)`;

/** Loops in the code of `bytes`, and those whose header checks inline (an `if` right after `loop`). */
function loopsIn(bytes: Uint8Array): { loops: number; inline: number } {
  const m = parseModule(bytes);
  let loops = 0;
  let inline = 0;
  for (const code of m.codes) {
    const names = [...decodeInstructions(bytes, code.codeStart, code.end)].map((i) => i.name);
    names.forEach((name, k) => {
      if (name !== 'loop') return;
      loops++;
      // local.get $f; i64.const C; i64.sub; local.tee $f; i64.const 0; i64.lt_s; if
      if (names[k + 3] === 'i64.sub' && names[k + 6] === 'i64.lt_s' && names[k + 7] === 'if') inline++;
    });
  }
  return { loops, inline };
}

test('the inner loops are written twice (the attack reaches the doubled form)', async () => {
  const input = await watText(MODULE);
  const out = instrumentFuel(input).bytes;
  // Every outer loop gains its `$retry` loop; every inner one its second writing, which checks
  // inline (an outlined header checks with `br_if`): 8 loops in, 16 out, 4 of them inline.
  assert.deepEqual(loopsIn(input), { loops: 8, inline: 0 });
  assert.deepEqual(loopsIn(out), { loops: 16, inline: 4 });
});

test('a doubled inner loop is charged every iteration, the same with a refill at every check', async () => {
  const bytes = await watText(MODULE);
  // nest(n, m): entry [loop] 1; outer header [i32.const local.set loop] 3; inner header, 11
  // instructions, m times; after it [end local.get i32.const i32.add local.tee local.get i32.lt_u
  // br_if] 8; after the outer loop [end local.get end] 3.
  for (const chunk of [1_000_000, 1, 7]) {
    const m = metered(bytes, { chunk });
    for (const [n, k] of [[1, 1], [3, 5], [100, 37]] as const) {
      assert.deepEqual(m.call('nest', n, k), { result: n * k, fuel: 1 + n * (3 + 11 * k + 8) + 3 }, `chunk ${chunk}, nest(${n}, ${k})`);
    }
  }
  // Both exits and the br_table give the uninstrumented results, and the same fuel whatever the chunk.
  const plain = new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(bytes))).exports as Record<string, (n: number) => number>;
  for (const n of [1, 2, 5, 50]) {
    const big = metered(bytes, { chunk: 1_000_000 }).call('escape', n);
    const tiny = metered(bytes, { chunk: 1 }).call('escape', n);
    assert.equal(big.result, plain['escape']!(n));
    assert.deepEqual(tiny, big);
    const hb = metered(bytes, { chunk: 1_000_000 }).call('hidden', n);
    assert.deepEqual(metered(bytes, { chunk: 3 }).call('hidden', n), hb);
    assert.equal(hb.result, plain['hidden']!(n));
  }
});

test('an endless inner loop ends FUEL_EXHAUSTED within one iteration of the budget', async () => {
  const bytes = await watText(MODULE);
  for (const chunk of [1, 1000]) {
    const m = metered(bytes, { budget: 100_000, chunk });
    assert.throws(() => m.call('forever', 0), FuelExhausted);
    // The inner header [br] costs 1: the refused refill is asked for at most 1 unit past the budget.
    assert.ok(m.meter.used() > 100_000 && m.meter.used() <= 100_001, `used ${m.meter.used()}`);
  }
  const r = await engine.run(bytes, { invoke: 'forever', args: [0], fuel: 100_000 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(r.error));
});

test('a long path hidden behind a branch in a doubled loop overshoots by at most that path', async () => {
  const bytes = await watText(MODULE);
  for (const budget of [5_000, 50_001]) {
    const m = metered(bytes, { budget, chunk: 1000 });
    assert.throws(() => m.call('hidden', 1_000_000), FuelExhausted);
    // Between two checks: one iteration, its 400-unit `if` body included, plus its header.
    assert.ok(m.meter.used() <= budget + 400 + 16, `used ${m.meter.used()} of ${budget}`);
  }
});

test('a deadline stops an endless doubled inner loop at a refill; the worker is reused', async () => {
  const bytes = await watText(MODULE);
  const before = engine.stats().workersReplaced;
  const r = await engine.run(bytes, { profile: 'network', invoke: 'forever', args: [0], timeoutMs: 100 });
  assert.equal(r.error?.code, 'TIMEOUT');
  assert.ok(r.durationMs < 100 + LOAD_SLACK_MS, `stopped ${r.durationMs - 100} ms late`);
  assert.equal(engine.stats().workersReplaced, before, 'a worker was replaced');
});
