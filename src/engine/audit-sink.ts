/**
 * The engine's default audit sink: the tamper-evident log (storage/audit.ts) in the engine
 * database, opened on the first record (an engine that never audits never opens it).
 * Invariant: one AuditLog per engine; records are appended in call order.
 * Does not protect against: an operator who deletes the database (audit verify reports it).
 */

import { AuditLog } from '../storage/audit.ts';
import type { Database } from '../storage/sqlite.ts';

/** The default audit sink: the tamper-evident log in the engine database, opened on first record. */
export function auditInDatabase(db: () => Database): { append: AuditLog['append'] } {
  let log: AuditLog | null = null;
  return { append: (event) => (log ??= new AuditLog(db())).append(event) };
}
