/**
 * The JS lane's latency (issue #6 must-show 4): a fresh-context eval of a small snippet through
 * `JsLane` — every call a new QuickJS wasm instance, runtime and context, fuel-metered, in the
 * lane's worker thread — against Node's `vm.runInNewContext` of the same snippet in the same run.
 * Target: warm-pool p50 ≤ 5 ms.
 *
 * Warm: each timed call waits until the pool has an interpreter ready (what a caller whose calls
 * are spaced sees). Cold: `poolSize: 0`, so every call builds its interpreter (a pool miss).
 * Back-to-back: calls issued as fast as they complete, pool refilling behind them.
 */

import vm from 'node:vm';
import { JsLane } from '../src/lanes/js/index.ts';
import type { ExecRequest } from '../src/lanes/types.ts';
import { median, printTable, quantile } from './lib.ts';

const SNIPPET = 'const xs = [1, 2, 3, 4]; xs.map((x) => x * x).reduce((a, b) => a + b, 0)';
const N = 60;
const TARGET_MS = 5;

const req = (language: 'js' | 'ts' = 'js'): ExecRequest => ({ language, code: SNIPPET, timeoutMs: 5000, fuel: 1e9, memoryBytes: 64 * 1024 * 1024, caps: [] });

async function timed(n: number, op: () => Promise<unknown>, between?: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    if (between) await between();
    const t = performance.now();
    await op();
    out.push(performance.now() - t);
  }
  return out;
}

async function untilReady(lane: JsLane, want: number): Promise<void> {
  for (let i = 0; i < 500 && lane.stats().ready < want; i++) await new Promise((r) => setTimeout(r, 2));
  // Let the worker finish what follows a refill (its garbage collection) before the timed call.
  await new Promise((r) => setTimeout(r, 20));
}

export async function jsLane(): Promise<void> {
  const vmTimes = await timed(N, async () => vm.runInNewContext(SNIPPET));

  const warm = new JsLane({ poolSize: 2, cacheDir: false });
  await warm.warm();
  for (let i = 0; i < 5; i++) await warm.exec(req());
  let misses = 0;
  const check = async (language: 'js' | 'ts') => {
    const r = await warm.exec(req(language));
    if (r.result !== 30) throw new Error(`unexpected result ${JSON.stringify(r)}`);
    if (!r.poolHit) misses++;
  };
  const warmTimes = await timed(N, () => check('js'), () => untilReady(warm, 4));
  const tsTimes = await timed(N, () => check('ts'), () => untilReady(warm, 4));
  const b2b = await timed(N, () => warm.exec(req()));
  const stats = warm.stats();
  await warm.close();

  const cold = new JsLane({ poolSize: 0, cacheDir: false });
  await cold.warm();
  const coldTimes = await timed(20, () => cold.exec(req()));
  const coldTs = await timed(8, () => cold.exec(req('ts')));
  await cold.close();

  const row = (what: string, xs: number[], vs?: string, target?: string) => ({ what, p50: median(xs), p99: quantile(xs, 0.99), unit: 'ms' as const, ...(vs ? { vs } : {}), ...(target ? { target } : {}) });
  printTable(`JS lane: fresh-context eval of a small snippet (${N} calls each)`, [
    row('node vm.runInNewContext', vmTimes),
    row('JsLane js, warm pool', warmTimes, 'node vm.runInNewContext', `≤ ${TARGET_MS} ms`),
    row('JsLane ts, warm pool', tsTimes, 'node vm.runInNewContext'),
    row('JsLane js, back-to-back', b2b, 'node vm.runInNewContext'),
    row('JsLane js, cold (pool miss)', coldTimes, 'node vm.runInNewContext'),
    row('JsLane ts, cold (pool miss)', coldTs, 'node vm.runInNewContext'),
  ]);
  const p50 = median(warmTimes);
  console.log(
    `warm-pool p50 ${p50.toFixed(2)} ms (target ≤ ${TARGET_MS} ms) — ${p50 <= TARGET_MS ? 'met' : 'MISSED'}; ` +
      `timed warm calls that missed the pool: ${misses}; lane stats ${JSON.stringify(stats)}`,
  );
}

if (process.argv[1]?.endsWith('js-lane.ts')) await jsLane();
