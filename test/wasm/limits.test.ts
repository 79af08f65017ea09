import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { GROW_FAILED_EXPORT, applyLimits, parseModule } from '../../src/wasm/index.ts';
import type { LimitsOptions } from '../../src/wasm/index.ts';
import { HEADER, SHARED_KERNELS, assertInvalid, cModule, hex, wabt, wat, watFixture } from './helpers.ts';
import type { Bytes } from './helpers.ts';

const CAP: LimitsOptions = { maxMemoryPages: 4, maxTableElements: 16, trapOnGrowFailure: true };

type Exports = Record<string, unknown>;
const fn = (e: Exports, name: string): ((...args: number[]) => number) => e[name] as (...args: number[]) => number;
const growFailed = (e: Exports): number => (e[GROW_FAILED_EXPORT] as WebAssembly.Global).value as number;

function instantiate(bytes: Bytes, imports: WebAssembly.Imports = { env: { record: () => {} } }): Exports {
  return new WebAssembly.Instance(new WebAssembly.Module(bytes), imports).exports;
}

function assertLimitError(f: () => unknown, details: Record<string, unknown>): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof SandboxError);
    assert.equal(e.code, 'MEMORY_LIMIT');
    assert.deepEqual(e.details, details);
    return true;
  });
}

test('memory.grow within the cap works and returns the old size', async () => {
  const r = applyLimits(await watFixture('grow.wat'), CAP);
  assert.equal(r.changed, true);
  assert.equal(r.growSites, 5);
  assert.deepEqual(r.memory, { memoryIndex: 0, imported: false, initialPages: 1, declaredMaxPages: null, maxPages: 4, shared: false, index64: false });
  const e = instantiate(r.bytes);
  assert.equal(fn(e, 'grow')(1), 1);
  assert.equal(fn(e, 'grow_twice')(1), 3);
  assert.equal(fn(e, 'size')(), 4);
  assert.equal(growFailed(e), 0);
});

test('memory.grow past the cap traps and the exported global holds the requested delta', async () => {
  const e = instantiate(applyLimits(await watFixture('grow.wat'), CAP).bytes);
  assert.throws(() => fn(e, 'grow')(4), (err: unknown) => err instanceof WebAssembly.RuntimeError && /unreachable/.test(err.message));
  assert.equal(growFailed(e), 4);
  assert.equal(fn(e, 'size')(), 1);
  // A grow reached through call_indirect is guarded too.
  assert.throws(() => fn(e, 'dispatch')(0, 7), WebAssembly.RuntimeError);
  assert.equal(growFailed(e), 7);
});

test('with trapOnGrowFailure false, a grow past the cap returns -1 and nothing is added', async () => {
  const input = await watFixture('grow.wat');
  const r = applyLimits(input, { ...CAP, trapOnGrowFailure: false });
  assert.equal(r.growSites, 0);
  assert.equal(r.guardFunctionIndex, null);
  assert.equal(r.growFailedExport, null);
  assert.equal(r.bytes.length, input.length + 2); // only the memory and the table gained a maximum
  const e = instantiate(r.bytes);
  assert.equal(fn(e, 'grow')(4), -1);
  assert.equal(fn(e, 'grow')(3), 1);
  assert.equal(e[GROW_FAILED_EXPORT], undefined);
});

test('an initial memory over the cap is MEMORY_LIMIT before anything runs', async () => {
  const bytes = await wat('(module (memory 5))');
  assertLimitError(() => applyLimits(bytes, CAP), { memoryIndex: 0, imported: false, initialPages: 5, maxPages: 4 });
});

test('maxima: absent gets the cap, above is lowered, below is kept (and then nothing changes)', async () => {
  const max = (b: Uint8Array): number | null => parseModule(b).memories[0]!.limits.max;
  assert.equal(max(applyLimits(await wat('(module (memory 1))'), CAP).bytes), 4);
  const above = applyLimits(await wat('(module (memory (export "m") 1 9))'), CAP);
  assert.equal(max(above.bytes), 4);
  assert.equal(above.memory?.declaredMaxPages, 9);
  assert.throws(() => (instantiate(above.bytes)['m'] as WebAssembly.Memory).grow(4), RangeError);
  const below = await wat('(module (memory 1 2) (func (result i32) (memory.size)))');
  const r = applyLimits(below, CAP);
  assert.equal(r.changed, false);
  assert.equal(r.bytes, below);
  assert.equal(r.memory?.maxPages, 2);
});

