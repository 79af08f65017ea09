/**
 * The Python lane's latency (issue #6, DESIGN §11): `print(1+1)` in a fresh hardened interpreter
 * from the warm pool (target p50 ≤ 100 ms) and from a cold start (empty pool), against unhardened
 * in-process Pyodide in the same run — `loadPyodide()` + `runPython` (cold) and `runPython` on an
 * already loaded interpreter (warm, reused: what the lane refuses to do).
 *
 * Warm samples wait for the pool to refill between calls (untimed), so each one is a pool hit.
 * Run directly: `node --import tsx bench/python-lane.ts`.
 */

import { PythonLane } from '../src/lanes/python/index.ts';
import type { ExecRequest } from '../src/lanes/types.ts';
import { printTable, quantile } from './lib.ts';

const WARM_RUNS = 8;
const COLD_RUNS = 3;
const REQ: ExecRequest = { language: 'python', code: 'print(1+1)', timeoutMs: 10_000, fuel: 1e10, memoryBytes: 128 << 20, caps: [] };

async function unhardened(): Promise<{ cold: number[]; warm: number[] }> {
  const { loadPyodide } = await import('pyodide');
  const cold: number[] = [];
  let last: Awaited<ReturnType<typeof loadPyodide>> | null = null;
  for (let i = 0; i < COLD_RUNS; i++) {
    const t = performance.now();
    last = await loadPyodide({ stdout: () => undefined });
    last.runPython('print(1+1)');
    cold.push(performance.now() - t);
  }
  const warm: number[] = [];
  for (let i = 0; i < WARM_RUNS; i++) {
    const t = performance.now();
    last!.runPython('print(1+1)');
    warm.push(performance.now() - t);
  }
  return { cold, warm };
}

export async function pythonLane(): Promise<void> {
  const base = await unhardened();
  const lane = new PythonLane({ poolSize: 2 });
  const warm: number[] = [];
  for (let i = 0; i < WARM_RUNS; i++) {
    await lane.warm();
    const t = performance.now();
    const r = await lane.exec(REQ);
    warm.push(performance.now() - t);
    if (r.stdout !== '2\n' || !r.poolHit) throw new Error(`unexpected warm result: ${JSON.stringify(r)}`);
  }
  const tier = lane.stats().tier;
  await lane.close();
  const coldLane = new PythonLane({ poolSize: 0 });
  const cold: number[] = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    const t = performance.now();
    const r = await coldLane.exec(REQ);
    cold.push(performance.now() - t);
    if (r.stdout !== '2\n') throw new Error(`unexpected cold result: ${JSON.stringify(r)}`);
  }
  await coldLane.close();
  const row = (what: string, xs: number[], vs?: string, target?: string) => ({
    what,
    p50: quantile(xs, 0.5),
    p99: quantile(xs, 0.99),
    unit: 'ms' as const,
    ...(vs ? { vs } : {}),
    ...(target ? { target } : {}),
  });
  printTable(`python lane: print(1+1), tier ${tier}, fuel on (${WARM_RUNS} warm, ${COLD_RUNS} cold samples)`, [
    row('unhardened in-process loadPyodide + runPython', base.cold),
    row('hardened cold start (empty pool)', cold, 'unhardened in-process loadPyodide + runPython'),
    row('unhardened runPython, reused interpreter', base.warm),
    row('hardened fresh interpreter, warm pool', warm, 'unhardened runPython, reused interpreter', 'p50 ≤ 100 ms'),
  ]);
}

if (process.argv[1]?.endsWith('python-lane.ts')) await pythonLane();
