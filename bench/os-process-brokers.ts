/**
 * The os_process tier's broker round trip: a core guest's `kv_get` of a 1 KiB value (the
 * `kv-loop` fixture, `get_n`) in a worker — through the sync channel, the cadence and SQLite —
 * against the same call in an os_process child, where it also crosses the child's stdout, the
 * parent's broker proxy and the child's stdin (src/engine/os-process/broker-*.ts). And the same
 * for an embedder host function (`acme:bench.sync` answering `{"ok":true}` to `{}`, a WAT loop):
 * in a child it is a `host` line served by the parent's host-function broker (host-proxy.ts).
 * Per call: the difference between a run of `OSBROKER_N` calls and one of 10, so a run's fixed
 * cost (and a child's spawn) cancels. Rounds alternate the two tiers; medians of
 * `OSBROKER_ROUNDS` (default 7).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/index.ts';
import { watText } from '../test/helpers/wat.ts';
import { fixture, median, printTable } from './lib.ts';

const N = Number(process.env['OSBROKER_N'] ?? 2_000);
const ROUNDS = Number(process.env['OSBROKER_ROUNDS'] ?? 7);
const FEW = 10;

const home = mkdtempSync(join(tmpdir(), 'membrane-bench-os-brokers-'));
const engine = createEngine({ poolSize: 1, brokers: { databaseFile: join(home, 'engine.sqlite') }, hostFunctions: { 'acme:bench': { sync: () => ({ ok: true }) } } });
/** `sync_n(n)`: n calls of `acme:bench.sync` with "{}", the answer into a 4 KiB buffer; how many answered. */
const HOST_LOOP = `(module
  (import "acme:bench" "sync" (func $sync (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{}")
  (func (export "sync_n") (param $n i32) (result i32)
    (local $i i32) (local $hits i32)
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.ge_s (call $sync (i32.const 0) (i32.const 2) (i32.const 1024) (i32.const 4096)) (i32.const 0))
          (then (local.set $hits (i32.add (local.get $hits) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $more)))
    (local.get $hits)))`;
try {
  const bytes = await fixture('kv-loop');
  const put = await engine.exec({ language: 'js', code: `kv.put("bench", "${'x'.repeat(1024)}")`, profile: 'minimal', caps: ['kv'] });
  if (!put.ok) throw new Error(JSON.stringify(put.error));
  const host = await watText(HOST_LOOP);
  const per = { instance: [] as number[], os_process: [] as number[] };
  const perHost = { instance: [] as number[], os_process: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const tier of ['instance', 'os_process'] as const) {
      const os = tier === 'os_process' ? { tier, bwrapPath: '' } : {};
      for (const [guest, o, into] of [
        [bytes, { profile: 'minimal', caps: ['kv'], invoke: 'get_n', ...os }, per],
        [host, { profile: 'minimal', caps: ['acme:bench'], invoke: 'sync_n', ...os }, perHost],
      ] as const) {
        const few = await engine.run(guest, { ...o, args: [FEW] });
        const many = await engine.run(guest, { ...o, args: [N] });
        if (!few.ok || !many.ok || many.result !== N) throw new Error(JSON.stringify([few.error, many.error, many.result]));
        into[tier].push((many.durationMs - few.durationMs) / (N - FEW)); // ms per call
      }
    }
  }
  printTable(`os_process broker round trip: kv_get of 1 KiB from a core guest (${ROUNDS} rounds of ${N} calls, alternating)`, [
    { what: 'instance (worker)', p50: median(per.instance), unit: 'µs' },
    { what: 'os_process child (permission model)', p50: median(per.os_process), unit: 'µs', vs: 'instance (worker)' },
  ]);
  printTable(`os_process host function round trip: acme:bench.sync from a core guest (${ROUNDS} rounds of ${N} calls, alternating)`, [
    { what: 'host fn, instance (worker)', p50: median(perHost.instance), unit: 'µs' },
    { what: 'host fn, os_process child (permission model)', p50: median(perHost.os_process), unit: 'µs', vs: 'host fn, instance (worker)' },
  ]);
} finally {
  await engine.close();
  rmSync(home, { recursive: true, force: true });
}
