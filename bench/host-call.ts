/**
 * Guest → host call round trip through the sync channel: `membrane.log` with an `onLog` hook
 * (the line crosses to the main thread and back) against the same call handled inside the
 * worker (captured stderr, no crossing) and a raw in-process import call.
 */

import { createEngine } from '../src/index.ts';
import { batchMedian, fixture, median, printTable } from './lib.ts';

const N = 20_000;

async function perCall(viaHost: boolean, log: Uint8Array): Promise<number> {
  const engine = createEngine({ poolSize: 1, ...(viaHost ? { onLog: () => {} } : {}), outputLimitBytes: 64 * 1024 * 1024 });
  const inst = await engine.start('h', log);
  await inst.call('log_n', [1000]);
  const samples: number[] = [];
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    await inst.call('log_n', [0]);
    const empty = performance.now() - t0;
    const t1 = performance.now();
    const r = await inst.call('log_n', [N]);
    if (r.result !== N) throw new Error(JSON.stringify(r.error));
    samples.push((performance.now() - t1 - empty) / N);
  }
  await engine.close();
  return median(samples);
}

export async function hostCall(): Promise<void> {
  const log = await fixture('log');
  const inst = new WebAssembly.Instance(new WebAssembly.Module(log as Uint8Array<ArrayBuffer>), { membrane: { log: () => {} } });
  const logN = inst.exports['log_n'] as (n: number) => number;
  const raw = batchMedian(15, 10, () => logN(N)) / N;
  const inWorker = await perCall(false, log);
  const channel = await perCall(true, log);
  printTable('guest → host call (membrane.log)', [
    { what: 'raw in-process import call', p50: raw, unit: 'µs' },
    { what: 'handled in the worker (no crossing)', p50: inWorker, unit: 'µs', vs: 'raw in-process import call' },
    { what: 'round trip to the main thread (sync channel)', p50: channel, unit: 'µs', vs: 'handled in the worker (no crossing)' },
  ]);
}

if (process.argv[1]?.endsWith('host-call.ts')) await hostCall();