test('a cap above 4 GiB is clamped to 65536 pages for a 32-bit memory', async () => {
  const r = applyLimits(await wat('(module (memory 1))'), { ...CAP, maxMemoryPages: 1e6 });
  assert.equal(r.memory?.maxPages, 65536);
  assert.doesNotThrow(() => new WebAssembly.Module(r.bytes));
});

test('a 64-bit memory gets an i64 guard (run under --experimental-wasm-memory64)', async () => {
  const w = await wabt();
  const m = w.parseWat('m64.wat', '(module (memory i64 1) (func (export "g") (param i64) (result i64) (memory.grow (local.get 0))))', { memory64: true });
  const bytes = new Uint8Array(m.toBinary({}).buffer);
  m.destroy();
  // Node 20's V8 accepts memory64 only under the flag the child below runs with: here it is
  // INVALID_MODULE at the gate, so the rewrite is checked with the gate skipped.
  assertInvalid(() => applyLimits(bytes, CAP));
  const r = applyLimits(bytes, { ...CAP, maxMemoryPages: 3, validated: true });
  assert.equal(r.memory?.index64, true);
  const script = `
    const bytes = Buffer.from(process.env.MODULE, 'base64');
    const e = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
    const out = [e.g(1n), e.g(1n)];
    try { e.g(5n); } catch (err) { out.push(err.message, e.${GROW_FAILED_EXPORT}.value); }
    console.log(JSON.stringify(out, (k, v) => typeof v === 'bigint' ? String(v) : v));`;
  const res = spawnSync(process.execPath, ['--experimental-wasm-memory64', '-e', script], {
    env: { ...process.env, MODULE: Buffer.from(r.bytes).toString('base64') },
    encoding: 'utf8',
  });
  assert.equal(res.status, 0, res.stderr);
  assert.deepEqual(JSON.parse(res.stdout), ['1', '2', 'unreachable', '5']);
});

test('a shared memory keeps its shared flag under the cap', async () => {
  const r = applyLimits(await watFixture('atomics.wat'), { ...CAP, maxMemoryPages: 1 });
  assert.equal(r.memory?.shared, true);
  assert.equal(r.memory?.maxPages, 1);
  const m = parseModule(r.bytes).memories[0]!.limits;
  assert.deepEqual([m.shared, m.min, m.max], [true, 1, 1]);
  const mem = instantiate(r.bytes)['memory'] as WebAssembly.Memory;
  assert.ok(mem.buffer instanceof SharedArrayBuffer);
});

test('tables: maximum capped, table.grow past it returns -1, initial over it is MEMORY_LIMIT', async () => {
  const src = '(module (table $t 1 funcref) (func (export "tgrow") (param i32) (result i32) (table.grow $t (ref.null func) (local.get 0))))';
  const r = applyLimits(await wat(src), CAP);
  assert.deepEqual(r.tables, [{ tableIndex: 0, imported: false, refType: 'funcref', initialElements: 1, declaredMaxElements: null, maxElements: 16 }]);
  const e = instantiate(r.bytes);
  assert.equal(fn(e, 'tgrow')(15), 1);
  assert.equal(fn(e, 'tgrow')(1), -1);
  assertLimitError(() => applyLimits(hex(`${HEADER} 04 04 01 70 00 14`), CAP), {
    tableIndex: 0,
    imported: false,
    initialElements: 20,
    maxElements: 16,
  });
  const refs = applyLimits(await watFixture('features.wat'), CAP);
  assert.deepEqual(refs.tables.map((t) => [t.refType, t.maxElements]), [['funcref', 16], ['externref', 16]]);
});

