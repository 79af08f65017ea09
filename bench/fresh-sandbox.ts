/**
 * Fresh sandbox: instantiate + run + dispose a small WASI module on a warm pool, against Extism
 * create + call + close of the same module (in-process, WASI on) and a bare in-process
 * `new WebAssembly.Instance` + call (the floor). Target: p50 ≤ 0.5 ms (DESIGN §11).
 * The thread-hop row is what any run on a pooled worker pays before guest work: an empty message
 * to a worker thread and its answer on a shared word (spin 100 µs, then `Atomics.waitAsync`, as
 * the engine waits).
 */

import { Worker } from 'node:worker_threads';
import { createEngine } from '../src/index.ts';
import { extismBaseline, printTable, quantile, sample, watText } from './lib.ts';

const SMALL_WASI = `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "hi\\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 64)) (i32.store (i32.const 4) (i32.const 3))
    (drop (call $w (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 16))))
  (func (export "noop") (result i32) i32.const 0))`;

export async function freshSandbox(): Promise<void> {
  const bytes = await watText(SMALL_WASI);
  const mod = new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
  const floor = await sample(5_000, 500, async () => {
    const out: number[] = [];
    const inst = new WebAssembly.Instance(mod, { wasi_snapshot_preview1: { fd_write: () => (out.push(1), 0) } });
    (inst.exports['_start'] as () => void)();
  });

  const hop = await threadHop(2_000, 300);

  const engine = createEngine({ poolSize: 2 });
  const ours = await sample(2_000, 300, async () => {
    const r = await engine.run(bytes);
    if (r.stdout !== 'hi\n') throw new Error(`unexpected run result ${JSON.stringify(r)}`);
  });
  await engine.close();

  const extism = extismBaseline('create-call-close', 300, { SMALL_WASI });

  printTable('fresh sandbox: instantiate + run + dispose (small WASI module, warm pool)', [
    { what: 'in-process Instance + call (floor)', p50: quantile(floor, 0.5), p99: quantile(floor, 0.99), unit: 'ms' },
    { what: 'thread hop: empty message to a worker and back', p50: quantile(hop, 0.5), p99: quantile(hop, 0.99), unit: 'ms' },
    { what: 'membrane engine.run', p50: quantile(ours, 0.5), p99: quantile(ours, 0.99), unit: 'ms', vs: 'Extism create+call+close', target: '≤ 0.5 ms p50' },
    { what: 'Extism create+call+close', p50: extism.p50, p99: extism.p99, unit: 'ms' },
  ]);
}

/** Round trips of an empty job to a worker thread: postMessage there, a shared word back. */
async function threadHop(n: number, warmup: number): Promise<number[]> {
  const words = new Int32Array(new SharedArrayBuffer(4));
  const code = `const { parentPort, workerData } = require('node:worker_threads');
    parentPort.on('message', () => { Atomics.store(workerData, 0, 1); Atomics.notify(workerData, 0); });`;
  const w = new Worker(code, { eval: true, workerData: words });
  await new Promise((resolve) => w.once('online', resolve));
  try {
    return await sample(n, warmup, async () => {
      Atomics.store(words, 0, 0);
      w.postMessage(null);
      const spinUntil = performance.now() + 0.1;
      while (Atomics.load(words, 0) === 0) {
        if (performance.now() < spinUntil) continue;
        const r = Atomics.waitAsync(words, 0, 0, 1000);
        if (r.async) await r.value;
      }
    });
  } finally {
    await w.terminate();
  }
}

if (process.argv[1]?.endsWith('fresh-sandbox.ts')) await freshSandbox();
