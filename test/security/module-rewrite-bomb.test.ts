// A module built to make its own preparation expensive — a million functions, so the rewriter's
// heap and time grow with it — cannot take the host down: the rewrite runs on a worker thread
// with a capped heap (MEMORY_LIMIT, the worker replaced) and a deadline (TIMEOUT, the worker
// terminated), a flood of uploads meets a bounded queue (OVERLOADED at once), nothing of a failed
// module is cached, and the next module prepares normally.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { ModuleCache } from '../../src/engine/module-cache.ts';
import { RewritePool } from '../../src/engine/rewrite/pool.ts';
import { locateRewriteWorker } from '../../src/engine/worker-file.ts';
import { manyFunctions, treeBytes } from '../helpers/big-module.ts';
import { tempDir } from '../helpers/tmp.ts';

const OPTS = { maxMemoryPages: 1024, maxTableElements: 100_000, trapOnGrowFailure: true, metered: true };

function cacheWith(pool: ConstructorParameters<typeof RewritePool>[0]): { cache: ModuleCache; dir: string; rewriter: RewritePool } {
  const dir = tempDir('membrane-rewrite-bomb-');
  const rewriter = new RewritePool(pool);
  return { cache: new ModuleCache(dir, { rewriter }), dir, rewriter };
}

async function expectCode(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: { code?: string; message?: string }) => {
    assert.equal(e.code, code, e.message);
    return true;
  });
}

test('a rewrite that outgrows the worker heap is MEMORY_LIMIT; the worker is replaced, nothing cached', async () => {
  const { cache, dir, rewriter } = cacheWith({ file: locateRewriteWorker, workers: 1, heapMb: 24 });
  await expectCode(cache.prepare(manyFunctions(1_000_000, 'heap-bomb'), OPTS), 'MEMORY_LIMIT');
  assert.equal((await treeBytes(dir)).files, 0);
  assert.equal(cache.stats.inMemory, 0);
  assert.equal(rewriter.replaced, 1);
  const ok = await cache.prepare(manyFunctions(100, 'after-heap-bomb'), OPTS);
  assert.ok(ok.module instanceof WebAssembly.Module);
  await rewriter.close();
});

test('a rewrite past its deadline is TIMEOUT; the worker is terminated and replaced, nothing cached', async () => {
  const { cache, dir, rewriter } = cacheWith({ file: locateRewriteWorker, workers: 1, jobTimeoutMs: 100 });
  const t0 = performance.now();
  await expectCode(cache.prepare(manyFunctions(1_000_000, 'slow-bomb'), OPTS), 'TIMEOUT');
  const took = performance.now() - t0;
  assert.ok(took < 10_000, `the timeout took ${took.toFixed(0)} ms`);
  assert.equal((await treeBytes(dir)).files, 0);
  assert.equal(cache.stats.inMemory, 0);
  assert.equal(rewriter.replaced, 1);
  const ok = await cache.prepare(manyFunctions(100, 'after-slow-bomb'), OPTS);
  assert.ok(ok.module instanceof WebAssembly.Module);
  await rewriter.close();
});

test('a flood of distinct uploads meets a bounded queue: OVERLOADED at once, the rest prepared', async () => {
  const { cache, rewriter } = cacheWith({ file: locateRewriteWorker, workers: 1, maxQueue: 3 });
  const outcomes = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => cache.prepare(manyFunctions(20_000, `flood-${i}`), OPTS)));
  const codes = outcomes.map((o) => (o.status === 'fulfilled' ? 'ok' : (o.reason as { code?: string }).code));
  const overloaded = codes.filter((c) => c === 'OVERLOADED').length;
  const ok = codes.filter((c) => c === 'ok').length;
  console.log(`12 uploads against a queue of 3: ${ok} prepared, ${overloaded} OVERLOADED`);
  assert.equal(ok + overloaded, 12, codes.join(','));
  assert.ok(overloaded >= 1 && ok >= 3, codes.join(','));
  assert.equal(cache.stats.inMemory, ok, 'a refused upload left an entry in memory');
  await rewriter.close();
});
