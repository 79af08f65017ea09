/**
 * The engine's default audit sink: the tamper-evident log in the engine database
 * (storage/audit.ts), opened on the first record — a run that records nothing never opens it.
 *
 * Invariant: one AuditLog per engine, over the brokers' own connection; a receipt's anchor is
 * the seq and MAC of the record it appended itself.
 * Does not protect against: anything the log itself does not (see storage/audit.ts).
 */

import { AuditLog } from '../storage/audit.ts';
import type { Database } from '../storage/sqlite.ts';
import type { BuiltinSink } from '../brokers/index.ts';

export function auditInDatabase(db: () => Database): BuiltinSink {
  let log: AuditLog | null = null;
  const open = (): AuditLog => (log ??= new AuditLog(db()));
  return {
    append: (event) => void open().append(event),
    // A receipt's anchor: its record's seq and chain MAC, and the audit key's public id.
    anchor: (event) => {
      const l = open();
      const sealed = l.appendSealed(event);
      return { seq: sealed.record.seq, mac: sealed.mac, keyId: l.keyId() };
    },
  };
}
