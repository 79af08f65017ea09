/**
 * Timeout overshoot: how far past its deadline a runaway is stopped, over ≥ 50 runaways.
 * Metered (the default): the guest stops itself at its next fuel refill and its worker is reused
 * — target p99 ≤ 10 ms, no worker replaced. Baseline in the same run: fuel off (`--no-fuel`),
 * where the watchdog terminates and replaces the worker.
 */

import { createEngine } from '../src/index.ts';
import { fixture, printTable, quantile } from './lib.ts';

const RUNS = 60;
const BUDGET_MS = 100;

async function overshoot(fuel: boolean): Promise<{ samples: number[]; replaced: number }> {
  const spin = await fixture('spin');
  const engine = createEngine({ poolSize: 2, fuel, cacheDir: false });
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const r = await engine.run(spin, { invoke: 'run', timeoutMs: BUDGET_MS, fuel: 1e15 });
    if (r.error?.code !== 'TIMEOUT') throw new Error(`expected TIMEOUT, got ${JSON.stringify(r.error)}`);
    samples.push(r.durationMs - BUDGET_MS);
  }
  const replaced = engine.stats().workersReplaced;
  await engine.close();
  return { samples, replaced };
}

export async function timeoutOvershoot(): Promise<void> {
  const metered = await overshoot(true);
  const unmetered = await overshoot(false);
  printTable(`timeout overshoot (${RUNS} runaways, ${BUDGET_MS} ms budget): time past the deadline until the caller has TIMEOUT`, [
    { what: 'fuel off: worker terminated', p50: quantile(unmetered.samples, 0.5), p99: quantile(unmetered.samples, 0.99), unit: 'ms' },
    { what: 'metered: stops at its next refill', p50: quantile(metered.samples, 0.5), p99: quantile(metered.samples, 0.99), unit: 'ms', vs: 'fuel off: worker terminated', target: 'p99 ≤ 10 ms' },
  ]);
  console.log(`workers replaced: metered ${metered.replaced} of ${RUNS}, fuel off ${unmetered.replaced} of ${RUNS}`);
}

if (process.argv[1]?.endsWith('timeout-overshoot.ts')) await timeoutOvershoot();
