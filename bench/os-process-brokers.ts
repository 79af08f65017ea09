/**
 * The os_process tier's broker round trip: a core guest's `kv_get` of a 1 KiB value (the
 * `kv-loop` fixture, `get_n`) in a worker — through the sync channel, the cadence and SQLite —
 * against the same call in an os_process child, where it also crosses the child's stdout, the
 * parent's broker proxy and the child's stdin (src/engine/os-process/broker-*.ts). Per call: the
 * difference between a run of `OSBROKER_N` calls and one of 10, so a run's fixed cost (and a
 * child's spawn) cancels. Rounds alternate the two tiers; medians of `OSBROKER_ROUNDS` (default 7).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/index.ts';
import { fixture, median, printTable } from './lib.ts';

const N = Number(process.env['OSBROKER_N'] ?? 2_000);
const ROUNDS = Number(process.env['OSBROKER_ROUNDS'] ?? 7);
const FEW = 10;

const home = mkdtempSync(join(tmpdir(), 'membrane-bench-os-brokers-'));
const engine = createEngine({ poolSize: 1, brokers: { databaseFile: join(home, 'engine.sqlite') } });
try {
  const bytes = await fixture('kv-loop');
  const put = await engine.exec({ language: 'js', code: `kv.put("bench", "${'x'.repeat(1024)}")`, profile: 'minimal', caps: ['kv'] });
  if (!put.ok) throw new Error(JSON.stringify(put.error));
  const per = { instance: [] as number[], os_process: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const tier of ['instance', 'os_process'] as const) {
      const o = { profile: 'minimal', caps: ['kv'], invoke: 'get_n', ...(tier === 'os_process' ? { tier, bwrapPath: '' } : {}) } as const;
      const few = await engine.run(bytes, { ...o, args: [FEW] });
      const many = await engine.run(bytes, { ...o, args: [N] });
      if (!few.ok || !many.ok || many.result !== N) throw new Error(JSON.stringify([few.error, many.error, many.result]));
      per[tier].push((many.durationMs - few.durationMs) / (N - FEW)); // ms per call
    }
  }
  printTable(`os_process broker round trip: kv_get of 1 KiB from a core guest (${ROUNDS} rounds of ${N} calls, alternating)`, [
    { what: 'instance (worker)', p50: median(per.instance), unit: 'µs' },
    { what: 'os_process child (permission model)', p50: median(per.os_process), unit: 'µs', vs: 'instance (worker)' },
  ]);
} finally {
  await engine.close();
  rmSync(home, { recursive: true, force: true });
}
