/**
 * Differential test of the fuel rewriter on random modules: every committed
 * `wasm-opt --translate-to-fuzz` module (test/fixtures/fuel-fuzz/, made by generate.ts with
 * binaryen 108) and the handmade .wat complements (exception handling, grows, tables, tail calls,
 * start functions — what binaryen 108 does not generate) behave the same instrumented and not,
 * with ample and with tiny fuel chunks (the oracle: test/fixtures/fuel-fuzz/differential.ts).
 *
 * The modules are committed rather than generated here, so the test needs no wasm-opt and does
 * not change with the binaryen version; `scripts/fuzz-fuel.ts N` runs the same check on N fresh
 * seeds per profile.
 */

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { instrumentFuel } from '../../src/wasm/index.ts';
import { checkModule } from '../fixtures/fuel-fuzz/differential.ts';
import { MANIFEST_URL, sha256 } from '../fixtures/fuel-fuzz/generate.ts';
import type { Manifest } from '../fixtures/fuel-fuzz/generate.ts';
import { wat } from './helpers.ts';

const DIR = new URL('../fixtures/fuel-fuzz/', import.meta.url);
const manifest = JSON.parse(readFileSync(MANIFEST_URL, 'utf8')) as Manifest;
const read = (file: string) => new Uint8Array(readFileSync(new URL(file, DIR)));

test('the committed fuzz modules are the ones manifest.json lists', () => {
  const onDisk = readdirSync(DIR).filter((f) => f.endsWith('.wasm')).sort();
  assert.deepEqual(onDisk, manifest.modules.map((m) => m.file).sort());
  for (const m of manifest.modules) assert.equal(sha256(read(m.file)), m.sha256, `${m.file} was modified: regenerate with generate.ts`);
  assert.ok(manifest.modules.length >= 20, 'the CI set keeps at least 20 modules');
});

for (const m of manifest.modules) {
  test(`translate-to-fuzz ${m.profile} seed ${m.seed}: instrumented behaves like the original`, () => {
    const bytes = read(m.file);
    assert.ok(WebAssembly.validate(bytes), `${m.file} no longer compiles on this V8`);
    const v = checkModule(bytes);
    assert.ok(v.ok, `${m.file}: ${v.problem}`);
    assert.ok(v.calls > 0, `${m.file}: no export was called`);
  });
}

const HANDMADE = ['eh.wat', 'grow.wat', 'tables.wat', 'start.wat', 'start-trap.wat'];

for (const name of HANDMADE) {
  test(`handmade ${name}: instrumented behaves like the original`, async () => {
    const v = checkModule(await wat(readFileSync(new URL(name, DIR), 'utf8')));
    assert.ok(v.ok, `${name}: ${v.problem}`);
    assert.ok(!v.stackOverflow, `${name}: hit a stack overflow, so part of it went unchecked`);
  });
}

test('the oracle notices a rewrite that changes a constant or drops a host call', async () => {
  const source = readFileSync(new URL('eh.wat', DIR), 'utf8');
  const original = await wat(source);
  const checkAgainst = async (text: string) => {
    const wrong = await wat(text);
    return checkModule(original, () => instrumentFuel(wrong));
  };
  const constant = await checkAgainst(source.replace('(i32.const 100)', '(i32.const 101)'));
  assert.ok(!constant.ok && /original .* vs instrumented/.test(constant.problem ?? ''), constant.problem);
  const hostCall = await checkAgainst(source.replace('(call $log (i32.const 11))', '(nop)'));
  assert.ok(!hostCall.ok && /original .* vs instrumented/.test(hostCall.problem ?? ''), hostCall.problem);
});

test('the CI set makes the rewriter meet loops and bulk operations', () => {
  let loops = 0;
  let bulkSites = 0;
  for (const m of manifest.modules) {
    const { stats } = instrumentFuel(read(m.file));
    loops += stats.loops;
    bulkSites += stats.bulkSites;
  }
  assert.ok(loops >= 100, `only ${loops} loops`);
  assert.ok(bulkSites >= 10, `only ${bulkSites} bulk sites`);
});
