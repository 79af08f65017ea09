/**
 * Shared fixtures for the wasm tests: `.wat` compiled with the wabt package, C modules committed
 * as .wasm (built from test/wasm/fixtures/*.c by scripts/build-c.ts, so no test compiles), and an
 * assertion for INVALID_MODULE.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import wabtInit from 'wabt';
import { SandboxError } from '../../src/errors.ts';

/** Module bytes backed by a plain ArrayBuffer (what WebAssembly.Module accepts). */
export type Bytes = Uint8Array<ArrayBuffer>;

const FIXTURES = new URL('./fixtures/', import.meta.url);

export const ALL_FEATURES = {
  exceptions: true,
  mutable_globals: true,
  sat_float_to_int: true,
  sign_extension: true,
  simd: true,
  threads: true,
  function_references: true,
  multi_value: true,
  tail_call: true,
  bulk_memory: true,
  reference_types: true,
  extended_const: true,
  relaxed_simd: true,
} as const;

type Wabt = Awaited<ReturnType<typeof wabtInit>>;
let wabtInstance: Promise<Wabt> | undefined;
export function wabt(): Promise<Wabt> {
  wabtInstance ??= wabtInit();
  return wabtInstance;
}

/** Compiles WAT text; `names: true` also writes a name section. */
export async function wat(source: string, opts: { names?: boolean } = {}): Promise<Bytes> {
  const w = await wabt();
  const m = w.parseWat('fixture.wat', source, ALL_FEATURES);
  try {
    m.resolveNames();
    // wabt.js's validate takes the feature set too (missing from its typings).
    (m.validate as unknown as (features: typeof ALL_FEATURES) => void).call(m, ALL_FEATURES);
    return new Uint8Array(m.toBinary({ write_debug_names: opts.names ?? false }).buffer);
  } finally {
    m.destroy();
  }
}

export function fixtureText(name: string): string {
  return readFileSync(new URL(name, FIXTURES), 'utf8');
}

export const watFixture = (name: string, opts: { names?: boolean } = {}): Promise<Bytes> => wat(fixtureText(name), opts);

/** The `.wat` fixtures, and whether Node 20's V8 compiles them (the rest use newer proposals). */
export const WAT_FIXTURES: readonly { name: string; v8: boolean }[] = [
  { name: 'features.wat', v8: true },
  { name: 'simd.wat', v8: true },
  { name: 'atomics.wat', v8: true },
  { name: 'eh-legacy.wat', v8: true },
  { name: 'exnref.wat', v8: false },
  { name: 'extended.wat', v8: false },
  { name: 'grow.wat', v8: true },
];

/**
 * Every C build the tests use: the libc program, and the kernel module per feature set. Each is a
 * committed .wasm made by scripts/build-c.ts (which lists the clang flags); `npm run check:c`
 * (in `.ci/run`) checks they match their sources.
 */
const C_BUILDS: Readonly<Record<string, string>> = {
  'program.c': 'program.wasm',
  'program.c -msimd128': 'program-simd.wasm',
  'kernels.c': 'kernels.wasm',
  'kernels.c -msimd128': 'kernels-simd.wasm',
  'kernels.c -mbulk-memory': 'kernels-bulk.wasm',
  'kernels.c -matomics (shared, imported memory)': 'kernels-atomics.wasm',
};
export const SHARED_KERNELS = 'kernels.c -matomics (shared, imported memory)';

const cCache = new Map<string, Bytes>();

/** One C build, read from its committed .wasm on first use and kept for the rest of the process. */
export function cModule(name: string): Bytes {
  const file = C_BUILDS[name];
  if (file === undefined) throw new Error(`no C build named ${name}`);
  let bytes = cCache.get(name);
  if (bytes === undefined) cCache.set(name, (bytes = new Uint8Array(readFileSync(new URL(file, FIXTURES)))));
  return bytes;
}

export function cModules(): { name: string; bytes: Bytes }[] {
  return Object.keys(C_BUILDS).map((name) => ({ name, bytes: cModule(name) }));
}

export async function watModules(): Promise<{ name: string; bytes: Bytes; v8: boolean }[]> {
  return Promise.all(WAT_FIXTURES.map(async (f) => ({ ...f, bytes: await watFixture(f.name, { names: true }) })));
}

/** Asserts `fn` throws SandboxError INVALID_MODULE (optionally at `offset`); returns it. */
export function assertInvalid(fn: () => unknown, offset?: number, pattern?: RegExp): SandboxError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof SandboxError, `expected SandboxError, got ${String(e)}`);
    assert.equal(e.code, 'INVALID_MODULE', e.message);
    assert.equal(typeof e.details['offset'], 'number');
    if (offset !== undefined) assert.equal(e.details['offset'], offset, e.message);
    if (pattern !== undefined) assert.match(e.message, pattern);
    return e;
  }
  assert.fail('expected INVALID_MODULE, but nothing was thrown');
}

export const hex = (s: string): Bytes => Uint8Array.from(s.replace(/\s+/g, '').match(/../g) ?? [], (h) => parseInt(h, 16));

export const HEADER = '0061736d01000000';
