/**
 * Embedder host functions (DESIGN §9): the guest → host function round trip from a persistent
 * core instance — a sync and an async function answering a small JSON value — against the
 * built-in JSON broker the same guest reaches the same way (`kv_get` of a small value: channel,
 * cadence, SQLite). Per-call medians of 9 batches of N calls; ratios to `kv_get` in the same run.
 */

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/index.ts';
import { KvStore } from '../src/storage/kv.ts';
import { openDatabase } from '../src/storage/sqlite.ts';
import { watText } from '../test/helpers/wat.ts';
import { median, printTable } from './lib.ts';

const N = 2_000;
const BATCHES = 9;

/** `loop_<name>(n)`: n calls of one import with the argument at 0 ("{}" or the key), answer into a 4 KiB buffer. */
const LOOPS = `(module
  (import "membrane" "kv_get" (func $kv_get (param i32 i32 i32 i32) (result i32)))
  (import "acme:bench" "sync" (func $sync (param i32 i32 i32 i32) (result i32)))
  (import "acme:bench" "async" (func $async (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{}")
  (data (i32.const 16) "bench")
  ${['kv_get', 'sync', 'async']
    .map(
      (f) => `(func (export "loop_${f}") (param $n i32) (result i32)
    (local $i i32) (local $hits i32)
    (block $done
      (loop $more
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.ge_s (call $${f} (i32.const ${f === 'kv_get' ? 16 : 0}) (i32.const ${f === 'kv_get' ? 5 : 2}) (i32.const 1024) (i32.const 4096)) (i32.const 0))
          (then (local.set $hits (i32.add (local.get $hits) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $more)))
    (local.get $hits))`,
    )
    .join('\n  ')})`;

export async function hostFunction(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'membrane-bench-hostfn-'));
  process.env['MEMBRANE_HOME'] = home;
  const seed = new KvStore(openDatabase(join(home, 'engine.sqlite')));
  seed.put('bench', 'bench', new TextEncoder().encode('{"ok":true}'));
  const engine = createEngine({
    poolSize: 1,
    cacheDir: false,
    // Long batches on a loaded machine: the operator raises minimal's time ceiling.
    operatorLimits: { minimal: { timeoutMs: 120_000 } },
    hostFunctions: { 'acme:bench': { sync: () => ({ ok: true }), async: async () => ({ ok: true }) } },
  });
  try {
    const plugin = await engine.start('hostfn-bench', await watText(LOOPS), { profile: 'minimal', tenant: 'bench', caps: ['kv', 'acme:bench'], timeoutMs: 60_000 });
    const perCall = async (f: string): Promise<number> => {
      const xs: number[] = [];
      await plugin.call(`loop_${f}`, [200]); // warm
      for (let i = 0; i < BATCHES; i++) {
        const t = performance.now();
        const r = await plugin.call(`loop_${f}`, [N]);
        if (r.result !== N) throw new Error(`${f}: ${JSON.stringify(r.error ?? r.result)}`);
        xs.push((performance.now() - t) / N);
      }
      return median(xs);
    };
    const kv = await perCall('kv_get');
    const sync = await perCall('sync');
    const asyncFn = await perCall('async');
    await plugin.stop();
    const KV = 'kv_get of a small value (built-in JSON broker: channel + cadence + SQLite)';
    printTable('host functions', [
      { what: KV, p50: kv, unit: 'µs' },
      { what: 'acme:bench.sync: a sync host function answering {"ok":true}', p50: sync, unit: 'µs', vs: KV },
      { what: 'acme:bench.async: an async host function answering {"ok":true}', p50: asyncFn, unit: 'µs', vs: KV },
    ]);
  } finally {
    await engine.close();
  }
}

if (process.argv[1]?.endsWith('host-function.ts')) await hostFunction();
