import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Imm, Writer, allOpcodes, decodeInstructions, opName, parseModule } from '../../src/wasm/index.ts';
import type { OpcodeInfo } from '../../src/wasm/index.ts';
import { ALL_FEATURES, HEADER, assertInvalid, cModules, hex, wabt, watModules } from './helpers.ts';

/** Decodes every body and checks that the instruction spans tile it exactly; returns the op names. */
function assertTiles(bytes: Uint8Array, label: string): Map<string, number> {
  const seen = new Map<string, number>();
  const m = parseModule(bytes);
  for (const [i, body] of m.codes.entries()) {
    let at = body.codeStart;
    let last = '';
    for (const ins of decodeInstructions(bytes, body.codeStart, body.end)) {
      assert.equal(ins.offset, at, `${label} body ${i}: gap or overlap at ${at}`);
      assert.ok(ins.end > ins.offset);
      at = ins.end;
      last = ins.name;
      seen.set(ins.name, (seen.get(ins.name) ?? 0) + 1);
    }
    assert.equal(at, body.end, `${label} body ${i}: spans stop before the body ends`);
    assert.equal(last, 'end');
  }
  return seen;
}

test('spans tile every body of clang-built modules (plain, SIMD, bulk memory, atomics)', () => {
  const seen = new Map<string, number>();
  for (const { name, bytes } of cModules()) for (const [op] of assertTiles(bytes, name)) seen.set(op, 1);
  for (const op of ['call_indirect', 'memory.grow', 'v128.load', 'i8x16.shuffle', 'memory.copy', 'i32.atomic.rmw.add']) {
    assert.ok(seen.has(op), `expected the C builds to contain ${op}`);
  }
});

test('spans tile every body of the .wat fixtures (SIMD, atomics, tail calls, EH, exnref, ref types)', async () => {
  const seen = new Map<string, number>();
  for (const { name, bytes } of await watModules()) for (const [op] of assertTiles(bytes, name)) seen.set(op, 1);
  const expected = [
    'br_table', 'return_call', 'return_call_indirect', 'select', 'table.grow', 'ref.null', 'ref.func',
    'memory.init', 'table.copy', 'i64.trunc_sat_f64_u', 'i64.extend32_s', 'i8x16.shuffle', 'v128.const',
    'v128.load32_lane', 'v128.store64_lane', 'i16x8.replace_lane', 'atomic.fence', 'memory.atomic.wait64',
    'i64.atomic.rmw32.cmpxchg_u', 'try', 'catch', 'catch_all', 'rethrow', 'delegate', 'throw', 'try_table',
    'throw_ref', 'f32x4.relaxed_madd', 'i32x4.relaxed_dot_i8x16_i7x16_add_s',
  ];
  for (const op of expected) assert.ok(seen.has(op), `expected the fixtures to contain ${op}`);
});

const leb = (n: number): number[] => [...new Writer().u32(n).finish()];
const sec = (id: number, payload: number[]): number[] => [id, ...leb(payload.length), ...payload];

/** A module with one of everything an immediate may name, and `body` as its only function. */
function moduleWith(body: number[]): Uint8Array {
  const code = [1, 1, 0x7f, ...body, 0x0b];
  return new Uint8Array([
    ...hex(HEADER),
    ...sec(1, [2, 0x60, 0, 0, 0x60, 1, 0x7f, 0]),
    ...sec(3, [1, 0]),
    ...sec(4, [1, 0x70, 0, 1]),
    ...sec(5, [1, 0, 1]),
    ...sec(13, [1, 0, 1]),
    ...sec(6, [1, 0x7f, 1, 0x41, 0, 0x0b]),
    ...sec(9, [1, 1, 0, 1, 0]),
    ...sec(12, [1]),
    ...sec(10, [1, ...leb(code.length), ...code]),
    ...sec(11, [1, 1, 0]),
  ]);
}

const SAMPLE_IMMEDIATE: Record<number, number[]> = {
  [Imm.NONE]: [],
  [Imm.BLOCK]: [0x40],
  [Imm.BR_TABLE]: [1, 0, 0],
  [Imm.INDEX]: [0],
  [Imm.INDEX2]: [0, 0],
  [Imm.MEMARG]: [0, 0],
  [Imm.I32]: [0x7f],
  [Imm.I64]: [0x80, 0x01],
  [Imm.F32]: [0, 0, 0, 0],
  [Imm.F64]: [0, 0, 0, 0, 0, 0, 0, 0],
  [Imm.SELECT_T]: [1, 0x7f],
  [Imm.HEAP_TYPE]: [0x70],
  [Imm.TRY_TABLE]: [0x40, 0],
  [Imm.ZERO_BYTE]: [0],
  [Imm.BYTES16]: new Array<number>(16).fill(0),
  [Imm.LANE]: [0],
  [Imm.MEMARG_LANE]: [0, 0, 0],
};

function sampleBody(op: OpcodeInfo): number[] {
  const code = op.key < 0x100 ? [op.key] : [op.key >>> 16, ...leb(op.key & 0xffff)];
  const wrapped: Record<string, number[]> = {
    else: [0x04, 0x40, 0x01, 0x05, 0x01, 0x0b],
    catch: [0x06, 0x40, 0x07, 0x00, 0x0b],
    catch_all: [0x06, 0x40, 0x19, 0x0b],
    delegate: [0x06, 0x40, 0x18, 0x00],
    end: [0x02, 0x40, 0x0b],
  };
  const body = wrapped[op.name] ?? [...code, ...SAMPLE_IMMEDIATE[op.imm]!];
  return op.imm === Imm.BLOCK || op.imm === Imm.TRY_TABLE ? [...body, 0x0b] : body;
}

