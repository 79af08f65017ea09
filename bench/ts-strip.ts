/**
 * TypeScript snippets vs JavaScript (issue #15, DESIGN §11: p50 ≤ 2 ms for JS and for TS): a
 * fresh-context eval through `JsLane`, every call a new QuickJS instance and, for TS, a new
 * stripper instance (swc strip-only as a fuel-metered wasm guest) — against the same snippets as
 * plain JS through the lane and Node's `vm.runInNewContext`, in the same run.
 *
 * Every timed call runs a *distinct* snippet (its names, numbers and shape change with the
 * index), so nothing can be served from a cache keyed by the source; there is no such cache.
 * Warm: each timed call waits until the pools have an interpreter ready (what a caller whose calls
 * are spaced sees). Back-to-back: calls issued as fast as they complete, pools refilling behind.
 * Also printed: each warm call's `durationMs` as the worker measured it (no thread hand-offs: the
 * figure that moves least on a loaded machine), and the stripper alone — making an instance (done
 * ahead, with the pooled TS interpreter) and one strip (in the call).
 */

import vm from 'node:vm';
import { createRequire } from 'node:module';
import { JsLane } from '../src/lanes/js/index.ts';
import { LaneMeter } from '../src/lanes/js/meter.ts';
import { loadStripper } from '../src/lanes/js/strip-module.ts';
import { Stripper } from '../src/lanes/js/stripper.ts';
import type { ExecRequest } from '../src/lanes/types.ts';
import { median, printTable, quantile } from './lib.ts';

const N = 60;
const WARMUP = 30;
const TARGET_MS = 2;

/** The i-th snippet in TypeScript and in JavaScript (the same program), and its result. */
function snippet(i: number): { ts: string; js: string; result: number } {
  const k = (i % 7) + 2;
  const ts = `interface Item${i} { id: number; label?: string }
type Pair${i}<T> = [T, T];
const scale${i} = <T extends number>(x: T, by: number = ${k}): number => x * by;
function total${i}(items: readonly Item${i}[]): number {
  let sum: number = 0;
  for (const it of items as Item${i}[]) sum += scale${i}(it.id);
  return sum;
}
const pair: Pair${i}<number> = [${i}, ${i + 1}];
total${i}(pair.map((id: number): Item${i} => ({ id })))`;
  const js = `
const scale${i} = (x, by = ${k}) => x * by;
function total${i}(items) {
  let sum = 0;
  for (const it of items) sum += scale${i}(it.id);
  return sum;
}
const pair = [${i}, ${i + 1}];
total${i}(pair.map((id) => ({ id })))`;
  return { ts, js, result: (2 * i + 1) * k };
}

const req = (language: 'js' | 'ts', code: string): ExecRequest => ({ language, code, timeoutMs: 5000, fuel: 1e12, memoryBytes: 64 * 1024 * 1024, caps: [] });

async function untilReady(lane: JsLane, want: number): Promise<void> {
  // First let the worker's pool message for the call just made arrive (it follows the result).
  await new Promise((r) => setTimeout(r, 5));
  for (let i = 0; i < 1000 && lane.stats().ready < want; i++) await new Promise((r) => setTimeout(r, 2));
  // Let the worker finish what follows a refill (its garbage collection) before the timed call.
  await new Promise((r) => setTimeout(r, 20));
}

async function timed(n: number, op: (i: number) => Promise<unknown>, between?: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    if (between) await between();
    const t = performance.now();
    await op(i);
    out.push(performance.now() - t);
  }
  return out;
}

/** A fresh stripper instance + one strip of each snippet (the part of a TS call the stripper adds). */
async function stripperAlone(n: number, from: number): Promise<{ create: number[]; strip: number[] }> {
  const m = await loadStripper(createRequire(import.meta.url).resolve('@swc/wasm-typescript'), null);
  const interrupt = new Int32Array(new SharedArrayBuffer(4));
  const create: number[] = [];
  const strip: number[] = [];
  for (let i = 0; i < n; i++) {
    const call = new LaneMeter(interrupt);
    call.attach({ __membrane_fuel: new WebAssembly.Global({ value: 'i64', mutable: true }, 0n) });
    call.begin(1e12, performance.now() + 5000);
    const t0 = performance.now();
    const s = Stripper.create(m, interrupt, 64 * 1024 * 1024);
    const t1 = performance.now();
    const r = s.strip(snippet(from + i).ts, call);
    strip.push(performance.now() - t1);
    create.push(t1 - t0);
    if (!r.ok) throw new Error(`strip failed: ${r.failure.message}`);
  }
  return { create, strip };
}

export async function tsStrip(): Promise<void> {
  const vmTimes = await timed(N, async (i) => vm.runInNewContext(snippet(i).js));

  const lane = new JsLane({ poolSize: 2, cacheDir: false });
  await lane.warm();
  // Warm-up calls (JIT tiers, first strips) with snippets outside the timed range.
  for (let i = 0; i < WARMUP; i++) {
    await lane.exec(req('js', snippet(10_000 + i).js));
    await lane.exec(req('ts', snippet(10_000 + i).ts));
  }
  let misses = 0;
  const inWorker: Record<'js' | 'ts', number[]> = { js: [], ts: [] };
  const check = async (language: 'js' | 'ts', i: number, warm = true): Promise<void> => {
    const s = snippet(i);
    const r = await lane.exec(req(language, s[language]));
    if (r.result !== s.result) throw new Error(`unexpected result ${JSON.stringify(r)}`);
    if (warm && !r.poolHit) misses++;
    if (warm) inWorker[language].push(r.durationMs);
  };
  const ready = (): Promise<void> => untilReady(lane, 4);
  const jsTimes = await timed(N, (i) => check('js', i), ready);
  const tsTimes = await timed(N, (i) => check('ts', N + i), ready);
  const tsB2b = await timed(N, (i) => check('ts', 2 * N + i, false));
  const stats = lane.stats();
  await lane.close();
  const alone = await stripperAlone(N, 3 * N);

  const row = (what: string, xs: number[], vs?: string, target?: string) => ({ what, p50: median(xs), p99: quantile(xs, 0.99), unit: 'ms' as const, ...(vs ? { vs } : {}), ...(target ? { target } : {}) });
  printTable(`TypeScript vs JavaScript snippets: fresh context, a distinct snippet every call (${N} calls each)`, [
    row('node vm.runInNewContext (js)', vmTimes),
    row('JsLane js, warm pool', jsTimes, 'node vm.runInNewContext (js)', `≤ ${TARGET_MS} ms`),
    row('JsLane ts, warm pool', tsTimes, 'JsLane js, warm pool', `≤ ${TARGET_MS} ms`),
    row('JsLane ts, back-to-back', tsB2b, 'JsLane js, warm pool'),
    row('JsLane js, warm: durationMs in the worker', inWorker.js),
    row('JsLane ts, warm: durationMs in the worker', inWorker.ts, 'JsLane js, warm: durationMs in the worker'),
    row('stripper instance (pooled with the TS interpreter)', alone.create),
    row('stripper: strip one snippet (in the call)', alone.strip),
  ]);
  const p50 = median(tsTimes);
  console.log(
    `warm TS p50 ${p50.toFixed(2)} ms (target ≤ ${TARGET_MS} ms) — ${p50 <= TARGET_MS ? 'met' : 'MISSED'}; ` +
      `timed warm calls that missed the pool: ${misses}; lane stats ${JSON.stringify(stats)}`,
  );
}

if (process.argv[1]?.endsWith('ts-strip.ts')) await tsStrip();
