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

import { closeSync, fstatSync, fsyncSync, linkSync, openSync, readSync, rmSync, writeSync, constants } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { storageDir } from './sqlite.ts';
import { homeRelative } from './home-files.ts';

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
  const file = `$MEMBRANE_HOME/${homeRelative(path)}`;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new SandboxError('POLICY_INVALID', `the audit key file ${file} is a symbolic link; refusing to use it`);
    throw new SandboxError('POLICY_INVALID', `the audit key file ${file} cannot be read (${code ?? 'error'})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new SandboxError('POLICY_INVALID', `the audit key file ${file} is not a regular file`);
    if (typeof process.getuid === 'function' && st.uid !== process.getuid()) {
      throw new SandboxError('POLICY_INVALID', `the audit key file ${file} is owned by another user; refusing to use it`);
    }
    if ((st.mode & 0o077) !== 0) {
      const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
      throw new SandboxError('POLICY_INVALID', `the audit key file ${file} is accessible by group or others (mode ${mode}); refusing to use it — the key may have leaked: replace it, or chmod 600 it if you are sure it has not`);
    }
    const buf = Buffer.alloc(256);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString('utf8');
    buf.fill(0);
    return parseAuditKey(text, `the audit key file ${file}`);
  } finally {
    closeSync(fd);
  }
}

function createKeyFile(file: string): void {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const key = randomBytes(AUDIT_KEY_BYTES);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${key.toString('hex')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
    key.fill(0);
  }
  try {
    linkSync(tmp, file); // atomic; EEXIST when another process won the race
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new SandboxError('INTERNAL', 'could not create the audit key file', {}, err);
  } finally {
    rmSync(tmp, { force: true });
  }
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
