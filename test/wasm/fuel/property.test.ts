/**
 * Property tests over random structured control flow (nested block / loop / if, br, br_if and
 * br_table to any enclosing label, return, calls): the instrumented function returns what the
 * original returns, and its fuel does not depend on the chunk size. This is what exercises label
 * renumbering around outlined loops at every nesting.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { wat } from './fixtures.ts';
import { metered } from './host.ts';

type Stmt =
  | { kind: 'op'; k: number }
  | { kind: 'block' | 'loop'; body: Stmt[] }
  | { kind: 'if'; then: Stmt[]; else: Stmt[] }
  | { kind: 'br' | 'br_if'; label: number }
  | { kind: 'br_table'; labels: number[] }
  | { kind: 'return' | 'call' };

const stmt: fc.Memo<Stmt> = fc.memo((n) =>
  n <= 1
    ? fc.oneof(
        fc.record({ kind: fc.constant('op' as const), k: fc.integer({ min: 1, max: 97 }) }),
        fc.record({ kind: fc.constant('br_if' as const), label: fc.nat(6) }),
        fc.record({ kind: fc.constant('call' as const) }),
      )
    : fc.oneof(
        { weight: 3, arbitrary: fc.record({ kind: fc.constant('op' as const), k: fc.integer({ min: 1, max: 97 }) }) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('block' as const, 'loop' as const), body: fc.array(stmt(n - 1), { maxLength: 4 }) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('if' as const), then: fc.array(stmt(n - 1), { maxLength: 3 }), else: fc.array(stmt(n - 1), { maxLength: 3 }) }) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constantFrom('br' as const, 'br_if' as const), label: fc.nat(6) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant('br_table' as const), labels: fc.array(fc.nat(6), { minLength: 1, maxLength: 4 }) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('return' as const, 'call' as const) }) },
      ),
);

/**
 * WAT for a statement list inside `depth` void blocks (labels 0 … depth − 1, the function label
 * excluded: it would need a value); every loop iteration spends one of $k, so everything ends.
 */
function emit(list: readonly Stmt[], depth: number): string {
  return list
    .map((s): string => {
      switch (s.kind) {
        case 'op':
          return `(local.set $acc (i32.add (i32.mul (local.get $acc) (i32.const 3)) (i32.const ${s.k})))`;
        case 'block':
          return `(block ${emit(s.body, depth + 1)})`;
        case 'loop':
          return `(loop (local.set $k (i32.sub (local.get $k) (i32.const 1)))
            (if (i32.le_s (local.get $k) (i32.const 0)) (then (return (local.get $acc))))
            ${emit(s.body, depth + 1)})`;
        case 'if':
          return `(if (i32.and (local.get $acc) (i32.const 4)) (then ${emit(s.then, depth + 1)}) (else ${emit(s.else, depth + 1)}))`;
        case 'br':
          return depth === 0 ? '(return (local.get $acc))' : `(br ${s.label % depth})`;
        case 'br_if':
          return depth === 0 ? '' : `(br_if ${s.label % depth} (i32.and (local.get $acc) (i32.const 2)))`;
        case 'br_table':
          return depth === 0 ? '' : `(br_table ${s.labels.map((l) => l % depth).join(' ')} (i32.rem_u (local.get $acc) (i32.const 5)))`;
        case 'return':
          return '(return (local.get $acc))';
        case 'call':
          return '(local.set $acc (call $mix (local.get $acc)))';
      }
    })
    .join('\n');
}

function program(body: readonly Stmt[]): string {
  // The body runs inside one void block so that any label it names is a void block or loop.
  return `(module
    (func $mix (param i32) (result i32) (i32.xor (i32.mul (local.get 0) (i32.const 7)) (i32.const 0x5bd1e995)))
    (func (export "run") (param $x i32) (result i32) (local $acc i32) (local $k i32)
      (local.set $acc (local.get $x))
      (local.set $k (i32.const 200))
      (block ${emit(body, 1)})
      (local.get $acc)))`;
}

test('random control flow: same results as the original, fuel independent of the chunk size', async () => {
  const samples = fc.sample(fc.tuple(fc.array(stmt(4), { minLength: 1, maxLength: 6 }), fc.array(fc.integer(), { minLength: 1, maxLength: 4 })), {
    numRuns: 150,
    seed: 20251122,
  });
  for (const [body, inputs] of samples) {
    const source = program(body);
    const bytes = await wat(source);
    const original = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports['run'] as (x: number) => number;
    const fine = metered(bytes, { chunk: 1 });
    const coarse = metered(bytes, { chunk: 1e9 });
    for (const x of inputs) {
      const expected = original(x);
      const a = fine.call('run', x);
      const b = coarse.call('run', x);
      assert.equal(a.result, expected, source);
      assert.equal(b.result, expected, source);
      assert.equal(a.fuel, b.fuel, source);
      assert.ok(a.fuel > 0);
    }
  }
});