/** Typed-function-reference and GC instructions wabt's binary reader cannot render here. */
const WABT_CANNOT_RENDER = new Set(['return_call_ref', 'ref.eq', 'ref.as_non_null', 'br_on_null', 'br_on_non_null']);

test('the opcode table agrees with wabt on every name and immediate shape', async () => {
  const w = await wabt();
  const ops = allOpcodes();
  assert.ok(ops.length > 500, `only ${ops.length} opcodes in the table`);
  for (const op of ops) {
    if (WABT_CANNOT_RENDER.has(op.name)) continue;
    const bytes = moduleWith(sampleBody(op));
    const body = parseModule(bytes).codes[0]!;
    const mine = [...decodeInstructions(bytes, body.codeStart, body.end)].map((i) => i.name).slice(0, -1);
    const wm = w.readWasm(bytes, { ...ALL_FEATURES, check: true });
    const text = wm.toText({});
    wm.destroy();
    const fn = text.slice(text.indexOf('\n  (func') + 1).split('\n').slice(1);
    const theirs = fn
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('(') && l !== ')')
      .map((l) => l.split(/[\s)]/)[0]);
    assert.deepEqual(mine, theirs.slice(0, mine.length), `opcode ${op.name}`);
  }
});

test('unknown opcodes are INVALID_MODULE at the opcode offset', () => {
  const cases: [number[], RegExp][] = [
    [[0x27], /unknown opcode 0x27/],
    [[0xfb, 0x00], /unknown opcode 0xfb/],
    [[0xfc, 0x12], /unknown opcode 0xfc 18/],
    [[0xfd, 0x9a, 0x01], /unknown opcode 0xfd 154/],
    [[0xfe, 0x04], /unknown opcode 0xfe 4/],
    [[0xfd, 0x80, 0x80, 0x80, 0x80, 0x01], /unknown opcode/],
  ];
  for (const [ins, pattern] of cases) {
    const bytes = moduleWith([0x01, ...ins]);
    const body = parseModule(bytes).codes[0]!;
    assertInvalid(() => [...decodeInstructions(bytes, body.codeStart, body.end)], body.codeStart + 1, pattern);
  }
});

test('malformed immediates and structure are INVALID_MODULE', () => {
  const decode = (ins: number[], extraEnd = true): unknown => {
    const code = [0, ...ins, ...(extraEnd ? [0x0b] : [])];
    const bytes = new Uint8Array([...hex(HEADER), ...code]);
    return [...decodeInstructions(bytes, 9, bytes.length)];
  };
  assertInvalid(() => decode([0xfe, 0x03, 0x01]), 11, /zero byte/);
  assertInvalid(() => decode([0x0b, 0x01]), 10, /after the final end/);
  assertInvalid(() => decode([0x02, 0x40, 0x0b], false), 12, /before its final end/);
  assertInvalid(() => decode([0x18, 0x00]), 9, /delegate outside/);
  assertInvalid(() => decode([0x02, 0x7a, 0x0b]), 10, /block type/);
  assertInvalid(() => decode([0x02, 0xff, 0x7f, 0x0b]), 10, /block type/);
  assertInvalid(() => decode([0x1f, 0x40, 0x01, 0x04, 0x00, 0x0b]), 12, /catch clause/);
  assertInvalid(() => decode([0x41, 0x80, 0x80], false), 12, /unexpected end/);
});

test('multi-byte immediates: memarg with a memory index, s33 type-index block types, long br_table', () => {
  const code = [
    0x28, 0x42, 0x01, 0x00, // i32.load align=2 (bit 6: memory index 1 follows) offset=0
    0x02, 0x80, 0x01, 0x0b, // block (type 128) … end
    0x0e, 0x03, 0x00, 0x01, 0x80, 0x01, 0x00, // br_table 0 1 128 default 0
    0x0b,
  ];
  const spans = [...decodeInstructions(Uint8Array.from(code), 0, code.length)].map((i) => [i.name, i.offset, i.end]);
  assert.deepEqual(spans, [
    ['i32.load', 0, 4],
    ['block', 4, 7],
    ['end', 7, 8],
    ['br_table', 8, 15],
    ['end', 15, 16],
  ]);
  assert.equal(opName(0x40), 'memory.grow');
  assert.equal(opName(0xfd000d), 'i8x16.shuffle');
});

const JITL = new URL('../../node_modules/@jitl', import.meta.url).pathname;

function wasmFilesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return wasmFilesUnder(p);
    return name.endsWith('.wasm') ? [p] : [];
  });
}

test('spans tile every body of the QuickJS builds in node_modules/@jitl', () => {
  assert.ok(existsSync(JITL), '@jitl/quickjs-wasmfile-release-sync is a devDependency: run npm ci');
  const files = wasmFilesUnder(JITL);
  assert.ok(files.length > 0, 'no .wasm files under @jitl');
  for (const f of files) assertTiles(new Uint8Array(readFileSync(f)), f);
});
