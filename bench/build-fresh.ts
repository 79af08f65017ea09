/**
 * One build in a fresh process, for bench/build.ts: `node --import tsx bench/build-fresh.ts
 * SOURCE OUT.wasm`, with MEMBRANE_HOME set by the caller. Creates an engine (defaults: the disk
 * cache under $MEMBRANE_HOME/cache, the sysroot image under cache/toolchains), builds SOURCE once,
 * writes the module to OUT.wasm, closes the engine, and prints one JSON line of where the time went.
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

const t0 = performance.now();
const [source, out] = process.argv.slice(2);
if (!source || !out) throw new Error('usage: build-fresh.ts SOURCE OUT.wasm');
const { createEngine } = await import('../src/index.ts');
const t1 = performance.now();
const engine = createEngine();
const t2 = performance.now();
const r = await engine.build({ sources: { [basename(source)]: readFileSync(source, 'utf8') } });
const t3 = performance.now();
if (r.wasm) writeFileSync(out, r.wasm);
await engine.close();
const t4 = performance.now();
console.log(
  JSON.stringify({
    ok: r.ok,
    error: r.error?.message,
    importMs: t1 - t0,
    createMs: t2 - t1,
    buildMs: t3 - t2,
    durationMs: r.durationMs,
    closeMs: t4 - t3,
    fuelUsed: r.fuelUsed,
    steps: r.steps.map((s) => ({ tool: s.tool, exitCode: s.exitCode, fuelUsed: s.fuelUsed, durationMs: s.durationMs })),
  }),
);
