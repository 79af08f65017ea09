/**
 * Files of the on-disk module cache (`$MEMBRANE_HOME/cache`): rewritten wasm that is expensive to
 * produce (the fuel rewriter over QuickJS or Pyodide) and cheap to read back.
 *
 * Owns: the one way a cache file is written — to a unique temporary name, mode 0600 in a 0700
 * directory, then renamed into place, so concurrent writers and readers never see a torn file —
 * and reading one back only if it still starts like a wasm module.
 * Invariant: a cache file is content-addressed by its caller (hash of the input and the
 * rewriter's version), so a stale or damaged file is never trusted for a different input.
 *
 * A cache file is read only if it is a regular file (opened with O_NOFOLLOW: a symbolic link
 * planted in the cache is never followed) and written to a temporary name created with
 * O_CREAT|O_EXCL (never through a link), then renamed over whatever was there.
 *
 * Does not protect against: another process of the same OS user replacing a cache file with a
 * different valid module — the cache directory is the operator's to keep private.
 */

import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** The file's bytes if it exists and starts with the wasm magic, else null. */
export function readCachedWasm(file: string): Uint8Array | null {
  try {
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    let b: Buffer;
    try {
      if (!fstatSync(fd).isFile()) return null;
      b = readFileSync(fd);
    } finally {
      closeSync(fd);
    }
    return b.length >= 8 && b[0] === 0 && b[1] === 0x61 && b[2] === 0x73 && b[3] === 0x6d ? new Uint8Array(b) : null;
  } catch {
    return null;
  }
}

/** Write atomically; false when it could not (a cache that cannot be written only costs a redo). */
export function writeCacheFile(file: string, bytes: Uint8Array): boolean {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeFileSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
    return true;
  } catch {
    return false;
  }
}
