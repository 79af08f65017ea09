// Store quotas' accounting: a database written before the usage table is accounted once on open
// (kv keys and bytes, queue names, depths and bytes), and later writes keep it exact.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KvStore } from '../../src/storage/kv.ts';
import { QueueStore } from '../../src/storage/queue.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { STORE_ITEM_OVERHEAD, resolveStoreQuotas } from '../../src/storage/store-quotas.ts';

test('an older database (kv_counts, no usage rows) is backfilled once; puts, pops and deletes keep the usage exact', () => {
  const db = openDatabase(':memory:');
  db.exec(`CREATE TABLE kv (tenant TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, updated INTEGER NOT NULL, PRIMARY KEY (tenant, key)) WITHOUT ROWID;
    CREATE TABLE kv_counts (tenant TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE queue_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, queue TEXT NOT NULL, message BLOB NOT NULL);`);
  const put = db.prepare('INSERT INTO kv VALUES (?, ?, ?, 0)');
  put.run('a', 'é', Buffer.alloc(10));
  put.run('a', 'k2', Buffer.alloc(100));
  put.run('b', 'k', Buffer.alloc(1));
  const push = db.prepare('INSERT INTO queue_messages (tenant, queue, message) VALUES (?, ?, ?)');
  for (let i = 0; i < 3; i++) push.run('a', 'jobs', Buffer.alloc(7));
  push.run('a', 'other', Buffer.alloc(5));

  const kv = new KvStore(db);
  assert.deepEqual(kv.usageOf('a'), { keys: 2, bytes: 2 + 10 + 2 + 100 + 2 * STORE_ITEM_OVERHEAD });
  assert.deepEqual(kv.usageOf('b'), { keys: 1, bytes: 1 + 1 + STORE_ITEM_OVERHEAD });
  assert.equal(db.prepare("SELECT name FROM sqlite_master WHERE name = 'kv_counts'").get(), undefined, 'the old key counts are gone');
  const q = new QueueStore(db);
  assert.deepEqual(q.usageOf('a'), { queues: 2, bytes: 3 * (7 + 4 + STORE_ITEM_OVERHEAD) + (5 + 5 + STORE_ITEM_OVERHEAD) });
  assert.equal(q.length('a', 'jobs'), 3);

  // A second open does not account twice.
  const again = new KvStore(db);
  assert.deepEqual(again.usageOf('a'), kv.usageOf('a'));
  assert.deepEqual(new QueueStore(db).usageOf('a'), q.usageOf('a'));

  assert.equal(kv.put('a', 'k2', new Uint8Array(40)), null);
  assert.deepEqual(kv.usageOf('a'), { keys: 2, bytes: 2 + 10 + 2 + 40 + 2 * STORE_ITEM_OVERHEAD });
  assert.equal(kv.delete('a', 'é'), true);
  assert.equal(kv.delete('a', 'é'), false);
  assert.deepEqual(kv.usageOf('a'), { keys: 1, bytes: 2 + 40 + STORE_ITEM_OVERHEAD });
  assert.equal(q.pop('a', 'other')?.size, 5);
  assert.deepEqual(q.usageOf('a'), { queues: 1, bytes: 3 * (7 + 4 + STORE_ITEM_OVERHEAD) });
  assert.equal(q.pop('a', 'other'), null);
  assert.equal(q.pop('a', 'jobs', 3)?.message, null, 'a message that does not fit stays, and stays charged');
  assert.deepEqual(q.usageOf('a'), { queues: 1, bytes: 3 * (7 + 4 + STORE_ITEM_OVERHEAD) });
  db.close();
});

