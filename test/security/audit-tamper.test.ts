// Attacks on the audit log by someone who can write the engine database but lacks the audit key:
// each is detected by verify(), at the first seq the chain cannot vouch for.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { AuditLog, type AuditProblem } from '../../src/storage/audit.ts';
import { openDatabase, type Database } from '../../src/storage/sqlite.ts';

const KEY = Buffer.alloc(32, 0x5a);
const COLUMNS = 'v, time, tenant, instance, kind, detail, mac';

/** A log of `n` distinct records (the genesis and n - 1 more) in an in-memory database we can also write to directly. */
function logOf(n: number): { log: AuditLog; db: Database } {
  const db = openDatabase(':memory:');
  const log = new AuditLog(db, { key: KEY }, true);
  for (let i = 2; i <= n; i++) log.append({ tenant: i % 2 ? 'acme' : 'beta', instance: `p${i % 3}`, kind: i % 2 ? 'net.denied' : 'kv.quota', detail: { i, host: `h${i}.example` } });
  return { log, db };
}

function expectTamper(log: AuditLog, seq: number, problem: AuditProblem): void {
  const r = log.verify();
  assert.equal(r.ok, false, 'the tampering went unnoticed');
  if (r.ok) return;
  assert.equal(r.seq, seq, r.reason);
  assert.equal(r.problem, problem, r.reason);
  assert.ok(r.reason.length > 0);
}

/** Move records with seq >= from by `by` (two steps, so the primary key never collides). */
function renumber(db: Database, from: number, by: number): void {
  db.prepare('UPDATE audit SET seq = -seq WHERE seq >= ?').run(from);
  db.prepare('UPDATE audit SET seq = -seq + ? WHERE seq < 0').run(by);
}

function swap(db: Database, a: number, b: number, columns: string): void {
  const get = (s: number) => db.prepare(`SELECT ${columns} FROM audit WHERE seq = ?`).raw().get(s) as unknown[];
  const [ra, rb] = [get(a), get(b)];
  const set = columns.split(', ').map((c) => `${c} = ?`).join(', ');
  db.prepare(`UPDATE audit SET ${set} WHERE seq = ?`).run(...rb, a);
  db.prepare(`UPDATE audit SET ${set} WHERE seq = ?`).run(...ra, b);
}

const insertForged = (db: Database, seq: number) =>
  db.prepare(`INSERT INTO audit (seq, ${COLUMNS}) VALUES (?, 1, ?, 'acme', '', 'net.allowed', '{"forged":true}', ?)`).run(seq, new Date().toISOString(), randomBytes(32));

test('an untouched log verifies', () => {
  const { log } = logOf(6);
  assert.deepEqual(log.verify(), { ok: true, records: 6 });
});

test('editing a record\'s detail, tenant, instance, kind, time or version is detected at that seq', () => {
  const edits: Array<[string, unknown]> = [
    ['detail', '{"host":"h3.example","i":33}'],
    ['detail', '{"host": "h3.example", "i": 3}'], // same value, not canonical bytes
    ['tenant', 'beta'],
    ['instance', 'p9'],
    ['kind', 'net.allowed'],
    ['time', '2000-01-01T00:00:00.000Z'],
    ['v', 2],
  ];
  for (const [column, value] of edits) {
    const { log, db } = logOf(6);
    db.prepare(`UPDATE audit SET ${column} = ? WHERE seq = 3`).run(value);
    expectTamper(log, 3, 'edited');
  }
});

test('deleting a middle record is detected as a gap at its seq', () => {
  const { log, db } = logOf(6);
  db.prepare('DELETE FROM audit WHERE seq = 3').run();
  expectTamper(log, 3, 'deleted');
});

test('deleting the first record is detected at seq 1', () => {
  const { log, db } = logOf(6);
  db.prepare('DELETE FROM audit WHERE seq = 1').run();
  expectTamper(log, 1, 'deleted');
});

