/**
 * The engine's default audit sink: the tamper-evident log in the engine database
 * (storage/audit.ts), opened on the first record — a run that records nothing never opens it.
 *
 * Invariant: one AuditLog per engine, over the brokers' own connection.
 * Does not protect against: anything the log itself does not (see storage/audit.ts).
 */

import { AuditLog } from '../storage/audit.ts';
import type { Database } from '../storage/sqlite.ts';

export function auditInDatabase(db: () => Database): { append: AuditLog['append'] } {
  let log: AuditLog | null = null;
  return { append: (event) => (log ??= new AuditLog(db())).append(event) };
}
