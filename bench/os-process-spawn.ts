/**
 * A guest's `run_command echo` round trip on the `os_process` tier (the command runs inside the
 * call's child, on its own worker threads) against the same guest on the `instance` tier (a
 * worker of this process). The guest (WAT below) calls `membrane.run_command(["echo", "hi"])` in
 * a loop of `LOOP` and returns the monotonic nanoseconds the loop took; each sample is one call's
 * per-command time. Also each tier's whole call of `nest run echo hi` (test/fixtures/c/nest.c:
 * one run_command inside a WASI command), the os_process one from a warm pool. Interleaved,
 * `OSSPAWN_N` samples per row (default 30). `node --import tsx bench/os-process-spawn.ts`.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CommandRegistry, createEngine } from '../src/index.ts';
import { encodeRequest } from '../src/abi/command.ts';
import { pooledChildren } from '../src/engine/os-process/lane.ts';
import { ROOT, printTable, quantile, watText } from './lib.ts';

const N = Number(process.env['OSSPAWN_N'] ?? 30);
const LOOP = 100;
const request = encodeRequest(['echo', 'hi']);
const escaped = [...request].map((b) => `\\${b.toString(16).padStart(2, '0')}`).join('');
const LOOPER = `(module
  (import "membrane" "run_command" (func $rc (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 1024) "${escaped}")
  (func (export "bench") (param $n i32) (result i64)
    (local $i i32) (local $t0 i64)
    (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 0)))
    (local.set $t0 (i64.load (i32.const 0)))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (if (i32.lt_s (call $rc (i32.const 1024) (i32.const ${request.length}) (i32.const 8192) (i32.const 4096)) (i32.const 0)) (then unreachable))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (drop (call $clock (i32.const 1) (i64.const 1) (i32.const 0)))
    (i64.sub (i64.load (i32.const 0)) (local.get $t0))))`;

const looper = await watText(LOOPER);
const nest = new Uint8Array(readFileSync(join(ROOT, 'test/fixtures/c/nest.wasm')));
const registry = CommandRegistry.withBuiltins();
registry.register('nest', nest);
const engine = createEngine({ commands: registry, poolSize: 2, osProcessPool: 1 });
const OS = { tier: 'os_process', bwrapPath: '' } as const;

async function poolReady(): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (pooledChildren(engine.config).some((k) => k.ready)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the pool did not fill');
}

/** Per-command ms of one looper call on a tier. */
async function perCommand(tier: object): Promise<number> {
  const r = await engine.run(looper, { profile: 'minimal', invoke: 'bench', args: [LOOP], ...tier });
  if (!r.ok || (typeof r.result !== 'bigint' && typeof r.result !== 'number')) throw new Error(`looper failed: ${JSON.stringify(r.error)}`);
  return Number(r.result) / 1e6 / LOOP;
}

/** One whole `nest run echo hi` call, ms. */
async function whole(tier: object): Promise<number> {
  const t = performance.now();
  const r = await engine.run(nest, { profile: 'minimal', argv: ['run', 'echo', 'hi'], ...tier });
  const ms = performance.now() - t;
  if (r.stdout !== 'hi\nstatus=0 error=\n') throw new Error(`nest failed: ${JSON.stringify(r)}`);
  return ms;
}

await perCommand(OS); // the first os_process call makes the pool (untimed)
const rows = { cmdHere: [] as number[], cmdThere: [] as number[], callHere: [] as number[], callThere: [] as number[] };
for (let i = 0; i < N + 2; i++) {
  const keep = i >= 2; // two warm-up rounds
  const a = await perCommand({});
  await poolReady();
  const b = await perCommand(OS);
  const c = await whole({});
  await poolReady(); // a warm child for the whole-call row (its refill is not timed)
  const d = await whole(OS);
  if (keep) {
    rows.cmdHere.push(a);
    rows.cmdThere.push(b);
    rows.callHere.push(c);
    rows.callThere.push(d);
  }
}
await engine.close();

const row = (what: string, xs: number[], unit: 'µs' | 'ms', vs?: string) => ({ what, p50: quantile(xs, 0.5), p99: quantile(xs, 0.9), unit, ...(vs ? { vs } : {}) });
const HERE = 'instance (worker): run_command echo, per command';
const CALL = 'instance (worker): engine.run nest run echo';
printTable(`a guest's run_command echo round trip by tier (${N} samples per row, ${LOOP} commands per looper call; os_process: permission model, pooled child)`, [
  row(HERE, rows.cmdHere, 'µs'),
  row('os_process (child): run_command echo, per command', rows.cmdThere, 'µs', HERE),
  row(CALL, rows.callHere, 'ms'),
  row('os_process pooled, warm: engine.run nest run echo', rows.callThere, 'ms', CALL),
], 'p90');
