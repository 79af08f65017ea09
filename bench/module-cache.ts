/**
 * Module cache: what preparing a large upload costs the engine's main thread. Subject: Pyodide's
 * wasm (9.6 MB, a real large module), prepared with a fresh cache key each repetition.
 * Baseline in the same run: the same rewrite (limits + fuel) and `WebAssembly.compile` done
 * inline on the main thread (the engine before the rewrite pool). For each: wall time, and the
 * main thread's longest stall (the largest gap of a 1 ms interval timer) — the delay another
 * tenant's request would see, beside the same timer on an idle main thread (the machine's own
 * noise: on a shared machine other processes' threads stall it too). Target: a stall of a few ms
 * above that floor. Also: an in-memory hit (the fresh-run
 * path) for a small and for the large module, where hashing is the cost.
 */

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModuleCache } from '../src/engine/module-cache.ts';
import { createRequire } from 'node:module';
import { applyLimits, describeModule, instrumentFuel } from '../src/wasm/index.ts';
import { median, printTable, quantile, sample, watText } from './lib.ts';

const REPS = 3;
const opts = (rep: number) => ({ maxMemoryPages: 16_384 - rep, maxTableElements: 1 << 20, trapOnGrowFailure: true, metered: true });

/** Run `op` while a 1 ms timer measures the main thread's longest stall. */
async function stalled(op: () => Promise<unknown>): Promise<{ wallMs: number; stallMs: number }> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 1);
    last = now;
  }, 1);
  const t0 = performance.now();
  await op();
  const wallMs = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(timer);
  return { wallMs, stallMs: Math.max(0, worst) };
}

export async function moduleCache(): Promise<void> {
  const big = new Uint8Array(readFileSync(createRequire(import.meta.url).resolve('pyodide/pyodide.asm.wasm')));
  const dir = mkdtempSync(join(tmpdir(), 'membrane-bench-cache-'));
  const inline: { wallMs: number; stallMs: number }[] = [];
  const miss: { wallMs: number; stallMs: number }[] = [];
  const diskHit: { wallMs: number; stallMs: number }[] = [];
  const idle: { wallMs: number; stallMs: number }[] = [];
  const warm = new ModuleCache(dir);
  await warm.prepare(await watText('(module)'), opts(0)); // the rewrite worker is up
  for (let rep = 1; rep <= REPS; rep++) {
    inline.push(
      await stalled(async () => {
        describeModule(big);
        const limited = applyLimits(big, opts(rep));
        await WebAssembly.compile(instrumentFuel(limited.bytes).bytes as Uint8Array<ArrayBuffer>);
      }),
    );
    miss.push(await stalled(() => warm.prepare(big, opts(rep))));
    const restarted = new ModuleCache(dir);
    diskHit.push(await stalled(() => restarted.prepare(big, opts(rep))));
    await restarted.close();
    // The machine's own noise: the same timer while this thread does nothing for as long.
    const ms = miss.at(-1)!.wallMs;
    idle.push(await stalled(() => new Promise((r) => setTimeout(r, ms))));
  }
  const small = await watText('(module (func (export "f") (result i32) i32.const 1))');
  await warm.prepare(small, opts(0));
  const hitSmall = await sample(2_000, 200, () => warm.prepare(small, opts(0)));
  const hitBig = await sample(30, 3, () => warm.prepare(big, opts(1)));
  await warm.close();
  rmSync(dir, { recursive: true, force: true });

  const row = (what: string, xs: { wallMs: number; stallMs: number }[], key: 'wallMs' | 'stallMs', vs?: string, target?: string) => ({
    what,
    p50: median(xs.map((x) => x[key])),
    p99: Math.max(...xs.map((x) => x[key])),
    unit: 'ms' as const,
    ...(vs ? { vs } : {}),
    ...(target ? { target } : {}),
  });
  printTable(`module cache: longest main-thread stall while preparing Pyodide's wasm (${(big.length / 1e6).toFixed(1)} MB; p99 column = worst of ${REPS})`, [
    row('inline rewrite + compile (before)', inline, 'stallMs'),
    row('idle, as long as a miss (noise floor)', idle, 'stallMs'),
    row('prepare, miss (rewrite worker)', miss, 'stallMs', 'inline rewrite + compile (before)', 'a few ms'),
    row('prepare, disk hit', diskHit, 'stallMs', 'inline rewrite + compile (before)', 'a few ms'),
  ]);
  printTable('module cache: wall time of the same prepares', [
    row('inline rewrite + compile (before)', inline, 'wallMs'),
    row('prepare, miss (rewrite worker)', miss, 'wallMs', 'inline rewrite + compile (before)'),
    row('prepare, disk hit', diskHit, 'wallMs', 'inline rewrite + compile (before)'),
  ]);
  printTable('module cache: in-memory hit (what each fresh run pays)', [
    { what: 'small module (hashed inline)', p50: quantile(hitSmall, 0.5), p99: quantile(hitSmall, 0.99), unit: 'µs' },
    { what: `Pyodide (hashed in 1 MiB steps)`, p50: quantile(hitBig, 0.5), p99: quantile(hitBig, 0.99), unit: 'ms' },
  ]);
}

if (process.argv[1]?.endsWith('module-cache.ts')) await moduleCache();
