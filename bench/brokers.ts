/**
 * Brokers (issue #5): the guest → broker round trip — `kv_get` of a 1 KiB value from a persistent
 * instance, through the sync channel, the cadence and SQLite — against the same lookup as a
 * direct host function (an in-process wasm import reading the same store); and the SSRF guard's
 * cost per fetch (resolve, check, pinned connect) against a plain undici request to the same
 * loopback server.
 */

import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { createEngine } from '../src/index.ts';
import { guardedFetch } from '../src/net/index.ts';
import { KvStore } from '../src/storage/kv.ts';
import { openDatabase } from '../src/storage/sqlite.ts';
import { fixture, median, printTable } from './lib.ts';

const N = 5_000;
const FETCHES = 300;

async function kvRoundTrip(): Promise<{ broker: number; direct: number }> {
  const home = mkdtempSync(join(tmpdir(), 'membrane-bench-brokers-'));
  process.env['MEMBRANE_HOME'] = home;
  const bytes = await fixture('kv-loop');
  const value = new Uint8Array(1024).fill(7);
  // Direct: the same wasm loop, its import a host function reading the same store.
  const store = new KvStore(openDatabase(join(home, 'direct.sqlite')));
  store.put('bench', 'bench', value);
  let mem: WebAssembly.Memory;
  const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>), {
    membrane: {
      kv_get: (kp: number, kl: number, op: number, oc: number) => {
        const key = new TextDecoder().decode(new Uint8Array(mem.buffer, kp, kl));
        const v = store.get('bench', key);
        if (!v) return -5;
        if (v.length > oc) return v.length;
        new Uint8Array(mem.buffer, op, v.length).set(v);
        return v.length;
      },
    },
  });
  mem = inst.exports['memory'] as WebAssembly.Memory;
  const getN = inst.exports['get_n'] as (n: number) => number;
  const direct: number[] = [];
  for (let i = 0; i < 9; i++) {
    const t = performance.now();
    if (getN(N) !== N) throw new Error('direct kv_get missed');
    direct.push((performance.now() - t) / N);
  }
  // Broker: a persistent instance under `minimal` (kv granted), tenant "bench".
  const engine = createEngine({ poolSize: 1 });
  const seed = new KvStore(openDatabase(join(home, 'engine.sqlite')));
  seed.put('bench', 'bench', value);
  const plugin = await engine.start('kv-bench', bytes, { profile: 'minimal', tenant: 'bench', timeoutMs: 5_000 });
  const broker: number[] = [];
  for (let i = 0; i < 9; i++) {
    const t = performance.now();
    const r = await plugin.call('get_n', [N]);
    if (r.result !== N) throw new Error(`broker kv_get missed: ${JSON.stringify(r.error ?? r.result)}`);
    broker.push((performance.now() - t) / N);
  }
  await engine.close();
  return { broker: median(broker), direct: median(direct) };
}

async function guardCost(): Promise<{ guarded: number; plain: number }> {
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const resolver = async () => [{ address: '127.0.0.1', family: 4 }];
  const guarded: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < FETCHES; i++) {
    let t = performance.now();
    const a = await guardedFetch({ url: `http://bench.example.test:${port}/` }, { resolver, allowCidrs: ['127.0.0.1/32'] });
    if (a.status !== 200) throw new Error('guarded fetch failed');
    guarded.push(performance.now() - t);
    t = performance.now();
    const b = await request(`http://127.0.0.1:${port}/`, { reset: true });
    await b.body.text();
    plain.push(performance.now() - t);
  }
  server.close();
  return { guarded: median(guarded), plain: median(plain) };
}

export async function brokers(): Promise<void> {
  const kv = await kvRoundTrip();
  const net = await guardCost();
  printTable('brokers', [
    { what: 'kv_get of 1 KiB, direct host function (same store, in-process)', p50: kv.direct, unit: 'µs' },
    { what: 'kv_get of 1 KiB through the broker (channel + cadence + SQLite)', p50: kv.broker, unit: 'µs', vs: 'kv_get of 1 KiB, direct host function (same store, in-process)' },
    { what: 'plain undici request to a loopback server (new connection)', p50: net.plain, unit: 'µs' },
    { what: 'guardedFetch: resolve, check, pinned connect, capped body', p50: net.guarded, unit: 'µs', vs: 'plain undici request to a loopback server (new connection)' },
  ]);
}

if (process.argv[1]?.endsWith('brokers.ts')) await brokers();
