/**
 * Differential tests: a module instrumented with ample fuel behaves exactly like the original —
 * same results, same traps, same memory contents, same host-import calls in the same order — on
 * the project's .wat fixtures, the wasm toolkit's fixtures, the fuel fixtures (including the
 * function-index-heavy one) and C modules built with clang -O2.
 */

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { FUEL_GLOBAL_EXPORT } from '../../../src/wasm/index.ts';
import { wat as engineWat } from '../../helpers/wat.ts';
import { cModule, cModules, watFixture } from '../helpers.ts';
import type { Bytes } from '../helpers.ts';
import { fuelWat } from './fixtures.ts';
import { metered } from './host.ts';

/** A test/fixtures/wat fixture, compiled. */
const wat = async (name: string): Promise<Bytes> => (await engineWat(name)) as Bytes;

type Call = readonly [name: string, ...args: unknown[]];
type Env = (log: unknown[], memory: () => WebAssembly.Memory | undefined) => WebAssembly.Imports;

const describe = (e: unknown): string => (e instanceof Error ? `${e.constructor.name}: ${e.message}` : `thrown ${String(e)}`);

/**
 * Instantiates (original or instrumented), runs `calls`, and returns everything observable: the
 * host-call log interleaved with each call's result or trap, then every exported memory's bytes
 * and every exported global's value (the fuel counter excepted).
 */
function observe(bytes: Bytes, instrument: boolean, calls: readonly Call[], env: Env): unknown[] {
  const log: unknown[] = [];
  let memory: WebAssembly.Memory | undefined;
  const imports = env(log, () => memory);
  let exports: Record<string, unknown>;
  try {
    exports = instrument ? metered(bytes, { imports }).exports : (new WebAssembly.Instance(new WebAssembly.Module(bytes), imports).exports as Record<string, unknown>);
  } catch (e) {
    return [...log, ['instantiate', describe(e)]];
  }
  memory = Object.values(exports).find((x): x is WebAssembly.Memory => x instanceof WebAssembly.Memory);
  for (const [name, ...args] of calls) {
    try {
      log.push([name, args, 'ok', (exports[name] as (...a: unknown[]) => unknown)(...args)]);
    } catch (e) {
      log.push([name, args, 'trap', describe(e)]);
    }
  }
  for (const [name, x] of Object.entries(exports)) {
    if (x instanceof WebAssembly.Memory) log.push([name, x.buffer.byteLength, createHash('sha256').update(new Uint8Array(x.buffer)).digest('hex')]);
    else if (x instanceof WebAssembly.Global && name !== FUEL_GLOBAL_EXPORT) log.push([name, x.value]);
  }
  return log;
}

function same(name: string, bytes: Bytes, calls: readonly Call[], env: Env = () => ({})): void {
  const before = observe(bytes, false, calls, env);
  const after = observe(bytes, true, calls, env);
  assert.deepEqual(after, before, name);
}

/** Records every call to the named imports of module `env` (or another module). */
const recorder =
  (module: string, names: readonly string[], result: (name: string, args: unknown[]) => unknown = () => undefined): Env =>
  (log) => ({
    [module]: Object.fromEntries(names.map((n) => [n, (...args: unknown[]) => (log.push([`${module}.${n}`, args]), result(n, args))])),
  });

