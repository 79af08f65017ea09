// A module that fails leaves nothing cached: one that the rewriters accept but V8 refuses (a
// million functions — one more after fuel metering than V8 compiles — or bodies that do not
// validate), one over the memory cap, and bytes that are not wasm at all each fail with their
// error code, leave no file in the cache directory and no entry in memory, and fail the same way
// the next time (nothing half-built is ever reused).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ModuleCache } from '../../src/engine/module-cache.ts';
import { testEngine } from '../helpers/engine.ts';
import { manyFunctions, treeBytes } from '../helpers/big-module.ts';
import { watText } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const OPTS = { maxMemoryPages: 1024, maxTableElements: 100_000, trapOnGrowFailure: true, metered: true };

async function assertNothingCached(dir: string, cache: ModuleCache, what: string): Promise<void> {
  const { bytes, files } = await treeBytes(dir);
  assert.equal(files, 0, `${what}: ${files} files (${bytes} bytes) left in the cache directory`);
  assert.equal(cache.stats.inMemory, 0, `${what}: an in-memory entry was kept`);
}

test('a million-function module passes rewriting, fails to compile, and leaves nothing cached', async () => {
  const dir = tempDir('membrane-failed-');
  const cache = new ModuleCache(dir);
  const bytes = manyFunctions(1_000_000, 'over-v8-limit');
  for (let attempt = 0; attempt < 2; attempt++) {
    await assert.rejects(cache.prepare(bytes, OPTS), (e: { code?: string; message?: string }) => {
      assert.equal(e.code, 'INVALID_MODULE');
      assert.match(e.message ?? '', /does not compile/);
      return true;
    });
    await assertNothingCached(dir, cache, `attempt ${attempt + 1}`);
  }
  console.log(`a ${bytes.length}-byte module with 1 000 000 functions: INVALID_MODULE, nothing cached`);
  await cache.close();
});

test('bodies that do not validate, a memory over the cap and non-wasm bytes leave nothing cached', async () => {
  const dir = tempDir('membrane-failed-');
  const cache = new ModuleCache(dir);
  const cases: [string, Uint8Array, string][] = [
    ['invalid bodies (rewrite worker)', manyFunctions(50_000, 'invalid', { invalidBodies: true }), 'INVALID_MODULE'],
    ['invalid bodies (small: prepared in place)', manyFunctions(10, 'invalid-small', { invalidBodies: true }), 'INVALID_MODULE'],
    ['memory over the cap', await watText('(module (memory 2000))'), 'MEMORY_LIMIT'],
    ['not wasm', new TextEncoder().encode('#!/bin/sh\necho pwned\n'), 'INVALID_MODULE'],
    ['truncated', manyFunctions(10_000, 'cut').subarray(0, 30_000), 'INVALID_MODULE'],
  ];
  for (const [what, bytes, code] of cases) {
    await assert.rejects(cache.prepare(bytes, OPTS), (e: { code?: string }) => e.code === code, what);
    await assertNothingCached(dir, cache, what);
  }
  await cache.close();
});

test('through the engine: a failed run is INVALID_MODULE and the cache directory stays empty', async () => {
  const dir = tempDir('membrane-failed-');
  const engine = testEngine({ poolSize: 1, cacheDir: dir });
  const r = await engine.run(manyFunctions(20_000, 'engine-invalid', { invalidBodies: true }), { invoke: 'run' });
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'INVALID_MODULE');
  assert.equal((await treeBytes(dir)).files, 0);
  const ok = await engine.run(manyFunctions(20_000, 'engine-valid'), { invoke: 'run' });
  assert.equal(ok.ok, true, JSON.stringify(ok.error));
  assert.equal((await treeBytes(dir)).files, 1, 'a module that compiled is cached');
});
