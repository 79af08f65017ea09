/**
 * VFS options, limits and the value types the VFS hands out.
 *
 * Owns: `VfsOptions` → `resolveVfs()` → `VfsConfig` (quota defaults live here, once), `VfsSpec`
 * (the VFS a guest is handed: its database, its preopened volume roots, limits), the WASI
 * `oflags` bits `open()` takes, and the `VfsStat` / `DirEntry` / `Usage` shapes.
 *
 * Invariant: a `VfsConfig` is complete and frozen; a named VFS resolves to a file directly under
 * `$MEMBRANE_HOME/vfs/` (the name admits no `/`, `..` or NUL).
 *
 * Does not protect against: a caller passing an arbitrary `file` — that path is trusted host input.
 */

import { join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { storageDir, type DatabaseDurability } from './sqlite.ts';
import type { InodeKind, VolumeName } from './vfs-schema.ts';

/** Default quota: total bytes of all files in one VFS. */
export const DEFAULT_MAX_BYTES = 256 * 1024 * 1024;
/** Default quota: inodes (files, directories, symlinks, the three roots) in one VFS. */
export const DEFAULT_MAX_INODES = 100_000;
/** Default durability of VFS writes (see `VfsOptions.durability` and `sqlite.ts`). */
export const DEFAULT_DURABILITY: DatabaseDurability = 'process-crash';
/**
 * The WAL of a file VFS grows to about this much before a commit checkpoints it into the
 * database file (SQLite's default is ~4 MiB). Checkpointing is the costly half of a write — every
 * page copied a second time, two fsyncs — so a run writing less than this never checkpoints in
 * its calls: its connection's close does, after the run's result is out (the worker then tells
 * the pool it is busy). Bounds the disk a VFS takes beyond its byte quota to about this much
 * (plus one transaction) while a connection is open.
 */
export const WAL_CHECKPOINT_BYTES = 128 * 1024 * 1024;
/**
 * SQLite's page cache of one file VFS connection: at most this much host memory (its in-memory
 * counterpart holds a whole VFS, up to `DEFAULT_MAX_BYTES`). Large enough that a file written in
 * a run is read back from memory rather than from the WAL, page by page, with a system call each.
 */
export const CACHE_BYTES = 128 * 1024 * 1024;
/** Largest file offset accepted (beyond it: EFBIG); keeps every offset an exact JS number. */
export const MAX_FILE_SIZE = 2 ** 48;
/** Largest single read, so one call cannot allocate without bound. */
export const MAX_READ_BYTES = 64 * 1024 * 1024;

/** WASI `oflags` bits, used as-is by `open()`. */
export const O_CREAT = 1;
export const O_DIRECTORY = 2;
export const O_EXCL = 4;
export const O_TRUNC = 8;

export interface VfsOptions {
  /** Host path of the database file (chosen by Membrane, never by a guest), or ':memory:'. */
  readonly file?: string;
  /** A named VFS under `$MEMBRANE_HOME/vfs/NAME.sqlite`; ignored when `file` is given. */
  readonly name?: string;
  readonly maxBytes?: number;
  readonly maxInodes?: number;
  /**
   * What an acknowledged write survives until `sync()`: default `'process-crash'` (a `kill -9` of
   * the engine; `sync()` extends that to power loss); `'power-loss'` fsyncs every write.
   */
  readonly durability?: DatabaseDurability;
}

export interface VfsConfig {
  readonly file: string;
  readonly maxBytes: number;
  readonly maxInodes: number;
  readonly durability: DatabaseDurability;
}

const VFS_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function resolveVfs(o: VfsOptions = {}): VfsConfig {
  const limit = (v: number | undefined, dflt: number, what: string): number => {
    if (v === undefined) return dflt;
    if (!Number.isSafeInteger(v) || v < 0) throw new SandboxError('POLICY_INVALID', `${what} must be a non-negative integer`);
    return v;
  };
  let file = o.file;
  if (file === undefined) {
    const name = o.name ?? 'default';
    if (!VFS_NAME.test(name)) throw new SandboxError('POLICY_INVALID', 'a VFS name is 1-64 of [A-Za-z0-9._-], starting alphanumeric');
    file = join(storageDir('vfs'), `${name}.sqlite`);
  }
  return Object.freeze({
    file,
    maxBytes: limit(o.maxBytes, DEFAULT_MAX_BYTES, 'maxBytes'),
    maxInodes: limit(o.maxInodes, DEFAULT_MAX_INODES, 'maxInodes'),
    durability: o.durability === 'power-loss' ? 'power-loss' : DEFAULT_DURABILITY,
  });
}

export interface VfsStat {
  readonly ino: number;
  readonly volume: VolumeName;
  readonly kind: InodeKind;
  readonly mode: number;
  readonly nlink: number;
  readonly size: number;
  readonly atimeNs: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

export interface DirEntry {
  readonly name: string;
  readonly ino: number;
  readonly kind: InodeKind;
  /** Pass as `cookie` to continue after this entry. */
  readonly next: number;
}

export interface PathOptions {
  /** Follow a final symlink. Default true for stat/open, always false for entry operations. */
  readonly followFinal?: boolean;
  /** Directory inode a relative path starts from (must be in the same volume). */
  readonly from?: number;
}

export interface Usage {
  readonly bytes: number;
  readonly inodes: number;
  readonly maxBytes: number;
  readonly maxInodes: number;
}

/** What a guest is handed as its filesystem (GuestSpec.vfs; a snippet's lane VFS uses the same). */
export interface VfsSpec {
  /** Host path of the VFS database, or ':memory:' for an ephemeral one. Never guest-chosen. */
  readonly file: string;
  /** Guest directories the guest sees as preopens, each the root of a volume. */
  readonly preopens: readonly { readonly guestPath: string; readonly volume: VolumeName }[];
  readonly readOnly: boolean;
  readonly maxBytes: number;
  readonly maxInodes: number;
  /** Read-only image VFSes (a toolchain's sysroot) preopened beside the guest's own volumes. */
  readonly images?: readonly ImageMount[];
}

/**
 * A read-only image VFS preopened at `guestPath`: its workspace volume's root. The host chose the
 * file (a toolchain image in the cache directory); a guest only ever names the path.
 */
export interface ImageMount {
  readonly file: string;
  readonly guestPath: string;
}

/** The volumes every guest granted `vfs` sees, each a preopen. */
export const DEFAULT_PREOPENS = Object.freeze([
  Object.freeze({ guestPath: '/', volume: 'workspace' as const }),
  Object.freeze({ guestPath: '/tmp', volume: 'tmp' as const }),
  Object.freeze({ guestPath: '/memory', volume: 'memory' as const }),
]);
