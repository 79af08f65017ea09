/**
 * Shared fixtures for the wasm tests: `.wat` compiled with the wabt package, C compiled with
 * clang (wasm32-wasi) at test time, and an assertion for INVALID_MODULE.
 *
 * A test that needs clang fails loudly when it is missing; it never skips silently.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

const CLANG_HINT = 'clang targeting wasm32-wasi is required for this test: apt-get install clang lld wasi-libc';

/** Compiles a C fixture with clang to a wasm module (temp dir, removed afterwards). */
export function buildC(name: string, flags: readonly string[]): Bytes {
  const dir = mkdtempSync(join(tmpdir(), 'membrane-wasm-'));
  try {
    const out = join(dir, 'out.wasm');
    const src = new URL(name, FIXTURES).pathname;
    const res = spawnSync('clang', ['--target=wasm32-wasi', '-O2', ...flags, src, '-o', out], { encoding: 'utf8' });
    if (res.error !== undefined) throw new Error(`${CLANG_HINT} (${res.error.message})`);
    if (res.status !== 0) throw new Error(`${CLANG_HINT}\nclang ${flags.join(' ')} ${name} failed:\n${res.stderr}`);
    return new Uint8Array(readFileSync(out));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const KERNEL_FLAGS = ['-nostdlib', '-Wl,--no-entry'];

/** Every C build the tests use: the libc program, and the kernel module per feature set. */
const C_BUILDS: Readonly<Record<string, readonly [file: string, flags: readonly string[]]>> = {
  'program.c': ['program.c', []],
  'program.c -msimd128': ['program.c', ['-msimd128']],
  'kernels.c': ['kernels.c', KERNEL_FLAGS],
  'kernels.c -msimd128': ['kernels.c', [...KERNEL_FLAGS, '-msimd128']],
  'kernels.c -mbulk-memory': ['kernels.c', [...KERNEL_FLAGS, '-mbulk-memory']],
  'kernels.c -matomics (shared, imported memory)': [
    'kernels.c',
    [...KERNEL_FLAGS, '-matomics', '-mbulk-memory', '-Wl,--shared-memory', '-Wl,--import-memory', '-Wl,--max-memory=1048576'],
  ],
};
export const SHARED_KERNELS = 'kernels.c -matomics (shared, imported memory)';

const cCache = new Map<string, Bytes>();

/** One C build, compiled on first use and kept for the rest of the process. */
export function cModule(name: string): Bytes {
  const spec = C_BUILDS[name];
  if (spec === undefined) throw new Error(`no C build named ${name}`);
  let bytes = cCache.get(name);
  if (bytes === undefined) cCache.set(name, (bytes = buildC(spec[0], spec[1])));
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
