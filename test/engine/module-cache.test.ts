import assert from 'node:assert/strict';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ModuleCache } from '../../src/engine/module-cache.ts';
import { FUEL_GLOBAL_EXPORT } from '../../src/policy/catalog.ts';
import { wat } from '../helpers/wat.ts';
import { manyFunctions } from '../helpers/big-module.ts';
import { tempDir } from '../helpers/tmp.ts';

const OPTS = { maxMemoryPages: 1024, maxTableElements: 100_000, trapOnGrowFailure: true, metered: true };

test('a module is rewritten once per machine: the second cache loads it from disk', async () => {
  const dir = tempDir('membrane-cache-');
  const bytes = await wat('count');
  const first = await new ModuleCache(dir).prepare(bytes, OPTS);
  assert.equal(first.fromDisk, false);
  assert.ok(first.fuel && first.fuel.loops === 2);
  const files = readdirSync(join(dir, 'rewritten'));
  assert.equal(files.length, 1);
  assert.equal(statSync(join(dir, 'rewritten', files[0]!)).mode & 0o777, 0o600);
  const second = await new ModuleCache(dir).prepare(bytes, OPTS);
  assert.equal(second.fromDisk, true);
  assert.ok(WebAssembly.Module.exports(second.module).some((e) => e.name === FUEL_GLOBAL_EXPORT));
});

test('different options are different cache entries', async () => {
  const dir = tempDir('membrane-cache-');
  const bytes = await wat('count');
  await new ModuleCache(dir).prepare(bytes, OPTS);
  await new ModuleCache(dir).prepare(bytes, { ...OPTS, maxMemoryPages: 1000 });
  assert.equal(readdirSync(join(dir, 'rewritten')).length, 2);
});

test('a corrupted cache entry is discarded and rebuilt, never run', async () => {
  const dir = tempDir('membrane-cache-');
  const bytes = await wat('count');
  await new ModuleCache(dir).prepare(bytes, OPTS);
  const file = join(dir, 'rewritten', readdirSync(join(dir, 'rewritten'))[0]!);
  writeFileSync(file, new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 0xff, 0xff]));
  const again = await new ModuleCache(dir).prepare(bytes, OPTS);
  assert.equal(again.fromDisk, false);
  assert.ok(again.fuel);
});

test('with metering off nothing is written to disk', async () => {
  const dir = tempDir('membrane-cache-');
  const p = await new ModuleCache(dir).prepare(await wat('count'), { ...OPTS, metered: false });
  assert.equal(p.metered, false);
  assert.throws(() => readdirSync(join(dir, 'rewritten')));
});

test('concurrent prepares of one large module share one rewrite, and a later prepare is an in-memory hit', async () => {
  const dir = tempDir('membrane-cache-');
  const cache = new ModuleCache(dir);
  const big = manyFunctions(300_000, 'dedup'); // 1.5 MB: hashed in steps, rewritten on the worker
  const [a, b] = await Promise.all([cache.prepare(big, OPTS), cache.prepare(big, OPTS)]);
  assert.equal(a, b);
  assert.equal(readdirSync(join(dir, 'rewritten')).length, 1);
  assert.equal(await cache.prepare(big, OPTS), a);
  assert.equal(cache.stats.inMemory, 1);
  await cache.close();
});
