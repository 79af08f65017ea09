// The module cache filling the disk: an uploader sending module after distinct module (each one a
// new cache entry, each rewritten entry ~6× its input) never grows the cache directory past the
// engine's `cacheMaxBytes`; the least recently used entries go first, an entry larger than the
// whole bound is never written, and an entry evicted under a running engine is only a miss.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { manyFunctions, treeBytes } from '../helpers/big-module.ts';
import { tempDir } from '../helpers/tmp.ts';

const BOUND = 1024 * 1024;
const entries = (dir: string): string[] => {
  try {
    return readdirSync(join(dir, 'rewritten')).filter((f) => f.endsWith('.entry'));
  } catch {
    return [];
  }
};

test('sixty distinct uploads never take the cache directory past cacheMaxBytes', async () => {
  const dir = tempDir('membrane-cache-flood-');
  const engine = testEngine({ poolSize: 1, cacheDir: dir, cacheMaxBytes: BOUND });
  const sizes: number[] = [];
  for (let i = 0; i < 60; i++) {
    const r = await engine.run(manyFunctions(2_000 + i, `flood-${i}`), { invoke: 'run' });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    const { bytes } = await treeBytes(dir);
    sizes.push(bytes);
    assert.ok(bytes <= BOUND, `after upload ${i} the cache holds ${bytes} bytes, over the ${BOUND} bound`);
  }
  const kept = entries(dir).length;
  console.log(`cache bound ${BOUND} B; directory after each of 60 uploads (max ${Math.max(...sizes)} B, last ${sizes.at(-1)} B, ${kept} entries kept): ${sizes.join(' ')}`);
  assert.ok(kept >= 2 && kept < 60, `eviction kept ${kept} entries`);
});

test('the least recently used entry is evicted first: a module read back survives newer writes', async () => {
  const dir = tempDir('membrane-cache-lru-');
  const first = manyFunctions(2_000, 'lru-first');
  const writer = testEngine({ poolSize: 1, cacheDir: dir, cacheMaxBytes: BOUND });
  assert.equal((await writer.run(first, { invoke: 'run' })).ok, true);
  const firstEntry = entries(dir)[0]!;
  for (let i = 0; i < 3; i++) assert.equal((await writer.run(manyFunctions(2_000, `lru-filler-${i}`), { invoke: 'run' })).ok, true);
  // A second engine (a restart) reads the first module from disk: that use makes it the newest.
  await new Promise((r) => setTimeout(r, 20));
  const reader = testEngine({ poolSize: 1, cacheDir: dir, cacheMaxBytes: BOUND });
  assert.equal((await reader.run(first, { invoke: 'run' })).ok, true);
  await new Promise((r) => setTimeout(r, 20));
  for (let i = 3; i < 12; i++) assert.equal((await reader.run(manyFunctions(2_000, `lru-filler-${i}`), { invoke: 'run' })).ok, true);
  const left = entries(dir);
  assert.ok(left.length < 13, `nothing was evicted (${left.length} entries)`);
  assert.ok(left.includes(firstEntry), 'the entry used most recently but written first was evicted');
});

test('an entry larger than the whole bound is not written, and the module still runs', async () => {
  const dir = tempDir('membrane-cache-huge-');
  const engine = testEngine({ poolSize: 1, cacheDir: dir, cacheMaxBytes: 64 * 1024 });
  const r = await engine.run(manyFunctions(20_000, 'huge'), { invoke: 'run' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const { bytes, files } = await treeBytes(dir);
  assert.equal(files, 0, `${files} files (${bytes} bytes) written for an entry over the bound`);
});

test('an entry evicted by another process is a miss, not an error', async () => {
  const dir = tempDir('membrane-cache-shared-');
  const bytes = manyFunctions(3_000, 'shared');
  const a = testEngine({ poolSize: 1, cacheDir: dir, cacheMaxBytes: BOUND });
  assert.equal((await a.run(bytes, { invoke: 'run' })).ok, true);
  assert.equal(entries(dir).length, 1);
  rmSync(join(dir, 'rewritten'), { recursive: true, force: true }); // the other engine's eviction
  const b = testEngine({ poolSize: 1, cacheDir: dir, cacheMaxBytes: BOUND });
  const r = await b.run(bytes, { invoke: 'run' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(entries(dir).length, 1, 'the module was cached again');
});

test('interpreter builds count toward the bound and are never evicted; an entry that cannot fit beside them is not written', async () => {
  const dir = tempDir('membrane-cache-lanes-');
  mkdirSync(join(dir, 'rewritten'), { recursive: true });
  const interpreter = join(dir, 'rewritten', 'quickjs-0123456789abcdef.wasm');
  writeFileSync(interpreter, new Uint8Array(1000 * 1024));
  const engine = testEngine({ poolSize: 1, cacheDir: dir, cacheMaxBytes: BOUND });
  const r = await engine.run(manyFunctions(2_000, 'beside-interpreter'), { invoke: 'run' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.ok(existsSync(interpreter), 'the interpreter build was evicted');
  assert.equal(entries(dir).length, 0, 'a module entry was written past the bound');
  assert.ok((await treeBytes(dir)).bytes <= BOUND);
});
