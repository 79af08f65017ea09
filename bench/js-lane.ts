/**
 * The JS lane's latency (issue #6 must-show 4): a fresh-context eval of a small snippet through
 * `JsLane` — every call a new QuickJS wasm instance, runtime and context, fuel-metered, in the
 * lane's worker thread — against Node's `vm.runInNewContext` of the same snippet in the same run.
 * Target: warm-pool p50 ≤ 5 ms.
 *
 * Warm: each timed call waits until the pool has an interpreter ready (what a caller whose calls
 * are spaced sees). Cold: `poolSize: 0`, so every call builds its interpreter (a pool miss).
 * Back-to-back: calls issued as fast as they complete, pool refilling behind them.
 *
 * Lane powers: `kv.get` of a 1 KiB value from a JS snippet (QuickJS → the worker's Atomics.wait
 * bridge → the main thread's power server → the broker cadence → SQLite) against `kv_get` of the
 * same value from a persistent core guest (the sync channel → the same broker). Per call: a snippet
 * of `POWER_CALLS` gets, less the same loop around a local function, divided by `POWER_CALLS`.
 */

import vm from 'node:vm';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/index.ts';
import { JsLane } from '../src/lanes/js/index.ts';
import type { ExecRequest } from '../src/lanes/types.ts';
import { KvStore } from '../src/storage/kv.ts';
import { openDatabase } from '../src/storage/sqlite.ts';
import { fixture, median, printTable, quantile } from './lib.ts';

const POWER_CALLS = 2_000;

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

/** µs-scale per-call cost of `kv.get` through the JS lane's power bridge vs a core guest's `kv_get`. */
export async function jsLanePowers(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'membrane-bench-lane-powers-'));
  process.env['MEMBRANE_HOME'] = home;
  const seed = new KvStore(openDatabase(join(home, 'engine.sqlite')));
  seed.put('bench', 'bench', new TextEncoder().encode('v'.repeat(1024)));
  const engine = createEngine({ poolSize: 1 });
  const loop = (get: string) => `(() => { const get = ${get}; let n = 0; for (let i = 0; i < ${POWER_CALLS}; i++) if (get('bench') !== null) n++; return n; })()`;
  const lane: number[] = [];
  for (let i = 0; i < 9; i++) {
    const withPower = await engine.exec({ language: 'js', code: loop('kv.get'), profile: 'minimal', tenant: 'bench' });
    const without = await engine.exec({ language: 'js', code: loop("(k) => k + 'v'"), profile: 'minimal', tenant: 'bench' });
    if (withPower.result !== POWER_CALLS || without.result !== POWER_CALLS) throw new Error(`lane kv.get missed: ${JSON.stringify(withPower.error ?? withPower.result)}`);
    lane.push((withPower.durationMs - without.durationMs) / POWER_CALLS);
  }
  const plugin = await engine.start('kv-bench', await fixture('kv-loop'), { profile: 'minimal', tenant: 'bench', timeoutMs: 5_000 });
  const core: number[] = [];
  for (let i = 0; i < 9; i++) {
    const t = performance.now();
    const r = await plugin.call('get_n', [POWER_CALLS]);
    if (r.result !== POWER_CALLS) throw new Error(`core kv_get missed: ${JSON.stringify(r.error ?? r.result)}`);
    core.push((performance.now() - t) / POWER_CALLS);
  }
  await engine.close();
  printTable(`lane powers: kv.get of 1 KiB (${POWER_CALLS} calls per run, 9 runs)`, [
    { what: 'kv_get from a core guest (channel + cadence + SQLite)', p50: median(core), unit: 'µs' },
    { what: 'kv.get from a JS snippet (Atomics.wait bridge + cadence + SQLite)', p50: median(lane), unit: 'µs', vs: 'kv_get from a core guest (channel + cadence + SQLite)' },
  ]);
}

if (process.argv[1]?.endsWith('js-lane.ts')) {
  await jsLane();
  await jsLanePowers();
}
