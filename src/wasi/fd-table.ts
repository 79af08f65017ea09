/**
 * The descriptor table and shared plumbing of WASI preview 1 over the VFS: rights bits, the
 * bounded fd table, the error-to-errno guard, guest path decoding and the filestat layout.
 *
 * Owns: which descriptors exist (fds ≥ 3: preopened directories and opened files/directories),
 * what each may do (its WASI rights, fixed at open and only ever narrowed), and the mapping of
 * every failure to a WASI errno.
 *
 * Invariant: a descriptor names a VFS inode and a volume, never a host object; the table never
 * holds more than `MAX_FDS` entries (EMFILE); a `VfsError` or `WasiError` becomes its errno and a
 * bad guest pointer becomes EFAULT; any other exception propagates (it is a bug, not guest input).
 *
 * Does not protect against: POSIX "unlinked but still open" files — an fd whose inode lost its
 * last link answers EBADF afterwards (the VFS deletes contents at once).
 */

import type { Vfs, VfsStat } from '../storage/index.ts';
import type { GuestMemory } from '../abi/memory.ts';
import type { CallState } from '../abi/signals.ts';
import type { WasiContext } from './ambient.ts';
import { WasiError, guard, type WasiFn } from './call.ts';

export { WasiError, guard, type WasiFn };

/** Same shape as the ambient WASI functions (`ambient.ts`). */
export type Volume = 'workspace' | 'memory' | 'tmp';

/** Errno numbers used by this layer beyond the VFS table (WASI `errno` enum). */
export const E = {
  SUCCESS: 0,
  BADF: 8,
  FAULT: 21,
  ILSEQ: 25,
  INVAL: 28,
  ISDIR: 31,
  MFILE: 33,
  NAMETOOLONG: 37,
  NOTDIR: 54,
  NOTSOCK: 57,
  NOTSUP: 58,
  ROFS: 69,
  SPIPE: 70,
  XDEV: 75,
  NOTCAPABLE: 76,
} as const;

export function refuse(errno: number): never {
  throw new WasiError(errno);
}

// ---- rights (WASI preview 1 `rights` bits) ----------------------------------------------------

const bit = (n: number): bigint => 1n << BigInt(n);
export const R = {
  FD_DATASYNC: bit(0), FD_READ: bit(1), FD_SEEK: bit(2), FD_FDSTAT_SET_FLAGS: bit(3),
  FD_SYNC: bit(4), FD_TELL: bit(5), FD_WRITE: bit(6), FD_ADVISE: bit(7), FD_ALLOCATE: bit(8),
  PATH_CREATE_DIRECTORY: bit(9), PATH_CREATE_FILE: bit(10), PATH_LINK_SOURCE: bit(11),
  PATH_LINK_TARGET: bit(12), PATH_OPEN: bit(13), FD_READDIR: bit(14), PATH_READLINK: bit(15),
  PATH_RENAME_SOURCE: bit(16), PATH_RENAME_TARGET: bit(17), PATH_FILESTAT_GET: bit(18),
  PATH_FILESTAT_SET_SIZE: bit(19), PATH_FILESTAT_SET_TIMES: bit(20), FD_FILESTAT_GET: bit(21),
  FD_FILESTAT_SET_SIZE: bit(22), FD_FILESTAT_SET_TIMES: bit(23), PATH_SYMLINK: bit(24),
  PATH_REMOVE_DIRECTORY: bit(25), PATH_UNLINK_FILE: bit(26), POLL_FD_READWRITE: bit(27),
} as const;

/** Everything a regular-file descriptor can be granted. */
export const FILE_RIGHTS = R.FD_DATASYNC | R.FD_READ | R.FD_SEEK | R.FD_FDSTAT_SET_FLAGS | R.FD_SYNC |
  R.FD_TELL | R.FD_WRITE | R.FD_ADVISE | R.FD_ALLOCATE | R.FD_FILESTAT_GET | R.FD_FILESTAT_SET_SIZE |
  R.FD_FILESTAT_SET_TIMES | R.POLL_FD_READWRITE;

/** Everything a directory descriptor can be granted (directory operations only). */
export const DIR_RIGHTS = R.FD_FDSTAT_SET_FLAGS | R.FD_SYNC | R.FD_DATASYNC | R.PATH_CREATE_DIRECTORY |
  R.PATH_CREATE_FILE | R.PATH_LINK_SOURCE | R.PATH_LINK_TARGET | R.PATH_OPEN | R.FD_READDIR |
  R.PATH_READLINK | R.PATH_RENAME_SOURCE | R.PATH_RENAME_TARGET | R.PATH_FILESTAT_GET |
  R.PATH_FILESTAT_SET_SIZE | R.PATH_FILESTAT_SET_TIMES | R.FD_FILESTAT_GET | R.FD_FILESTAT_SET_TIMES |
  R.PATH_SYMLINK | R.PATH_REMOVE_DIRECTORY | R.PATH_UNLINK_FILE;

