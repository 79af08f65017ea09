// The work wall with unchecked entries: a threaded function whose every call sits inside a loop
// (or that calls nothing and has no loop) charges its entry without checking it
// (src/wasm/fuel/scan.ts `entryCheck`). An attacker who builds recursion, or a loop whose body
// is nothing but a call, around such functions must still run out of fuel — never out of stack,
// never uncharged — and a host that re-enters such a function through its export meets a check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeInstructions, instrumentFuel, parseModule } from '../../src/wasm/index.ts';
import { watText } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { FuelExhausted, metered } from '../wasm/fuel/host.ts';

const engine = testEngine({ poolSize: 1 });

const FUNCS = `
  ;; recursion whose call is inside a loop: the entry is not checked, the loop header is
  (func $deep (export "deep") (param $n i32) (result i32)
    (local $s i32)
    (loop $l
      (local.set $s (i32.add (local.get $s) (call $deep (i32.add (local.get $n) (i32.const 1)))))
      (br_if $l (i32.eqz (local.get $s))))
    (local.get $s))
  ;; a leaf: no loop, no call, no check of its own
  (func $leaf (export "leaf") (param i32) (result i32)
    local.get 0  i32.const 1  i32.add)
  ;; a loop whose body is a call to the leaf
  (func (export "calls") (param $n i32) (result i32)
    (local $s i32)
    loop $l
      local.get $s  call $leaf  local.set $s
      local.get $s  local.get $n  i32.lt_u  br_if $l
    end
    local.get $s)
  ;; a loop that never ends, around a call to the leaf
  (func (export "forever") (param i32)
    loop $l
      local.get 0  call $leaf  drop
      br $l
    end)
  ;; mutual recursion: $ping calls inside a loop (unchecked entry), $pong outside (checked)
  (func $ping (export "ping") (param $n i32) (result i32)
    (loop $l (br_if $l (i32.eqz (call $pong (local.get $n)))))
    i32.const 1)
  (func $pong (param $n i32) (result i32)
    (call $ping (local.get $n)))
`;
/** For the engine, which supplies no `env` imports. */
const ALONE = `(module ${FUNCS})`;
/** With a host function that calls back into the leaf's export. */
const MODULE = `(module
  (import "env" "again" (func $again (param i32) (result i32)))
  ${FUNCS}
  (func (export "via_host") (param $n i32) (result i32)
    (call $again (local.get $n))))`;

const imports = (leaf: () => (x: number) => number): WebAssembly.Imports => ({
  env: {
    again: (n: number): number => {
      let s = 0;
      for (let i = 0; i < n; i++) s = leaf()(s);
      return s;
    },
  },
});

test('the leaf, $deep and $ping are written without an entry check; their wrappers check instead', async () => {
  const input = await watText(ALONE);
  const out = instrumentFuel(input).bytes;
  const m = parseModule(out);
  const imported = m.imports.filter((i) => i.kind === 'func').length;
  const body = (name: string): string[] => {
    const index = m.exports.find((e) => e.name === name)!.index;
    const code = m.codes[index - imported]!;
    return [...decodeInstructions(out, code.codeStart, code.end)].map((i) => i.name);
  };
  // A wrapper is glue around one call of the twin; an `if` in it is the entry check it took over.
  for (const name of ['leaf', 'deep', 'ping']) assert.ok(body(name).includes('if'), `${name}: ${body(name).join(' ')}`);
  // `calls` makes its call inside a loop too; `forever` likewise: both unchecked at entry.
  for (const name of ['calls', 'forever']) assert.ok(body(name).includes('if'), name);
});

test('unbounded recursion and an endless loop of calls around unchecked entries end FUEL_EXHAUSTED', async () => {
  const bytes = await watText(ALONE);
  // Unbounded recursion through an unchecked entry: the loop header in every frame asks for
  // fuel, so it ends FUEL_EXHAUSTED long before the stack is exhausted.
  const r = await engine.run(bytes, { invoke: 'deep', args: [0], fuel: 100_000 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(r.error));
  const p = await engine.run(bytes, { invoke: 'ping', args: [0], fuel: 100_000 });
  assert.equal(p.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(p.error));
  const f = await engine.run(bytes, { invoke: 'forever', args: [0], fuel: 100_000 });
  assert.equal(f.error?.code, 'FUEL_EXHAUSTED', JSON.stringify(f.error));
});

test('a loop whose body is a call to an unchecked leaf is charged for every iteration and every call', async () => {
  let exports: Record<string, unknown> = {};
  const m = metered(await watText(MODULE), { imports: imports(() => exports['leaf'] as (x: number) => number) });
  exports = m.exports;
  // calls(n): [loop] 1; header [local.get call(+1) local.set local.get local.get i32.lt_u br_if] 8
  // and $leaf [local.get i32.const i32.add end] 4, n times; after the loop [end local.get end] 3
  for (const n of [1, 10, 1000]) assert.deepEqual(m.call('calls', n), { result: n, fuel: 1 + 12 * n + 3 });
  // A chunk of 1: a refill at nearly every check, the same count.
  const tiny = metered(await watText(MODULE), { chunk: 1, imports: imports(() => tiny.exports['leaf'] as (x: number) => number) });
  assert.deepEqual(tiny.call('calls', 1000), { result: 1000, fuel: 1 + 12 * 1000 + 3 });
});

test('recursion through an unchecked entry exhausts a small budget, not the stack', async () => {
  const m = metered(await watText(MODULE), { budget: 50_000, imports: imports(() => m.exports['leaf'] as (x: number) => number) });
  assert.throws(() => m.call('deep', 0), FuelExhausted);
  const n = metered(await watText(MODULE), { budget: 50_000, imports: imports(() => n.exports['leaf'] as (x: number) => number) });
  assert.throws(() => n.call('ping', 0), FuelExhausted);
});

test('a host that re-enters an unchecked leaf through its export meets the wrapper’s check', async () => {
  const m = metered(await watText(MODULE), { budget: 10_000, imports: imports(() => m.exports['leaf'] as (x: number) => number) });
  // 1e7 host-driven calls of 4 units each would be 4e7 units: the budget ends it early.
  assert.throws(() => m.call('via_host', 10_000_000), FuelExhausted);
  assert.ok(m.meter.used() <= 10_000 + 8, `used ${m.meter.used()}`);
  // Straight from the host, call after call: a spent budget stops the next one.
  const h = metered(await watText(MODULE), { budget: 1000, imports: imports(() => leaf) });
  const leaf = h.exports['leaf'] as (x: number) => number;
  assert.throws(() => {
    for (let i = 0; i < 1_000_000; i++) leaf(i);
  }, FuelExhausted);
});
