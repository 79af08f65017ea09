/**
 * The kernel lane's hot path (DESIGN §11): a 1 KiB call through `engine.kernel`
 * (test/fixtures/wat/kernel.wat) in a worker and in process, against the same module called raw on
 * V8 in this process (uninstrumented, no limits rewrite), the same arena copy in and out. Two
 * entries: `copy` (one memory.copy: the call path itself) and `process` (a byte loop that
 * uppercases: the kernel's own work, where fuel's per-iteration charge shows).
 * Targets: ≤ 5 µs p50 in a worker, ≤ 1 µs p50 in process. The raw call keeps its memory view, as
 * the lane does; `callSync` (in process) is timed in batches like the raw call (no Promise to await).
 * The worker rows depend on whether both threads get a core: the line under the table says how
 * the calls spread and what the load average was.
 */

import { loadavg } from 'node:os';
import { createEngine } from '../src/index.ts';
import { batchMedian, fixture, printTable, quantile, sample, sampleSync } from './lib.ts';

export async function kernelBench(): Promise<void> {
  for (const entry of ['copy', 'process']) await one(entry);
}

async function one(entry: string): Promise<void> {
  const bytes = await fixture('kernel');
  const input = new Uint8Array(1024);
  for (let i = 0; i < input.length; i++) input[i] = 97 + (i % 26);

  const raw = new WebAssembly.Instance(new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>)).exports;
  const mem = raw['memory'] as WebAssembly.Memory;
  const process1 = raw[entry] as (n: number) => number;
  let m = new Uint8Array(mem.buffer); // the view a careful caller keeps (re-made only if the memory grew)
  const rawCall = (): Uint8Array => {
    if (m.byteLength === 0) m = new Uint8Array(mem.buffer);
    m.set(input, 0);
    const n = process1(input.length);
    return m.slice(32768, 32768 + n);
  };
  for (let i = 0; i < 100_000; i++) rawCall(); // let V8 tier the loop up before timing it
  const rawMs = batchMedian(30, 20_000, () => void rawCall());
  const rawSamples = sampleSync(20_000, 5_000, rawCall);

  const engine = createEngine({ poolSize: 1 });
  const inproc = await engine.kernel(bytes, { inProcess: true, entry });
  for (let i = 0; i < 20_000; i++) await inproc.call(input);
  const inprocSamples = await sample(20_000, 5_000, () => inproc.call(input));
  const syncSamples = sampleSync(20_000, 20_000, () => inproc.callSync(input));
  const syncMs = batchMedian(30, 20_000, () => void inproc.callSync(input));

  const worker = await engine.kernel(bytes, { entry });
  const workerSamples = await sample(20_000, 5_000, () => worker.call(input));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < 5_000; i++) await worker.call(input);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  // The same run's worker round trip without the kernel's bytes: a noop call on a persistent instance.
  const noop = await engine.start('bench-noop', await fixture('noop'));
  const noopSamples = await sample(20_000, 5_000, () => noop.call('noop'));
  await engine.close();

  printTable(`kernel lane: one 1 KiB call (entry "${entry}"), p50`, [
    { what: 'raw V8 call, same module uninstrumented', p50: quantile(rawSamples, 0.5), p99: quantile(rawSamples, 0.99), unit: 'µs' },
    { what: 'kernel inProcess (await per call)', p50: quantile(inprocSamples, 0.5), p99: quantile(inprocSamples, 0.99), unit: 'µs', vs: 'raw V8 call, same module uninstrumented', target: '≤ 1 µs' },
    { what: 'kernel inProcess callSync (no Promise)', p50: quantile(syncSamples, 0.5), p99: quantile(syncSamples, 0.99), unit: 'µs', vs: 'raw V8 call, same module uninstrumented', target: '≤ 1 µs' },
    { what: 'raw V8 call, batches of 20 000 (GC included)', p50: rawMs, unit: 'µs' },
    { what: 'callSync, batches of 20 000 (GC included)', p50: syncMs, unit: 'µs', vs: 'raw V8 call, batches of 20 000 (GC included)' },
    { what: 'kernel in a worker (await per call)', p50: quantile(workerSamples, 0.5), p99: quantile(workerSamples, 0.99), unit: 'µs', vs: 'raw V8 call, same module uninstrumented', target: '≤ 5 µs' },
    { what: 'noop instance.call in a worker (same run)', p50: quantile(noopSamples, 0.5), p99: quantile(noopSamples, 0.99), unit: 'µs' },
    { what: 'kernel in a worker vs the noop round trip', p50: quantile(workerSamples, 0.5), unit: 'µs', vs: 'noop instance.call in a worker (same run)' },
  ]);
  const within = (xs: readonly number[], us: number): string => `${((xs.filter((x) => x * 1000 <= us).length / xs.length) * 100).toFixed(0)}%`;
  console.log(`worker kernel calls within 5 µs: ${within(workerSamples, 5)}, within 15 µs: ${within(workerSamples, 15)}, within 50 µs: ${within(workerSamples, 50)}; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`worker kernel, calls back to back: ${(((cpu.user + cpu.system) / 1000 / wall) * 100).toFixed(0)}% of one core process-wide (both sides spin while that pays: AdaptiveSpin in bridge/adaptive-spin.ts)`);
}

if (process.argv[1]?.endsWith('kernel.ts')) await kernelBench();
