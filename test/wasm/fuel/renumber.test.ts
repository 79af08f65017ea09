/**
 * Renumbering: adding the refill import moves every defined function up by one, and every
 * reference moves with it — name section, element segments (all 8 encodings), exports, start,
 * global initializers, `call`/`ref.func` in code — while imported functions keep their indices.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FUEL_GLOBAL_EXPORT, FUEL_IMPORT_MODULE, FUEL_IMPORT_NAME, Reader, Writer, decodeInstructions, instrumentFuel, parseModule, readConstExpr } from '../../../src/wasm/index.ts';
import type { ParsedModule } from '../../../src/wasm/index.ts';
import { wat } from '../helpers.ts';
import { fuelWat, wat as watNamed } from './fixtures.ts';

const funcImports = (m: ParsedModule): number => m.imports.filter((i) => i.kind === 'func').length;

/** Subsection id → decoded payload: a map (1) or an indirect map (2, 3) as [index, inner][]; others raw. */
function nameSection(bytes: Uint8Array): Map<number, unknown> {
  const m = parseModule(bytes);
  const custom = m.customs.find((c) => c.name === 'name');
  assert.ok(custom !== undefined, 'no name section');
  const r = new Reader(bytes, custom.data.start, custom.data.end);
  const out = new Map<number, unknown>();
  const nameMap = (s: Reader): [number, string][] => s.vec((x) => [x.u32(), x.name()]);
  while (!r.atEnd()) {
    const id = r.u8();
    const s = r.sub(r.u32());
    if (id === 1) out.set(id, nameMap(s));
    else if (id === 2 || id === 3) out.set(id, s.vec((x) => [x.u32(), nameMap(x)]));
    else out.set(id, Array.from(s.take(s.remaining)));
  }
  return out;
}

test('function names move with their functions; the refill import and helpers get names', async () => {
  const input = await fuelWat('indices');
  const output = instrumentFuel(input).bytes;
  const before = nameSection(input);
  const after = nameSection(output);
  const shift = funcImports(parseModule(input));
  const moved = (before.get(1) as [number, string][]).map(([i, n]): [number, string] => [i < shift ? i : i + 1, n]);
  const expected = [...moved.slice(0, shift), [shift, `${FUEL_IMPORT_MODULE}.${FUEL_IMPORT_NAME}`], ...moved.slice(shift)];
  // …followed by the local refill and the helpers for `table.init $t $p1` and `table.init $t $p2`,
  // after every defined function and its threaded twin (unnamed).
  const functions = funcImports(parseModule(input)) + 1 + 2 * parseModule(input).codes.length;
  assert.deepEqual(after.get(1), [
    ...expected,
    [functions, '__membrane_fuel_refill'],
    [functions + 1, '__membrane_fuel_table.init_1_0'],
    [functions + 2, '__membrane_fuel_table.init_5_0'],
  ]);
  assert.deepEqual(
    (after.get(1) as [number, string][]).find(([, n]) => n === 'e'),
    [(before.get(1) as [number, string][]).find(([, n]) => n === 'e')![0] + 1, 'e'],
  );
  // Local names (wabt writes them for every function) move too.
  const locals = (before.get(2) as [number, unknown][]).map(([i, inner]) => [i < shift ? i : i + 1, inner]);
  assert.deepEqual(after.get(2), locals);
  // A helper added for a bulk instruction is named after it.
  const source = `(module (memory 1) (data $d "x")
    (func $f (memory.fill (i32.const 0) (i32.const 0) (i32.const 1)) (memory.init $d (i32.const 0) (i32.const 0) (i32.const 1))))`;
  const bulk = nameSection(instrumentFuel(await watNamed(source)).bytes).get(1) as [number, string][];
  assert.deepEqual(bulk[0], [0, 'membrane:fuel.refill']);
  assert.deepEqual(bulk[1], [1, 'f']);
  assert.ok(bulk.some(([, n]) => n === '__membrane_fuel_memory.fill_0'));
  assert.ok(bulk.some(([, n]) => n === '__membrane_fuel_memory.init_0_0'));
});

