/**
 * Files of the on-disk module cache (`$MEMBRANE_HOME/cache`): rewritten wasm that is expensive to
 * produce (the fuel rewriter over QuickJS or CPython, or over an uploaded module) and cheap to
 * read back.
 *
 * Owns: the one way a cache file is written — to a unique temporary name, mode 0600 in a 0700
 * directory, then renamed into place, so concurrent writers and readers never see a torn file —
 * reading one back only if it still starts like a wasm module, and the format of a module cache
 * entry (a header, the engine's JSON description of the input, then the rewritten wasm).
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

import { closeSync, constants, fstatSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { ensurePrivateDirs } from './home-files.ts';
import { dirname } from 'node:path';

/** "\0MBC": a module cache entry, never mistaken for a bare wasm file. */
const ENTRY_MAGIC = [0x00, 0x4d, 0x42, 0x43] as const;
/** Bump when the entry layout changes (old entries then read as misses and age out). */
export const CACHE_ENTRY_FORMAT = 1;
const ENTRY_HEADER_BYTES = 12;
const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d] as const;

function startsWith(b: Uint8Array, at: number, magic: readonly number[]): boolean {
  return b.length >= at + magic.length && magic.every((m, i) => b[at + i] === m);
}

/** magic · format (u32 LE) · meta length (u32 LE) · meta (UTF-8 JSON) · wasm. */
export function encodeCacheEntry(meta: string, wasm: Uint8Array): Uint8Array<ArrayBuffer> {
  const metaBytes = new TextEncoder().encode(meta);
  const out = new Uint8Array(ENTRY_HEADER_BYTES + metaBytes.length + wasm.length);
  out.set(ENTRY_MAGIC, 0);
  const view = new DataView(out.buffer);
  view.setUint32(4, CACHE_ENTRY_FORMAT, true);
  view.setUint32(8, metaBytes.length, true);
  out.set(metaBytes, ENTRY_HEADER_BYTES);
  out.set(wasm, ENTRY_HEADER_BYTES + metaBytes.length);
  return out;
}

/** The entry's meta text and where its wasm starts, or null for anything else (a miss). */
export function decodeCacheEntry(entry: Uint8Array): { meta: string; wasmOffset: number } | null {
  if (entry.length < ENTRY_HEADER_BYTES || !startsWith(entry, 0, ENTRY_MAGIC)) return null;
  const view = new DataView(entry.buffer, entry.byteOffset, entry.byteLength);
  if (view.getUint32(4, true) !== CACHE_ENTRY_FORMAT) return null;
  const metaLength = view.getUint32(8, true);
  const wasmOffset = ENTRY_HEADER_BYTES + metaLength;
  if (wasmOffset + 8 > entry.length || !startsWith(entry, wasmOffset, WASM_MAGIC)) return null;
  return { meta: new TextDecoder('utf-8', { fatal: false }).decode(entry.subarray(ENTRY_HEADER_BYTES, wasmOffset)), wasmOffset };
}

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
    return b.length >= 8 && startsWith(b, 0, WASM_MAGIC) ? new Uint8Array(b) : null;
  } catch {
    return null;
  }
}

/** Write atomically; false when it could not (a cache that cannot be written only costs a redo). */
export function writeCacheFile(file: string, bytes: Uint8Array): boolean {
  try {
    // Every directory on the way is checked: a link planted under the home is refused, not followed.
    ensurePrivateDirs(dirname(file));
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
