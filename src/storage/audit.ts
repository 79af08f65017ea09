/**
 * The tamper-evident audit log: an append-only keyed hash chain in the engine database.
 *
 * Owns: the `audit`, `audit_head` and `audit_format` tables of `$MEMBRANE_HOME/engine.sqlite`,
 * starting a log (its genesis record), appending, tail queries, verification and checkpoints
 * (audit-checkpoint.ts). A record is `{ v: 1, seq, time, tenant, instance, kind, detail }`
 * (`time` ISO-8601 UTC with milliseconds; `instance` '' for engine-level events); its MAC is
 * `HMAC-SHA256(key, prevMac ‖ canonical(record))` with `canonical` the UTF-8 bytes of
 * `canonicalJson` (audit-encoding.ts) and `prevMac` 32 zero bytes for seq 1. The head row holds
 * the last `{seq, mac}` under its own MAC (a key derived from the audit key), so removing the
 * newest records is detected too.
 *
 * Genesis: a log is started in the same transaction that creates its tables, with record 1 of
 * kind `genesis` (tenant '', detail `{ keyId }`, MAC'd like any record). So a log that exists is
 * never empty: no records and no head — every row deleted — is `wiped`; missing tables are
 * `wiped` to `openExisting()` (verify and checkpoint never create a log). Logs written by a
 * version before genesis records (tables without `audit_format`) are adopted on open: with
 * records, they keep their first record at seq 1 and verify with `legacy: true`; without any,
 * a genesis is written then. From then on they are protected like any other.
 *
 * Invariant: seqs are 1, 2, 3, … with no gaps and no repeats, however many connections and
 * processes append at once (each append is one IMMEDIATE transaction: read the head, insert,
 * move the head). `verify()` reports the FIRST seq that the chain cannot vouch for: an edited,
 * deleted, inserted or reordered record, a truncated or wiped log, or a missing, forged or
 * rolled-back head. An append never repairs a head that does not verify, nor restarts a wiped
 * log: it refuses, loudly.
 *
 * Does not protect against: anyone holding the audit key (they can rewrite the whole chain);
 * restoring an older copy of the whole log with its head, or dropping the tables (or the
 * database) and letting Membrane start a new log — `verify --checkpoint` against a checkpoint kept
 * elsewhere catches both; a caller putting a secret in `detail` (callers pass only non-secret
 * facts: see audit-encoding.ts).
 */

import { createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { auditDetail, canonicalJson, truncateUtf8, MAX_PRINCIPAL_BYTES, type AuditDetail, type AuditJson } from './audit-encoding.ts';
import { loadAuditKey, AUDIT_KEY_BYTES } from './audit-key.ts';
import { checkpointKey, signCheckpoint, checkCheckpoint, type AuditCheckpoint } from './audit-checkpoint.ts';
import { openDatabase, storageDir, type Database, type Statement } from './sqlite.ts';
import { AUDIT_VERSION, GENESIS_KIND, SCHEMA, decodeRow, fail, missingLog, tableState, type AuditProblem, type AuditRecord, type AuditVerification, type Head, type Row } from './audit-schema.ts';

export { AUDIT_VERSION, GENESIS_KIND, type AuditProblem, type AuditRecord, type AuditVerification } from './audit-schema.ts';

export { canonicalJson, auditDetail, MAX_DETAIL_BYTES, MAX_DETAIL_STRING_BYTES, type AuditDetail, type AuditJson } from './audit-encoding.ts';
export { loadAuditKey, parseAuditKey, auditKeyFile, AUDIT_KEY_ENV } from './audit-key.ts';
export { parseCheckpoint, CHECKPOINT_VERSION, CHECKPOINT_ALGS, MAX_CHECKPOINT_BYTES, type AuditCheckpoint } from './audit-checkpoint.ts';

/** `tail()` returns at most this many records. */
export const MAX_AUDIT_TAIL = 10_000;
/** Kinds are short machine words: `net.denied`, `kv.quota`, `engine.start`. */
const KIND = /^[a-z][a-z0-9_.:-]{0,63}$/;
const ZERO_MAC: Buffer = Buffer.alloc(32);
export interface AuditEvent {
  readonly tenant: string;
  /** '' (the default) for engine-level events. */
  readonly instance?: string;
  readonly kind: string;
  /** Non-secret facts only (see audit-encoding.ts). */
  readonly detail?: { readonly [key: string]: unknown };
}

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
  readonly #at$: Statement<{ seq: number; mac: Buffer }>;
  readonly #appendTx: (fields: Omit<AuditRecord, 'v' | 'seq' | 'time'>) => AuditRecord;
  readonly #legacyEmpty: boolean;
  #lastMac: Buffer = ZERO_MAC;

  /**
   * Over an open connection (closed by `close()` only if `ownsDb`). Starts a log — the tables and
   * its genesis record, in one transaction — if the database has none; adopts a log of an older
   * version (see the module header). Partly dropped tables are refused (INTERNAL: tampering).
   */
  constructor(db: Database, options: AuditLogOptions = {}, ownsDb = false, create = true) {
    const key = options.key ?? loadAuditKey();
    if (key.length !== AUDIT_KEY_BYTES) throw new SandboxError('POLICY_INVALID', `the audit key must be ${AUDIT_KEY_BYTES} bytes`);
    this.#db = db;
    this.#ownsDb = ownsDb;
    this.#key = Buffer.from(key);
    this.#headKey = createHmac('sha256', this.#key).update('membrane audit head v1').digest();
    let legacyEmpty = false;
    if (create && tableState(db) !== 'current') {
      db.transaction(() => {
        const state = tableState(db);
        if (state === 'current') return;
        if (state === 'partial') throw new SandboxError('INTERNAL', 'some of the audit tables are missing (dropped?); run `membrane audit verify`');
        const empty = state === 'none' || (db.prepare<{ n: number }>('SELECT (SELECT count(*) FROM audit) + (SELECT count(*) FROM audit_head) AS n').get()!.n === 0);
        db.exec(SCHEMA);
        db.prepare('INSERT INTO audit_format (id, genesis) VALUES (1, ?)').run(empty ? 1 : 0);
        if (empty) this.#writeGenesis(db);
      }).immediate();
    } else if (!create) {
      const state = tableState(db);
      if (state !== 'current' && state !== 'legacy') throw new SandboxError('INTERNAL', 'no audit log in this database');
      legacyEmpty = state === 'legacy';
    }
    this.#legacyEmpty = legacyEmpty;
    this.#head$ = db.prepare('SELECT seq, mac, head_mac FROM audit_head WHERE id = 1');
    this.#insert$ = db.prepare('INSERT INTO audit (seq, v, time, tenant, instance, kind, detail, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    this.#setHead$ = db.prepare('INSERT INTO audit_head (id, seq, mac, head_mac) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, mac = excluded.mac, head_mac = excluded.head_mac');
    this.#rows$ = db.prepare('SELECT seq, v, time, tenant, instance, kind, detail, mac FROM audit ORDER BY seq');
    this.#count$ = db.prepare('SELECT count(*) AS n FROM audit');
    this.#at$ = db.prepare('SELECT seq, mac FROM audit WHERE seq = ?');
    this.#appendTx = db.transaction((fields: Omit<AuditRecord, 'v' | 'seq' | 'time'>) => this.#appendLocked(fields)).immediate;
  }

  /** Open the log in its own connection to `file` (default the engine database), starting one if none. */
  static open(file: string = engineDatabaseFile(), options: AuditLogOptions = {}): AuditLog {
    const db = openDatabase(file);
    try {
      return new AuditLog(db, options, true);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /**
   * Open an existing log read-only (verify, checkpoint, tail): never starts one. When `file` has
   * no audit tables (or only some), the verification that says so (`wiped`) instead.
   */
  static openExisting(file: string = engineDatabaseFile(), options: AuditLogOptions = {}): AuditLog | AuditVerification {
    if (!existsSync(file)) return missingLog('none');
    const db = openDatabase(file, { readonly: true });
    try {
      const state = tableState(db);
      if (state === 'none' || state === 'partial') {
        db.close();
        return missingLog(state);
      }
      return new AuditLog(db, options, true, false);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Close the connection if `open()` made it. */
  close(): void {
    if (this.#ownsDb && this.#db.open) this.#db.close();
  }

  /** `append`, also returning the record's MAC (hex): the log's head right after it (a receipt's anchor). */
  appendSealed(event: AuditEvent): { record: AuditRecord; mac: string } {
    const record = this.append(event);
    return { record, mac: this.#lastMac.toString('hex') };
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
    } else {
      throw new SandboxError('INTERNAL', 'the audit log is empty — its genesis record is gone (wiped); run `membrane audit verify`');
    }
    const record: AuditRecord = { v: AUDIT_VERSION, seq: prevSeq + 1, time: new Date().toISOString(), ...fields };
    const mac = this.#mac(prevMac, record);
    try {
      this.#insert$.run(record.seq, record.v, record.time, record.tenant, record.instance, record.kind, canonicalJson(record.detail), mac);
    } catch (err) {
      throw new SandboxError('INTERNAL', 'could not append to the audit log (a record past its head?); run `membrane audit verify`', {}, err);
    }
    this.#setHead$.run(record.seq, mac, this.#headMac(record.seq, mac));
    this.#lastMac = mac;
    return record;
  }

  /** Record 1 of a new log, inside the transaction that created its tables. */
  #writeGenesis(db: Database): void {
    const record: AuditRecord = { v: AUDIT_VERSION, seq: 1, time: new Date().toISOString(), tenant: '', instance: '', kind: GENESIS_KIND, detail: { keyId: this.keyId() } };
    const mac = this.#mac(ZERO_MAC, record);
    db.prepare('INSERT INTO audit (seq, v, time, tenant, instance, kind, detail, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(1, record.v, record.time, record.tenant, record.instance, record.kind, canonicalJson(record.detail), mac);
    db.prepare('INSERT INTO audit_head (id, seq, mac, head_mac) VALUES (1, 1, ?, ?)').run(mac, this.#headMac(1, mac));
  }

  /** A public name of the audit key (16 hex digits of an HMAC under it): tells logs and checkpoints of different keys apart. */
  keyId(): string {
    return createHmac('sha256', this.#key).update('membrane audit key id v1').digest('hex').slice(0, 16);
  }

  /**
   * A signed checkpoint of the log's head as it verifies now, to keep somewhere the engine
   * database is not: `verifyCheckpoint` later fails if the log no longer reaches it. Refused
   * (INTERNAL, naming the problem) when the log does not verify.
   */
  checkpoint(): AuditCheckpoint {
    return this.#db.transaction(() => {
      const r = this.#verifySnapshot();
      if (!r.ok) throw new SandboxError('INTERNAL', `the audit log does not verify (seq ${r.seq}: ${r.reason}); no checkpoint signed`);
      const head = this.#head$.get();
      if (!head) throw new SandboxError('INTERNAL', 'the audit log is empty (an older version\'s, never written): nothing to checkpoint');
      return signCheckpoint(checkpointKey(this.#key), { seq: head.seq, mac: head.mac.toString('hex'), time: new Date().toISOString(), keyId: this.keyId() });
    })();
  }

  /**
   * `verify()`, then: the checkpoint's signature holds under this log's key, and the log still
   * holds record `seq` with the checkpointed MAC. `checkpoint` is untrusted input (a parsed file).
   */
  verifyCheckpoint(checkpoint: unknown): AuditVerification {
    return this.#db.transaction(() => {
      const bad = checkCheckpoint(checkpointKey(this.#key), this.keyId(), checkpoint);
      if (typeof bad === 'string') return fail(0, 'checkpoint', bad);
      const r = this.#verifySnapshot();
      if (!r.ok) return r;
      const row = this.#at$.get(bad.seq);
      if (!row) return fail(bad.seq, 'truncated', `the log ends at seq ${r.records}, before the checkpoint's seq ${bad.seq} (its tail was cut and the head rolled back)`);
      if (!sameMac(row.mac, Buffer.from(bad.mac, 'hex'))) return fail(bad.seq, 'checkpoint', `record ${bad.seq} is not the one checkpointed (the log was rewritten or restored from an older copy)`);
      return r;
    })();
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
    let firstKind = '';
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
      if (row.seq === 1) firstKind = row.kind;
      prev = row.mac;
      expected++;
    }
    if (found) return found;
    if (bad) return this.#classify(bad, prev, headSeq, this.#count$.get()!.n);
    const last = expected - 1;
    if (!head && last === 0) {
      return this.#legacyEmpty ? { ok: true, records: 0, legacy: true } : fail(1, 'wiped', 'the log is empty: its genesis record and every record after it were deleted, with the head');
    }
    if (!head) return fail(last + 1, 'bad-head', 'the head is missing');
    if (headSeq === undefined) return fail(last + 1, 'bad-head', 'the head\'s MAC does not verify (forged, or another audit key)');
    if (headSeq > last) return fail(last + 1, 'truncated', `records ${last + 1}..${headSeq} are missing from the end`);
    if (!sameMac(head.mac, prev)) return fail(last + 1, 'bad-head', 'the head does not match the last record');
    return firstKind === GENESIS_KIND ? { ok: true, records: last } : { ok: true, records: last, legacy: true };
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

/** Start the audit log in `db` if it has none (its tables and genesis record); adopt an older version's. */
export function startAuditLog(db: Database, options: AuditLogOptions = {}): void {
  new AuditLog(db, options);
}

