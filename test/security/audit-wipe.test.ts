// Attack: someone who can write the engine database (but lacks the audit key) wipes the audit log
// — every record and the head, everything after the genesis, or the tables themselves — hoping
// `membrane audit verify` then says "ok: 0 records". A log that once existed never verifies as
// empty: every log starts with a genesis record, so an empty one is `wiped`, loudly.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import { SandboxError } from '../../src/errors.ts';
import { AuditLog, AUDIT_KEY_ENV, canonicalJson, canonicalRecord, type AuditVerification } from '../../src/storage/audit.ts';
import { openDatabase, type Database } from '../../src/storage/sqlite.ts';
import { runCli, type Ran } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const KEY_HEX = '5a'.repeat(32);
const KEY = Buffer.from(KEY_HEX, 'hex');

/** A fresh home with an engine database holding the genesis and `n` more records. */
function homeWithLog(n: number): { home: string; file: string } {
  const home = tempDir('membrane-audit-wipe-');
  const file = join(home, 'engine.sqlite');
  const log = AuditLog.open(file, { key: KEY });
  for (let i = 0; i < n; i++) log.append({ tenant: 'acme', kind: 'denied', detail: { i } });
  log.close();
  return { home, file };
}

function tamper(file: string, sql: string): void {
  const db = openDatabase(file);
  db.exec(sql);
  db.close();
}

function verifyFile(file: string): AuditVerification {
  const log = AuditLog.openExisting(file, { key: KEY });
  if (!(log instanceof AuditLog)) return log;
  try {
    return log.verify();
  } finally {
    log.close();
  }
}

function cli(home: string, args: string[]): Promise<Ran> {
  return runCli(args, { MEMBRANE_HOME: home, [AUDIT_KEY_ENV]: KEY_HEX });
}

function expectFail(r: AuditVerification, seq: number, problem: string): void {
  assert.equal(r.ok, false, 'the wipe went unnoticed');
  if (r.ok) return;
  assert.deepEqual([r.seq, r.problem], [seq, problem], r.reason);
}

test('deleting every record and the head: verify fails "wiped" (library and CLI, exit 1); appends refuse', async () => {
  const { home, file } = homeWithLog(5);
  tamper(file, 'DELETE FROM audit; DELETE FROM audit_head');
  expectFail(verifyFile(file), 1, 'wiped');
  const r = await cli(home, ['audit', 'verify']);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /^tampered at seq 1: wiped: the log is empty: its genesis record/);
  const json = await cli(home, ['audit', 'verify', '--json']);
  assert.equal(json.code, 1);
  assert.equal((JSON.parse(json.stdout) as { problem: string }).problem, 'wiped');
  const log = AuditLog.open(file, { key: KEY });
  assert.throws(() => log.append({ tenant: 't', kind: 'k' }), (e: unknown) => e instanceof SandboxError && /wiped/.test(e.message), 'an append never restarts a wiped log');
  expectFail(log.verify(), 1, 'wiped');
  log.close();
  expectFail(verifyFile(file), 1, 'wiped');
});

test('deleting every record but the genesis: truncated (head kept) or bad-head (head deleted too)', () => {
  const kept = homeWithLog(4);
  tamper(kept.file, 'DELETE FROM audit WHERE seq > 1');
  expectFail(verifyFile(kept.file), 2, 'truncated');
  const headless = homeWithLog(4);
  tamper(headless.file, 'DELETE FROM audit WHERE seq > 1; DELETE FROM audit_head');
  expectFail(verifyFile(headless.file), 2, 'bad-head');
});

test('deleting or editing the genesis record alone is detected at seq 1', () => {
  const gone = homeWithLog(3);
  tamper(gone.file, 'DELETE FROM audit WHERE seq = 1');
  expectFail(verifyFile(gone.file), 1, 'deleted');
  const edited = homeWithLog(3);
  tamper(edited.file, "UPDATE audit SET kind = 'engine.start' WHERE seq = 1");
  expectFail(verifyFile(edited.file), 1, 'edited');
});

