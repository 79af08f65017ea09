/**
 * `membrane audit verify|checkpoint|tail`: check the audit chain in
 * `$MEMBRANE_HOME/engine.sqlite` (optionally against a kept checkpoint), sign a checkpoint of its
 * head, or print its newest records. None of them writes to the database or starts a log.
 *
 * Exit codes: `verify` exits 0 when the chain holds and `TAMPERED_EXIT` (1) when it does not — a
 * wiped or missing log, or one that no longer reaches `--checkpoint FILE`, included; likewise
 * `checkpoint` refuses (1) to sign a log that does not verify. Not error-table codes: nothing
 * failed, the log did. A bad key, checkpoint file or options use the error table (a malformed
 * `MEMBRANE_AUDIT_KEY`, a group-readable key file, a file that is not a checkpoint:
 * POLICY_INVALID, 64).
 *
 * Invariant: output never contains the audit key, and a record's text is printed with control,
 * C1 and bidi-override characters escaped, so a guest-influenced detail cannot drive the
 * operator's terminal.
 */

import { closeSync, constants, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { SandboxError } from '../../errors.ts';
import { AuditLog, MAX_AUDIT_TAIL, engineDatabaseFile, MAX_CHECKPOINT_BYTES, parseCheckpoint, type AuditRecord, type AuditVerification } from '../../storage/audit.ts';
import { UsageError, parse, printJson, str } from './args.ts';
import { checkSignedCheckpoint, isSignedCheckpoint, signCheckpointEd25519 } from '../../provenance/checkpoint.ts';
import { engineIdentity } from '../../provenance/identity.ts';
import { count } from './units.ts';

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

/** A checkpoint file's text, at most MAX_CHECKPOINT_BYTES (a bigger file is not a checkpoint). */
function readCheckpointFile(file: string): unknown {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO named as the checkpoint is refused below, never waited on for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new SandboxError('POLICY_INVALID', `cannot read the checkpoint file ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    if (!fstatSync(fd).isFile()) throw new SandboxError('POLICY_INVALID', `the checkpoint file ${file} is not a regular file`);
    const buf = Buffer.alloc(MAX_CHECKPOINT_BYTES + 1);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return parseCheckpoint(buf.subarray(0, n).toString('utf8'));
  } finally {
    closeSync(fd);
  }
}

function report(r: AuditVerification, json: boolean): number {
  if (json) printJson(r);
  else if (r.ok) process.stdout.write(`ok: ${r.records} records${r.legacy ? ' (a log started before genesis records: no genesis record)' : ''}\n`);
  else if (r.problem === 'checkpoint' && r.seq === 0) process.stdout.write(`checkpoint rejected: ${r.reason}\n`);
  else process.stdout.write(`tampered at seq ${r.seq}: ${r.reason}\n`);
  return r.ok ? 0 : TAMPERED_EXIT;
}

async function verify(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' }, checkpoint: { type: 'string' }, offline: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError('audit verify takes no arguments (a checkpoint: --checkpoint FILE)');
  const file = str(values['checkpoint']);
  const offline = values['offline'] === true;
  if (offline && file === undefined) throw new UsageError('--offline checks a signed checkpoint: give --checkpoint FILE');
  let checkpoint = file !== undefined ? readCheckpointFile(file) : undefined;
  const json = values['json'] === true;
  // A checkpoint signed with the engine's Ed25519 key (audit checkpoint --signed): that signature
  // first (it needs no audit key), then — unless --offline — its HMAC checkpoint against the log.
  if (checkpoint !== undefined && (offline || isSignedCheckpoint(checkpoint))) {
    const signed = checkSignedCheckpoint(checkpoint);
    if (typeof signed === 'string') return report({ ok: false, seq: 0, problem: 'checkpoint', reason: signed }, json);
    if (offline) {
      if (json) printJson({ ok: true, signer: signed.signer, checkpoint: signed.checkpoint });
      else process.stdout.write(`ok: checkpoint of seq ${safeJson(signed.checkpoint['seq'])} signed by ${signed.signer}\n`);
      return 0;
    }
    checkpoint = signed.checkpoint;
  }
  const log = AuditLog.openExisting();
  if (!(log instanceof AuditLog)) return report(log, json);
  try {
    return report(file !== undefined ? log.verifyCheckpoint(checkpoint) : log.verify(), json);
  } finally {
    log.close();
  }
}

async function checkpoint(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { json: { type: 'boolean' }, signed: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError('audit checkpoint takes no arguments');
  const json = values['json'] === true;
  const log = AuditLog.openExisting();
  if (!(log instanceof AuditLog)) return report(log, json);
  try {
    const r = log.verify();
    if (!r.ok) {
      process.stderr.write('no checkpoint signed: the log does not verify\n');
      return report(r, json);
    }
    // The checkpoint is its JSON, with or without --json: save it as it is.
    const cp = log.checkpoint();
    process.stdout.write(`${JSON.stringify(values['signed'] === true ? signCheckpointEd25519(cp, engineIdentity()) : cp)}\n`);
    return 0;
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
  const limit = values['limit'] === undefined ? 20 : count('limit', values['limit'], { min: 1, max: MAX_AUDIT_TAIL });
  const tenant = str(values['tenant']);
  const kind = str(values['kind']);
  // Nothing has run in this home yet: no records to show (verify, not tail, judges a missing log).
  if (!existsSync(engineDatabaseFile())) {
    process.stderr.write('no audit log yet: nothing has run with this $MEMBRANE_HOME\n');
    return 0;
  }
  const log = AuditLog.openExisting();
  if (!(log instanceof AuditLog)) {
    process.stderr.write(`no audit log: ${log.ok ? '' : log.reason}\n`);
    return TAMPERED_EXIT;
  }
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
  if (sub === 'checkpoint') return checkpoint(rest);
  if (sub === 'tail') return tail(rest);
  throw new UsageError(sub === undefined ? 'audit needs a subcommand: verify, checkpoint or tail' : `unknown audit subcommand "${sub}" (verify, checkpoint or tail)`);
}
