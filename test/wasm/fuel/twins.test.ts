/**
 * Threaded twins (src/wasm/fuel/twins.ts): direct calls pass the counter in registers, yet every
 * count is the one the cost model gives (golden, by hand, at an ample and a tiny chunk), exits
 * that branch to the function label or `return` early carry it out, declared locals keep their
 * values although they move up by one, and tail calls still run in constant stack.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeInstructions, instrumentFuel, parseModule, Reader } from '../../../src/wasm/index.ts';
import { wat } from './fixtures.ts';
import { metered } from './host.ts';

const MODULE = `(module
  (func $pair (param $x i32) (result i32 i32)
    (local $t i32)
    local.get $x  local.tee $t  i32.const 1  local.get $t  br_if 0
    drop drop
    block
      local.get $x  i32.eqz  br_if 0
      i32.const 5  i32.const 6  return
    end
    i32.const 7  i32.const 8)
  (func (export "sum") (param i32) (result i32)
    local.get 0  call $pair  i32.add)
  (func $even (param i32) (result i32)
    local.get 0  i32.eqz  if (result i32)  i32.const 1  else  local.get 0  i32.const 1  i32.sub  return_call $odd  end)
  (func $odd (param i32) (result i32)
    local.get 0  i32.eqz  if (result i32)  i32.const 0  else  local.get 0  i32.const 1  i32.sub  return_call $even  end)
  (func (export "parity") (param i32) (result i32)
    local.get 0  call $even))`;

test('multi-value results, a br_if out of the function and an early return keep their exact counts', async () => {
  for (const chunk of [1000, 1]) {
    const m = metered(await wat(MODULE), { chunk });
    // sum = [local.get call(+1) i32.add end] 5
    // pair(x ≠ 0) = [local.get local.tee i32.const local.get br_if] 5, taken: (x, 1)
    assert.deepEqual(m.call('sum', 3), { result: 4, fuel: 5 + 5 });
    // pair(0) = 5 + [drop drop block local.get i32.eqz br_if] 6, taken to the block's end
    //         + [i32.const i32.const end] 3: (7, 8)
    assert.deepEqual(m.call('sum', 0), { result: 15, fuel: 5 + 5 + 6 + 3 });
  }
});

test('a threaded caller reaches tail-calling functions through their adapter, in constant stack', async () => {
  const m = metered(await wat(MODULE));
  // parity = [local.get call(+1) end] 4; each step [local.get i32.eqz if] 3 + [local.get i32.const
  // i32.sub return_call(+1)] 5 = 8; the last [local.get i32.eqz if] 3 + [i32.const else] 2 + [end] 1
  assert.deepEqual(m.call('parity', 3), { result: 0, fuel: 4 + 3 * 8 + 6 });
  const n = 1_000_000; // far past any stack: only tail calls get there
  assert.deepEqual(m.call('parity', n), { result: 1, fuel: 4 + n * 8 + 6 });
});

test('exports keep their index, as a wrapper of the twin, and direct calls go twin to twin', async () => {
  const input = await wat(MODULE);
  const out = instrumentFuel(input).bytes;
  const a = parseModule(input);
  const b = parseModule(out);
  const n = a.codes.length;
  assert.equal(b.codes.length, 2 * n + 1); // functions, twins, the local refill
  const calls = (i: number): number[] =>
    [...decodeInstructions(out, b.codes[i]!.codeStart, b.codes[i]!.end)]
      .filter((x) => x.name === 'call' || x.name === 'return_call')
      .map((x) => new Reader(out, x.offset + 1).u32());
  // Defined functions are 1.. after the refill import; twins n further on; the local refill last.
  const [pair, sum, even, odd, parity] = [1, 2, 3, 4, 5];
  const twin = (f: number): number => f + n;
  const localRefill = 1 + 2 * n;
  assert.deepEqual(calls(sum - 1), [twin(sum)]); // the wrapper
  assert.deepEqual(calls(twin(sum) - 1), [localRefill, twin(pair)]); // entry check, then the call
  assert.deepEqual(calls(parity - 1), [twin(parity)]);
  assert.deepEqual(calls(twin(parity) - 1), [localRefill, twin(even)]);
  // $even and $odd tail-call: their bodies stay at their index, their twins adapt
  assert.deepEqual(calls(even - 1), [localRefill, odd]);
  assert.deepEqual(calls(odd - 1), [localRefill, even]);
  assert.deepEqual(calls(twin(even) - 1), [even]);
  assert.deepEqual(calls(localRefill - 1), [0]);
});

test('a function at V8’s 1 000-parameter limit gets no twin and is called with the counter in the global', async () => {
  const params = Array(1000).fill('i32').join(' ');
  const args = Array.from({ length: 1000 }, (_, i) => `i32.const ${i}`).join(' ');
  const m = metered(await wat(`(module
    (func $big (param ${params}) (result i32) local.get 999)
    (func (export "f") (result i32) ${args} call $big))`));
  // f = [1000 × i32.const, call(+1), end] 1003; big = [local.get end] 2
  assert.deepEqual(m.call('f'), { result: 999, fuel: 1003 + 2 });
});

test('declared locals at LEB length boundaries, and padded indices, move up by one and keep their values', () => {
  // Built by hand: wat tools only write minimal LEBs. $f (param i32) (result i32) with 16 400
  // declared i32 locals gives each local x a distinct value, then sums `local.get` and
  // `local.tee` of each x through several encodings (minimal, and padded to 2, 3 and 5 bytes).
  const leb = (n: number, width = 0): number[] => {
    const out: number[] = [];
    do {
      out.push(n % 128);
      n = Math.floor(n / 128);
    } while (n > 0 || out.length < width);
    return out.map((b, i) => (i < out.length - 1 ? b | 0x80 : b));
  };
  const indices = [1, 125, 126, 127, 128, 16382, 16383, 16384];
  const encodings = (x: number): number[][] => [leb(x), leb(x, 2), leb(x, 3), leb(x, 5)];
  const code: number[] = [1, ...leb(16400), 0x7f];
  indices.forEach((x, i) => code.push(0x20, 0, 0x41, i + 1, 0x6a, 0x21, ...leb(x, 3))); // local x = p + i + 1
  code.push(0x41, 0); // the sum
  for (const x of indices) for (const e of encodings(x)) code.push(0x20, ...e, 0x6a, 0x20, ...e, 0x22, ...e, 0x6a);
  code.push(0x0b);
  const section = (id: number, payload: number[]): number[] => [id, ...leb(payload.length), ...payload];
  const bytes = new Uint8Array([
    ...[0, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7f]), // one type: (i32) -> (i32)
    ...section(3, [1, 0]),
    ...section(7, [1, 1, 0x66, 0, 0]), // export "f"
    ...section(10, [1, ...leb(code.length), ...code]),
  ]);
  const original = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports.f as (p: number) => number;
  const expected = indices.reduce((sum, x, i) => sum + encodings(x).length * 2 * (7 + i + 1), 0);
  assert.equal(original(7), expected);
  assert.equal(metered(bytes).call('f', 7).result, expected);
});