test('dropping the audit tables: verify and checkpoint fail "wiped" (never start a new log); the engine refuses a half-dropped log', async () => {
  for (const sql of ['DROP TABLE audit; DROP TABLE audit_head; DROP TABLE audit_format', 'DROP TABLE audit_head', 'DROP TABLE audit']) {
    const { home, file } = homeWithLog(3);
    tamper(file, sql);
    expectFail(verifyFile(file), 1, 'wiped');
    const r = await cli(home, ['audit', 'verify']);
    assert.equal(r.code, 1, `${sql}: ${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /wiped: .*(dropped)/);
    const cp = await cli(home, ['audit', 'checkpoint']);
    assert.equal(cp.code, 1, 'no checkpoint of a dropped log');
    assert.equal(cp.stdout.includes('"sig"'), false);
    expectFail(verifyFile(file), 1, 'wiped');
    if (sql !== 'DROP TABLE audit; DROP TABLE audit_head; DROP TABLE audit_format') {
      assert.throws(() => AuditLog.open(file, { key: KEY }), (e: unknown) => e instanceof SandboxError && e.code === 'INTERNAL' && /dropped/.test(e.message));
    }
  }
});

test('an engine database deleted outright: verify fails (no log), it does not create one', async () => {
  const home = tempDir('membrane-audit-wipe-');
  const r = await cli(home, ['audit', 'verify']);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /wiped: the database has no audit tables/);
  expectFail(verifyFile(join(home, 'engine.sqlite')), 1, 'wiped');
});

/** What a version before genesis records left: the tables without audit_format, records from seq 1 under the same MAC rule. */
function legacyLog(db: Database, n: number): void {
  db.exec(`CREATE TABLE audit (seq INTEGER PRIMARY KEY, v INTEGER NOT NULL, time TEXT NOT NULL, tenant TEXT NOT NULL,
      instance TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL, mac BLOB NOT NULL) STRICT;
    CREATE TABLE audit_head (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, mac BLOB NOT NULL, head_mac BLOB NOT NULL) STRICT;`);
  let prev = Buffer.alloc(32);
  for (let seq = 1; seq <= n; seq++) {
    const record = { v: 1 as const, seq, time: new Date().toISOString(), tenant: 'old', instance: '', kind: 'denied', detail: { seq } };
    const mac = createHmac('sha256', KEY).update(prev).update(canonicalRecord(record)).digest();
    db.prepare('INSERT INTO audit VALUES (?, 1, ?, ?, ?, ?, ?, ?)').run(seq, record.time, record.tenant, record.instance, record.kind, canonicalJson(record.detail), mac);
    prev = mac;
  }
  if (n > 0) {
    const headKey = createHmac('sha256', KEY).update('membrane audit head v1').digest();
    db.prepare('INSERT INTO audit_head VALUES (1, ?, ?, ?)').run(n, prev, createHmac('sha256', headKey).update(`${n}\n`).update(prev).digest());
  }
}

test('a log from before genesis records verifies as legacy, is adopted on open, and a wipe after that is detected', () => {
  const home = tempDir('membrane-audit-wipe-');
  const file = join(home, 'engine.sqlite');
  const db = openDatabase(file);
  legacyLog(db, 3);
  db.close();
  assert.deepEqual(verifyFile(file), { ok: true, records: 3, legacy: true });
  const log = AuditLog.open(file, { key: KEY });
  log.append({ tenant: 'new', kind: 'denied' });
  assert.deepEqual(log.verify(), { ok: true, records: 4, legacy: true });
  log.close();
  tamper(file, 'DELETE FROM audit; DELETE FROM audit_head');
  expectFail(verifyFile(file), 1, 'wiped');

  // An older version's tables that never held a record: adopted with a genesis on the first open.
  const empty = openDatabase(':memory:');
  legacyLog(empty, 0);
  const adopted = new AuditLog(empty, { key: KEY }, true);
  assert.deepEqual(adopted.verify(), { ok: true, records: 1 });
  assert.equal(adopted.tail()[0]!.kind, 'genesis');
  adopted.close();
});

test('an engine that opened its database (a guest used kv, nothing was denied) has started the log: verify passes, and a wipe is caught', async () => {
  const home = tempDir('membrane-audit-wipe-');
  const saved = { home: process.env['MEMBRANE_HOME'], key: process.env[AUDIT_KEY_ENV] };
  process.env['MEMBRANE_HOME'] = home;
  process.env[AUDIT_KEY_ENV] = KEY_HEX;
  const { createEngine } = await import('../../src/index.ts');
  const engine = createEngine({ poolSize: 0 });
  try {
    const r = await engine.exec({ language: 'js', code: "kv.put('k', 'v'); kv.get('k')", profile: 'minimal', tenant: 't' });
    assert.equal(r.result, 'v', JSON.stringify(r.error));
  } finally {
    await engine.close();
    if (saved.home === undefined) delete process.env['MEMBRANE_HOME'];
    else process.env['MEMBRANE_HOME'] = saved.home;
    if (saved.key === undefined) delete process.env[AUDIT_KEY_ENV];
    else process.env[AUDIT_KEY_ENV] = saved.key;
  }
  const file = join(home, 'engine.sqlite');
  assert.deepEqual(verifyFile(file), { ok: true, records: 1 }, 'the genesis alone');
  const ok = await cli(home, ['audit', 'verify']);
  assert.equal(ok.stdout, 'ok: 1 records\n');
  tamper(file, 'DELETE FROM audit; DELETE FROM audit_head');
  assert.equal((await cli(home, ['audit', 'verify'])).code, 1);
});
