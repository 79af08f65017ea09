// vfs_query escapes, one test per attempt: a guest's SQL reaches its own VFS database and nothing
// else — no other database, no host file, no write, no pragma — and its time and result size are
// capped. Each refusal is checked for its code, for leaving no trace, and for naming no host path.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { QueryService, type QueryErrorCode, type QueryOutcome } from '../../src/storage/query.ts';
import { QueryProcess } from '../../src/storage/query-process.ts';
import { O_CREAT, Vfs } from '../../src/storage/vfs.ts';
import { SQLITE_PACKAGE } from '../../src/storage/sqlite.ts';
import { LOAD_SLACK_MS } from '../helpers/timing.ts';
import { tempDir } from '../helpers/tmp.ts';

const dir = tempDir('membrane-query-escape-');
process.env['MEMBRANE_HOME'] = join(dir, 'home');
const file = join(dir, 'vfs.sqlite');
const victim = join(dir, 'victim.sqlite');
const service = new QueryService();

type Db = { exec(sql: string): void; close(): void; prepare(sql: string): { all(): unknown[] } };
const Sqlite = createRequire(import.meta.url)(SQLITE_PACKAGE) as new (f: string) => Db;

const digest = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');
const files = () => readdirSync(dir).filter((n) => !/^vfs\.sqlite(-wal|-shm)?$/.test(n)).sort();

let vfsDigest = '';
let victimDigest = '';
let before_: string[] = [];

before(() => {
  const vfs = Vfs.open({ file });
  const f = vfs.open('workspace', '/notes.txt', O_CREAT);
  vfs.write(f.ino, 0, Buffer.from('guest data'));
  vfs.close();
  const v = new Sqlite(victim);
  v.exec("CREATE TABLE secret (s TEXT); INSERT INTO secret VALUES ('host secret')");
  v.close();
  vfsDigest = digest(file);
  victimDigest = digest(victim);
  before_ = files();
});

after(async () => {
  await service.close();
  rmSync(dir, { recursive: true, force: true });
});

const text = (o: QueryOutcome) => (o.ok ? new TextDecoder().decode(o.json) : o.message);

/** No answer names a host path: not the temp dir, not the database, not the home. */
function noHostPath(o: QueryOutcome): void {
  const t = text(o);
  for (const p of [dir, tmpdir(), file, '/home', process.cwd()]) assert.ok(!t.includes(p), `answer leaks ${p}: ${t}`);
}

/** Nothing happened: the VFS and the other database are byte for byte as they were, no new files. */
function unchanged(): void {
  assert.equal(digest(file), vfsDigest, 'the VFS database changed');
  assert.equal(digest(victim), victimDigest, 'the other database changed');
  assert.deepEqual(files(), before_, 'a file appeared next to the databases');
}

async function refused(sql: string, code: QueryErrorCode): Promise<QueryOutcome> {
  const o = await service.query({ file }, sql);
  assert.equal(o.ok, false, `${sql} was answered: ${text(o)}`);
  if (!o.ok) assert.equal(o.code, code, `${sql}: ${o.code} ${o.message}`);
  noHostPath(o);
  unchanged();
  return o;
}

async function works(): Promise<void> {
  const o = await service.query({ file }, "SELECT name FROM dirents WHERE name = 'notes.txt'");
  assert.equal(text(o), '{"columns":["name"],"rows":[["notes.txt"]]}');
}

test('ATTACH of another database file is refused', async () => { await refused(`ATTACH '${victim}' AS v`, 'DENIED'); });
test('attach in lower case is refused', async () => { await refused(`attach database '${victim}' as v`, 'DENIED'); });
test('AtTaCh in mixed case is refused', async () => { await refused(`AtTaCh '${victim}' AS v`, 'DENIED'); });
test('ATTACH after a comment (/**/ATTACH) is refused', async () => { await refused(`/**/ATTACH '${victim}' AS v`, 'DENIED'); });
test('ATTACH through a file: URI is refused', async () => { await refused(`ATTACH 'file:${victim}?mode=ro' AS v`, 'DENIED'); });
test('DETACH is refused', async () => { await refused('DETACH DATABASE main', 'DENIED'); });