/** Rights that change the VFS: stripped everywhere on a read-only mount. */
export const MUTATING_RIGHTS = R.FD_WRITE | R.FD_ALLOCATE | R.FD_FILESTAT_SET_SIZE | R.FD_FILESTAT_SET_TIMES |
  R.PATH_CREATE_DIRECTORY | R.PATH_CREATE_FILE | R.PATH_LINK_SOURCE | R.PATH_LINK_TARGET |
  R.PATH_RENAME_SOURCE | R.PATH_RENAME_TARGET | R.PATH_FILESTAT_SET_SIZE | R.PATH_FILESTAT_SET_TIMES |
  R.PATH_SYMLINK | R.PATH_REMOVE_DIRECTORY | R.PATH_UNLINK_FILE;

export const FDFLAG_APPEND = 1;
export const FILETYPE = { CHARACTER_DEVICE: 2, DIRECTORY: 3, REGULAR_FILE: 4, SYMBOLIC_LINK: 7 } as const;

export function filetypeOf(kind: VfsStat['kind']): number {
  return kind === 'dir' ? FILETYPE.DIRECTORY : kind === 'file' ? FILETYPE.REGULAR_FILE : FILETYPE.SYMBOLIC_LINK;
}

export interface Preopen {
  /** The absolute guest path the directory appears at, e.g. `/data`. */
  readonly guestPath: string;
  /** The VFS volume whose root it is. */
  readonly volume: Volume;
  /**
   * An image mount: a read-only VFS of its own (e.g. a toolchain's sysroot, shared by every guest
   * that mounts it) instead of the guest's VFS. Every descriptor beneath it is read-only (EROFS),
   * and its files report `dev` so that no inode of it is ever mistaken for one of the guest's.
   */
  readonly image?: { readonly vfs: Vfs; readonly dev: bigint };
}

export interface VfsWasiContext {
  readonly memory: GuestMemory;
  readonly vfs: Vfs;
  readonly preopens: readonly Preopen[];
  /** A read-only mount: every mutation answers EROFS. */
  readonly readOnly?: boolean;
  readonly state: CallState;
  /** The ambient context, for `poll_oneoff` to see stdio through this table (renumbered or closed). */
  readonly wasi?: WasiContext;
}

// ---- the descriptor table ---------------------------------------------------------------------

export interface OpenFd {
  readonly kind: 'file' | 'dir';
  /** The VFS the inode lives in: the guest's own, or an image mount's (read-only). */
  readonly vfs: Vfs;
  /** Set beneath an image mount: every mutation is EROFS, and filestat reports this device. */
  readonly imageDev: bigint | null;
  readonly volume: Volume;
  readonly ino: number;
  /** Set for preopened directories: the guest path `fd_prestat_dir_name` reports. */
  readonly preopen: Uint8Array | null;
  rightsBase: bigint;
  rightsInheriting: bigint;
  fdflags: number;
  /** Current file offset (files only). */
  offset: number;
}

/** Largest number of descriptors ≥ 3 open at once. */
export const MAX_FDS = 1024;
const FIRST_FD = 3;

export class FdTable {
  private readonly fds = new Map<number, OpenFd>();
  /** Descriptors that name a captured stdio stream (0 stdin, 1 stdout, 2 stderr) → that stream. */
  private readonly stdio = new Map<number, number>([[0, 0], [1, 1], [2, 2]]);

  get size(): number {
    return this.fds.size;
  }

  /** The open descriptor `fd` (≥ 3), or EBADF. */
  get(fd: number): OpenFd {
    return this.fds.get(fd) ?? refuse(E.BADF);
  }

  has(fd: number): boolean {
    return this.fds.has(fd);
  }

  /** Refuse before any side effect when no slot is left. */
  reserve(): void {
    if (this.fds.size >= MAX_FDS) refuse(E.MFILE);
  }

  /** The stdio stream `fd` names, if it names one. */
  stdioOf(fd: number): number | undefined {
    return this.stdio.get(fd);
  }

  /** `fd` is open, as a stdio stream or a VFS descriptor. */
  isOpen(fd: number): boolean {
    return this.fds.has(fd) || this.stdio.has(fd);
  }

  /** Install `entry` at the lowest free number ≥ 3. */
  add(entry: OpenFd): number {
    this.reserve();
    let fd = FIRST_FD;
    while (this.fds.has(fd) || this.stdio.has(fd)) fd++;
    this.fds.set(fd, entry);
    return fd;
  }

  close(fd: number): void {
    if (!this.fds.delete(fd) && !this.stdio.delete(fd)) refuse(E.BADF);
  }

