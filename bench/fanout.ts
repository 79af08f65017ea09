/**
 * The fabric's fan-out on one machine (DESIGN §7): 1 024 inputs through `engine.fanout` at width
 * 1, 4 and 16 — a registered command (`wc -c`, a fresh sandbox per input) and a kernel (uppercase,
 * one kernel handle per lane, opened by each fan-out: their worker boots are inside the wall time) — throughput and per-input p99 (its run time, not its queue wait),
 * each with its ratio to width 1 in the same run. Then the command across two `membrane worker`
 * processes (concurrency 8 each) through a private redis-server (`tier: 'remote'`), each width
 * with its ratio to the local row of the same width; without redis-server that section is
 * skipped with a printed reason.
 */

import { availableParallelism } from 'node:os';
import { createEngine } from '../src/index.ts';
import { fixture, quantile } from './lib.ts';
import { INSTALL_HINT, redisServerPath, startRedis, startWorker, stopWorker } from '../test-remote/helpers.ts';

const N = 1024;

export async function fanoutBench(): Promise<void> {
  // One tenant: its share is the whole engine (the default caps a tenant at half the workers).
  const engine = createEngine({ poolSize: 4, maxWorkers: 16, maxWorkersPerTenant: 16 });
  const kernel = await fixture('kernel');
  const inputs = Array.from({ length: N }, (_, i) => `input number ${i}: ${'abcdefgh'.repeat(16)}`);
  const rows: string[][] = [];
  const localCommand = new Map<number, { perSec: number; p99: number }>();
  for (const shape of ['command wc -c', 'kernel (uppercase)'] as const) {
    let base = 0;
    let baseP99 = 0;
    for (const width of [1, 4, 16]) {
      const run = () => (shape === 'kernel (uppercase)' ? engine.fanout({ kernel, inputs, width }) : engine.fanout({ command: 'wc', args: ['-c'], inputs, width }));
      await run(); // warm: modules compiled, workers and kernel handles started
      const t0 = performance.now();
      const out = await run();
      const wall = performance.now() - t0;
      const failed = out.filter((r) => !r.ok).length;
      const lat = out.flatMap((r) => (r.ok ? [r.durationMs] : []));
      const perSec = (N / wall) * 1000;
      const p99 = quantile(lat, 0.99);
      if (shape === 'command wc -c') localCommand.set(width, { perSec, p99 });
      if (width === 1) {
        base = perSec;
        baseP99 = p99;
      }
      rows.push([shape, String(width), `${wall.toFixed(0)} ms`, `${perSec.toFixed(0)}/s`, `${(perSec / base).toFixed(2)}×`, `${quantile(lat, 0.5).toFixed(3)} ms`, `${p99.toFixed(3)} ms`, `${(p99 / baseP99).toFixed(2)}×`, String(failed)]);
    }
  }
  await engine.close();
  const head = ['shape', 'width', 'wall', 'throughput', 'vs width 1', 'p50/input', 'p99/input', 'p99 vs width 1', 'failed'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(w[i]!)).join('  ');
  console.log(`\n## fan-out: ${N} inputs on one machine (${availableParallelism()} cores)\n`);
  console.log(line(head));
  console.log(w.map((n) => '-'.repeat(n)).join('  '));
  for (const r of rows) console.log(line(r));
  await remoteRows(inputs, localCommand);
}

/** The same `wc -c` fan-out on the remote tier: two `membrane worker`s through a redis-server of our own. */
async function remoteRows(inputs: string[], local: Map<number, { perSec: number; p99: number }>): Promise<void> {
  const bin = redisServerPath();
  if (!bin) {
    console.log(`\nremote tier: skipped — redis-server is not installed (${INSTALL_HINT}).`);
    return;
  }
  const redis = await startRedis(bin);
  const workers = await Promise.all([startWorker(redis.url, { concurrency: 8 }), startWorker(redis.url, { concurrency: 8 })]);
  const engine = createEngine({ remote: { redis: redis.url } });
  const rows: string[][] = [];
  try {
    await engine.fanout({ command: 'wc', args: ['-c'], inputs: inputs.slice(0, 32), width: 16, tier: 'remote' }); // warm: module stored, workers compiled it
    for (const width of [1, 4, 16]) {
      const t0 = performance.now();
      const out = await engine.fanout({ command: 'wc', args: ['-c'], inputs, width, tier: 'remote' });
      const wall = performance.now() - t0;
      const lat = out.flatMap((r) => (r.ok ? [r.durationMs] : []));
      const perSec = (N / wall) * 1000;
      const p99 = quantile(lat, 0.99);
      const l = local.get(width)!;
      rows.push(['command wc -c (remote)', String(width), `${wall.toFixed(0)} ms`, `${perSec.toFixed(0)}/s`, `${(perSec / l.perSec).toFixed(2)}×`, `${p99.toFixed(3)} ms`, `${(p99 / l.p99).toFixed(2)}×`, String(out.length - lat.length)]);
    }
  } finally {
    await engine.close();
    await Promise.all(workers.map(stopWorker));
    redis.kill();
  }
  const head = ['shape', 'width', 'wall', 'throughput', 'vs local (same width)', 'p99/input (worker run)', 'p99 vs local', 'failed'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(w[i]!)).join('  ');
  console.log(`\n## fan-out: ${N} inputs across two membrane workers (concurrency 8 each) through Redis, same machine\n`);
  console.log(line(head));
  console.log(w.map((n) => '-'.repeat(n)).join('  '));
  for (const r of rows) console.log(line(r));
}

if (process.argv[1]?.endsWith('fanout.ts')) await fanoutBench();
