/**
 * The os_process tier's price: a fresh sandbox (the same small WASI module, run + dispose) on the
 * `instance` tier (a pooled worker thread) against `os_process` — a child process per call, under
 * Node's permission model alone and inside bubblewrap when it works here — and a JS exec on both
 * tiers; each os_process row with a fresh child per call (`osProcessPool: 0`) and with a child
 * from the pool of pre-started ones: "warm" waits (untimed) until the pool is full again before
 * each call, "back-to-back" does not (the calls then also wait on the refill's boots). Same run;
 * ratios against the instance row and against the fresh-spawn row. `OSPROC_N` samples (default 40).
 */

import { createEngine, type Engine } from '../src/index.ts';
import { bwrapStatus } from '../src/engine/os-process/spawn.ts';
import { pooledChildren } from '../src/engine/os-process/lane.ts';
import { printTable, quantile, sample, watText } from './lib.ts';

const SMALL_WASI = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "hi\\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 3))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))))`;

const N = Number(process.env['OSPROC_N'] ?? 40);
const POOL = 2;

const bytes = await watText(SMALL_WASI);
const fresh = createEngine({ poolSize: 2, osProcessPool: 0 });
const pooled = createEngine({ poolSize: 2, osProcessPool: POOL });
const check = (r: { ok: boolean; stdout: string; error?: unknown }, want: string): void => {
  if (!r.ok || r.stdout !== want) throw new Error(`unexpected result ${JSON.stringify(r)}`);
};
/** Until the pool holds POOL ready children (all configurations this engine used). */
async function full(e: Engine): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const kids = pooledChildren(e.config);
    if (kids.length >= POOL && kids.every((k) => k.ready)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the pool did not fill in 10 s');
}
/** Samples of `op`, each after the pool is full again (the wait is not timed). */
async function warm(n: number, e: Engine, op: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n + 3; i++) {
    if (i > 0) await full(e); // the first call makes the pool (of its configuration)
    const t = performance.now();
    await op();
    if (i >= 3) out.push(performance.now() - t);
  }
  return out;
}

const PERM = { tier: 'os_process', bwrapPath: '' } as const;
const instance = await sample(Math.max(200, N), 50, async () => check(await fresh.run(bytes), 'hi\n'));
const perm = await sample(N, 3, async () => check(await fresh.run(bytes, PERM), 'hi\n'));
const permWarm = await warm(N, pooled, async () => check(await pooled.run(bytes, PERM), 'hi\n'));
const permB2b = await sample(N, 3, async () => check(await pooled.run(bytes, PERM), 'hi\n'));
const bw = bwrapStatus();
const STRICT = { tier: 'os_process', strictIsolation: true } as const;
const boxed = bw.bwrap ? await sample(N, 3, async () => check(await fresh.run(bytes, STRICT), 'hi\n')) : null;
const boxedWarm = bw.bwrap ? await warm(N, pooled, async () => check(await pooled.run(bytes, STRICT), 'hi\n')) : null;
const js = 'console.log("hi"); 1';
const jsHere = await sample(Math.max(100, N), 20, async () => check(await fresh.exec({ language: 'js', code: js }), 'hi\n'));
const jsThere = await sample(N, 3, async () => check(await fresh.exec({ language: 'js', code: js, ...PERM }), 'hi\n'));
const jsWarm = await warm(N, pooled, async () => check(await pooled.exec({ language: 'js', code: js, ...PERM }), 'hi\n'));
await Promise.all([fresh.close(), pooled.close()]);

const row = (what: string, xs: number[], vs?: string) => ({ what, p50: quantile(xs, 0.5), p99: quantile(xs, 0.9), unit: 'ms' as const, ...(vs ? { vs } : {}) });
const FRESH = 'os_process fresh (permission model): engine.run';
const FRESH_JS = 'os_process fresh (permission model): engine.exec js';
printTable(
  `fresh sandbox by tier (small WASI module; JS exec; ${N} os_process samples; pool of ${POOL})`,
  [
    row('instance: engine.run', instance),
    row(FRESH, perm, 'instance: engine.run'),
    row('os_process pooled, warm (permission model): engine.run', permWarm, FRESH),
    row('os_process pooled, back-to-back (permission model): engine.run', permB2b, FRESH),
    ...(boxed ? [row('os_process fresh (bwrap + permission model): engine.run', boxed, 'instance: engine.run')] : []),
    ...(boxedWarm ? [row('os_process pooled, warm (bwrap + permission model): engine.run', boxedWarm, 'os_process fresh (bwrap + permission model): engine.run')] : []),
    row('instance: engine.exec js', jsHere),
    row(FRESH_JS, jsThere, 'instance: engine.exec js'),
    row('os_process pooled, warm (permission model): engine.exec js', jsWarm, FRESH_JS),
  ],
  'p90',
);
console.log(`\npooled rows against instance: run ${(quantile(permWarm, 0.5) / quantile(instance, 0.5)).toFixed(0)}×, exec js ${(quantile(jsWarm, 0.5) / quantile(jsHere, 0.5)).toFixed(1)}×`);
if (!boxed) console.log(`\nbwrap rows left out: ${bw.reason}`);
