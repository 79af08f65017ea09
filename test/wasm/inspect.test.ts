import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyLimits, describeModule, formatSignature } from '../../src/wasm/index.ts';
import { HEADER, SHARED_KERNELS, assertInvalid, cModule, hex, wat, watFixture } from './helpers.ts';

test('describeModule: imports, exports with signatures, memory, table, start, custom sections', async () => {
  const bytes = await watFixture('grow.wat', { names: true });
  const d = describeModule(bytes);
  assert.deepEqual(d.imports, [{ module: 'env', name: 'record', kind: 'func', signature: { params: ['i32'], results: [] } }]);
  assert.deepEqual(
    d.exports.map((e) => [e.name, e.kind, e.signature === undefined ? null : formatSignature(e.signature)]),
    [
      ['memory', 'memory', null],
      ['grow', 'func', '(i32) -> i32'],
      ['grow_twice', 'func', '(i32) -> i32'],
      ['size', 'func', '() -> i32'],
      ['dispatch', 'func', '(i32, i32) -> i32'],
      ['started', 'func', '() -> i32'],
      ['calls', 'func', '() -> i32'],
    ],
  );
  assert.deepEqual(d.memories, [{ index: 0, imported: false, initialPages: 1, maxPages: null, shared: false, index64: false }]);
  assert.deepEqual(d.tables, [{ index: 0, imported: false, refType: 'funcref', initialElements: 4, maxElements: null }]);
  assert.equal(d.start, 1);
  assert.equal(d.hasStart, true);
  assert.deepEqual(d.customSections, ['name']);
  assert.equal(d.importedFunctionCount, 1);
  assert.equal(d.functionCount, 11);
  assert.equal(d.size, bytes.length);
});

test('describeModule: reference types, multi-value, imported globals, tags', async () => {
  const f = describeModule(await watFixture('features.wat'));
  assert.deepEqual(f.imports[1], { module: 'env', name: 'g', kind: 'global', global: { type: 'i32', mutable: false } });
  assert.deepEqual(f.tables.map((t) => t.refType), ['funcref', 'externref']);
  const refs = f.exports.find((e) => e.name === 'refs')!;
  assert.equal(formatSignature(refs.signature!), '(externref) -> i32');
  assert.equal(f.hasStart, false);
  assert.equal(f.start, null);
  const eh = describeModule(await wat('(module (tag $t (export "oops") (param i32 f64)) (global (export "g") (mut i64) (i64.const 0)))'));
  assert.deepEqual(eh.exports, [
    { name: 'oops', kind: 'tag', index: 0, signature: { params: ['i32', 'f64'], results: [] } },
    { name: 'g', kind: 'global', index: 0, global: { type: 'i64', mutable: true } },
  ]);
  const multi = describeModule(await wat('(module (func (export "two") (param v128) (result i32 i64) (i32.const 1) (i64.const 2)))'));
  assert.equal(formatSignature(multi.exports[0]!.signature!), '(v128) -> (i32, i64)');
});

test('describeModule: a WASI program and an imported shared memory', () => {
  const program = describeModule(cModule('program.c'));
  const fdWrite = program.imports.find((i) => i.name === 'fd_write')!;
  assert.equal(fdWrite.module, 'wasi_snapshot_preview1');
  assert.equal(formatSignature(fdWrite.signature!), '(i32, i32, i32, i32) -> i32');
  assert.ok(program.exports.some((e) => e.name === '_start' && formatSignature(e.signature!) === '() -> ()'));
  assert.ok(program.customSections.includes('producers'));
  const shared = describeModule(cModule(SHARED_KERNELS));
  assert.deepEqual(shared.memories.map((m) => [m.imported, m.shared, m.maxPages]), [[true, true, 16]]);
  assert.deepEqual(shared.imports.find((i) => i.kind === 'memory')?.memory?.index, 0);
});

test('describeModule sees the guard added by applyLimits', async () => {
  const r = applyLimits(await watFixture('grow.wat'), { maxMemoryPages: 8, maxTableElements: 8, trapOnGrowFailure: true });
  const d = describeModule(r.bytes);
  assert.deepEqual(d.exports.at(-1), { name: '__membrane_grow_failed', kind: 'global', index: 2, global: { type: 'i32', mutable: true } });
  assert.equal(d.functionCount, r.guardFunctionIndex! + 1);
  assert.equal(d.memories[0]!.maxPages, 8);
});

test('dangling indices are INVALID_MODULE with the offset of the entry naming them', () => {
  // An import of function type 3 when there are no types (import entry at offset 11).
  assertInvalid(() => describeModule(hex(`${HEADER} 02 07 01 01 61 01 62 00 03`)), 11, /type index 3/);
  // An export of function 5 that does not exist (export entry at offset 11).
  assertInvalid(() => describeModule(hex(`${HEADER} 07 05 01 01 66 00 05`)), 11, /function 5/);
});

test('formatSignature', () => {
  assert.equal(formatSignature({ params: ['i32', 'i32'], results: ['i64'] }), '(i32, i32) -> i64');
  assert.equal(formatSignature({ params: [], results: [] }), '() -> ()');
  assert.equal(formatSignature({ params: ['funcref'], results: ['f32', 'externref'] }), '(funcref) -> (f32, externref)');
});
