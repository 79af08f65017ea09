/**
 * The Python lane (CPython 3.12 on WASI, issue #17) against Pyodide, in one run: `print(1+1)`
 * - warm: `engine.exec` served by a parked, never-used interpreter from the pool (target p50 ≤ 20 ms);
 *   each sample first waits (untimed) for the pool to refill, and must be a pool hit;
 * - cold: no pool — the call boots its own interpreter, the compiled module cached (≤ 400 ms);
 * - CLI first call: `membrane exec --lang python -c 'print(1+1)'` in a fresh process, its module
 *   cache warmed by one untimed call (≤ 2 s).
 * Baselines (the retired Pyodide lane is gone; Pyodide itself stays a devDependency for this):
 * unhardened in-process Pyodide — `runPython` on an already loaded interpreter (reused: what the lane
 * refuses to do), `loadPyodide()` + `runPython` (cold), and a fresh `node` process doing the same
 * (the CLI's counterpart). The retired lane itself measured 40.5 ms warm, 5.47 s cold and 5.19 s
 * for the CLI on this machine (docs/lanes.md).
 *
 * Call controls (issue #15), each against its baseline in the same run: the first streamed
 * stdout chunk of a snippet that prints and then works ~200 ms, against the time to its result;
 * and abort → settled for a snippet spinning after a print, against the timeout overshoot of the
 * same snippet. Run: `node --import tsx bench/python-lane.ts` (`--controls` runs only those).
 */

import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, type Engine, type ExecOptions } from '../src/index.ts';
import { CPythonLane, type CPythonRunner } from '../src/lanes/cpython/index.ts';
import { resolvePolicy } from '../src/policy/resolve.ts';
import { ROOT, printTable, quantile } from './lib.ts';

const WARM_RUNS = 12;
const COLD_RUNS = 4;
const CLI_RUNS = 3;
const CONTROL_RUNS = 6;
const CODE = 'print(1+1)';

type Row = Parameters<typeof printTable>[1][number];
const row = (what: string, xs: number[], vs?: string, target?: string): Row => ({ what, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), unit: 'ms', ...(vs ? { vs } : {}), ...(target ? { target } : {}) });

/** The engine's Python lane (the bench waits on its pool: a test of the lane, not an API). */
async function poolFull(engine: Engine): Promise<void> {
  const lanes = (engine as unknown as { lanes: { get(l: 'python'): Promise<{ warm(): Promise<void> }> } }).lanes;
  await (await lanes.get('python')).warm();
}

async function timed(engine: Engine, hit: boolean, extra: Partial<ExecOptions> = {}): Promise<number> {
  const t = performance.now();
  const r = await engine.exec({ language: 'python', code: CODE, ...extra });
  const ms = performance.now() - t;
  if (r.stdout !== '2\n' || r.poolHit !== hit) throw new Error(`unexpected ${hit ? 'warm' : 'cold'} result: ${JSON.stringify(r)}`);
  return ms;
}

async function cpython(): Promise<{ warm: number[]; cold: number[] }> {
  const pooled = createEngine({ poolSize: 2 });
  const warm: number[] = [];
  for (let i = 0; i < WARM_RUNS; i++) {
    await poolFull(pooled);
    warm.push(await timed(pooled, true));
  }
  await pooled.close();
  // Cold: the engine's own lane runner behind a lane with no pool (a test of the lane, not an API):
  // every call boots its interpreter, the module already compiled for this memory cap.
  const oneShot = createEngine({ poolSize: 1 });
  await poolFull(oneShot); // the module compiled (and cached), untimed
  const runner = ((await (oneShot as unknown as { lanes: { get(l: 'python'): Promise<unknown> } }).lanes.get('python')) as { runner: CPythonRunner }).runner;
  const unpooled = new CPythonLane(runner, 0);
  const compute = resolvePolicy({ profile: 'compute' });
  const cold: number[] = [];
  for (let i = 0; i < COLD_RUNS; i++) {
    const t = performance.now();
    const r = await unpooled.exec({ language: 'python', code: CODE, timeoutMs: 10_000, fuel: 1e12, memoryBytes: compute.memoryBytes, caps: [] });
    cold.push(performance.now() - t);
    if (r.stdout !== '2\n' || r.poolHit) throw new Error(`unexpected cold result: ${JSON.stringify(r)}`);
  }
  await unpooled.close();
  await oneShot.close();
  return { warm, cold };
}

async function pyodide(): Promise<{ warm: number[]; cold: number[] }> {
  const { loadPyodide } = await import('pyodide');
  const cold: number[] = [];
  let last: Awaited<ReturnType<typeof loadPyodide>> | null = null;
  for (let i = 0; i < COLD_RUNS; i++) {
    const t = performance.now();
    last = await loadPyodide({ stdout: () => undefined });
    last.runPython(CODE);
    cold.push(performance.now() - t);
  }
  const warm: number[] = [];
  for (let i = 0; i < WARM_RUNS; i++) {
    const t = performance.now();
    last!.runPython(CODE, { globals: last!.toPy({}) });
    warm.push(performance.now() - t);
  }
  return { warm, cold };
}

