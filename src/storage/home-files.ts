/**
 * Opening files and directories under `$MEMBRANE_HOME` without following symbolic links.
 *
 * Owns: the one rule every host file Membrane keeps obeys — engine.sqlite, vfs/NAME.sqlite, the
 * private exec-/run-/instance- VFS files, tokens.sqlite, audit.key, cache files and the
 * directories holding them: a path that is a symbolic link, or not a regular file (a directory
 * where a file belongs, a FIFO, a device, a socket), is refused with POLICY_INVALID, never
 * followed, opened or repaired. Files we create are created with O_CREAT|O_EXCL|O_NOFOLLOW, mode
 * 0600. SQLite opens by path, so a database's path and its `-wal`, `-shm` and `-journal` siblings
 * are checked (`checkDatabasePaths`) before SQLite sees them.
 *
 * Invariant: no Membrane write lands outside the home through a link planted inside it; a
 * refusal's message names the file relative to the home (`vfs/NAME.sqlite`), never the home's
 * host path, and never what a link points to.
 *
 * Does not protect against: a link planted between the check and SQLite's own open (a race that
 * needs write access to the 0700 home, i.e. the same OS user, who can do worse); the home itself
 * being a link (the operator's choice, e.g. onto another disk); a hard link to a file elsewhere
 * (it is a regular file; the 0700 home keeps other users from making one).
 */

import { closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { SandboxError } from '../errors.ts';

/** The suffixes SQLite derives companion files from. */
export const DATABASE_COMPANIONS = ['-wal', '-shm', '-journal'] as const;

/** `$MEMBRANE_HOME`, default `~/.membrane` (same rule as the engine's `membraneHome()`). */
export function membraneHome(): string {
  return process.env['MEMBRANE_HOME'] || join(homedir(), '.membrane');
}

/**
 * The default module cache directory: `$MEMBRANE_CACHE_DIR`, else `$MEMBRANE_HOME/cache`. The
 * variable lets processes with different homes share one cache (CI, a test run sharing its
 * rewritten toolchain); the directory must be private to the user like the home itself.
 */
export function membraneCacheDir(): string {
  return process.env['MEMBRANE_CACHE_DIR'] || join(membraneHome(), 'cache');
}

/** `path` as an operator may see it in a message: relative to the home when inside it, else its base name. */
export function homeRelative(path: string): string {
  const rel = relative(resolve(membraneHome()), resolve(path));
  return rel !== '' && !rel.startsWith('..') && !rel.startsWith(sep) ? rel : basename(path);
}

function refuse(path: string, what: string): SandboxError {
  const name = homeRelative(path);
  return new SandboxError('POLICY_INVALID', `refusing to open ${name} under $MEMBRANE_HOME: it is ${what} (a planted link or file? remove it)`, { file: name });
}

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** Refuse `path` unless it is absent or a regular file (not a link to one). */
export function assertRegularOrAbsent(path: string): void {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw refuse(path, `unreadable (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!st.isFile()) throw refuse(path, kindOf(st));
}

/** A database's file and the companions SQLite will open beside it: each absent or a regular file. */
export function checkDatabasePaths(path: string): void {
  assertRegularOrAbsent(path);
  for (const suffix of DATABASE_COMPANIONS) assertRegularOrAbsent(path + suffix);
}

/**
 * Make sure `path` is a regular file of ours, mode 0600: created with O_CREAT|O_EXCL|O_NOFOLLOW
 * if absent; if present, opened with O_NOFOLLOW (and O_NONBLOCK, so a FIFO cannot hang us) and
 * refused unless it is a regular file. Group/other permission bits are removed.
 */
export function ensurePrivateFile(path: string): void {
  const flags = constants.O_NOFOLLOW | constants.O_NONBLOCK;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | flags, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') throw refuse(path, `not creatable (${code ?? 'error'})`);
    try {
      fd = openSync(path, constants.O_RDONLY | flags);
    } catch (err2) {
      const code2 = (err2 as NodeJS.ErrnoException).code;
      throw refuse(path, code2 === 'ELOOP' || code2 === 'EMLINK' ? 'a symbolic link' : `unopenable (${code2 ?? 'error'})`);
    }
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw refuse(path, kindOf(st));
    if ((st.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

/**
 * Make sure `dir` is a directory (created 0700 if absent), not a link to one, and set it to 0700.
 * Only for directories below the home (the home itself may be a link: the operator's choice).
 */
export function ensurePrivateDir(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw refuse(dir, `not creatable (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw refuse(dir, st.isSymbolicLink() ? 'a symbolic link' : 'not a directory');
  // O_DIRECTORY|O_NOFOLLOW: the chmod lands on the directory we checked, not on a link swapped in.
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    if ((fstatSync(fd).mode & 0o777) !== 0o700) fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
}

/**
 * `ensurePrivateDir` for every directory from below `root` down to `dir`: a link planted anywhere
 * on the way is refused, never followed — a `mkdir -p` would write through it. `root` itself
 * (the home, or an operator's cache directory) is created if absent and trusted as it is. A
 * `dir` outside `root` is checked from its own parent down.
 */
export function ensurePrivateDirs(dir: string, root: string = membraneHome()): void {
  let base = resolve(root);
  let rel = relative(base, resolve(dir));
  if (rel.startsWith('..') || rel.startsWith(sep)) {
    base = dirname(resolve(dir));
    rel = basename(resolve(dir));
  }
  mkdirSync(base, { recursive: true, mode: 0o700 });
  if (rel === '') return;
  let at = base;
  for (const part of rel.split(sep)) {
    at = join(at, part);
    ensurePrivateDir(at);
  }
}
