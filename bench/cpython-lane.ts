/**
 * The CPython-on-WASI lane against the Pyodide lane, in one run (issue #17): `print(1+1)`
 * - warm: a parked, never-used interpreter from the pool (target p50 ≤ 20 ms); each sample waits
 *   (untimed) for the pool to refill, and must be a pool hit;
 * - cold: no pool — the call boots its own interpreter, the compiled module cached (≤ 400 ms);
 * - CLI first call: `membrane exec --lang python -c 'print(1+1)'` in a fresh process (bin/membrane.js,
 *   MEMBRANE_HOME's module cache already warm), each lane picked by MEMBRANE_PYTHON_LANE
 *   (≤ 2 s).
 * Baselines: the Pyodide lane's same three numbers. Run: `node --import tsx bench/cpython-lane.ts`.
 */

import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/index.ts';
import { CPythonLane, type CPythonRunner } from '../src/lanes/cpython/index.ts';
import { PythonLane } from '../src/lanes/python/index.ts';
import { resolvePolicy } from '../src/policy/resolve.ts';
import type { ExecRequest } from '../src/lanes/types.ts';
import { ROOT, printTable, quantile } from './lib.ts';

const WARM_RUNS = 10;
const COLD_RUNS = 4;
const CLI_RUNS = 3;
const compute = resolvePolicy({ profile: 'compute' });
const REQ: ExecRequest = { language: 'python', code: 'print(1+1)', timeoutMs: 10_000, fuel: 1e12, memoryBytes: compute.memoryBytes, caps: ['vfs'] };

/** What a lane looks like here: the CPython and the Pyodide lane both. */
interface Lane {
  warm(): Promise<void>;
  exec(req: ExecRequest): Promise<{ stdout: string; poolHit: boolean }>;
  close(): Promise<void>;
}

/** Warm samples from `pooled` (each a pool hit, the pool refilled untimed before it), cold ones from `unpooled`. */
async function samples(pooled: Lane, unpooled: Lane): Promise<{ warm: number[]; cold: number[] }> {
  const time = async (lane: Lane, hit: boolean): Promise<number> => {
    const t = performance.now();
    const r = await lane.exec(REQ);
    const ms = performance.now() - t;
    if (r.stdout !== '2\n' || r.poolHit !== hit) throw new Error(`unexpected ${hit ? 'warm' : 'cold'} result: ${JSON.stringify(r)}`);
    return ms;
  };
  const warm: number[] = [];
  for (let i = 0; i < WARM_RUNS; i++) {
    await pooled.warm();
    warm.push(await time(pooled, true));
  }
  const cold: number[] = [];
  for (let i = 0; i < COLD_RUNS; i++) cold.push(await time(unpooled, false));
  await unpooled.close();
  return { warm, cold };
}

async function cpython(): Promise<{ warm: number[]; cold: number[] }> {
  const engine = createEngine({ poolSize: 2, pythonLane: 'cpython' });
  // The bench reaches the engine's own lane for its runner (a test of the lane, not an API).
  const internals = engine as unknown as { lanes: { get(l: 'python'): Promise<CPythonLane> } };
  const lane = await internals.lanes.get('python');
  const runner = (lane as unknown as { runner: CPythonRunner }).runner;
  const r = await samples(lane, new CPythonLane(runner, 0));
  await engine.close();
  return r;
}

async function pyodide(): Promise<{ warm: number[]; cold: number[] }> {
  const lane = new PythonLane({ poolSize: 2 });
  const r = await samples(lane, new PythonLane({ poolSize: 0 }));
  await lane.close();
  return r;
}

/** A first `membrane exec --lang python` in a fresh process, its module cache warmed by one untimed call. */
function cli(lane: 'cpython' | 'pyodide'): number[] {
  const home = mkdtempSync(join(tmpdir(), `membrane-bench-cli-${lane}-`));
  const env = { ...process.env, MEMBRANE_HOME: home, MEMBRANE_PYTHON_LANE: lane };
  const once = (): number => {
    const t = performance.now();
    const r = spawnSync(process.execPath, [join(ROOT, 'bin/membrane.js'), 'exec', '--lang', 'python', '-c', 'print(1+1)'], { env, encoding: 'utf8' });
    if (r.stdout !== '2\n') throw new Error(`unexpected CLI output (${lane}): ${r.stdout} ${r.stderr}`);
    return performance.now() - t;
  };
  once();
  return Array.from({ length: CLI_RUNS }, once);
}

const c = await cpython();
const p = await pyodide();
const cliC = cli('cpython');
const cliP = cli('pyodide');
const row = (what: string, xs: number[], vs?: string, target?: string) => ({ what, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), unit: 'ms' as const, ...(vs ? { vs } : {}), ...(target ? { target } : {}) });
printTable(`python: CPython on WASI vs Pyodide, print(1+1) (${WARM_RUNS} warm, ${COLD_RUNS} cold, ${CLI_RUNS} CLI samples)`, [
  row('pyodide lane, warm pool', p.warm),
  row('cpython lane, warm pool', c.warm, 'pyodide lane, warm pool', 'p50 ≤ 20 ms'),
  row('pyodide lane, cold (no pool)', p.cold),
  row('cpython lane, cold (no pool, module cached)', c.cold, 'pyodide lane, cold (no pool)', 'p50 ≤ 400 ms'),
  row('pyodide: membrane exec, fresh process', cliP),
  row('cpython: membrane exec, fresh process', cliC, 'pyodide: membrane exec, fresh process', 'p50 ≤ 2 s'),
]);