test('quota refusals name the quota and store nothing', () => {
  const db = openDatabase(':memory:');
  const quotas = resolveStoreQuotas({ kvKeys: 2, kvBytes: 10_000, queues: 1, queueBytes: 200 });
  const kv = new KvStore(db, quotas);
  assert.equal(kv.put('t', 'a', new Uint8Array(1)), null);
  assert.equal(kv.put('t', 'b', new Uint8Array(1)), null);
  assert.deepEqual(kv.put('t', 'c', new Uint8Array(1)), { code: 'QUOTA', quota: 'kv-keys', limit: 2 });
  assert.equal(kv.get('t', 'c'), null);
  const q = new QueueStore(db, quotas);
  assert.equal(q.push('t', 'q', new Uint8Array(50)), null);
  assert.deepEqual(q.push('t', 'r', new Uint8Array(1)), { code: 'QUOTA', quota: 'queue-names', limit: 1 });
  assert.deepEqual(q.push('t', 'q', new Uint8Array(100)), { code: 'QUOTA', quota: 'queue-bytes', limit: 200 });
  assert.equal(q.length('t', 'q'), 1);
  assert.throws(() => resolveStoreQuotas({ kvBytes: 1.5 }), /non-negative integer/);
  db.close();
});

test('property: after any sequence of puts, deletes, pushes and pops, each tenant\'s usage row equals its data recounted and never passes its quota', async () => {
  const fc = (await import('fast-check')).default;
  const quotas = resolveStoreQuotas({ kvKeys: 6, kvBytes: 900, queues: 3, queueBytes: 700 });
  const op = fc.oneof(
    fc.record({ t: fc.constant('put' as const), tenant: fc.constantFrom('a', 'b'), key: fc.constantFrom('k', 'kk', 'é', 'key4', 'x', 'y', 'z'), size: fc.integer({ min: 0, max: 300 }) }),
    fc.record({ t: fc.constant('del' as const), tenant: fc.constantFrom('a', 'b'), key: fc.constantFrom('k', 'kk', 'é', 'key4', 'x') }),
    fc.record({ t: fc.constant('push' as const), tenant: fc.constantFrom('a', 'b'), queue: fc.constantFrom('q', 'r', 's', 'tt'), size: fc.integer({ min: 0, max: 200 }) }),
    fc.record({ t: fc.constant('pop' as const), tenant: fc.constantFrom('a', 'b'), queue: fc.constantFrom('q', 'r', 's', 'tt') }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const db = openDatabase(':memory:');
      const kv = new KvStore(db, quotas);
      const q = new QueueStore(db, quotas);
      for (const o of ops) {
        if (o.t === 'put') kv.put(o.tenant, o.key, new Uint8Array(o.size));
        else if (o.t === 'del') kv.delete(o.tenant, o.key);
        else if (o.t === 'push') q.push(o.tenant, o.queue, new Uint8Array(o.size));
        else q.pop(o.tenant, o.queue);
      }
      for (const tenant of ['a', 'b']) {
        const k = db.prepare<{ n: number; bytes: number | null }>('SELECT count(*) AS n, sum(length(CAST(key AS BLOB)) + length(value) + ?) AS bytes FROM kv WHERE tenant = ?').get(STORE_ITEM_OVERHEAD, tenant)!;
        assert.deepEqual(kv.usageOf(tenant), { keys: k.n, bytes: k.bytes ?? 0 });
        assert.ok(k.n <= quotas.kvKeys && (k.bytes ?? 0) <= quotas.kvBytes);
        const m = db.prepare<{ names: number; bytes: number | null }>('SELECT count(DISTINCT queue) AS names, sum(length(message) + length(CAST(queue AS BLOB)) + ?) AS bytes FROM queue_messages WHERE tenant = ?').get(STORE_ITEM_OVERHEAD, tenant)!;
        assert.deepEqual(q.usageOf(tenant), { queues: m.names, bytes: m.bytes ?? 0 });
        assert.ok(m.names <= quotas.queues && (m.bytes ?? 0) <= quotas.queueBytes);
        for (const name of ['q', 'r', 's', 'tt']) {
          assert.equal(q.length(tenant, name), db.prepare<{ n: number }>('SELECT count(*) AS n FROM queue_messages WHERE tenant = ? AND queue = ?').get(tenant, name)!.n);
        }
      }
      db.close();
    }),
    { numRuns: 200 },
  );
});
