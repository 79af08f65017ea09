// vfs_query, functionally: a guest's read-only SQL over the real VFS tables, from a database file
// and from serialized bytes alike; the JSON shape; blobs and large integers; the queue.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { checkQuery, DEFAULT_QUERY_LIMITS, QueryService, type QueryOutcome } from '../../src/storage/query.ts';
import { O_CREAT, Vfs } from '../../src/storage/vfs.ts';
import { SQLITE_PACKAGE } from '../../src/storage/sqlite.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const home = tempDir('membrane-query-home-');
process.env['MEMBRANE_HOME'] = home;
const service = new QueryService();
after(async () => {
  await service.close();
  rmSync(home, { recursive: true, force: true });
});

type Serializable = { serialize(): Buffer; close(): void };
const Sqlite = createRequire(import.meta.url)(SQLITE_PACKAGE) as new (f: string, o?: { readonly?: boolean }) => Serializable;

interface Answer {
  columns: string[];
  rows: unknown[][];
}

function answer(o: QueryOutcome): Answer {
  assert.ok(o.ok, o.ok ? '' : `${o.code}: ${o.message}`);
  return JSON.parse(new TextDecoder().decode(o.json)) as Answer;
}

/** A VFS on disk with three files and a directory; `bytes()` serializes it as the engine would. */
function sampleVfs() {
  const dir = tempDir('membrane-query-');
  const file = join(dir, 'vfs.sqlite');
  const vfs = Vfs.open({ file });
  const put = (path: string, data: Uint8Array) => vfs.write(vfs.open('workspace', path, O_CREAT).ino, 0, data);
  put('/a.txt', Buffer.from('hello'));
  vfs.mkdir('workspace', '/src');
  put('/src/main.c', Buffer.from('int main(void) { return 0; }\n'));
  put('/bin.dat', Uint8Array.from([0, 1, 2, 253, 254, 255]));
  const bytes = () => {
    const db = new Sqlite(file, { readonly: true });
    try {
      return new Uint8Array(db.serialize());
    } finally {
      db.close();
    }
  };
  return { file, vfs, bytes, done: () => { vfs.close(); rmSync(dir, { recursive: true, force: true }); } };
}

const LIST = `SELECT d.name AS name, i.kind AS kind, i.size AS size
  FROM dirents d JOIN inodes i ON i.ino = d.ino ORDER BY d.name`;
const EXPECTED = {
  columns: ['name', 'kind', 'size'],
  rows: [['a.txt', 'file', 5], ['bin.dat', 'file', 6], ['main.c', 'file', 29], ['src', 'dir', 0]],
};

test('a query lists file names and sizes from the VFS file, while the VFS is open', async () => {
  const s = sampleVfs();
  try {
    assert.deepEqual(answer(await service.query({ file: s.file }, LIST)), EXPECTED);
    // Each query sees what was committed before it.
    s.vfs.write(s.vfs.open('workspace', '/later', O_CREAT).ino, 0, Buffer.from('x'));
    const later = answer(await service.query({ file: s.file }, "SELECT count(*) AS n FROM dirents WHERE name = 'later'"));
    assert.deepEqual(later.rows, [[1]]);
  } finally {
    s.done();
  }
});

test('the same query over serialized bytes gives the same answer', async () => {
  const s = sampleVfs();
  try {
    const o = await service.query({ bytes: s.bytes() }, LIST);
    assert.deepEqual(answer(o), EXPECTED);
    if (o.ok) assert.equal(o.rows, 4);
  } finally {
    s.done();
  }
});

test('the JSON shape: columns in order, one array per row, SQL types mapped', async () => {
  const o = await service.query({ bytes: new Uint8Array(0) },
    "SELECT 1 AS i, 2.5 AS r, 'é' AS t, NULL AS n, 9007199254740993 AS big, -9007199254740991 AS small");
  assert.deepEqual(answer(o), {
    columns: ['i', 'r', 't', 'n', 'big', 'small'],
    rows: [[1, 2.5, 'é', null, '9007199254740993', -9007199254740991]],
  });
  const empty = await service.query({ bytes: new Uint8Array(0) }, 'SELECT 1 AS x WHERE 0');
  assert.deepEqual(answer(empty), { columns: ['x'], rows: [] });
  if (empty.ok) assert.equal(empty.rows, 0);
  assert.deepEqual(answer(await service.query({ bytes: new Uint8Array(0) }, 'VALUES (1, 2), (3, 4);')).rows, [[1, 2], [3, 4]]);
});

