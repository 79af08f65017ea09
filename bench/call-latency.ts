/**
 * Noop call into a persistent instance through its worker, against a raw in-process V8 call and
 * the Extism JS SDK in worker mode (its closest equivalent). Target: ≤ 15 µs p50 (DESIGN §11).
 */

import { createEngine } from '../src/index.ts';
import { batchMedian, extismBaseline, fixture, printTable, quantile, sample } from './lib.ts';

export async function callLatency(): Promise<void> {
  const noop = await fixture('noop');
  const raw = new WebAssembly.Instance(new WebAssembly.Module(noop as Uint8Array<ArrayBuffer>)).exports['noop'] as () => void;
  const rawMs = batchMedian(20, 100_000, raw);

  const engine = createEngine({ poolSize: 1 });
  const inst = await engine.start('bench', noop);
  const ours = await sample(20_000, 5_000, () => inst.call('noop'));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < 5_000; i++) await inst.call('noop');
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await engine.close();

  const extism = extismBaseline('worker-call', 3_000);

  printTable('noop call into a persistent instance', [
    { what: 'raw in-process V8 call', p50: rawMs, unit: 'µs' },
    { what: 'membrane instance.call (worker)', p50: quantile(ours, 0.5), p99: quantile(ours, 0.99), unit: 'µs', vs: 'Extism worker mode', target: '≤ 15 µs p50' },
    { what: 'Extism worker mode', p50: extism.p50, p99: extism.p99, unit: 'µs' },
  ]);
  console.log(
    `membrane vs raw: ${(quantile(ours, 0.5) / rawMs).toFixed(0)}×; CPU while calling back to back: ` +
      `${(((cpu.user + cpu.system) / 1000 / wall) * 100).toFixed(0)}% of one core (process-wide: both sides spin briefly between calls, then sleep)`,
  );
}

if (process.argv[1]?.endsWith('call-latency.ts')) await callLatency();
