// A remote worker's engine (built as startRemoteWorker builds it, without Redis) keeps its own
// audit log like any engine: the log is started with its database (its genesis record), even
// when the first use of that database is a broker call that records nothing; and each job's
// records are copied for its reply as well as appended there.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine.ts';
import { workerEngineOptions } from '../../src/engine/remote-worker.ts';
import { AuditLog, GENESIS_KIND } from '../../src/storage/audit.ts';
import type { RemoteRecord } from '../../src/fabric/remote/protocol.ts';
import { TEST_CACHE } from '../helpers/engine.ts';
import { wat } from '../helpers/wat.ts';
import { tempDir } from '../helpers/tmp.ts';

const home = tempDir('membrane-worker-audit-');
process.env['MEMBRANE_HOME'] = home;
const databaseFile = join(home, 'engine.sqlite');

test("a remote worker's database holds a started log (its genesis) even when a broker call opened it first, and jobs' records are both logged and captured", async () => {
  const captures = new Map<string, RemoteRecord[]>();
  const engine = new Engine(workerEngineOptions({ concurrency: 1, engine: { poolSize: 0, cacheDir: TEST_CACHE, brokers: { databaseFile } } }, captures));
  try {
    // kv opens the database and records nothing.
    const kv = await engine.exec({ language: 'js', code: 'kv.put("k", "v"); kv.get("k")', profile: 'minimal' });
    assert.equal(kv.ok, true, JSON.stringify(kv.error));
    assert.equal(kv.result, 'v');
    const opened = AuditLog.openExisting(databaseFile);
    assert.ok(opened instanceof AuditLog, `no started log: ${JSON.stringify(opened)}`);
    const first = opened.tail({ limit: 10 });
    opened.close();
    assert.equal(first[0]?.kind, GENESIS_KIND);

    const records: RemoteRecord[] = [];
    captures.set('job-7', records);
    const r = await engine.run(await wat('noop'), { id: 'job-7', invoke: 'noop', profile: 'no-such-profile' });
    assert.equal(r.ok, true, JSON.stringify(r.error));
    captures.delete('job-7');
    assert.deepEqual(records.map((x) => x.kind), ['profile-fallback']);
    const log = AuditLog.openExisting(databaseFile);
    assert.ok(log instanceof AuditLog);
    const v = log.verify();
    const kinds = log.tail({ limit: 10 }).map((x) => x.kind);
    log.close();
    assert.equal(v.ok, true, JSON.stringify(v));
    assert.deepEqual(kinds, [GENESIS_KIND, 'profile-fallback']);
  } finally {
    await engine.close();
  }
});