// Not run here: grow-loop (a 4 GiB memory bomb) and the spinning start functions (env-system,
// kv-import, spin-start); validation.test.ts compiles them, budget.test.ts stops a spinning start.
test('test/fixtures/wat: the guests the engine tests run', async () => {
  same('noop', await wat('noop'), [['noop'], ['add', 2, 3], ['add64', 2n ** 40n, 5n], ['half', 3], ['incr'], ['incr']]);
  same('log', await wat('log'), [['log_n', 0], ['log_n', 5]], recorder('membrane', ['log']));
  same('output-flood', await wat('output-flood'), [['flood', 3]], (log, memory) => ({
    wasi_snapshot_preview1: {
      fd_write: (fd: number, iovs: number, n: number, written: number) => {
        const view = new DataView(memory()!.buffer);
        log.push(['fd_write', fd, n, view.getUint32(iovs, true), view.getUint32(iovs + 4, true)]);
        view.setUint32(written, view.getUint32(iovs + 4, true), true);
        return 0;
      },
    },
  }));
  same('session', await wat('session'), [['_start']], (log, memory) => ({
    membrane: {
      session_info: (ptr: number, cap: number) => {
        const json = new TextEncoder().encode('{"id":"x","tenant":"t","profile":"compute"}');
        new Uint8Array(memory()!.buffer).set(json, ptr);
        log.push(['session_info', ptr, cap]);
        return json.length;
      },
    },
    wasi_snapshot_preview1: { fd_write: (...a: number[]) => (log.push(['fd_write', ...a]), 0) },
  }));
  same('unreachable', await wat('unreachable'), [['run']]);
  same('recurse', await wat('recurse'), [['run', 0]]);
  same('spin (the export that returns)', await wat('spin'), [['ok']]);
  same('big-initial', await wat('big-initial'), [['run']]);
});

test('test/wasm/fixtures: every feature Node 20 ships', async () => {
  const features = await watFixture('features.wat', { names: true });
  same('features.wat', features, [
    ['control', 0],
    ['control', 1],
    ['control', 2],
    ['control', 7],
    ['multi', 5],
    ['convert', 1.5, 2.5],
    ['bulk'],
    ['refs', 'host-ref'],
    ['tail', 4],
    ['mem', 0],
  ], (log) => ({ env: { log: (x: number) => log.push(['log', x]), g: new WebAssembly.Global({ value: 'i32' }, 5) } }));
  same('simd.wat', await watFixture('simd.wat', { names: true }), [['simd', 0], ['simd', 100], ['bitmask', -1], ['bitmask', 3]]);
  same('atomics.wat', await watFixture('atomics.wat', { names: true }), [['atomics', 9]]);
  same('eh-legacy.wat', await watFixture('eh-legacy.wat', { names: true }), [['eh', 1], ['rethrow', 2], ['delegate', 3], ['empty']]);
  same('grow.wat', await watFixture('grow.wat', { names: true }), [
    ['started'],
    ['grow', 0],
    ['grow', 2],
    ['grow_twice', 1],
    ['size'],
    ['dispatch', 1, 21],
    ['dispatch', 2, 0],
    ['dispatch', 0, 1],
    ['dispatch', 3, 0],
    ['dispatch', 9, 0],
    ['calls'],
  ], recorder('env', ['record']));
});

test('test/fixtures/fuel: the golden fixtures', async () => {
  const tick = recorder('env', ['tick']);
  same('straight', await fuelWat('straight'), [['run', 4], ['leave_early', 0], ['leave_early', 1]]);
  same('branches', await fuelWat('branches'), [['run', 0], ['run', 1], ['noelse', 0], ['noelse', 1]]);
  same('loop', await fuelWat('loop'), [['run', 100], ['spin', 10]]);
  same('nested', await fuelWat('nested'), [['run', 7]]);
  same('dispatch', await fuelWat('dispatch'), [['run', 0], ['run', 1], ['run', 2], ['run', -1], ['leave', 0], ['leave', 1]]);
  same('calls', await fuelWat('calls'), [['started'], ['run', 6], ['ticks'], ['tail', 1000], ['indirect', 4, 0], ['indirect', 4, 1], ['indirect', 4, 2]], tick);
  same('bulk', await fuelWat('bulk'), [
    ['fill', 300],
    ['copy', 64],
    ['init', 32],
    ['init', 33],
    ['copy', 70000],
    ['grow', 1],
    ['grow', 70000],
    ['tgrow', 4],
    ['tgrow', 1000],
    ['tfill', 5],
    ['tfill', 50],
  ]);
  same('eh', await fuelWat('eh'), [['eh', 1], ['unwind', 2]]);
  same('labels', await fuelWat('labels'), [['escape', 0], ['escape', 1], ['escape', 500], ['result', 0], ['result', 9], ['pair', 0], ['pair', 6], ['param', 0], ['param', 11], ['find', 3], ['find', 60]]);
});