test('VACUUM INTO a host file is refused and writes nothing', async () => {
  const target = join(tmpdir(), `membrane-vacuum-into-${process.pid}.sqlite`);
  await refused(`VACUUM INTO '${target}'`, 'DENIED');
  assert.equal(existsSync(target), false);
});

test('VACUUM is refused', async () => { await refused('VACUUM', 'DENIED'); });
test('load_extension() is refused', async () => { await refused("SELECT load_extension('/lib/x/libc.so.6')", 'DENIED'); });
test('a quoted "load_extension"() is refused', async () => { await refused(`SELECT "LOAD_EXTENSION"('/lib/x/libc.so.6')`, 'DENIED'); });
test('PRAGMA database_list is refused', async () => { await refused('PRAGMA database_list', 'DENIED'); });

test('SELECT from pragma_database_list is refused in every spelling, with no host path', async () => {
  for (const from of ['pragma_database_list', 'main.pragma_database_list', '"PRAGMA_DATABASE_LIST"', '[pragma_database_list]',
    '`pragma_database_list`', "'pragma_database_list'", 'main . /* x */ pragma_database_list']) {
    await refused(`SELECT file FROM ${from}`, 'DENIED');
  }
  await refused('SELECT * FROM pragma_table_list', 'DENIED');
});

test('PRAGMA journal_mode=DELETE is refused', async () => { await refused('PRAGMA journal_mode=DELETE', 'DENIED'); });
test('PRAGMA wal_checkpoint is refused', async () => { await refused('PRAGMA wal_checkpoint(TRUNCATE)', 'DENIED'); });

test('writes are refused and the database is unchanged: INSERT, UPDATE, DELETE, REPLACE, CREATE, DROP', async () => {
  for (const sql of [
    "INSERT INTO meta (key, value) VALUES ('x', 1)",
    "UPDATE inodes SET size = 0",
    'DELETE FROM dirents',
    "REPLACE INTO meta (key, value) VALUES ('used_bytes', 0)",
    'CREATE TABLE t (x)',
    'DROP TABLE chunks',
    "WITH c AS (SELECT 1) INSERT INTO meta SELECT 'y', 1 FROM c",
    'CREATE TEMP VIEW v AS SELECT 1',
    'ALTER TABLE meta RENAME TO m',
  ]) {
    await refused(sql, 'DENIED');
  }
  await works();
});

test('two statements (SELECT 1; ATTACH ...) are refused', async () => {
  await refused(`SELECT 1; ATTACH '${victim}' AS v`, 'DENIED');
  await refused('SELECT 1; SELECT 2', 'INVALID');
  await refused('SELECT 1\u0000; SELECT 2', 'INVALID');
});

test("readfile('/etc/passwd') is refused", async () => { await refused("SELECT readfile('/etc/passwd')", 'DENIED'); });
test("fts3_tokenizer('simple') is refused", async () => { await refused("SELECT fts3_tokenizer('simple')", 'DENIED'); });
test('sqlite_dbpage is refused', async () => { await refused('SELECT * FROM sqlite_dbpage', 'DENIED'); });

