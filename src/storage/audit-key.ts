/**
 * The engine's audit key: the 32-byte HMAC key that chains the audit log.
 *
 * Owns: where the key comes from — `MEMBRANE_AUDIT_KEY` (64 hex digits, or the base64 of exactly
 * 32 bytes) if set, else `$MEMBRANE_HOME/audit.key` (64 hex digits and a newline), created on
 * first use from 32 random bytes, mode 0600 in the 0700 home.
 *
 * Invariant: the key's bytes never appear in an error message, a log line or a return value
 * other than `loadAuditKey()`'s own. A key file that is not a regular file owned by this user
 * with no group/other permission bits is refused, never silently repaired: someone else may
 * already have read it. Two processes creating the key at once agree on one key (the file is
 * written aside and linked into place; the loser reads the winner's).
 *
 * Does not protect against: another process of the same OS user (or root) reading the file;
 * the key staying in this process's memory; an operator exporting it in a shell history.
 */

import { join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { storageDir } from './sqlite.ts';
import { homeRelative } from './home-files.ts';
import { createKeyFileOnce, readKeyFileText } from './key-file.ts';

export const AUDIT_KEY_BYTES = 32;
export const AUDIT_KEY_ENV = 'MEMBRANE_AUDIT_KEY';
export const AUDIT_KEY_FILE = 'audit.key';

const HEX = /^[0-9a-fA-F]{64}$/;
const BASE64 = /^[A-Za-z0-9+/]{43}=?$/;

/** Parse an operator-supplied key (hex or base64). The message never echoes the value. */
export function parseAuditKey(text: string, source: string): Buffer {
  const t = text.trim();
  if (HEX.test(t)) return Buffer.from(t, 'hex');
  if (BASE64.test(t)) {
    const key = Buffer.from(t, 'base64');
    if (key.length === AUDIT_KEY_BYTES && key.toString('base64').replace(/=+$/, '') === t.replace(/=+$/, '')) return key;
  }
  throw new SandboxError('POLICY_INVALID', `${source} must be 64 hex digits or the base64 of ${AUDIT_KEY_BYTES} bytes`);
}

/** Path of the key file under `$MEMBRANE_HOME`. */
export function auditKeyFile(): string {
  return join(storageDir(), AUDIT_KEY_FILE);
}

function readKeyFile(path: string): Buffer | undefined {
  // Messages name the file as the operator knows it ($MEMBRANE_HOME/audit.key), never the host path.
  const label = `the audit key file $MEMBRANE_HOME/${homeRelative(path)}`;
  const text = readKeyFileText(path, label);
  return text === undefined ? undefined : parseAuditKey(text, label);
}

function createKeyFile(file: string): void {
  createKeyFileOnce(file, AUDIT_KEY_BYTES, (k) => k.toString('hex'), 'the audit key file');
}

/**
 * The audit key: `MEMBRANE_AUDIT_KEY` if set (invalid → POLICY_INVALID), else the key file,
 * created on first use.
 */
export function loadAuditKey(): Buffer {
  const env = process.env[AUDIT_KEY_ENV];
  if (env !== undefined && env !== '') return parseAuditKey(env, AUDIT_KEY_ENV);
  const file = auditKeyFile();
  const existing = readKeyFile(file);
  if (existing) return existing;
  createKeyFile(file);
  const created = readKeyFile(file);
  if (!created) throw new SandboxError('INTERNAL', 'the audit key file vanished after it was created');
  return created;
}