test('function-index-heavy: imports, 8 element encodings, ref.func everywhere, exports, start', async () => {
  const env: Env = (log) => ({
    env: {
      log: (x: number) => log.push(['log', x]),
      twice: (x: number) => (log.push(['twice', x]), 2 * x),
      base: new WebAssembly.Global({ value: 'i32' }, 1000),
    },
  });
  const calls: Call[] = [['count']];
  for (let i = 0; i < 16; i++) calls.push(['call_t', i, 5], ['is_null', i]);
  for (let i = 0; i < 6; i++) calls.push(['call_t2', i, 7]);
  calls.push(['init_p1'], ['init_p2'], ['set_from_global'], ['set_refs']);
  for (let i = 0; i < 16; i++) calls.push(['call_t', i, 6], ['is_null', i]);
  for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'twice', 'log']) calls.push([name, 3]);
  calls.push(['init'], ['count']);
  same('indices', await fuelWat('indices'), calls, env);
});

/** Just enough WASI preview 1 for a libc program: argv, stdout, exit; every call is logged. */
const wasi: Env = (log, memory) => {
  const view = (): DataView => new DataView(memory()!.buffer);
  const arg = new TextEncoder().encode('prog\0');
  const fns: Record<string, (...a: number[]) => number> = {
    args_sizes_get: (argc, size) => (view().setUint32(argc, 1, true), view().setUint32(size, arg.length, true), 0),
    args_get: (argv, buf) => (view().setUint32(argv, buf, true), new Uint8Array(memory()!.buffer).set(arg, buf), 0),
    fd_write: (_fd, iovs, len, written) => {
      let total = 0;
      for (let i = 0; i < len; i++) {
        const ptr = view().getUint32(iovs + i * 8, true);
        const n = view().getUint32(iovs + i * 8 + 4, true);
        log.push(['stdout', new TextDecoder().decode(new Uint8Array(memory()!.buffer, ptr, n))]);
        total += n;
      }
      view().setUint32(written, total, true);
      return 0;
    },
    fd_fdstat_get: (_fd, ptr) => (new Uint8Array(memory()!.buffer, ptr, 24).fill(0), view().setUint8(ptr, 2), 0),
    proc_exit: (code) => {
      throw new Error(`exit ${code}`);
    },
  };
  const proxy = new Proxy(fns, {
    get: (t, k: string) => (...a: number[]) => (log.push(['wasi', k, ...a]), (t[k] ?? (() => 52))(...a)),
  });
  return { wasi_snapshot_preview1: proxy };
};

test('C modules built with clang -O2: kernels (plain, SIMD, bulk memory, shared memory) and a libc program', () => {
  const calls: Call[] = [
    ['apply', 0, 7, 5],
    ['apply', 1, 7, 5],
    ['apply', 5, 7, 5],
    ['fill', 100, 3],
    ['fill', 5000, 1],
    ['copy', 77],
    ['copy', 1000],
    ['dot', 4096, 4096 + 64, 8],
    ['dot', 0, 512, 1000],
    ['counter', 8192],
    ['counter', 8192],
    ['size'],
    ['grow', 1],
    ['size'],
  ];
  for (const { name, bytes } of cModules().filter((c) => c.name.startsWith('kernels.c'))) {
    const shared = name.includes('shared');
    // A shared imported memory is created fresh for each side, so both start from zeros.
    const env: Env = (): WebAssembly.Imports =>
      shared ? { env: { memory: new WebAssembly.Memory({ initial: 2, maximum: 16, shared: true }) } } : {};
    same(name, bytes, calls, env);
  }
  for (const name of ['program.c', 'program.c -msimd128']) same(name, cModule(name), [['_start']], wasi);
});
