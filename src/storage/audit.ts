/**
 * The tamper-evident audit log: an append-only keyed hash chain in the engine database.
 *
 * Owns: the `audit` and `audit_head` tables of `$MEMBRANE_HOME/engine.sqlite`, appending, tail
 * queries and verification. A record is `{ v: 1, seq, time, tenant, instance, kind, detail }`
 * (`time` ISO-8601 UTC with milliseconds; `instance` '' for engine-level events); its MAC is
 * `HMAC-SHA256(key, prevMac ‖ canonical(record))` with `canonical` the UTF-8 bytes of
 * `canonicalJson` (audit-encoding.ts) and `prevMac` 32 zero bytes for seq 1. The head row holds
 * the last `{seq, mac}` under its own MAC (a key derived from the audit key), so removing the
 * newest records is detected too.
 *
 * Invariant: seqs are 1, 2, 3, … with no gaps and no repeats, however many connections and
 * processes append at once (each append is one IMMEDIATE transaction: read the head, insert,
 * move the head). `verify()` reports the FIRST seq that the chain cannot vouch for: an edited,
 * deleted, inserted or reordered record, a truncated log, or a missing, forged or rolled-back
 * head. An append never repairs a head that does not verify: it refuses, loudly.
 *
 * Does not protect against: anyone holding the audit key (they can rewrite the whole chain);
 * deleting every record AND the head (an empty log verifies); restoring an older copy of the
 * whole log with its head (compare `verify()`'s head with one kept elsewhere to catch that);
 * a caller putting a secret in `detail` (callers pass only non-secret facts: see
 * audit-encoding.ts).
 */

