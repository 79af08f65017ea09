/**
 * What the validation gate costs (issue #12): `instrumentFuel` validates its input with V8 unless
 * told it already was. Per module, alternating in one process: `WebAssembly.validate` alone, the
 * rewrite with the gate skipped (`validated: true`), and the rewrite as the CLI runs it (gate
 * included); the ratio is gate+rewrite over the rewrite alone.
 *
 * Alone: `node --import tsx bench/validation-cost.ts`.
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { instrumentFuel } from '../src/wasm/index.ts';
import { median, printTable } from './lib.ts';
import type { Row } from './lib.ts';

function timed(f: () => unknown): number {
  const t = performance.now();
  f();
  return performance.now() - t;
}

export async function validationCost(): Promise<void> {
  const require = createRequire(import.meta.url);
  const file = (id: string): Uint8Array<ArrayBuffer> => new Uint8Array(readFileSync(require.resolve(id)));
  const rows: Row[] = [];
  for (const [name, id, reps] of [['QuickJS', '@jitl/quickjs-wasmfile-release-sync/wasm', 31], ['Pyodide', 'pyodide/pyodide.asm.wasm', 9]] as const) {
    const bytes = file(id);
    instrumentFuel(bytes);
    const validate: number[] = [];
    const rewrite: number[] = [];
    const gated: number[] = [];
    for (let i = 0; i < reps; i++) {
      validate.push(timed(() => WebAssembly.validate(bytes)));
      rewrite.push(timed(() => instrumentFuel(bytes, { validated: true })));
      gated.push(timed(() => instrumentFuel(bytes)));
    }
    rows.push(
      { what: `${name} WebAssembly.validate`, p50: median(validate), unit: 'ms' },
      { what: `${name} instrumentFuel, gate skipped`, p50: median(rewrite), unit: 'ms' },
      { what: `${name} instrumentFuel, gate included`, p50: median(gated), unit: 'ms', vs: `${name} instrumentFuel, gate skipped`, target: '(cost of the gate)' },
    );
  }
  printTable('validation gate: instrumentFuel with and without WebAssembly.validate first (median)', rows);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await validationCost();