test('deleting a record and renumbering the rest to close the gap is detected', () => {
  const { log, db } = logOf(6);
  db.prepare('DELETE FROM audit WHERE seq = 3').run();
  renumber(db, 4, -1);
  expectTamper(log, 3, 'deleted');
});

test('deleting the last records (truncation) is detected by the head', () => {
  const { log, db } = logOf(6);
  db.prepare('DELETE FROM audit WHERE seq >= 5').run();
  expectTamper(log, 5, 'truncated');
  db.prepare('DELETE FROM audit').run();
  expectTamper(log, 1, 'truncated');
});

test('inserting a forged record with a made-up MAC is detected, at the end or in the middle', () => {
  const end = logOf(6);
  insertForged(end.db, 7);
  expectTamper(end.log, 7, 'inserted');
  const middle = logOf(6);
  renumber(middle.db, 3, 1);
  insertForged(middle.db, 3);
  expectTamper(middle.log, 3, 'inserted');
  const before = logOf(6);
  insertForged(before.db, 0);
  expectTamper(before.log, 0, 'inserted');
});

test('swapping two records (reordering) is detected at the earlier seq, MACs moved or not', () => {
  for (const columns of [COLUMNS, 'v, time, tenant, instance, kind, detail']) {
    for (const [a, b] of [[2, 5], [3, 4], [1, 6]] as const) {
      const { log, db } = logOf(6);
      swap(db, a, b, columns);
      expectTamper(log, a, 'reordered');
    }
  }
});

test('replacing a MAC (random bytes, another record\'s MAC, wrong type) is detected at that seq', () => {
  for (const mac of [randomBytes(32), 'copy', Buffer.alloc(0)]) {
    const { log, db } = logOf(6);
    if (mac === 'copy') db.prepare('UPDATE audit SET mac = (SELECT mac FROM audit WHERE seq = 2) WHERE seq = 4').run();
    else db.prepare('UPDATE audit SET mac = ? WHERE seq = 4').run(mac);
    expectTamper(log, 4, 'edited');
  }
});

test('changing the head (seq, MAC, its own MAC, or deleting it) is detected after the last record', () => {
  const changes = [
    'UPDATE audit_head SET seq = 5',
    'UPDATE audit_head SET seq = 9',
    "UPDATE audit_head SET mac = randomblob(32)",
    "UPDATE audit_head SET head_mac = randomblob(32)",
    'DELETE FROM audit_head',
  ];
  for (const sql of changes) {
    const { log, db } = logOf(6);
    db.exec(sql);
    expectTamper(log, 7, 'bad-head');
    assert.throws(() => log.append({ tenant: 't', kind: 'k' }), /run `membrane audit verify`/, 'an append never heals a bad head');
    expectTamper(log, 7, 'bad-head');
  }
});

test('truncating and forging a head to match is detected (the head has its own MAC)', () => {
  const { log, db } = logOf(6);
  db.exec("DELETE FROM audit WHERE seq = 6; UPDATE audit_head SET seq = 5, mac = (SELECT mac FROM audit WHERE seq = 5)");
  expectTamper(log, 6, 'bad-head');
});

test('rolling the head back to an older genuine head is detected by the records past it', () => {
  const { log, db } = logOf(4);
  const old = db.prepare('SELECT seq, mac, head_mac FROM audit_head').raw().get() as unknown[];
  log.append({ tenant: 't', kind: 'k', detail: { i: 5 } });
  log.append({ tenant: 't', kind: 'k', detail: { i: 6 } });
  db.prepare('UPDATE audit_head SET seq = ?, mac = ?, head_mac = ?').run(...old);
  expectTamper(log, 5, 'bad-head');
});

test('known limit: restoring an older copy of records AND head together is not detected', () => {
  // DESIGN: the head is in the same database; catching a whole-log rollback needs a head kept
  // elsewhere. This test pins the documented limit so a change to it is deliberate.
  const { log, db } = logOf(4);
  const old = db.prepare('SELECT seq, mac, head_mac FROM audit_head').raw().get() as unknown[];
  log.append({ tenant: 't', kind: 'k', detail: { i: 5 } });
  db.exec('DELETE FROM audit WHERE seq = 5');
  db.prepare('UPDATE audit_head SET seq = ?, mac = ?, head_mac = ?').run(...old);
  assert.deepEqual(log.verify(), { ok: true, records: 4 });
});