test('label names move, other name subsections are kept byte for byte, a malformed name section is dropped', async () => {
  const base = await wat('(module (import "m" "f" (func)) (func) (func (call 0) (call 1)) (global i32 (i32.const 0)))');
  const sub = (id: number, fill: (w: Writer) => void): Uint8Array => {
    const body = new Writer();
    fill(body);
    return new Writer().u8(id).u32(body.length).bytes(body.finish()).finish();
  };
  const names = [
    sub(0, (w) => w.name('mod')),
    sub(1, (w) => w.u32(3).u32(0).name('imp').u32(1).name('one').u32(2).name('two')),
    sub(2, (w) => w.u32(1).u32(2).u32(1).u32(0).name('x')),
    sub(3, (w) => w.u32(2).u32(1).u32(1).u32(0).name('L1').u32(2).u32(1).u32(0).name('L2')),
    sub(7, (w) => w.u32(1).u32(0).name('g')),
  ];
  const section = new Writer().name('name');
  for (const n of names) section.bytes(n);
  const payload = section.finish();
  const input = new Writer().bytes(base).u8(0).u32(payload.length).bytes(payload).finish();
  const after = nameSection(instrumentFuel(input).bytes);
  assert.deepEqual(after.get(0), Array.from(names[0]!.subarray(2)));
  // (the two twins at 4 and 5 are unnamed; the local refill follows them)
  assert.deepEqual(after.get(1), [[0, 'imp'], [1, 'membrane:fuel.refill'], [2, 'one'], [3, 'two'], [6, '__membrane_fuel_refill']]);
  assert.deepEqual(after.get(2), [[3, [[0, 'x']]]]);
  assert.deepEqual(after.get(3), [[2, [[0, 'L1']]], [3, [[0, 'L2']]]]);
  assert.deepEqual(after.get(7), Array.from(names[4]!.subarray(2)));

  const broken = new Writer().bytes(base).u8(0).u32(8).name('name').u8(1).u32(9).u8(0).finish();
  const out = instrumentFuel(broken).bytes;
  assert.equal(parseModule(out).customs.length, 0);
  new WebAssembly.Module(out);
});

/** Each element segment's entries: a function index, or null for ref.null. */
function elementEntries(bytes: Uint8Array): { flags: number; entries: (number | null)[] }[] {
  const m = parseModule(bytes);
  return m.elements.map((e) => {
    const r = new Reader(bytes, e.offset, e.end);
    const flags = r.u32();
    const exprs = (flags & 4) !== 0;
    if ((flags & 3) === 2) r.u32();
    if ((flags & 1) === 0) readConstExpr(r);
    if (flags & 3) r.u8();
    const entries: (number | null)[] = [];
    for (let n = r.u32(); n > 0; n--) {
      if (!exprs) {
        entries.push(r.u32());
        continue;
      }
      let value: number | null = null;
      const expr = readConstExpr(r);
      for (const ins of decodeInstructions(bytes, expr.start, expr.end)) {
        if (ins.name === 'ref.func') value = new Reader(bytes, ins.offset + 1).u32();
      }
      entries.push(value);
    }
    return { flags, entries };
  });
}

