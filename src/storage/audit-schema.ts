/**
 * The audit log's stored form: the record and verification types, the tables (`SCHEMA`) and
 * which of them a database holds, and decoding a stored row back into a record.
 *
 * Owns: the schema of `audit`, `audit_head` and `audit_format` (the marker of a log that starts
 * with a genesis record) and the rule that a row decodes only if it is exactly what was MAC'd
 * (canonical detail, right types). Invariant: nothing here writes; audit.ts owns every write.
 *
 * Does not protect against: anything by itself — the chain's checks are in audit.ts.
 */

import { canonicalJson, type AuditDetail } from './audit-encoding.ts';
import type { Database } from './sqlite.ts';

export const AUDIT_VERSION = 1;

/** Kind of record 1 of every log started by this version. */
export const GENESIS_KIND = 'genesis';
export const TABLES = ['audit', 'audit_head'] as const;
/** Present in every log started (or adopted) by a version that writes genesis records. */
export const FORMAT_TABLE = 'audit_format';

export interface AuditRecord {
  readonly v: 1;
  readonly seq: number;
  readonly time: string;
  readonly tenant: string;
  readonly instance: string;
  readonly kind: string;
  readonly detail: AuditDetail;
}

export type AuditProblem = 'edited' | 'deleted' | 'inserted' | 'reordered' | 'truncated' | 'bad-head' | 'wiped' | 'checkpoint';

export type AuditVerification =
  /** `legacy`: the log was started before genesis records (its record 1 is an ordinary one). */
  | { readonly ok: true; readonly records: number; readonly legacy?: true }
  | { readonly ok: false; readonly seq: number; readonly problem: AuditProblem; readonly reason: string };

/** Which audit tables a database holds. */
export type TableState = 'none' | 'partial' | 'legacy' | 'current';

export function tableState(db: Database): TableState {
  const names = new Set(db.prepare<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('audit', 'audit_head', 'audit_format')").all().map((r) => r.name));
  const have = TABLES.filter((t) => names.has(t)).length;
  if (have === 0) return names.has(FORMAT_TABLE) ? 'partial' : 'none';
  if (have < TABLES.length) return 'partial';
  return names.has(FORMAT_TABLE) ? 'current' : 'legacy';
}

export const SCHEMA = `CREATE TABLE IF NOT EXISTS audit (
      seq INTEGER PRIMARY KEY, v INTEGER NOT NULL, time TEXT NOT NULL, tenant TEXT NOT NULL,
      instance TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL, mac BLOB NOT NULL) STRICT;
    CREATE TABLE IF NOT EXISTS audit_head (
      id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, mac BLOB NOT NULL, head_mac BLOB NOT NULL) STRICT;
    CREATE TABLE IF NOT EXISTS audit_format (id INTEGER PRIMARY KEY CHECK (id = 1), genesis INTEGER NOT NULL) STRICT;
    CREATE INDEX IF NOT EXISTS audit_tenant ON audit (tenant, seq);
    CREATE INDEX IF NOT EXISTS audit_kind ON audit (kind, seq);`;

/** Why `openExisting` found no log to open. */
export function missingLog(state: TableState): AuditVerification {
  return fail(1, 'wiped', state === 'partial'
    ? 'some of the audit tables are missing (dropped)'
    : 'the database has no audit tables: the log was dropped, or none was ever started in this database');
}

export interface Row {
  seq: number;
  v: number;
  time: string;
  tenant: string;
  instance: string;
  kind: string;
  detail: string;
  mac: Buffer;
}

export interface Head {
  seq: number;
  mac: Buffer;
  head_mac: Buffer;
}

export function fail(seq: number, problem: AuditProblem, reason: string): AuditVerification {
  return { ok: false, seq, problem, reason: `${problem}: ${reason}` };
}

/** A stored row as a record, or undefined if it is not one (wrong types, non-canonical detail). */
export function decodeRow(r: Row): AuditRecord | undefined {
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
