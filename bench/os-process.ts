/**
 * The os_process tier's price: a fresh sandbox (the same small WASI module, run + dispose) on the
 * `instance` tier (a pooled worker thread) against `os_process` — a child process per call, under
 * Node's permission model alone and inside bubblewrap when it works here — and a JS exec on both
 * tiers. Same engine, same run; ratios against the instance rows. `OSPROC_N` samples (default 40).
 */

import { createEngine } from '../src/index.ts';
import { bwrapStatus } from '../src/engine/os-process/spawn.ts';
import { printTable, quantile, sample, watText } from './lib.ts';

const SMALL_WASI = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "hi\\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 3))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16)))))`;

const N = Number(process.env['OSPROC_N'] ?? 40);

const bytes = await watText(SMALL_WASI);
const engine = createEngine({ poolSize: 2 });
const check = (r: { ok: boolean; stdout: string; error?: unknown }, want: string): void => {
  if (!r.ok || r.stdout !== want) throw new Error(`unexpected result ${JSON.stringify(r)}`);
};
const instance = await sample(Math.max(200, N), 50, async () => check(await engine.run(bytes), 'hi\n'));
const perm = await sample(N, 3, async () => check(await engine.run(bytes, { tier: 'os_process', bwrapPath: '' }), 'hi\n'));
const bw = bwrapStatus();
const boxed = bw.bwrap ? await sample(N, 3, async () => check(await engine.run(bytes, { tier: 'os_process', strictIsolation: true }), 'hi\n')) : null;
const js = 'console.log("hi"); 1';
const jsHere = await sample(Math.max(100, N), 20, async () => check(await engine.exec({ language: 'js', code: js }), 'hi\n'));
const jsThere = await sample(N, 3, async () => check(await engine.exec({ language: 'js', code: js, tier: 'os_process', bwrapPath: '' }), 'hi\n'));
await engine.close();

const row = (what: string, xs: number[], vs?: string) => ({ what, p50: quantile(xs, 0.5), p99: quantile(xs, 0.9), unit: 'ms' as const, ...(vs ? { vs } : {}) });
printTable(
  `fresh sandbox by tier (small WASI module; JS exec; ${N} os_process samples)`,
  [
    row('instance: engine.run', instance),
    row('os_process (permission model): engine.run', perm, 'instance: engine.run'),
    ...(boxed ? [row('os_process (bwrap + permission model): engine.run', boxed, 'instance: engine.run')] : []),
    row('instance: engine.exec js', jsHere),
    row('os_process (permission model): engine.exec js', jsThere, 'instance: engine.exec js'),
  ],
  'p90',
);
if (!boxed) console.log(`\nbwrap row left out: ${bw.reason}`);