test('a runaway recursive query is stopped at its deadline and the next query works', async () => {
  const svc = new QueryService({ timeoutMs: 500 });
  try {
    await svc.query({ file }, 'SELECT 1'); // warm: the child is up
    const t0 = performance.now();
    const o = await svc.query({ file }, 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c');
    const took = performance.now() - t0;
    assert.equal(o.ok ? 'ok' : o.code, 'TIMEOUT');
    assert.ok(took < 500 + LOAD_SLACK_MS, `stopped after ${took} ms`);
    const next = await svc.query({ file }, 'SELECT 42 AS n');
    assert.equal(text(next), '{"columns":["n"],"rows":[[42]]}');
  } finally {
    await svc.close();
  }
  unchanged();
});

test('a huge result is cut off at the result cap (TOO_LARGE)', async () => {
  await refused('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 100000) SELECT randomblob(1000) FROM c', 'TOO_LARGE');
  await refused("SELECT printf('%.*c', 2000000, 'x')", 'TOO_LARGE');
  await works();
});

test('zeroblob(1500000000) and randomblob(2e9) are refused cleanly and the next query works', async () => {
  await refused('SELECT zeroblob(1500000000)', 'TOO_LARGE');
  await refused('SELECT randomblob(2e9)', 'TOO_LARGE');
  await works();
});

test('a value too large to hold is stopped by the memory cap, and the next query works', async () => {
  const svc = new QueryService({ heapMb: 64 });
  try {
    const o = await svc.query({ file }, 'SELECT zeroblob(400000000), zeroblob(400000000)');
    assert.equal(o.ok ? 'ok' : o.code, 'TOO_LARGE');
    noHostPath(o);
    assert.equal(text(await svc.query({ file }, 'SELECT 1 AS one')), '{"columns":["one"],"rows":[[1]]}');
  } finally {
    await svc.close();
  }
});

test('a 100 KiB SQL text is refused (TOO_LARGE)', async () => { await refused(`SELECT '${'x'.repeat(100 * 1024)}'`, 'TOO_LARGE'); });

test('a syntax error is INVALID and its message names no path', async () => {
  const o = await refused('SELECT FROM WHERE', 'INVALID');
  assert.doesNotMatch(text(o), /\/(tmp|home|work)\b/);
  await refused('SELECT * FROM no_such_table', 'INVALID');
});

// The walls behind the lexical gate, tested alone: SQL sent straight to the child, past the gate.
test('behind the gate: the read-only child refuses ATTACH, writes, VACUUM INTO and file pragmas by itself', async () => {
  const proc = new QueryProcess(128);
  const target = join(dir, 'vacuumed.sqlite');
  try {
    for (const sql of [
      `ATTACH '${victim}' AS v`,
      `ATTACH 'file:${victim}' AS v`,
      `VACUUM INTO '${target}'`,
      "INSERT INTO meta (key, value) VALUES ('x', 1)",
      'DELETE FROM chunks',
      'DROP TABLE inodes',
      'PRAGMA journal_mode=DELETE',
      'PRAGMA wal_checkpoint(TRUNCATE)',
      "SELECT load_extension('/lib/x/libc.so.6')",
    ]) {
      const o = await proc.run({ source: { kind: 'file', file }, sql, timeoutMs: 2_000, maxResultBytes: 1 << 20 });
      assert.equal(o.ok, false, `${sql} was answered: ${text(o)}`);
      noHostPath(o);
      unchanged();
    }
    assert.equal(existsSync(target), false);
  } finally {
    await proc.close();
  }
});

test('the gate reads comments, strings and identifiers as SQLite does: what it passes, SQLite sees as one read', async () => {
  const { checkQuery } = await import('../../src/storage/query-check.ts');
  type Prepared = { reader: boolean; readonly: boolean };
  const db = new (createRequire(import.meta.url)(SQLITE_PACKAGE) as new (f: string) => { prepare(s: string): Prepared; close(): void })(':memory:');
  const pass = [
    "SELECT 'ATTACH' AS a", "SELECT 1 -- ; ATTACH 'x' AS y", "SELECT 1 /* ; ATTACH 'x' AS y */", 'SELECT "a""b" FROM (SELECT 1 AS "a""b")',
    'SELECT [x] FROM (SELECT 1 AS x);', "SELECT x'00ff', 1e5+1, .5, 0x1F", "SELECT 'it''s' /* ' */", "select replace('a', 'a', 'b')",
  ];
  const refuse = [
    "SELECT 1 /* /* */ ; ATTACH 'x' AS y */", "SELECT '' ; ATTACH 'x' AS y", "SELECT 'it''s'; ATTACH 'x' AS y", 'SELECT 1 -- x\n; VACUUM',
    "SELECT \"a\"\"\" ; ATTACH 'x' AS y", 'SELECT [a"]; VACUUM', "SELECT `a``` ; PRAGMA x", "SELECT 1 /* unterminated", "SELECT 'open",
    'SELECT 1\u000b; VACUUM', 'SELECT ?1', "SELECT 1 FROM main.'pragma_table_info'",
  ];
  try {
    for (const sql of pass) {
      assert.deepEqual(checkQuery(sql), { ok: true }, sql);
      const st = db.prepare(sql);
      assert.ok(st.reader && st.readonly, sql);
    }
    for (const sql of refuse) assert.equal(checkQuery(sql).ok, false, sql);
  } finally {
    db.close();
  }
});