test('an imported memory is reported, not rewritten, and its grows are still guarded', () => {
  const shared = cModule(SHARED_KERNELS);
  const r = applyLimits(shared, { ...CAP, maxMemoryPages: 8 });
  assert.equal(r.memory?.imported, true);
  assert.equal(r.memory?.declaredMaxPages, 16);
  assert.equal(r.memory?.maxPages, 8);
  assert.deepEqual(parseModule(r.bytes).imports, parseModule(shared).imports);
  const memory = new WebAssembly.Memory({ initial: r.memory!.initialPages, maximum: r.memory!.maxPages, shared: true });
  const e = instantiate(r.bytes, { env: { memory } });
  assert.equal(fn(e, 'grow')(1), r.memory!.initialPages);
  assert.throws(() => fn(e, 'grow')(100), WebAssembly.RuntimeError);
  assert.equal(growFailed(e), 100);
  assertLimitError(() => applyLimits(shared, { ...CAP, maxMemoryPages: 1 }), {
    memoryIndex: 0,
    imported: true,
    initialPages: r.memory!.initialPages,
    maxPages: 1,
  });
});

test('a module without memory.grow gets no guard', async () => {
  const input = await watFixture('simd.wat');
  const r = applyLimits(input, CAP);
  assert.equal(r.guardFunctionIndex, null);
  assert.equal(r.growSites, 0);
  assert.deepEqual(parseModule(r.bytes).exports.map((x) => x.name), parseModule(input).exports.map((x) => x.name));
});

test('the guard reuses an existing (i32) -> i32 type, or appends one; no index moves', async () => {
  const withType = await watFixture('grow.wat');
  const a = applyLimits(withType, CAP);
  assert.equal(parseModule(a.bytes).types.length, parseModule(withType).types.length);
  assert.equal(a.guardFunctionIndex, 1 + parseModule(withType).functions.length);
  const without = await wat('(module (memory 1) (func (export "g") (result i32) (memory.grow (i32.const 1))))');
  const b = applyLimits(without, CAP);
  const out = parseModule(b.bytes);
  assert.equal(out.types.length, 2);
  assert.deepEqual(out.types[1], { params: ['i32'], results: ['i32'] });
  assert.equal(b.guardFunctionIndex, 1);
  assert.equal(fn(instantiate(b.bytes), 'g')(), 1);
});

test('bodies without memory.grow and the name section are copied byte for byte', async () => {
  const input = await watFixture('grow.wat', { names: true });
  const before = parseModule(input);
  const after = parseModule(applyLimits(input, CAP).bytes);
  const slice = (m: typeof before, i: number): string => Buffer.from(m.bytes.subarray(m.codes[i]!.offset, m.codes[i]!.end)).toString('hex');
  let copied = 0;
  for (let i = 0; i < before.codes.length; i++) {
    const body = before.bytes.subarray(before.codes[i]!.codeStart, before.codes[i]!.end);
    if (body.includes(0x40)) continue;
    assert.equal(slice(after, i), slice(before, i));
    copied++;
  }
  assert.ok(copied >= 5);
  const name = (m: typeof before): string => {
    const c = m.customs.find((x) => x.name === 'name')!;
    return Buffer.from(m.bytes.subarray(c.data.start, c.data.end)).toString('hex');
  };
  assert.equal(name(after), name(before));
  const w = await wabt();
  const text = w.readWasm(after.bytes, { readDebugNames: true }).toText({});
  assert.match(text, /\$grow_by/);
});

test('the grow-failed export name is reserved', async () => {
  const bytes = await wat(`(module (memory 1) (global (export "${GROW_FAILED_EXPORT}") i32 (i32.const 0)))`);
  assertInvalid(() => applyLimits(bytes, CAP), undefined, /reserved/);
});

test('memory.grow on a memory other than 0 is refused', () => {
  // (memory 1) (func (drop (memory.grow 1 (i32.const 0))))
  const bytes = hex(`${HEADER} 01 04 01 60 00 00 03 02 01 00 05 03 01 00 01 0a 09 01 07 00 41 00 40 01 1a 0b`);
  assertInvalid(() => applyLimits(bytes, CAP), undefined, /invalid module: .*memory/i);
  assertInvalid(() => applyLimits(bytes, { ...CAP, validated: true }), 30, /memory 1/);
});

test('options are validated', async () => {
  const bytes = await wat('(module)');
  for (const bad of [{ ...CAP, maxMemoryPages: -1 }, { ...CAP, maxTableElements: 1.5 }, { ...CAP, trapOnGrowFailure: 'yes' as unknown as boolean }]) {
    assert.throws(() => applyLimits(bytes, bad), (e: unknown) => e instanceof SandboxError && e.code === 'POLICY_INVALID');
  }
});