type Tamper =
  | { t: 'edit'; seq: number; column: 'detail' | 'tenant' | 'instance' | 'kind' | 'time' }
  | { t: 'delete'; seq: number }
  | { t: 'insert-end' }
  | { t: 'insert-shift'; seq: number }
  | { t: 'swap'; a: number; b: number; macs: boolean }
  | { t: 'mac'; seq: number }
  | { t: 'head'; what: 'seq' | 'mac' | 'head_mac' | 'delete' };

/** Apply a tampering; returns the first seq verify() must report. */
function apply(db: Database, n: number, k: Tamper): number {
  switch (k.t) {
    case 'edit': {
      const value = k.column === 'detail' ? `{"i":${k.seq},"x":1}` : k.column === 'time' ? '1999-12-31T23:59:59.999Z' : `${k.column}-forged`;
      db.prepare(`UPDATE audit SET ${k.column} = ? WHERE seq = ?`).run(value, k.seq);
      return k.seq;
    }
    case 'delete':
      db.prepare('DELETE FROM audit WHERE seq = ?').run(k.seq);
      return k.seq;
    case 'insert-end':
      insertForged(db, n + 1);
      return n + 1;
    case 'insert-shift':
      renumber(db, k.seq, 1);
      insertForged(db, k.seq);
      return k.seq;
    case 'swap':
      swap(db, k.a, k.b, k.macs ? COLUMNS : 'v, time, tenant, instance, kind, detail');
      return Math.min(k.a, k.b);
    case 'mac':
      db.prepare('UPDATE audit SET mac = randomblob(32) WHERE seq = ?').run(k.seq);
      return k.seq;
    case 'head':
      if (k.what === 'delete') db.exec('DELETE FROM audit_head');
      else if (k.what === 'seq') db.exec('UPDATE audit_head SET seq = seq + 1');
      else db.exec(`UPDATE audit_head SET ${k.what} = randomblob(32)`);
      return n + 1;
  }
}

function tamperFor(n: number): fc.Arbitrary<Tamper> {
  const seq = fc.integer({ min: 1, max: n });
  const options: fc.Arbitrary<Tamper>[] = [
    fc.record({ t: fc.constant('edit' as const), seq, column: fc.constantFrom('detail' as const, 'tenant' as const, 'instance' as const, 'kind' as const, 'time' as const) }),
    fc.record({ t: fc.constant('delete' as const), seq }),
    fc.constant({ t: 'insert-end' as const }),
    fc.record({ t: fc.constant('insert-shift' as const), seq }),
    fc.record({ t: fc.constant('mac' as const), seq }),
    fc.record({ t: fc.constant('head' as const), what: fc.constantFrom('seq' as const, 'mac' as const, 'head_mac' as const, 'delete' as const) }),
  ];
  if (n >= 2) {
    options.push(
      fc.tuple(seq, seq, fc.boolean())
        .filter(([a, b]) => a !== b)
        .map(([a, b, macs]) => ({ t: 'swap' as const, a, b, macs })),
    );
  }
  return fc.oneof(...options);
}

test('property: any single tampering of a random log is reported at its first bad seq', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 10 }).chain((n) => fc.tuple(fc.constant(n), tamperFor(n))),
      ([n, tamper]) => {
        const { log, db } = logOf(n);
        const seq = apply(db, n, tamper);
        const r = log.verify();
        assert.equal(r.ok, false, `undetected: ${JSON.stringify(tamper)}`);
        if (!r.ok) assert.equal(r.seq, seq, `${JSON.stringify(tamper)} → ${r.reason}`);
        log.close();
      },
    ),
    { numRuns: 300 },
  );
});