test('element segments in all 8 encodings, exports, start, global initializers and code are renumbered', async () => {
  const input = await fuelWat('indices');
  const output = instrumentFuel(input).bytes;
  const a = parseModule(input);
  const b = parseModule(output);
  const shift = funcImports(a);
  assert.equal(shift, 2);
  const map = (i: number | null): number | null => (i === null || i < shift ? i : i + 1);

  const before = elementEntries(input);
  assert.deepEqual(before.map((s) => s.flags), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(elementEntries(output), before.map((s) => ({ flags: s.flags, entries: s.entries.map(map) })));
  assert.ok(before[2]!.entries.includes(1), 'segment 2 holds an imported function, which does not move');

  assert.deepEqual(
    b.exports.slice(0, -1),
    a.exports.map((e) => ({ ...e, index: e.kind === 'func' ? map(e.index) : e.index, offset: b.exports.find((x) => x.name === e.name)!.offset })),
  );
  assert.equal(b.start, map(a.start));

  const refFunc = (m: ParsedModule, bytes: Uint8Array, g: number): number | null => {
    const init = m.globals[g]!.init;
    const ins = [...decodeInstructions(bytes, init.start, init.end)][0]!;
    return ins.name === 'ref.func' ? new Reader(bytes, ins.offset + 1).u32() : null;
  };
  assert.equal(refFunc(b, output, 0), map(refFunc(a, input, 0)));

  // Calls and ref.func in code: every call target of the original, moved, in the same order.
  const n = a.codes.length;
  const targets = (bytes: Uint8Array, codes: ParsedModule['codes']): number[] =>
    codes.flatMap((c) =>
      [...decodeInstructions(bytes, c.codeStart, c.end)]
        .filter((i) => ['call', 'return_call', 'ref.func'].includes(i.name))
        .map((i) => new Reader(bytes, i.offset + 1).u32()),
    );
  // Each function's real body is at its index or at its twin's (N further on); the other holds
  // glue (local.get / global.get / global.set and one call; a wrapper whose twin does not check
  // its entry first checks the counter: i64.const 0, i64.lt_s, if, a call to refill), which no
  // metered body is (every one charges its entry with an i64.sub).
  const GLUE = ['local.get', 'global.get', 'global.set', 'call', 'end', 'i64.const', 'i64.lt_s', 'if'];
  const glue = (c: ParsedModule['codes'][number]): boolean => [...decodeInstructions(output, c.codeStart, c.end)].every((i) => GLUE.includes(i.name));
  const real = b.codes.slice(0, n).map((c, i) => (glue(c) ? b.codes[n + i]! : c));
  assert.equal(real.filter(glue).length, 0);
  // (minus the calls the rewrite adds: to refill, and to the local refill and helpers after the twins; a call to a
  // twin counts as a call to its function)
  const refill = shift;
  const firstTwin = shift + 1 + n;
  const firstHelper = firstTwin + n;
  assert.deepEqual(
    targets(output, real)
      .filter((t) => t !== refill && t < firstHelper)
      .map((t) => (t >= firstTwin ? t - n : t)),
    targets(input, a.codes).map((t) => map(t)!),
  );
});

test('the refill import is the last import; the counter is the last global, exported', async () => {
  const input = await fuelWat('indices');
  const a = parseModule(input);
  const b = parseModule(instrumentFuel(input).bytes);
  const strip = ({ offset: _, ...rest }: { offset: number }): object => rest;
  assert.deepEqual(b.imports.slice(0, -1).map(strip), a.imports.map(strip));
  const last = b.imports.at(-1)!;
  assert.equal(last.module, FUEL_IMPORT_MODULE);
  assert.equal(last.name, FUEL_IMPORT_NAME);
  assert.ok(last.kind === 'func');
  assert.deepEqual(b.types[last.typeIndex], { params: ['i64'], results: ['i64'] });
  assert.deepEqual(b.globals.at(-1)!.type, { valType: 'i64', mutable: true });
  const importedGlobals = a.imports.filter((i) => i.kind === 'global').length;
  assert.deepEqual(b.exports.at(-1), { name: FUEL_GLOBAL_EXPORT, kind: 'global', index: importedGlobals + a.globals.length, offset: b.exports.at(-1)!.offset });
});

test('an existing (i64) -> (i64) type is reused; a module with nothing in it still gets the contract', async () => {
  const input = await wat('(module (type (func (param i64) (result i64))) (func (export "f") (param i64) (result i64) local.get 0))');
  const out = parseModule(instrumentFuel(input).bytes);
  // The refill import reuses type 0; the only type added is f's threaded twin.
  const refillImport = out.imports.at(-1)!;
  assert.ok(refillImport.kind === 'func');
  assert.equal(refillImport.typeIndex, 0);
  assert.deepEqual(out.types.slice(1), [{ params: ['i64', 'i64'], results: ['i64', 'i64'] }]);
  const empty = instrumentFuel(await wat('(module)'));
  const m = parseModule(empty.bytes);
  assert.equal(m.imports.length, 1);
  assert.equal(m.globals.length, 1);
  assert.deepEqual(m.exports.map((e) => e.name), [FUEL_GLOBAL_EXPORT]);
  assert.deepEqual(empty.stats, { functions: 0, loops: 0, chargePoints: 0, bulkSites: 0, inputBytes: 8, outputBytes: empty.bytes.length });
  new WebAssembly.Module(empty.bytes);
});
