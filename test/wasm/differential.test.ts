/**
 * Differential tests: a module rewritten by applyLimits (with a cap it never reaches) behaves
 * exactly like the original: same results, same traps, same host calls.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { GROW_FAILED_EXPORT, applyLimits } from '../../src/wasm/index.ts';
import { cModule, cModules, watFixture } from './helpers.ts';
import type { Bytes } from './helpers.ts';

const ROOMY = { maxMemoryPages: 1024, maxTableElements: 1024, trapOnGrowFailure: true };

type Call = readonly [name: string, ...args: number[]];
type Outcome = { ok: unknown } | { trap: string };

/** Runs `calls` on a fresh instance; records every result/trap and every host call. */
function run(bytes: Bytes, calls: readonly Call[], env: (log: unknown[]) => WebAssembly.Imports): unknown[] {
  const log: unknown[] = [];
  const exports = new WebAssembly.Instance(new WebAssembly.Module(bytes), env(log)).exports;
  for (const [name, ...args] of calls) {
    let outcome: Outcome;
    try {
      outcome = { ok: (exports[name] as (...a: number[]) => unknown)(...args) };
    } catch (e) {
      outcome = { trap: (e as Error).message };
    }
    log.push([name, args, outcome]);
  }
  return log;
}

test('grow.wat: calls, call_indirect, element segment, start function behave identically', async () => {
  const original = await watFixture('grow.wat', { names: true });
  const rewritten = applyLimits(original, ROOMY);
  assert.ok(rewritten.growSites > 0);
  const env = (log: unknown[]): WebAssembly.Imports => ({ env: { record: (x: number) => log.push(['record', x]) } });
  const calls: Call[] = [
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
    ['size'],
  ];
  assert.deepEqual(run(rewritten.bytes, calls, env), run(original, calls, env));
});

test('kernels.c builds (plain, SIMD, bulk memory, shared memory) behave identically', () => {
  const calls: Call[] = [
    ['apply', 0, 7, 5],
    ['apply', 1, 7, 5],
    ['apply', 5, 7, 5],
    ['fill', 100, 3],
    ['copy', 77],
    ['dot', 4096, 4096 + 64, 8],
    ['counter', 8192],
    ['counter', 8192],
    ['size'],
    ['grow', 1],
    ['size'],
  ];
  for (const { name, bytes } of cModules().filter((c) => c.name.startsWith('kernels.c'))) {
    const rewritten = applyLimits(bytes, ROOMY);
    assert.equal(rewritten.growSites, 1, name);
    // A shared imported memory is created by the host with the reported maximum.
    const env = (): WebAssembly.Imports => {
      const m = rewritten.memory!;
      return m.imported ? { env: { memory: new WebAssembly.Memory({ initial: m.initialPages, maximum: m.maxPages, shared: true }) } } : {};
    };
    assert.deepEqual(run(rewritten.bytes, calls, env), run(bytes, calls, env), name);
  }
});

/** Just enough WASI preview 1 to run a libc program: argv, stdout, exit. */
function wasiStub(out: string[]): { imports: WebAssembly.Imports; bind: (memory: WebAssembly.Memory) => void } {
  let mem: WebAssembly.Memory | undefined;
  const view = (): DataView => new DataView(mem!.buffer);
  const arg = new TextEncoder().encode('prog\0');
  const wasi: Record<string, (...a: number[]) => number> = {
    args_sizes_get: (argc, size) => (view().setUint32(argc, 1, true), view().setUint32(size, arg.length, true), 0),
    args_get: (argv, buf) => (view().setUint32(argv, buf, true), new Uint8Array(mem!.buffer).set(arg, buf), 0),
    fd_write: (_fd, iovs, len, written) => {
      let total = 0;
      for (let i = 0; i < len; i++) {
        const ptr = view().getUint32(iovs + i * 8, true);
        const n = view().getUint32(iovs + i * 8 + 4, true);
        out.push(new TextDecoder().decode(new Uint8Array(mem!.buffer, ptr, n)));
        total += n;
      }
      view().setUint32(written, total, true);
      return 0;
    },
    fd_fdstat_get: (_fd, ptr) => (new Uint8Array(mem!.buffer, ptr, 24).fill(0), view().setUint8(ptr, 2), 0),
    proc_exit: (code) => {
      throw new Error(`exit ${code}`);
    },
  };
  const proxy = new Proxy(wasi, { get: (t, k: string) => t[k] ?? (() => 52) });
  return { imports: { wasi_snapshot_preview1: proxy }, bind: (m) => (mem = m) };
}

function runProgram(bytes: Bytes): { stdout: string; trap: string | null; exports: WebAssembly.Exports } {
  const out: string[] = [];
  const stub = wasiStub(out);
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), stub.imports);
  stub.bind(instance.exports['memory'] as WebAssembly.Memory);
  let trap: string | null = null;
  try {
    (instance.exports['_start'] as () => void)();
  } catch (e) {
    trap = (e as Error).message;
  }
  return { stdout: out.join(''), trap, exports: instance.exports };
}

test('a libc program (malloc, realloc, qsort, printf) prints the same output after the rewrite', () => {
  const program = cModule('program.c');
  const before = runProgram(program);
  const after = runProgram(applyLimits(program, ROOMY).bytes);
  assert.equal(before.trap, null);
  assert.equal(before.stdout, '0 1008 4 x y\n');
  assert.deepEqual(after, { ...before, exports: after.exports });
});

test('a libc program whose realloc passes the cap traps, and the host can tell why', () => {
  const program = cModule('program.c');
  const capped = runProgram(applyLimits(program, { ...ROOMY, maxMemoryPages: 40 }).bytes);
  assert.match(capped.trap ?? '', /unreachable/);
  assert.ok((capped.exports[GROW_FAILED_EXPORT] as WebAssembly.Global).value > 0);
  // Without trapOnGrowFailure, malloc sees -1, realloc returns NULL, and the program carries on.
  const soft = runProgram(applyLimits(program, { ...ROOMY, maxMemoryPages: 40, trapOnGrowFailure: false }).bytes);
  assert.equal(soft.trap, null);
  assert.equal(soft.stdout, '0 1008 4 x -\n');
});

test('any sequence of grows: succeeds while within the cap, then traps with the delta', async () => {
  const original = await watFixture('grow.wat');
  const cap = 16;
  const trapping = applyLimits(original, { ...ROOMY, maxMemoryPages: cap });
  const soft = applyLimits(original, { ...ROOMY, maxMemoryPages: cap, trapOnGrowFailure: false });
  const env = { env: { record: () => {} } };
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 12 }), (deltas) => {
      const t = new WebAssembly.Instance(new WebAssembly.Module(trapping.bytes), env).exports;
      const s = new WebAssembly.Instance(new WebAssembly.Module(soft.bytes), env).exports;
      const grow = (e: WebAssembly.Exports, d: number): number => (e['grow'] as (d: number) => number)(d);
      let pages = 1;
      for (const d of deltas) {
        if (pages + d <= cap) {
          assert.equal(grow(t, d), pages);
          assert.equal(grow(s, d), pages);
          pages += d;
        } else {
          assert.equal(grow(s, d), -1);
          assert.throws(() => grow(t, d), WebAssembly.RuntimeError);
          assert.equal((t[GROW_FAILED_EXPORT] as WebAssembly.Global).value, d);
          return;
        }
      }
    }),
    { numRuns: 200 },
  );
});
