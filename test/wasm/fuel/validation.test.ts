/**
 * Every module that compiled before instrumentation compiles after it (V8 is the validator),
 * from the smallest fixture to the QuickJS interpreter; modules that use proposals newer than
 * Node 20 are checked with wabt's validator instead.
 */

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { instrumentFuel, parseModule } from '../../../src/wasm/index.ts';
import { cGuest, wat } from '../../helpers/wat.ts';
import { ALL_FEATURES, cModules, wabt, watModules } from '../helpers.ts';
import type { Bytes } from '../helpers.ts';
import { fuelFixtureNames, fuelWat } from './fixtures.ts';

const QUICKJS = new URL('../../../node_modules/@jitl/quickjs-wasmfile-release-sync/dist/emscripten-module.wasm', import.meta.url);

function compilesAfter(name: string, bytes: Uint8Array<ArrayBuffer>): void {
  assert.ok(WebAssembly.validate(bytes), `${name}: the input does not compile`);
  const out = instrumentFuel(bytes).bytes;
  try {
    new WebAssembly.Module(out);
  } catch (e) {
    assert.fail(`${name}: the instrumented module does not compile: ${(e as Error).message}`);
  }
}

test('the engine fixtures (test/fixtures/wat) and the committed C guests compile after instrumentation', async () => {
  const dir = new URL('../../fixtures/wat/', import.meta.url);
  const names = readdirSync(dir).filter((f) => f.endsWith('.wat'));
  assert.ok(names.length >= 13);
  for (const f of names) compilesAfter(f, (await wat(f.slice(0, -4))) as Uint8Array<ArrayBuffer>);
  const guests = readdirSync(new URL('../../fixtures/c/', import.meta.url)).filter((f) => f.endsWith('.wasm'));
  assert.ok(guests.length >= 5);
  for (const f of guests) compilesAfter(f, cGuest(f.slice(0, -5)) as Uint8Array<ArrayBuffer>);
});

test('the fuel fixtures and C builds compile after instrumentation', async () => {
  for (const name of fuelFixtureNames()) compilesAfter(name, await fuelWat(name));
  for (const { name, bytes } of cModules()) compilesAfter(name, bytes);
});

test('the toolkit fixtures: V8 compiles the ones it supports, wabt validates the newer ones', async () => {
  const w = await wabt();
  for (const { name, bytes, v8 } of await watModules()) {
    if (v8) {
      compilesAfter(name, bytes);
      continue;
    }
    // Node 20's V8 refuses these proposals at the gate; watModules() validated them with wabt.
    const out = instrumentFuel(bytes, { validated: true }).bytes;
    const m = w.readWasm(out, { readDebugNames: true, ...ALL_FEATURES });
    try {
      (m.validate as unknown as (features: typeof ALL_FEATURES) => void).call(m, ALL_FEATURES);
    } finally {
      m.destroy();
    }
  }
});

test('QuickJS (emscripten, ~500 KB) compiles after instrumentation', () => {
  const bytes = new Uint8Array(readFileSync(QUICKJS));
  const r = instrumentFuel(bytes);
  new WebAssembly.Module(r.bytes);
  const m = parseModule(bytes);
  assert.equal(r.stats.functions, m.codes.length);
  assert.ok(r.stats.loops > 100 && r.stats.chargePoints > r.stats.functions + r.stats.loops);
  assert.ok(r.stats.bulkSites > 0, 'QuickJS uses memory.grow and bulk memory');
  assert.equal(r.stats.inputBytes, bytes.length);
  assert.equal(r.stats.outputBytes, r.bytes.length);
});

test('instrumentation is a pure function of its input', async () => {
  const bytes: Bytes = await fuelWat('indices');
  assert.deepEqual(instrumentFuel(bytes).bytes, instrumentFuel(bytes).bytes);
  const copy = bytes.slice();
  instrumentFuel(bytes);
  assert.deepEqual(bytes, copy, 'the input is not modified');
});