import { createHmac, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { auditDetail, canonicalJson, truncateUtf8, MAX_PRINCIPAL_BYTES, type AuditDetail, type AuditJson } from './audit-encoding.ts';
import { loadAuditKey, AUDIT_KEY_BYTES } from './audit-key.ts';
import { openDatabase, storageDir, type Database, type Statement } from './sqlite.ts';

export { canonicalJson, auditDetail, MAX_DETAIL_BYTES, MAX_DETAIL_STRING_BYTES, type AuditDetail, type AuditJson } from './audit-encoding.ts';
export { loadAuditKey, parseAuditKey, auditKeyFile, AUDIT_KEY_ENV } from './audit-key.ts';

export const AUDIT_VERSION = 1;
/** `tail()` returns at most this many records. */
export const MAX_AUDIT_TAIL = 10_000;
/** Kinds are short machine words: `net.denied`, `kv.quota`, `engine.start`. */
const KIND = /^[a-z][a-z0-9_.:-]{0,63}$/;
const ZERO_MAC: Buffer = Buffer.alloc(32);

export interface AuditRecord {
  readonly v: 1;
  readonly seq: number;
  readonly time: string;
  readonly tenant: string;
  readonly instance: string;
  readonly kind: string;
  readonly detail: AuditDetail;
}

export interface AuditEvent {
  readonly tenant: string;
  /** '' (the default) for engine-level events. */
  readonly instance?: string;
  readonly kind: string;
  /** Non-secret facts only (see audit-encoding.ts). */
  readonly detail?: { readonly [key: string]: unknown };
}

export type AuditProblem = 'edited' | 'deleted' | 'inserted' | 'reordered' | 'truncated' | 'bad-head';

export type AuditVerification =
  | { readonly ok: true; readonly records: number }
  | { readonly ok: false; readonly seq: number; readonly problem: AuditProblem; readonly reason: string };

export interface AuditTailQuery {
  readonly tenant?: string;
  readonly kind?: string;
  /** Default 100, at most `MAX_AUDIT_TAIL`. */
  readonly limit?: number;
  /** Only records after this seq; then the OLDEST `limit` of them (so paging forward skips none). */
  readonly afterSeq?: number;
}

export interface AuditLogOptions {
  /** The 32-byte key; default `loadAuditKey()`. */
  readonly key?: Uint8Array;
}

interface Row {
  seq: number;
  v: number;
  time: string;
  tenant: string;
  instance: string;
  kind: string;
  detail: string;
  mac: Buffer;
}

interface Head {
  seq: number;
  mac: Buffer;
  head_mac: Buffer;
}

/** `$MEMBRANE_HOME/engine.sqlite`: the engine's own database (the audit log, kv, queues…). */
export function engineDatabaseFile(): string {
  return join(storageDir(), 'engine.sqlite');
}

/** Canonical bytes of a record (what its MAC covers after the previous MAC). */
export function canonicalRecord(r: AuditRecord): Buffer {
  const obj: { [key: string]: AuditJson } = { v: r.v, seq: r.seq, time: r.time, tenant: r.tenant, instance: r.instance, kind: r.kind, detail: r.detail };
  return Buffer.from(canonicalJson(obj), 'utf8');
}

function sameMac(a: unknown, b: Buffer): boolean {
  return Buffer.isBuffer(a) && a.length === b.length && timingSafeEqual(a, b);
}

export class AuditLog {
  readonly #db: Database;
  readonly #ownsDb: boolean;
  readonly #key: Buffer;
  readonly #headKey: Buffer;
  readonly #head$: Statement<Head>;
  readonly #insert$: Statement;
  readonly #setHead$: Statement;
  readonly #rows$: Statement<Row>;
  readonly #count$: Statement<{ n: number }>;
  readonly #appendTx: (fields: Omit<AuditRecord, 'v' | 'seq' | 'time'>) => AuditRecord;

  /** Over an open connection (closed by `close()` only if `ownsDb`); creates the audit tables. */
  constructor(db: Database, options: AuditLogOptions = {}, ownsDb = false) {
    const key = options.key ?? loadAuditKey();
    if (key.length !== AUDIT_KEY_BYTES) throw new SandboxError('POLICY_INVALID', `the audit key must be ${AUDIT_KEY_BYTES} bytes`);
    this.#db = db;
    this.#ownsDb = ownsDb;
    this.#key = Buffer.from(key);
    this.#headKey = createHmac('sha256', this.#key).update('membrane audit head v1').digest();
    db.exec(`CREATE TABLE IF NOT EXISTS audit (
      seq INTEGER PRIMARY KEY, v INTEGER NOT NULL, time TEXT NOT NULL, tenant TEXT NOT NULL,
      instance TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL, mac BLOB NOT NULL) STRICT;
    CREATE TABLE IF NOT EXISTS audit_head (
      id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, mac BLOB NOT NULL, head_mac BLOB NOT NULL) STRICT;
    CREATE INDEX IF NOT EXISTS audit_tenant ON audit (tenant, seq);
    CREATE INDEX IF NOT EXISTS audit_kind ON audit (kind, seq);`);
    this.#head$ = db.prepare('SELECT seq, mac, head_mac FROM audit_head WHERE id = 1');
    this.#insert$ = db.prepare('INSERT INTO audit (seq, v, time, tenant, instance, kind, detail, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    this.#setHead$ = db.prepare('INSERT INTO audit_head (id, seq, mac, head_mac) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, mac = excluded.mac, head_mac = excluded.head_mac');
    this.#rows$ = db.prepare('SELECT seq, v, time, tenant, instance, kind, detail, mac FROM audit ORDER BY seq');
    this.#count$ = db.prepare('SELECT count(*) AS n FROM audit');
    this.#appendTx = db.transaction((fields: Omit<AuditRecord, 'v' | 'seq' | 'time'>) => this.#appendLocked(fields)).immediate;
  }

  /** Open the log in its own connection to `file` (default the engine database). */
  static open(file: string = engineDatabaseFile(), options: AuditLogOptions = {}): AuditLog {
    const db = openDatabase(file);
    try {
      return new AuditLog(db, options, true);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Close the connection if `open()` made it. */
  close(): void {
    if (this.#ownsDb && this.#db.open) this.#db.close();
  }

  /** Append one record atomically; returns it. */
  append(event: AuditEvent): AuditRecord {
    if (typeof event.kind !== 'string' || !KIND.test(event.kind)) {
      throw new SandboxError('POLICY_INVALID', 'an audit kind is 1..64 characters of a-z 0-9 _ . : - starting with a letter');
    }
    if (typeof event.tenant !== 'string' || (event.instance !== undefined && typeof event.instance !== 'string')) {
      throw new SandboxError('POLICY_INVALID', 'an audit tenant and instance are strings');
    }
    // Everything that may refuse or take time happens before the write lock is taken.
    return this.#appendTx({
      tenant: truncateUtf8(event.tenant, MAX_PRINCIPAL_BYTES),
      instance: truncateUtf8(event.instance ?? '', MAX_PRINCIPAL_BYTES),
      kind: event.kind,
      detail: auditDetail(event.detail ?? {}),
    });
  }

  #appendLocked(fields: Omit<AuditRecord, 'v' | 'seq' | 'time'>): AuditRecord {
    const head = this.#head$.get();
    let prevSeq = 0;
    let prevMac: Buffer = ZERO_MAC;
    if (head) {
      if (!this.#headValid(head)) throw new SandboxError('INTERNAL', 'the audit log head does not verify (tampered, or another audit key); run `membrane audit verify`');
      prevSeq = head.seq;
      prevMac = head.mac;
    } else if (this.#count$.get()!.n !== 0) {
      throw new SandboxError('INTERNAL', 'the audit log has records but no head (tampered); run `membrane audit verify`');
    }
    const record: AuditRecord = { v: AUDIT_VERSION, seq: prevSeq + 1, time: new Date().toISOString(), ...fields };
    const mac = this.#mac(prevMac, record);
    try {
      this.#insert$.run(record.seq, record.v, record.time, record.tenant, record.instance, record.kind, canonicalJson(record.detail), mac);
    } catch (err) {
      throw new SandboxError('INTERNAL', 'could not append to the audit log (a record past its head?); run `membrane audit verify`', {}, err);
    }
    this.#setHead$.run(record.seq, mac, this.#headMac(record.seq, mac));
    return record;
  }

  /** Number of records stored (verified or not). */
  count(): number {
    return this.#count$.get()!.n;
  }

  /** Records matching the query, oldest first (see `AuditTailQuery`). Does not verify. */
  tail(query: AuditTailQuery = {}): AuditRecord[] {
    const limit = Math.max(0, Math.min(MAX_AUDIT_TAIL, Math.trunc(query.limit ?? 100)));
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.tenant !== undefined) (where.push('tenant = ?'), params.push(query.tenant));
    if (query.kind !== undefined) (where.push('kind = ?'), params.push(query.kind));
    if (query.afterSeq !== undefined) (where.push('seq > ?'), params.push(Math.trunc(query.afterSeq)));
    const order = query.afterSeq !== undefined ? 'ASC' : 'DESC';
    const sql = `SELECT seq, v, time, tenant, instance, kind, detail, mac FROM audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq ${order} LIMIT ?`;
    const rows = this.#db.prepare<Row>(sql).all(...params, limit);
    if (order === 'DESC') rows.reverse();
    return rows.map((r) => decodeRow(r) ?? { v: 1, seq: r.seq, time: String(r.time), tenant: String(r.tenant), instance: String(r.instance), kind: String(r.kind), detail: { '…undecodable': String(r.detail) } });
  }

  /** Walk the chain; the first seq it cannot vouch for, and why. */
  verify(): AuditVerification {
    return this.#db.transaction(() => this.#verifySnapshot())();
  }

  #verifySnapshot(): AuditVerification {
    const head = this.#head$.get();
    const headSeq = head !== undefined && this.#headValid(head) ? head.seq : undefined;
    let expected = 1;
    let prev: Buffer = ZERO_MAC;
    let found: AuditVerification | undefined;
    let bad: Row | undefined;
    // Nothing else may run on the connection while the iterator is open: note, break, then act.
    for (const row of this.#rows$.iterate()) {
      if (row.seq !== expected) {
        found = row.seq > expected
          ? fail(expected, 'deleted', `seq ${expected} is missing`)
          : fail(row.seq, 'inserted', `a record with seq ${row.seq} is out of sequence`);
        break;
      }
      const record = decodeRow(row);
      const good = record !== undefined && sameMac(row.mac, this.#mac(prev, record));
      if (headSeq !== undefined && row.seq > headSeq) {
        found = good
          ? fail(row.seq, 'bad-head', `the head (seq ${headSeq}) was rolled back behind the log`)
          : fail(row.seq, 'inserted', 'a record past the head whose MAC does not verify');
        break;
      }
      if (!good) {
        bad = row;
        break;
      }
      prev = row.mac;
      expected++;
    }
    if (found) return found;
    if (bad) return this.#classify(bad, prev, headSeq, this.#count$.get()!.n);
    const last = expected - 1;
    if (!head) return last === 0 ? { ok: true, records: 0 } : fail(last + 1, 'bad-head', 'the head is missing');
    if (headSeq === undefined) return fail(last + 1, 'bad-head', 'the head\'s MAC does not verify (forged, or another audit key)');
    if (headSeq > last) return fail(last + 1, 'truncated', `records ${last + 1}..${headSeq} are missing from the end`);
    if (!sameMac(head.mac, prev)) return fail(last + 1, 'bad-head', 'the head does not match the last record');
    return { ok: true, records: last };
  }

  /**
   * Why record `bad` (whose MAC fails after the verified `prev`) is bad: if the record that
   * belongs at its seq sits elsewhere, records were moved (reordered; inserted if there are more
   * rows than the head counts); else it was edited (or deleted/inserted with renumbering).
   */
  #classify(bad: Row, prev: Buffer, headSeq: number | undefined, total: number): AuditVerification {
    const seq = bad.seq;
    for (const other of this.#rows$.iterate()) {
      if (other.seq === seq) continue;
      const moved = decodeRow(other);
      if (!moved) continue;
      const mac = this.#mac(prev, { ...moved, seq });
      if (sameMac(other.mac, mac) || sameMac(bad.mac, mac)) {
        return headSeq !== undefined && total > headSeq
          ? fail(seq, 'inserted', `a record was inserted before the original seq ${seq} (now at seq ${other.seq})`)
          : fail(seq, 'reordered', `the record for seq ${seq} was moved to seq ${other.seq}`);
      }
    }
    if (headSeq !== undefined && total < headSeq) return fail(seq, 'deleted', `a record was deleted and later ones renumbered from seq ${seq}`);
    if (headSeq !== undefined && total > headSeq) return fail(seq, 'inserted', `a record was inserted at seq ${seq} and later ones renumbered`);
    const hint = headSeq === undefined ? ' (or the log was written under another audit key)' : '';
    return fail(seq, 'edited', `the record's MAC does not match its contents${hint}`);
  }

  #mac(prevMac: Buffer, record: AuditRecord): Buffer {
    return createHmac('sha256', this.#key).update(prevMac).update(canonicalRecord(record)).digest();
  }

  #headMac(seq: number, mac: Buffer): Buffer {
    return createHmac('sha256', this.#headKey).update(`${seq}\n`).update(mac).digest();
  }

  #headValid(head: Head): boolean {
    return Number.isSafeInteger(head.seq) && head.seq >= 0 && Buffer.isBuffer(head.mac) && head.mac.length === 32 && sameMac(head.head_mac, this.#headMac(head.seq, head.mac));
  }
}

function fail(seq: number, problem: AuditProblem, reason: string): AuditVerification {
  return { ok: false, seq, problem, reason: `${problem}: ${reason}` };
}

/** A stored row as a record, or undefined if it is not one (wrong types, non-canonical detail). */
function decodeRow(r: Row): AuditRecord | undefined {
  if (r.v !== AUDIT_VERSION || typeof r.time !== 'string' || typeof r.tenant !== 'string' || typeof r.instance !== 'string' || typeof r.kind !== 'string' || typeof r.detail !== 'string') return undefined;
  let detail: unknown;
  try {
    detail = JSON.parse(r.detail);
  } catch {
    return undefined;
  }
  if (detail === null || typeof detail !== 'object' || Array.isArray(detail)) return undefined;
  if (canonicalJson(detail as AuditDetail) !== r.detail) return undefined;
  return { v: AUDIT_VERSION, seq: r.seq, time: r.time, tenant: r.tenant, instance: r.instance, kind: r.kind, detail: detail as AuditDetail };
}