  /**
   * `to` becomes `from`'s descriptor, stdio or not; `from` is freed. Returns the VFS descriptor
   * `to` was (the caller releases its inode), or null.
   */
  renumber(from: number, to: number): OpenFd | null {
    if (!this.isOpen(from) || !this.isOpen(to)) refuse(E.BADF);
    if (from === to) return null;
    const closed = this.fds.get(to) ?? null;
    this.fds.delete(to);
    this.stdio.delete(to);
    const stream = this.stdio.get(from);
    if (stream !== undefined) {
      this.stdio.delete(from);
      this.stdio.set(to, stream);
    } else {
      this.fds.set(to, this.get(from));
      this.fds.delete(from);
    }
    return closed;
  }
}

// ---- plumbing ------------------------------------------------------------------------------

const decoder = new TextDecoder('utf-8', { fatal: true });

/** A guest path (ptr, len) as a string; invalid UTF-8 → EILSEQ. The VFS checks NUL and length. */
export function readPath(memory: GuestMemory, ptr: number, len: number): string {
  const bytes = memory.copy(ptr, len);
  try {
    return decoder.decode(bytes);
  } catch {
    return refuse(E.ILSEQ);
  }
}

const VOLUME_DEV: Record<Volume, bigint> = { workspace: 1n, memory: 2n, tmp: 3n };
export const FILESTAT_BYTES = 64;

/** Write a WASI `filestat` (64 bytes) for `s` at `ptr`; `dev` overrides the volume's device (image mounts). */
export function writeFilestat(memory: GuestMemory, ptr: number, s: VfsStat, dev: bigint | null = null): void {
  memory.check(ptr, FILESTAT_BYTES);
  const v = memory.view();
  const p = ptr >>> 0;
  v.setBigUint64(p, dev ?? VOLUME_DEV[s.volume], true);
  v.setBigUint64(p + 8, BigInt(s.ino), true);
  v.setUint8(p + 16, filetypeOf(s.kind));
  for (let i = 17; i < 24; i++) v.setUint8(p + i, 0);
  v.setBigUint64(p + 24, BigInt(s.nlink), true);
  v.setBigUint64(p + 32, BigInt(s.size), true);
  v.setBigUint64(p + 40, BigInt.asUintN(64, s.atimeNs), true);
  v.setBigUint64(p + 48, BigInt.asUintN(64, s.mtimeNs), true);
  v.setBigUint64(p + 56, BigInt.asUintN(64, s.ctimeNs), true);
}

/** Decode `fst_flags` into the times to set (undefined = keep). */
export function timesFrom(atim: bigint, mtim: bigint, fst: number): { atime: bigint | undefined; mtime: bigint | undefined } {
  const ATIM = 1, ATIM_NOW = 2, MTIM = 4, MTIM_NOW = 8;
  if ((fst & ~15) !== 0 || ((fst & ATIM) && (fst & ATIM_NOW)) || ((fst & MTIM) && (fst & MTIM_NOW))) refuse(E.INVAL);
  const now = BigInt(Date.now()) * 1_000_000n;
  // The i64 arguments arrive signed, which is exactly what the VFS stores.
  const atime = fst & ATIM_NOW ? now : fst & ATIM ? BigInt.asIntN(64, atim) : undefined;
  const mtime = fst & MTIM_NOW ? now : fst & MTIM ? BigInt.asIntN(64, mtim) : undefined;
  return { atime, mtime };
}

/** Refuse a mutation on a read-only mount. */
export function mutating(ctx: VfsWasiContext, fd?: OpenFd): void {
  if (ctx.readOnly === true || (fd !== undefined && fd.imageDev !== null)) refuse(E.ROFS);
}

/**
 * A right `f` lacks: ENOTCAPABLE — but EROFS for a mutating right beneath an image mount, whose
 * descriptors never hold one (the guest is told the file system is read-only, as for a mutation).
 */
export function lacking(f: OpenFd, right: bigint): never {
  return refuse(f.imageDev !== null && (right & MUTATING_RIGHTS) !== 0n ? E.ROFS : E.NOTCAPABLE);
}

/** The directory descriptor `fd` holding `right` (stdio/file → ENOTDIR, missing right → ENOTCAPABLE, or EROFS: lacking). */
export function dirFd(table: FdTable, fd: number, right: bigint): OpenFd {
  if (fd >= 0 && fd <= 2) refuse(E.NOTDIR);
  const d = table.get(fd);
  if (d.kind !== 'dir') refuse(E.NOTDIR);
  if ((d.rightsBase & right) !== right) lacking(d, right);
  return d;
}

/** The file descriptor `fd` holding `right` (directory → EISDIR, missing right → ENOTCAPABLE, or EROFS: lacking). */
export function fileFd(table: FdTable, fd: number, right: bigint): OpenFd {
  const f = table.get(fd);
  if (f.kind !== 'file') refuse(E.ISDIR);
  if ((f.rightsBase & right) !== right) lacking(f, right);
  return f;
}
