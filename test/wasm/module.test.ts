import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SectionId, Writer, encodeModule, parseModule } from '../../src/wasm/index.ts';
import { HEADER, SHARED_KERNELS, assertInvalid, cModule, cModules, hex, watFixture, watModules } from './helpers.ts';

const section = (id: number, payloadHex: string): string => {
  const payload = hex(payloadHex);
  const w = new Writer().u8(id).u32(payload.length).bytes(payload);
  return Buffer.from(w.finish()).toString('hex');
};
const mod = (...sections: string[]): Uint8Array => hex(HEADER + sections.join(''));

const TYPE_VOID = section(1, '01 60 00 00');
const FUNC_1 = section(3, '01 00');
const CODE_NOP = section(10, '01 02 00 0b');

test('round trip is byte-identical for clang-built modules', () => {
  for (const { name, bytes } of cModules()) {
    const out = encodeModule(parseModule(bytes));
    assert.ok(Buffer.from(out).equals(Buffer.from(bytes)), name);
  }
});

test('round trip is byte-identical for wabt-built modules (with name sections)', async () => {
  for (const { name, bytes } of await watModules()) {
    const m = parseModule(bytes);
    assert.ok(Buffer.from(encodeModule(m)).equals(Buffer.from(bytes)), name);
    assert.deepEqual(m.customs.map((c) => c.name), ['name'], name);
  }
});

test('round trip keeps non-minimal LEB widths', () => {
  // Section sizes and the body size padded to 5 bytes, as linkers emit them.
  const bytes = hex(`${HEADER} 01 84808080 00 01 60 00 00 03 02 01 00 0a 88808080 00 01 82808080 00 00 0b`);
  const m = parseModule(bytes);
  assert.equal(m.codes.length, 1);
  assert.ok(Buffer.from(encodeModule(m)).equals(Buffer.from(bytes)));
});

test('typed structures: grow.wat', async () => {
  const bytes = await watFixture('grow.wat', { names: true });
  const m = parseModule(bytes);
  assert.deepEqual(
    m.imports.map((i) => [i.module, i.name, i.kind]),
    [['env', 'record', 'func']],
  );
  assert.equal(m.memories.length, 1);
  assert.deepEqual(m.memories[0]!.limits, { flags: 0, min: 1, max: null, shared: false, index64: false });
  assert.equal(m.tables[0]!.type.refType, 'funcref');
  assert.equal(m.tables[0]!.type.limits.min, 4);
  assert.equal(m.globals.length, 2);
  assert.ok(m.globals.every((g) => g.type.valType === 'i32' && g.type.mutable));
  assert.equal(m.start, 1);
  assert.equal(m.elements.length, 1);
  assert.equal(m.elements[0]!.mode, 'active');
  assert.equal(m.elements[0]!.count, 3);
  assert.equal(m.data.length, 1);
  assert.equal(bytes[m.data[0]!.data.start], 0x2a);
  assert.equal(m.functions.length, m.codes.length);
  assert.deepEqual(
    m.exports.map((e) => e.name),
    ['memory', 'grow', 'grow_twice', 'size', 'dispatch', 'started', 'calls'],
  );
  for (const c of m.codes) {
    assert.ok(c.offset < c.bodyStart && c.bodyStart < c.codeStart && c.codeStart < c.end);
    assert.equal(bytes[c.end - 1], 0x0b);
  }
});

test('typed structures: segments of every kind, multi-value types, tags', async () => {
  const f = parseModule(await watFixture('features.wat'));
  assert.deepEqual(
    f.elements.map((e) => [e.mode, e.flags, e.elemType, e.count]),
    [
      ['active', 0, 'funcref', 2],
      ['passive', 1, 'funcref', 2],
      ['declarative', 3, 'funcref', 1],
      ['passive', 5, 'funcref', 2],
    ],
  );
  assert.deepEqual(
    f.data.map((d) => d.mode),
    ['active', 'passive'],
  );
  assert.equal(f.dataCount, 2);
  assert.ok(f.types.some((t) => t.results.length === 2));
  assert.deepEqual(f.tables.map((t) => t.type.refType), ['funcref', 'externref']);
  const eh = parseModule(await watFixture('eh-legacy.wat'));
  assert.equal(eh.tags.length, 2);
});

test('typed structures: an imported shared memory from clang -matomics', () => {
  const imp = parseModule(cModule(SHARED_KERNELS)).imports.find((i) => i.kind === 'memory');
  assert.ok(imp !== undefined && imp.kind === 'memory');
  assert.equal(imp.memory.shared, true);
  assert.equal(imp.memory.max, 16);
});

