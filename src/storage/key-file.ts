/**
 * Secret key files under `$MEMBRANE_HOME` (the audit log's HMAC key, the Ed25519 seeds of the
 * tenants and of the engine): read only when safe, created once, atomically.
 *
 * Owns: `readKeyFileText` — opened with O_NOFOLLOW (a symbolic link is refused, never followed),
 * refused unless it is a regular file owned by this user with no group or other access (a key
 * that may have leaked is never used, nor silently repaired), at most a small buffer read and
 * wiped; and `createKeyFileOnce` — a fresh secret written 0600 to a unique temporary name,
 * fsynced, then hard-linked into place, so the file appears whole or not at all and the loser of
 * a race keeps the winner's key.
 * Invariant: messages name the file as the caller shows it (`label`), never a host path.
 *
 * Does not protect against: a local user who can already read this user's files.
 */

import { closeSync, constants, fstatSync, fsyncSync, linkSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { SandboxError } from '../errors.ts';

/** The most a key file may hold that is read (keys are a line of hex or base64). */
const MAX_KEY_FILE_BYTES = 256;

/** The file's text, or undefined when there is none; `label` names it in messages (e.g. "the audit key file $MEMBRANE_HOME/audit.key"). */
export function readKeyFileText(path: string, label: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new SandboxError('POLICY_INVALID', `${label} is a symbolic link; refusing to use it`);
    throw new SandboxError('POLICY_INVALID', `${label} cannot be read (${code ?? 'error'})`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new SandboxError('POLICY_INVALID', `${label} is not a regular file`);
    if (typeof process.getuid === 'function' && st.uid !== process.getuid()) throw new SandboxError('POLICY_INVALID', `${label} is owned by another user; refusing to use it`);
    if ((st.mode & 0o077) !== 0) {
      const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
      throw new SandboxError('POLICY_INVALID', `${label} is accessible by group or others (mode ${mode}); refusing to use it — the key may have leaked: replace it, or chmod 600 it if you are sure it has not`);
    }
    const buf = Buffer.alloc(MAX_KEY_FILE_BYTES);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString('utf8');
    buf.fill(0);
    return text;
  } finally {
    closeSync(fd);
  }
}

/**
 * Write `bytes` fresh random bytes, encoded by `encode` as one line, to `path` unless a file is
 * already there; true when this call created it.
 */
export function createKeyFileOnce(path: string, bytes: number, encode: (key: Buffer) => string, label: string): boolean {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const key = randomBytes(bytes);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    writeSync(fd, `${encode(key)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
    key.fill(0);
  }
  try {
    linkSync(tmp, path); // atomic; EEXIST when another process won the race
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new SandboxError('INTERNAL', `could not create ${label}`, {}, err);
    return false;
  } finally {
    rmSync(tmp, { force: true });
  }
}