/** A fresh process's first `print(1+1)`, the first run untimed (it fills the module cache). */
function freshProcess(args: string[], expect: string): number[] {
  const env = { ...process.env, MEMBRANE_HOME: mkdtempSync(join(tmpdir(), 'membrane-bench-cli-')) };
  const once = (): number => {
    const t = performance.now();
    const r = spawnSync(process.execPath, args, { env, encoding: 'utf8', cwd: ROOT });
    if (r.stdout !== expect) throw new Error(`unexpected output: ${r.stdout} ${r.stderr}`);
    return performance.now() - t;
  };
  once();
  return Array.from({ length: CLI_RUNS }, once);
}

export async function pythonLane(): Promise<void> {
  const c = await cpython();
  const p = await pyodide();
  const cliC = freshProcess([join(ROOT, 'bin/membrane.js'), 'exec', '--lang', 'python', '-c', CODE], '2\n');
  const cliP = freshProcess(['--input-type=module', '-e', `const { loadPyodide } = await import('pyodide'); const py = await loadPyodide(); py.runPython(${JSON.stringify(CODE)});`], '2\n');
  printTable(`python lane: CPython on WASI vs Pyodide, ${CODE} (${WARM_RUNS} warm, ${COLD_RUNS} cold, ${CLI_RUNS} CLI samples)`, [
    row('pyodide runPython, reused interpreter (unhardened)', p.warm),
    row('python lane, fresh interpreter from the warm pool', c.warm, 'pyodide runPython, reused interpreter (unhardened)', 'p50 ≤ 20 ms'),
    row('pyodide loadPyodide + runPython, in process', p.cold),
    row('python lane, cold (no pool, module cached)', c.cold, 'pyodide loadPyodide + runPython, in process', 'p50 ≤ 400 ms'),
    row('pyodide: node process, load + run', cliP),
    row('membrane exec --lang python, fresh process', cliC, 'pyodide: node process, load + run', 'p50 ≤ 2 s'),
  ]);
}

const WORK_200MS = "print('started')\nimport time\nt = time.time()\nwhile time.time() - t < 0.2: pass\n1";
const SPIN = "print('go')\nwhile True: pass";
const OVERSHOOT_BUDGET_MS = 300;

/** Streaming and cancellation latencies, each with its same-run baseline. */
export async function pythonControls(): Promise<void> {
  const engine = createEngine({ poolSize: 2 });
  const py = (code: string, extra: Partial<ExecOptions> = {}) => engine.exec({ language: 'python', code, timeoutMs: 10_000, ...extra });
  const firstChunk: number[] = [];
  const toResult: number[] = [];
  const cancel: number[] = [];
  const overshoot: number[] = [];
  for (let i = 0; i < CONTROL_RUNS; i++) {
    await poolFull(engine);
    let first = -1;
    const t = performance.now();
    const r = await py(WORK_200MS, { onStdout: () => void (first < 0 && (first = performance.now() - t)) });
    toResult.push(performance.now() - t);
    if (r.result !== 1 || first < 0) throw new Error(`unexpected streaming result: ${JSON.stringify(r)}`);
    firstChunk.push(first);

    await poolFull(engine);
    const ac = new AbortController();
    let abortedAt = 0;
    const c = await py(SPIN, { signal: ac.signal, onStdout: () => void (abortedAt === 0 && ((abortedAt = performance.now()), ac.abort())) });
    cancel.push(performance.now() - abortedAt);
    if (c.error?.code !== 'CANCELLED') throw new Error(`unexpected cancel result: ${JSON.stringify(c)}`);

    await poolFull(engine);
    const t2 = performance.now();
    const o = await py(SPIN, { timeoutMs: OVERSHOOT_BUDGET_MS });
    overshoot.push(performance.now() - t2 - OVERSHOOT_BUDGET_MS);
    if (o.error?.code !== 'TIMEOUT') throw new Error(`unexpected timeout result: ${JSON.stringify(o)}`);
  }
  await engine.close();
  printTable(`python lane call controls (${CONTROL_RUNS} samples each)`, [
    row('print, then ~200 ms of work: time to result', toResult),
    row('  … first streamed stdout chunk', firstChunk, 'print, then ~200 ms of work: time to result', 'before the result'),
    row(`spin after a print: timeout overshoot (${OVERSHOOT_BUDGET_MS} ms budget)`, overshoot),
    row('  … abort → settled', cancel, `spin after a print: timeout overshoot (${OVERSHOOT_BUDGET_MS} ms budget)`, '≤ 50 ms'),
  ]);
}

if (process.argv[1]?.endsWith('python-lane.ts')) {
  if (!process.argv.includes('--controls')) await pythonLane();
  await pythonControls();
}
