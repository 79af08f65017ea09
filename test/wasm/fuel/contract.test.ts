/**
 * The rewriter's edges: reserved names, unsupported modules, bad cost models, malformed input,
 * the limits rewriter's output as input, and the bodies that must take the slow path.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxError } from '../../../src/errors.ts';
import { DEFAULT_COSTS, GROW_FAILED_EXPORT, applyLimits, instrumentFuel, parseModule } from '../../../src/wasm/index.ts';
import { HEADER, assertInvalid, hex, wat } from '../helpers.ts';
import { watText } from '../../helpers/wat.ts';
import { fuelWat } from './fixtures.ts';
import { metered } from './host.ts';

test('a module that imports from membrane:fuel is INVALID_MODULE (reserved)', async () => {
  const bytes = await wat('(module (import "membrane:fuel" "anything" (func)))');
  assertInvalid(() => instrumentFuel(bytes), parseModule(bytes).imports[0]!.offset, /membrane:fuel is reserved/);
  const global = await wat('(module (import "membrane:fuel" "counter" (global (mut i64))))');
  assertInvalid(() => instrumentFuel(global), undefined, /reserved/);
});

test('a module that exports __membrane_fuel is INVALID_MODULE, so instrumenting twice is too', async () => {
  const bytes = await wat('(module (global (export "__membrane_fuel") (mut i64) (i64.const 1000000)))');
  assertInvalid(() => instrumentFuel(bytes), parseModule(bytes).exports[0]!.offset, /__membrane_fuel is reserved/);
  const once = instrumentFuel(await fuelWat('loop')).bytes;
  assertInvalid(() => instrumentFuel(once), undefined, /reserved/);
});

test('64-bit memories and tables are refused with a clear message', () => {
  const v = { validated: true };
  // memory section: one memory, flags 0x04 (64-bit index), min 1
  assertInvalid(() => instrumentFuel(hex(`${HEADER} 05 03 01 04 01`), v), 11, /memory64 is not supported by the fuel rewriter/);
  // table section: one funcref table, flags 0x04, min 1
  assertInvalid(() => instrumentFuel(hex(`${HEADER} 04 04 01 70 04 01`), v), 11, /table64 is not supported by the fuel rewriter/);
  // imported: env.m memory with flags 0x04
  assertInvalid(() => instrumentFuel(hex(`${HEADER} 02 0a 01 03 65 6e 76 01 6d 02 04 01`), v), 11, /memory64 is not supported/);
});

test('malformed input is INVALID_MODULE with an offset, never another exception', () => {
  for (const v of [{}, { validated: true }]) {
    assertInvalid(() => instrumentFuel(hex('0061736d'), v));
    assertInvalid(() => instrumentFuel(hex(`${HEADER} 0a 04 01 02 00 41`), v));
  }
});

test('a call of a function index the module lacks is INVALID_MODULE: V8 at the gate, the rewriter without it', () => {
  const bytes = hex(`${HEADER} 01 04 01 60 00 00 03 02 01 00 0a 06 01 04 00 10 07 0b`);
  assertInvalid(() => instrumentFuel(bytes), undefined, /invalid module: .*function index/i);
  assertInvalid(() => instrumentFuel(bytes, { validated: true }), 23, /function index 7 is out of range/);
});

test("out-of-range indices are refused by the rewriter's own checks, the V8 gate skipped", async () => {
  const v = { validated: true };
  const cases: [string, RegExp][] = [
    ['(module (func (drop (global.get 0))))', /global index 0 is out of range/],
    ['(module (func (local.set 0 (i64.const 1))))', /local index 0 is out of range/],
    ['(module (func (call 1)))', /function index 1 is out of range/],
    ['(module (func (return_call 1)))', /function index 1 is out of range/],
    ['(module (func (drop (ref.func 1))))', /function index 1 is out of range/],
    ['(module (type (func)) (table 1 funcref) (func (call_indirect (type 1) (i32.const 0))))', /type index 1 is out of range/],
    ['(module (func (br 1)))', /label index 1 is out of range/],
    ['(module (func (block (br_if 2 (i32.const 0)))))', /label index 2 is out of range/],
    ['(module (func) (export "f" (func 1)))', /function index 1 is out of range/],
    ['(module (func) (start 1))', /function index 1 is out of range/],
    ['(module (export "g" (global 0)))', /global index 0 is out of range/],
  ];
  for (const [text, reason] of cases) {
    const bytes = (await watText(text)) as Uint8Array<ArrayBuffer>;
    assert.equal(WebAssembly.validate(bytes), false, text);
    assertInvalid(() => instrumentFuel(bytes, v), undefined, reason);
  }
  // Binary only (wabt would repair or reject these): a block type, a local's typed reference and
  // a function type's typed reference naming a type past the input's one type.
  const typeSec = '01 04 01 60 00 00';
  assertInvalid(() => instrumentFuel(hex(`${HEADER} ${typeSec} 03 02 01 00 0a 07 01 05 00 02 01 0b 0b`), v), undefined, /type index 1 is out of range/);
  assertInvalid(() => instrumentFuel(hex(`${HEADER} ${typeSec} 03 02 01 00 0a 07 01 05 01 01 63 01 0b`), v), undefined, /heap type index 1 is out of range/);
  assertInvalid(() => instrumentFuel(hex(`${HEADER} 01 06 01 60 01 63 01 00 03 02 01 00 0a 04 01 02 00 0b`), v), undefined, /heap type index 1 is out of range/);
});

test('a cost model outside its bounds is POLICY_INVALID', async () => {
  const bytes = await fuelWat('straight');
  for (const costs of [{ instruction: 0 }, { call: -1 }, { memoryBytesPerUnit: 0 }, { memoryPage: 1.5 }, { tableElement: 1e9 }]) {
    assert.throws(
      () => instrumentFuel(bytes, { costs }),
      (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID',
      JSON.stringify(costs),
    );
  }
  assert.deepEqual(DEFAULT_COSTS, { instruction: 1, call: 1, memoryBytesPerUnit: 8, tableElement: 1, memoryPage: 64 });
  assert.ok(Object.isFrozen(DEFAULT_COSTS));
});

test("the limits rewriter's output (guard function, grow flag) is instrumented like any code", async () => {
  const limited = applyLimits(await wat('(module (memory (export "memory") 1) (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0))))'), {
    maxMemoryPages: 4,
    maxTableElements: 10,
    trapOnGrowFailure: true,
  });
  const m = metered(limited.bytes);
  // grow = [local.get call(+1) end] 4, guard = [local.get memory.grow local.tee i32.const i32.eq if] 6
  // + [local.get global.set unreachable] (not run; the if's `end` after it is dead code)
  // + [local.get end] 2, plus 64 units per page requested
  assert.deepEqual(m.call('grow', 2), { result: 1, fuel: 4 + 6 + 2 + 128 });
  assert.throws(() => m.call('grow', 8), WebAssembly.RuntimeError);
  assert.equal((m.exports[GROW_FAILED_EXPORT] as WebAssembly.Global).value, 8);
});

test('stats count functions, loop headers, charge points and bulk sites', async () => {
  // loop.wat: run has entry + 2 one-unit blocks… see golden.test.ts for the blocks
  assert.deepEqual(instrumentFuel(await fuelWat('loop')).stats, {
    functions: 2,
    loops: 2,
    // run: entry [block loop] (a block's body continues the block before it), header, body,
    // [local.get end] after $done = 4 (the dead [end] after br is not charged);
    // spin: entry [loop], header, [end end] (code after a loop's end joins its last block) = 3
    chargePoints: 7,
    bulkSites: 0,
    inputBytes: (await fuelWat('loop')).length,
    outputBytes: instrumentFuel(await fuelWat('loop')).bytes.length,
  });
  assert.equal(instrumentFuel(await fuelWat('bulk')).stats.bulkSites, 6);
});

test('a body at V8’s 50 000-locals limit keeps its counter in the global and still counts exactly', () => {
  // (func (export "f") (param i32) (result i32) (local 49999 i64) local.get 0): 50 000 locals
  const leb = (n: number): string => [n & 0x7f | 0x80, (n >> 7) & 0x7f | 0x80, n >> 14].map((b) => b.toString(16).padStart(2, '0')).join(' ');
  const body = `01 ${leb(49999)} 7e 20 00 0b`;
  const bytes = hex(`${HEADER} 01 06 01 60 01 7f 01 7f 03 02 01 00 07 05 01 01 66 00 00 0a 0a 01 08 ${body}`);
  assert.ok(WebAssembly.validate(bytes));
  const m = metered(bytes);
  assert.deepEqual(m.call('f', 3), { result: 3, fuel: 2 });
});

test('a body that would outgrow V8’s function-size limit once metered is INVALID_MODULE, not a module V8 refuses', () => {
  // One function of 240 000 empty loops (3 bytes each): metering multiplies a loop's size.
  const loops = 240_000;
  const inner = new Uint8Array(loops * 3).map((_, i) => [0x03, 0x40, 0x0b][i % 3]!);
  const leb = (n: number): number[] => {
    const out: number[] = [];
    do {
      let b = n & 0x7f;
      n >>>= 7;
      if (n) b |= 0x80;
      out.push(b);
    } while (n);
    return out;
  };
  const body = [0x00, ...inner, 0x0b];
  const code = [0x01, ...leb(body.length), ...body];
  const bytes = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, ...leb(code.length), ...code]);
  assert.ok(WebAssembly.validate(bytes));
  assert.throws(() => instrumentFuel(bytes), (e: unknown) => e instanceof SandboxError && e.code === 'INVALID_MODULE' && /would exceed 7654321 bytes/.test(e.message));
});