test('blobs come back as {"$base64": ...}: a file read from its chunks', async () => {
  const s = sampleVfs();
  try {
    const a = answer(await service.query({ file: s.file },
      "SELECT c.data AS data FROM chunks c JOIN dirents d ON d.ino = c.ino WHERE d.name = 'bin.dat' ORDER BY c.idx"));
    assert.deepEqual(a.rows, [[{ $base64: Buffer.from([0, 1, 2, 253, 254, 255]).toString('base64') }]]);
    const t = answer(await service.query({ file: s.file },
      "SELECT CAST(c.data AS TEXT) AS text FROM chunks c JOIN dirents d ON d.ino = c.ino WHERE d.name = 'a.txt'"));
    assert.deepEqual(t.rows, [['hello']]);
  } finally {
    s.done();
  }
});

test('nanosecond timestamps past 2^53 come back as strings, exactly', async () => {
  const s = sampleVfs();
  try {
    const a = answer(await service.query({ file: s.file }, "SELECT i.mtime_ns AS m FROM inodes i JOIN dirents d ON d.ino = i.ino WHERE d.name = 'a.txt'"));
    const m = a.rows[0]![0];
    assert.equal(typeof m, 'string');
    assert.match(String(m), /^\d{19}$/);
  } finally {
    s.done();
  }
});

test('concurrent queries are queued and all answered, each with its own result', async () => {
  const s = sampleVfs();
  try {
    const bytes = s.bytes();
    const outs = await Promise.all(Array.from({ length: 24 }, (_, k) =>
      service.query(k % 2 === 0 ? { file: s.file } : { bytes }, `SELECT ${k} AS k, count(*) AS n FROM dirents`)));
    outs.forEach((o, k) => assert.deepEqual(answer(o).rows, [[k, 4]]));
  } finally {
    s.done();
  }
});

test('a query waiting behind a slow one is answered TIMEOUT once its wait bound passes', async () => {
  const svc = new QueryService({ timeoutMs: 6_000, maxWaitMs: 300 });
  try {
    const slow = svc.query({ bytes: new Uint8Array(0) }, 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c');
    const t0 = performance.now();
    const waiting = await svc.query({ bytes: new Uint8Array(0) }, 'SELECT 1');
    assert.equal(waiting.ok ? 'ok' : waiting.code, 'TIMEOUT');
    // Answered at its wait bound, long before the slow query's 6 s end.
    assert.ok(performance.now() - t0 < 300 + LOAD_SLACK_MS);
    const s = await slow;
    assert.equal(s.ok ? 'ok' : s.code, 'TIMEOUT');
  } finally {
    await svc.close();
  }
});

test('per-query limits narrow the service limits and never widen them', async () => {
  const o = await service.query({ bytes: new Uint8Array(0) }, "SELECT printf('%.*c', 500, 'x')", { maxResultBytes: 100 });
  assert.equal(o.ok ? 'ok' : o.code, 'TOO_LARGE');
  const small = new QueryService({ maxResultBytes: 100 });
  try {
    const w = await small.query({ bytes: new Uint8Array(0) }, "SELECT printf('%.*c', 500, 'x')", { maxResultBytes: 1 << 20 });
    assert.equal(w.ok ? 'ok' : w.code, 'TOO_LARGE');
  } finally {
    await small.close();
  }
});

test('defaults: 1000 ms, 1 MiB of result, 64 KiB of SQL; checkQuery applies the gate alone', async () => {
  assert.deepEqual({ ...DEFAULT_QUERY_LIMITS }, { timeoutMs: 1000, maxResultBytes: 1024 * 1024, maxSqlBytes: 64 * 1024 });
  assert.deepEqual(checkQuery('select name from dirents -- list\n;'), { ok: true });
  assert.deepEqual(checkQuery("SELECT replace(name, 'a', 'b') FROM dirents"), { ok: true });
  assert.equal(checkQuery(`SELECT '${'x'.repeat(64 * 1024)}'`).ok, false);
  const closed = new QueryService();
  await closed.close();
  const o = await closed.query({ bytes: new Uint8Array(0) }, 'SELECT 1');
  assert.equal(o.ok ? 'ok' : o.code, 'UNAVAILABLE');
});
