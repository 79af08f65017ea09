/**
 * Timeout overshoot: how far past its deadline a runaway is stopped (caller answered) and how
 * long until its thread has really exited. Target here: p99 ≤ 25 ms past the deadline (the
 * rewriter issue brings in-guest interruption and ≤ 10 ms).
 */

import { createEngine } from '../src/index.ts';
import { ModuleCache } from '../src/engine/module-cache.ts';
import { WorkerHandle } from '../src/engine/worker-handle.ts';
import { locateWorker } from '../src/engine/worker-file.ts';
import { fixture, printTable, quantile } from './lib.ts';

const RUNS = 60;
const BUDGET_MS = 100;

export async function timeoutOvershoot(): Promise<void> {
  const spin = await fixture('spin');
  const engine = createEngine({ poolSize: 2 });
  const overshoot: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const r = await engine.run(spin, { invoke: 'run', timeoutMs: BUDGET_MS });
    if (r.error?.code !== 'TIMEOUT') throw new Error(`expected TIMEOUT, got ${JSON.stringify(r.error)}`);
    overshoot.push(r.durationMs - BUDGET_MS);
  }
  await engine.close();
  // Thread freed: from the deadline until the runaway's thread has exited (the mechanism the
  // pool uses: terminate on deadline, then await the exit).
  const file = await locateWorker();
  const prepared = await new ModuleCache().prepare(spin, { maxMemoryPages: 16, maxTableElements: 1000, trapOnGrowFailure: true });
  const freed: number[] = [];
  for (let i = 0; i < 20; i++) {
    const h = await WorkerHandle.spawn(file, { heapMb: 64, stackMb: 4, spinMs: 0.1, idleWaitMs: 1000 });
    const spec = {
      session: { id: 'b', tenant: 'b', profile: 'compute' },
      link: [],
      maxMemoryPages: 16,
      importedMemory: null,
      growFailedExport: null,
      output: { limitBytes: 1024, failOnLimit: false },
      wasi: { argv: [], env: [], stdin: new Uint8Array(0) },
      logSink: 'stderr' as const,
      hostWaitMs: 2000,
    };
    const deadline = performance.now() + BUDGET_MS;
    h.post({ v: 1, kind: 'run', job: 1, module: prepared.module, spec, entry: { kind: 'invoke', export: 'run', args: [] }, budgetMs: BUDGET_MS });
    const a = await h.awaitDone(deadline, () => ({ v: 1, kind: 'host-reply', ok: false, errno: -8 }));
    if (a.kind !== 'timeout') throw new Error('expected a timeout');
    await h.terminate();
    freed.push(performance.now() - deadline);
  }
  printTable(`timeout overshoot (${RUNS} runaways, ${BUDGET_MS} ms budget)`, [
    { what: 'caller answered, past the deadline', p50: quantile(overshoot, 0.5), p99: quantile(overshoot, 0.99), unit: 'ms', target: 'p99 ≤ 25 ms' },
    { what: 'runaway thread exited, past the deadline', p50: quantile(freed, 0.5), p99: quantile(freed, 0.99), unit: 'ms' },
  ]);
}

if (process.argv[1]?.endsWith('timeout-overshoot.ts')) await timeoutOvershoot();
