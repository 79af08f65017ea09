/**
 * `membrane audit verify|tail`: check the audit chain in `$MEMBRANE_HOME/engine.sqlite`, or print
 * its newest records.
 *
 * Exit codes: `verify` exits 0 when the chain holds and `TAMPERED_EXIT` (1) when it does not —
 * not an error-table code: nothing failed, the log did. A bad key or options use the error table
 * (a malformed `MEMBRANE_AUDIT_KEY` or a group-readable key file: POLICY_INVALID, 64).
 *
 * Invariant: output never contains the audit key, and a record's text is printed with control,
 * C1 and bidi-override characters escaped, so a guest-influenced detail cannot drive the
 * operator's terminal.
 */

import { AuditLog, MAX_AUDIT_TAIL, type AuditRecord } from '../../storage/audit.ts';
import { UsageError, num, parse, printJson, str } from './args.ts';

/** `membrane audit verify` found the log tampered with. */
export const TAMPERED_EXIT = 1;

/** JSON text with every terminal-affecting character (C0, DEL, C1, bidi controls) as `\uXXXX`. */
export function safeJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function plain(s: string): string {
  const j = safeJson(s);
  return /^"[^\s"\\]+"$/.test(j) && j !== '""' ? j.slice(1, -1) : j;
}

function line(r: AuditRecord): string {
  const who = r.instance === '' ? plain(r.tenant) : `${plain(r.tenant)}/${plain(r.instance)}`;
  return `${r.seq} ${r.time} ${who} ${plain(r.kind)} ${safeJson(r.detail)}`;
}

async function verify(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError('audit verify takes no arguments');
  const log = AuditLog.open();
  try {
    const r = log.verify();
    if (values['json'] === true) printJson(r);
    else process.stdout.write(r.ok ? `ok: ${r.records} records\n` : `tampered at seq ${r.seq}: ${r.reason}\n`);
    return r.ok ? 0 : TAMPERED_EXIT;
  } finally {
    log.close();
  }
}

async function tail(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    json: { type: 'boolean' },
    tenant: { type: 'string' },
    kind: { type: 'string' },
    limit: { type: 'string' },
  });
  if (positionals.length > 0) throw new UsageError('audit tail takes no arguments');
  const limit = num('limit', values['limit']) ?? 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_TAIL) throw new UsageError(`--limit expects an integer 1..${MAX_AUDIT_TAIL}`);
  const tenant = str(values['tenant']);
  const kind = str(values['kind']);
  const log = AuditLog.open();
  try {
    const records = log.tail({ limit, ...(tenant !== undefined ? { tenant } : {}), ...(kind !== undefined ? { kind } : {}) });
    const json = values['json'] === true;
    process.stdout.write(records.map((r) => `${json ? safeJson(r) : line(r)}\n`).join(''));
    return 0;
  } finally {
    log.close();
  }
}

export async function auditCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === 'verify') return verify(rest);
  if (sub === 'tail') return tail(rest);
  throw new UsageError(sub === undefined ? 'audit needs a subcommand: verify or tail' : `unknown audit subcommand "${sub}" (verify or tail)`);
}