test('header errors: bad magic, components, unknown versions', () => {
  assertInvalid(() => parseModule(hex('0061736e01000000')), 3, /magic/);
  assertInvalid(() => parseModule(hex('0061736d0d000100')), 4, /component/);
  assertInvalid(() => parseModule(hex('0061736d02000000')), 4, /version/);
  assertInvalid(() => parseModule(hex('0061736d0100')), 6);
  assert.equal(parseModule(hex(HEADER)).sections.length, 0);
});

test('section framing errors carry the offset', () => {
  // Unknown id at offset 8.
  assertInvalid(() => parseModule(mod('0e00')), 8, /unknown section id 14/);
  // Declared size runs past the end.
  assertInvalid(() => parseModule(mod('0105 0160')), 8, /past the end/);
  // Declared size larger than the content: the extra byte is unread.
  assertInvalid(() => parseModule(mod(section(1, '01 60 00 00 00'))), 14, /size mismatch/);
  // Declared size smaller than the content: reading stops at the section end.
  assertInvalid(() => parseModule(mod('0103 01 60 00 00')), 13, /unexpected end/);
  // A trailing byte after the last section is a truncated section header.
  assertInvalid(() => parseModule(mod(TYPE_VOID, '01')), 15, /unexpected end/);
});

test('section order and duplicates', () => {
  assertInvalid(() => parseModule(mod(TYPE_VOID, TYPE_VOID)), 14, /duplicate type/);
  assertInvalid(() => parseModule(mod(FUNC_1, TYPE_VOID, CODE_NOP)), 12, /type section out of order/);
  // Custom sections may appear anywhere; tag (13) sits between memory and global.
  const custom = section(0, '01 78 ff');
  const tag = section(13, '01 00 00');
  const global = section(6, '01 7f 00 41 00 0b');
  const m = parseModule(mod(custom, TYPE_VOID, custom, FUNC_1, tag, global, custom, CODE_NOP));
  assert.deepEqual(m.customs.map((c) => c.name), ['x', 'x', 'x']);
  assertInvalid(() => parseModule(mod(TYPE_VOID, global, tag)), 22, /tag section out of order/);
  // Data count (12) comes before code (10).
  assertInvalid(() => parseModule(mod(TYPE_VOID, FUNC_1, CODE_NOP, section(12, '00'))), 24, /out of order/);
});

test('cross-section counts: function vs code, data count vs data', () => {
  assertInvalid(() => parseModule(mod(TYPE_VOID, FUNC_1)), 14, /disagree/);
  assertInvalid(() => parseModule(mod(TYPE_VOID, CODE_NOP)), 14, /disagree/);
  assertInvalid(() => parseModule(mod(section(12, '01'))), 8, /data count/);
});

test('GC type definitions and bad value types are INVALID_MODULE, not crashes', () => {
  assertInvalid(() => parseModule(mod(section(1, '01 4e 00'))), 11, /GC/);
  assertInvalid(() => parseModule(mod(section(1, '01 60 01 00 00'))), 13, /value type/);
  assertInvalid(() => parseModule(mod(section(5, '01 08 00'))), 11, /limits flags/);
  assertInvalid(() => parseModule(mod(section(7, '01 01 61 05 00'))), 13, /external kind/);
  assertInvalid(() => parseModule(mod(section(9, '01 08'))), 11, /element segment flags/);
  assertInvalid(() => parseModule(mod(section(11, '01 03'))), 11, /data segment flags/);
});

test('encodeModule replaces a section in place and inserts a missing one in order', () => {
  const bytes = mod(section(0, '01 78'), TYPE_VOID, FUNC_1, CODE_NOP, section(0, '01 79'));
  const m = parseModule(bytes);
  const edits = new Map<number, Uint8Array>([
    [SectionId.GLOBAL, hex('01 7f 01 41 2a 0b')],
    [SectionId.MEMORY, hex('01 00 01')],
    [SectionId.TYPE, hex('02 60 00 00 60 01 7f 01 7f')],
  ]);
  const out = parseModule(encodeModule(m, edits));
  assert.deepEqual(
    out.sections.map((s) => s.customName ?? s.name),
    ['x', 'type', 'function', 'memory', 'global', 'code', 'y'],
  );
  assert.equal(out.types.length, 2);
  assert.equal(out.globals.length, 1);
  assert.equal(out.memories[0]!.limits.min, 1);
  // A module with only custom sections gets new sections after them.
  const onlyCustom = parseModule(mod(section(0, '01 78')));
  const added = parseModule(encodeModule(onlyCustom, new Map([[SectionId.TYPE, hex('00')]])));
  assert.deepEqual(added.sections.map((s) => s.name), ['custom', 'type']);
  assert.doesNotThrow(() => new WebAssembly.Module(encodeModule(m, edits)));
});
