// Attack (issue #22): a `minimal` guest fills the disk through the queue power — depth was capped
// per queue but not the number of queue names, so pushing 256 KiB messages to name after name
// wrote 750 MiB into engine.sqlite in seconds. Now a tenant's queues together stop at its byte
// quota (MAX_TENANT_QUEUE_BYTES, 64 MiB charged) and its name quota (MAX_TENANT_QUEUES, 100),
// refused with QUOTA, audited once; engine.sqlite stays under the quota plus a fixed overhead.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { QUEUE_MAX_MESSAGE_BYTES } from '../../src/storage/queue.ts';
import { MAX_TENANT_QUEUES, MAX_TENANT_QUEUE_BYTES, STORE_ITEM_OVERHEAD } from '../../src/storage/store-quotas.ts';
import { tempDir } from '../helpers/tmp.ts';

/** What SQLite may hold beyond the charged bytes: page slack, the indexes' interior pages and the WAL (~4 MiB between checkpoints plus one message). */
const FILE_OVERHEAD = 16 * 1024 * 1024;

let engine: Engine;
let home: string;

before(() => {
  home = tempDir('membrane-queue-flood-');
  process.env['MEMBRANE_HOME'] = home;
  process.env['MEMBRANE_AUDIT_KEY'] = '7e'.repeat(32);
  engine = createEngine({ poolSize: 1 });
});
after(() => engine.close());

interface Flood {
  pushed: number;
  code: string | null;
}

/**
 * One snippet: push `count` messages of `size` bytes to queues `${prefix}0`, `${prefix}1`, …
 * (`perQueue` messages each, starting at queue `first`), stopping at the first refusal.
 */
async function flood(tenant: string, prefix: string, first: number, count: number, size: number, perQueue: number): Promise<Flood> {
  const code = `const m = 'x'.repeat(${size}); let pushed = 0, code = null;
    for (let i = 0; i < ${count}; i++) {
      try { queue.push('${prefix}' + (${first} + Math.floor(i / ${perQueue})), m); pushed++; }
      catch (e) { code = e.code; break; }
    }
    ({ pushed, code })`;
  const r = await engine.exec({ language: 'js', code, profile: 'minimal', tenant });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.result as Flood;
}

function engineFileBytes(): number {
  const size = (f: string): number => {
    try {
      return statSync(f).size;
    } catch {
      return 0;
    }
  };
  const file = join(home, 'engine.sqlite');
  return size(file) + size(`${file}-wal`) + size(`${file}-shm`);
}

function quotaRecords(tenant: string): Array<Record<string, unknown>> {
  const log = AuditLog.open(join(home, 'engine.sqlite'));
  try {
    return log.tail({ tenant, kind: 'denied', limit: 1000 }).map((r) => r.detail as Record<string, unknown>).filter((d) => d['code'] === 'QUOTA');
  } finally {
    log.close();
  }
}

