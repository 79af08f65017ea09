/**
 * The component lane's cost: a fresh sandbox running the C hello world as a `wasi:cli/run`
 * component (preview 1 adapter, four core modules, jco's glue, our WASI p2) against the same
 * program as a plain WASI preview 1 module, both through `engine.run` on a warm pool in the same
 * run. Also the first run of the component with nothing cached (transpile + prepare) and the
 * fuel each uses.
 */

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/index.ts';
import { ROOT, printTable, quantile, sample } from './lib.ts';

export async function componentLane(): Promise<void> {
  const p1 = new Uint8Array(readFileSync(join(ROOT, 'test/fixtures/c/hello.wasm')));
  const component = new Uint8Array(readFileSync(join(ROOT, 'test/fixtures/components/hello.component.wasm')));
  const engine = createEngine({ poolSize: 2, cacheDir: mkdtempSync(join(tmpdir(), 'membrane-bench-component-')) });
  const t0 = performance.now();
  const first = await engine.run(component);
  const cold = performance.now() - t0;
  if (!first.ok) throw new Error(`component run failed: ${JSON.stringify(first.error)}`);
  const check = (want: string) => (r: { stdout: string; ok: boolean }) => {
    if (!r.ok || r.stdout !== want) throw new Error(`unexpected result ${JSON.stringify(r)}`);
  };
  const want = 'hello from a wasm guest\n';
  const fuel = { p1: (await engine.run(p1)).fuelUsed, component: first.fuelUsed };
  // Interleaved rounds, so drift on a shared machine hits both sides alike.
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < 5; round++) {
    a.push(...(await sample(100, round === 0 ? 50 : 5, async () => check(want)(await engine.run(p1)))));
    b.push(...(await sample(100, round === 0 ? 50 : 5, async () => check(want)(await engine.run(component)))));
  }
  await engine.close();
  printTable('component lane: fresh sandbox, C hello world (warm pool, cached transpile and modules)', [
    { what: 'p1 module engine.run', p50: quantile(a, 0.5), p99: quantile(a, 0.99), unit: 'ms' },
    { what: 'component engine.run', p50: quantile(b, 0.5), p99: quantile(b, 0.99), unit: 'ms', vs: 'p1 module engine.run' },
  ]);
  console.log(`\nfirst component run, nothing cached (transpile + prepare + run): ${cold.toFixed(0)} ms`);
  console.log(`fuel: p1 ${fuel.p1}, component ${fuel.component} (the adapter's own work is metered too)`);
}

if (process.argv[1]?.endsWith('component.ts')) await componentLane();
