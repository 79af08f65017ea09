/**
 * The Python lane's latency (issue #6, DESIGN §11): `print(1+1)` in a fresh hardened interpreter
 * from the warm pool (target p50 ≤ 100 ms) and from a cold start (empty pool), against unhardened
 * in-process Pyodide in the same run — `loadPyodide()` + `runPython` (cold) and `runPython` on an
 * already loaded interpreter (warm, reused: what the lane refuses to do).
 *
 * Warm samples wait for the pool to refill between calls (untimed), so each one is a pool hit.
 *
 * Call controls (issue #15), each against its baseline in the same run: the first streamed
 * stdout chunk of a snippet that prints and then works ~200 ms, against the time to its result;
 * and abort → settled for a snippet spinning after a print (aborted when the print arrives),
 * against the timeout overshoot of the same snippet (how long past its budget the call settles).
 * Run directly: `node --import tsx bench/python-lane.ts` (`--controls` runs only those).
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

const CONTROL_RUNS = 6;
const WORK_200MS = "print('started')\nimport time\nt = time.time()\nwhile time.time() - t < 0.2: pass\n1";
const SPIN = "print('go')\nwhile True: pass";
const OVERSHOOT_BUDGET_MS = 300;

/** Streaming and cancellation latencies, each with its same-run baseline. */
export async function pythonControls(): Promise<void> {
  const lane = new PythonLane({ poolSize: 2 });
  const firstChunk: number[] = [];
  const toResult: number[] = [];
  const cancel: number[] = [];
  const overshoot: number[] = [];
  for (let i = 0; i < CONTROL_RUNS; i++) {
    await lane.warm();
    let first = -1;
    const t = performance.now();
    const r = await lane.exec({ ...REQ, code: WORK_200MS, onStdout: () => void (first < 0 && (first = performance.now() - t)) });
    toResult.push(performance.now() - t);
    if (r.result !== 1 || first < 0) throw new Error(`unexpected streaming result: ${JSON.stringify(r)}`);
    firstChunk.push(first);

    await lane.warm();
    const ac = new AbortController();
    let abortedAt = 0;
    const c = await lane.exec({ ...REQ, code: SPIN, signal: ac.signal, onStdout: () => void (abortedAt === 0 && ((abortedAt = performance.now()), ac.abort())) });
    cancel.push(performance.now() - abortedAt);
    if (c.error?.code !== 'CANCELLED') throw new Error(`unexpected cancel result: ${JSON.stringify(c)}`);

    await lane.warm();
    const t2 = performance.now();
    const o = await lane.exec({ ...REQ, code: SPIN, timeoutMs: OVERSHOOT_BUDGET_MS });
    overshoot.push(performance.now() - t2 - OVERSHOOT_BUDGET_MS);
    if (o.error?.code !== 'TIMEOUT') throw new Error(`unexpected timeout result: ${JSON.stringify(o)}`);
  }
  const tier = lane.stats().tier;
  await lane.close();
  const row = (what: string, xs: number[], vs?: string, target?: string) => ({ what, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), unit: 'ms' as const, ...(vs ? { vs } : {}), ...(target ? { target } : {}) });
  printTable(`python lane call controls, tier ${tier} (${CONTROL_RUNS} samples each, warm pool)`, [
    row('print, then ~200 ms of work: time to result', toResult),
    row('  … first streamed stdout chunk', firstChunk, 'print, then ~200 ms of work: time to result', 'before the result'),
    row(`spin after a print: timeout overshoot (${OVERSHOOT_BUDGET_MS} ms budget)`, overshoot),
    row('  … abort → settled', cancel, `spin after a print: timeout overshoot (${OVERSHOOT_BUDGET_MS} ms budget)`, '≤ 50 ms'),
  ]);
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

if (process.argv[1]?.endsWith('python-lane.ts')) {
  if (!process.argv.includes('--controls')) await pythonLane();
  await pythonControls();
}