test(`256 KiB messages spread over many queue names stop at the tenant's ${MAX_TENANT_QUEUE_BYTES / 1048576} MiB queue quota with QUOTA; engine.sqlite stays under it`, async () => {
  const perMessage = QUEUE_MAX_MESSAGE_BYTES + 'flood-00'.length + STORE_ITEM_OVERHEAD;
  const fits = Math.floor(MAX_TENANT_QUEUE_BYTES / perMessage);
  let pushed = 0;
  let refused: string | null = null;
  const firstWindow = Math.floor(Date.now() / 60_000);
  // Several snippets (each well inside minimal's 5 s), 10 messages per queue name.
  while (refused === null && pushed <= fits) {
    const r = await flood('flooder', 'flood-', 10 + Math.floor(pushed / 10), 40, QUEUE_MAX_MESSAGE_BYTES, 10);
    pushed += r.pushed;
    refused = r.code;
  }
  assert.equal(refused, 'QUOTA');
  assert.equal(pushed, fits, `the quota admits exactly ${fits} messages of ${perMessage} charged bytes`);
  const bytes = engineFileBytes();
  process.stdout.write(`engine.sqlite (+ -wal, -shm) after the flood: ${(bytes / 1048576).toFixed(1)} MiB for ${pushed} messages (${((pushed * QUEUE_MAX_MESSAGE_BYTES) / 1048576).toFixed(1)} MiB of payload); quota ${MAX_TENANT_QUEUE_BYTES / 1048576} MiB + ${FILE_OVERHEAD / 1048576} MiB allowance\n`);
  assert.ok(bytes <= MAX_TENANT_QUEUE_BYTES + FILE_OVERHEAD, `engine.sqlite holds ${bytes} bytes`);

  // A further message to a new name is refused too (what is left is less than one message).
  assert.deepEqual(await flood('flooder', 'late-', 0, 1, QUEUE_MAX_MESSAGE_BYTES, 1), { pushed: 0, code: 'QUOTA' });
  // Popping frees what the message was charged: one more fits, then QUOTA again.
  const popped = await engine.exec({ language: 'js', code: "queue.pop('flood-10').length", profile: 'minimal', tenant: 'flooder' });
  assert.equal(popped.result, QUEUE_MAX_MESSAGE_BYTES);
  assert.deepEqual(await flood('flooder', 'flood-', 10, 2, QUEUE_MAX_MESSAGE_BYTES, 10), { pushed: 1, code: 'QUOTA' });

  // Another tenant is untouched by this one's quota.
  assert.deepEqual(await flood('neighbour', 'flood-', 0, 3, 1024, 1), { pushed: 3, code: null });
  // The flood left one audit record per quota and window, not one per refused push.
  // (The window is the rate window, aligned to the clock: a flood that straddles a boundary leaves one per window.)
  const records = quotaRecords('flooder');
  const windows = Math.floor(Date.now() / 60_000) - firstWindow + 1;
  assert.ok(records.length >= 1 && records.length <= windows, `${records.length} records over ${windows} window(s): ${JSON.stringify(records)}`);
  assert.deepEqual([records[0]!['broker'], records[0]!['op'], records[0]!['quota'], records[0]!['limit']], ['queue', 'queue_push', 'queue-bytes', MAX_TENANT_QUEUE_BYTES]);
});

test(`tiny messages to ever-new queue names stop at ${MAX_TENANT_QUEUES} names with QUOTA; an emptied queue gives its name back`, async () => {
  assert.deepEqual(await flood('namer', 'n', 0, MAX_TENANT_QUEUES + 50, 1, 1), { pushed: MAX_TENANT_QUEUES, code: 'QUOTA' });
  assert.deepEqual(await flood('namer', 'n', 0, 5, 1, 5), { pushed: 5, code: null }, 'an existing queue still takes messages');
  const r = await engine.exec({ language: 'js', code: "let n = 0; while (queue.pop('n7') !== null) n++; n", profile: 'minimal', tenant: 'namer' });
  assert.equal(r.result, 1);
  assert.deepEqual(await flood('namer', 'fresh', 0, 2, 1, 1), { pushed: 1, code: 'QUOTA' });
  const records = quotaRecords('namer');
  assert.deepEqual(records.map((d) => d['quota']), ['queue-names']);
});

test('the operator can lower (or raise) the quotas; a guest cannot', async () => {
  const small = createEngine({ poolSize: 1, brokers: { databaseFile: join(home, 'small.sqlite'), quotas: { queueBytes: 1024 * 1024, queues: 2 } } });
  try {
    const r = await small.exec({ language: 'js', code: "const m = 'x'.repeat(200000); let n = 0; try { for (;;) { queue.push('a', m); n++; } } catch (e) { [n, e.code] }", profile: 'minimal', tenant: 't' });
    assert.deepEqual(r.result, [5, 'QUOTA']);
    const names = await small.exec({ language: 'js', code: "queue.push('b', 'x'); try { queue.push('c', 'x'); 'stored' } catch (e) { e.code }", profile: 'minimal', tenant: 't' });
    assert.equal(names.result, 'QUOTA');
  } finally {
    await small.close();
  }
  assert.throws(() => createEngine({ brokers: { quotas: { queueBytes: -1 } } }), /non-negative integer/);
});
