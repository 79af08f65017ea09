import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WorkerPool, poolConfigFor } from '../../src/engine/pool.ts';
import { resolveEngine } from '../../src/engine/options.ts';
import { locateWorker } from '../../src/engine/worker-file.ts';

test('takeReady hands out an idle worker at once, or null (none idle, aborted, closed) — never one twice', async () => {
  const pool = new WorkerPool(poolConfigFor(resolveEngine({ poolSize: 1, maxWorkers: 1, cacheDir: false }), locateWorker));
  try {
    assert.equal(pool.takeReady(), null, 'no worker has started yet');
    const h = await pool.acquire(10_000);
    assert.equal(pool.takeReady(), null, 'the only worker is out');
    pool.release(h);
    const ac = new AbortController();
    ac.abort();
    assert.equal(pool.takeReady(ac.signal), null);
    const again = pool.takeReady();
    assert.equal(again, h);
    assert.equal(pool.takeReady(), null);
    pool.release(h);
  } finally {
    await pool.close();
  }
  assert.equal(pool.takeReady(), null, 'closed');
});
