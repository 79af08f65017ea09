/**
 * The machinery under every `Vfs` operation: the connection and its statements, transactions,
 * path resolution in a volume, inode rows, quota accounting and the inode I/O helpers.
 *
 * Owns: `VfsCore`, the base of `Vfs` (`vfs.ts`, which holds the public operations).
 *
 * Invariant: every operation runs inside `atomic()` — one SQLite transaction, so a failure
 * (a quota refusal included) undoes everything the operation did; a write transaction first
 * forgets the read memo; usage counters change only through `charge()`, which refuses (ENOSPC)
 * any increase past `maxBytes` / `maxInodes`. At most one file creation is staged (see
 * `Staged`), and every operation — `single()`, `atomic()`, `sync()`, `close()`, `serialize()` —
 * commits it first, so no operation of this connection ever sees the database without it.
 *
 * Does not protect against: a caller using these helpers outside `atomic()` — they are
 * protected, for `Vfs` only.
 */

import { SandboxError } from '../errors.ts';
import { fail, VfsError } from './errno.ts';
import { syncDatabase, type Database } from './sqlite.ts';
import { MAX_FILE_SIZE, type VfsConfig, type VfsStat } from './vfs-config.ts';
import { ChunkMemo, writeChunks, truncateChunks } from './vfs-data.ts';
import { byteLength } from './vfs-path.ts';
import { walk, type Found, type WalkResult } from './vfs-resolve.ts';
import {
  CHUNK_SIZE, initSchema, nowNs, prepareStatements, readInode,
  type FileKindCode, type InodeKind, type InodeRow, type Statements, type VolumeName,
} from './vfs-schema.ts';

export function toStat(r: InodeRow): VfsStat {
  return Object.freeze({
    ino: r.ino, volume: r.volume, kind: r.kind, mode: r.mode, nlink: r.nlink, size: r.size,
    atimeNs: r.atime_ns, mtimeNs: r.mtime_ns, ctimeNs: r.ctime_ns,
  });
}

/** A `fileSize` / `fileChunk` row of a regular file, or the errno of what it is instead. */
export function checkFile<Row extends readonly [FileKindCode, ...unknown[]]>(row: Row | undefined): Row {
  if (row === undefined) fail('EBADF', 'no such inode');
  if (row[0] === 1) fail('EISDIR', 'is a directory');
  if (row[0] !== 0) fail('EINVAL', 'not a regular file');
  return row;
}

/** Bytes of a staged creation held back at most (then it commits and writes go straight through). */
export const STAGE_MAX_BYTES = CHUNK_SIZE;

/**
 * A file `openInode({ stage: true })` found missing and did not create yet: it is created, with
 * the bytes written at its start since (at most `STAGE_MAX_BYTES`, copied), in one transaction
 * when any other operation comes — usually `release()` (WASI `fd_close`). Its handle is a
 * negative number standing in for the inode number until then.
 */
interface Staged {
  readonly handle: number;
  readonly volume: VolumeName;
  readonly parent: number;
  readonly name: string;
  readonly mode: number;
  /** `used_bytes` when staged (nothing of this connection runs before the commit). */
  readonly usedBytes: number;
  /** `PRAGMA data_version` when staged: unchanged at commit = no other connection committed since. */
  readonly version: number;
  readonly parts: Uint8Array[];
  length: number;
}

export abstract class VfsCore {
  readonly config: VfsConfig;
  protected readonly db: Database;
  protected readonly st: Statements;
  protected readonly roots: ReadonlyMap<VolumeName, number>;
  protected readonly memo: ChunkMemo;
  private staged: Staged | null = null;
  private lastHandle = 0;
  /** Handle of a committed (or refused) staged creation → its inode (or the error, told on next use). */
  private readonly handles = new Map<number, number | VfsError>();

  protected constructor(config: VfsConfig, db: Database) {
    this.config = config;
    this.db = db;
    initSchema(db);
    this.st = prepareStatements(db);
    this.roots = new Map(this.st.volumeRoots.all().map((r) => [r.name, r.root] as const));
    this.memo = new ChunkMemo(() => (this.st.dataVersion.get() as [number])[0]);
  }

  close(): void {
    if (!this.db.open) return;
    try {
      this.settle();
    } finally {
      this.db.close();
    }
  }

  /** Commit the staged creation, if any (every operation does this first anyway). */
  flush(): void {
    if (this.db.open) this.settle();
  }

  /**
   * Make every write acknowledged so far survive power loss, not only a crash of the process
   * (`fd_sync` / `fd_datasync`); a failure of the host's fsync is EIO.
   */
  sync(): void {
    if (!this.db.open) fail('EBADF', 'the VFS is closed');
    this.settle();
    try {
      syncDatabase(this.db);
    } catch {
      fail('EIO', 'sync failed');
    }
  }

  /** The whole database as bytes (a snapshot of an in-memory VFS for a read-only query). */
  serialize(): Uint8Array {
    this.flush();
    return this.db.serialize();
  }

  // ---- transactions -------------------------------------------------------------------------

  protected mutate<R>(fn: () => R): R {
    return this.atomic(fn, true);
  }

  protected readonly txWrite = this.dbTx(true);
  protected readonly txRead = this.dbTx(false);

  protected dbTx(immediate: boolean): (fn: () => unknown) => unknown {
    let tx: ((fn: () => unknown) => unknown) | undefined;
    return (fn) => {
      if (tx === undefined) {
        const t = this.db.transaction((f: () => unknown) => f());
        tx = immediate ? t.immediate : t.deferred;
      }
      return tx(fn);
    };
  }

  protected atomic<R>(fn: () => R, write: boolean): R {
    if (write) this.memo.clear();
    // A private in-memory database has this one connection and nothing else, so a read sees
    // one state without a snapshot of its own: only writes need a transaction (to roll back).
    else if (this.db.memory) return this.single(fn);
    return this.single(() => (write ? this.txWrite : this.txRead)(fn) as R);
  }

  /**
   * Run `fn` without an explicit transaction: only for a read that is one statement (SQLite runs
   * each statement in a snapshot of its own). Errors are mapped as in `atomic`.
   */
  protected single<R>(fn: () => R): R {
    if (this.staged !== null && this.db.open) this.settle();
    return this.unstaged(fn);
  }

  private dataVersion(): number {
    return (this.st.dataVersion.get() as [number])[0];
  }

  /** `single` without committing the staged creation first. */
  private unstaged<R>(fn: () => R): R {
    if (!this.db.open) fail('EBADF', 'the VFS is closed');
    try {
      return fn();
    } catch (err) {
      if (err instanceof VfsError || err instanceof SandboxError) throw err;
      throw new SandboxError('INTERNAL', 'VFS storage error', {}, err);
    }
  }

  // ---- staged creation -----------------------------------------------------------------------

  /** Stage the creation of file `name` in `parent` (found missing): a handle, nothing written yet. */
  protected stage(volume: VolumeName, parent: number, name: string, mode: number): Found {
    // The inode quota answers at open, as for an immediate creation (charged again at commit).
    const used = this.usage();
    if (used.inodes >= this.config.maxInodes) fail('ENOSPC', 'VFS inode quota exceeded');
    const handle = --this.lastHandle;
    const version = this.db.memory ? 0 : this.dataVersion();
    this.staged = { handle, volume, parent, name, mode: mode & 0o7777, usedBytes: used.bytes, version, parts: [], length: 0 };
    return { ino: handle, kind: 'file' };
  }

  /**
   * Keep `data` with the staged creation `ino` when it continues the staged bytes, stays within
   * `STAGE_MAX_BYTES` and within the byte quota; false when it must be written for real.
   */
  protected stageWrite(ino: number, at: number, data: Uint8Array): boolean {
    const s = this.staged;
    if (s === null || s.handle !== ino || at !== s.length || s.length + data.byteLength > STAGE_MAX_BYTES) return false;
    // The byte quota answers at the write that passes it: this connection has done nothing since
    // staging, and what another connection did is caught by the charge at commit.
    if (s.usedBytes + s.length + data.byteLength > this.config.maxBytes) return false;
    s.parts.push(new Uint8Array(data)); // a copy: `data` may be a view of guest memory
    s.length += data.byteLength;
    return true;
  }

  /** The inode number behind `ino`: itself, or what a staged creation's handle became (committing it). */
  protected real(ino: number): number {
    if (ino >= 0) return ino;
    if (this.staged?.handle === ino) this.settle();
    const r = this.handles.get(ino) ?? fail('EBADF', 'no such inode');
    if (typeof r !== 'number') throw r;
    return r;
  }

  /** Forget a handle: commit its creation if still staged; throw the error that refused it, if any. */
  protected forget(ino: number): void {
    if (ino >= 0) return;
    try {
      this.real(ino);
    } finally {
      this.handles.delete(ino);
    }
  }

  /** Commit the staged creation with its bytes in one transaction; a refusal is kept for its handle. */
  private settle(): void {
    const s = this.staged;
    if (s === null) return;
    this.staged = null;
    try {
      const ino = this.atomic(() => {
        // Only another connection can have changed the directory since the open.
        if (!this.db.memory && this.dataVersion() !== s.version) {
          const dir = this.st.inodeBrief.get(s.parent);
          if (dir === undefined || dir.kind !== 'dir') fail('ENOENT', 'no such file or directory');
          if (this.st.lookup.get(s.parent, s.name) !== undefined) fail('EEXIST', 'file exists');
        }
        const data = s.parts.length === 1 ? (s.parts[0] as Uint8Array) : Buffer.concat(s.parts);
        return this.create(s.volume, s.parent, s.name, 'file', s.mode, null, data).ino;
      }, true);
      this.handles.set(s.handle, ino);
    } catch (err) {
      this.handles.set(s.handle, err instanceof VfsError ? err : new VfsError('EIO', 'could not create the file'));
      if (!(err instanceof VfsError)) throw err;
    }
  }

  // ---- helpers -----------------------------------------------------------------------------

  protected root(volume: VolumeName): number {
    const root = this.roots.get(volume);
    if (root === undefined) fail('ENOTCAPABLE', 'unknown volume');
    return root;
  }

  protected walkIn(volume: VolumeName, path: string, followFinal: boolean, from?: number): WalkResult {
    const root = this.root(volume);
    // A volume root is permanent and never leaves its volume (it cannot be removed or renamed),
    // so only another start directory needs checking.
    if (from !== undefined && from !== root) {
      const dir = (Number.isSafeInteger(from) ? this.st.inodeBrief.get(from) : undefined) ?? fail('EBADF', 'no such inode');
      if (dir.volume !== volume) fail('EXDEV', 'directory is in another volume');
      if (dir.kind !== 'dir') fail('ENOTDIR', 'not a directory');
    }
    return walk(this.st, root, path, from === undefined ? { followFinal } : { followFinal, from });
  }

  protected inode(ino: number): InodeRow {
    return (Number.isSafeInteger(ino) ? readInode(this.st, ino) : undefined) ?? fail('EBADF', 'no such inode');
  }

  protected usage(): { bytes: number; inodes: number } {
    const [bytes, inodes] = this.st.getUsage.get() ?? [0, 0];
    return { bytes, inodes };
  }

  /** Add to the usage counters, refusing (ENOSPC) any increase past a quota. */
  protected charge(bytes: number, inodes: number): void {
    this.addUsage('used_bytes', bytes, this.config.maxBytes, 'VFS byte quota exceeded');
    this.addUsage('used_inodes', inodes, this.config.maxInodes, 'VFS inode quota exceeded');
  }

  /** One statement per counter; a refusal throws and so rolls back the whole operation. */
  protected addUsage(key: 'used_bytes' | 'used_inodes', delta: number, limit: number, refusal: string): void {
    if (delta > 0) {
      if (this.st.addUsageWithin.run(delta, key, limit - delta).changes === 0) fail('ENOSPC', refusal);
    } else if (delta < 0) {
      this.st.addUsage.run(delta, key);
    }
  }

  /** Make an inode and its entry (parent, name), a file maybe with contents; returns the new row as stored. */
  protected create(
    volume: VolumeName, parent: number, name: string, kind: InodeKind, mode: number, target: string | null,
    data: Uint8Array | null = null,
  ): InodeRow {
    const size = target !== null ? byteLength(target) : (data?.byteLength ?? 0);
    this.charge(size, 1);
    const t = nowNs();
    const nlink = kind === 'dir' ? 2 : 1;
    const ino = Number(this.st.insertInode.run(volume, kind, mode & 0o7777, nlink, size, t, t, t, target).lastInsertRowid);
    this.st.insertEntry.run(parent, name, ino);
    this.st.touchDir.run(t, t, parent);
    if (kind === 'dir') this.st.addLinks.run(1, t, parent);
    if (data !== null && data.byteLength > 0) writeChunks(this.st, ino, 0, 0, data);
    return { ino, volume, kind, mode: mode & 0o7777, nlink, size, atime_ns: t, mtime_ns: t, ctime_ns: t, target };
  }

  /** Remove the entry (parent, name) naming `node`; delete the inode with its last link. */
  protected dropEntry(parent: number, name: string, node: InodeRow): void {
    const t = nowNs();
    this.st.deleteEntry.run(parent, name);
    this.st.touchDir.run(t, t, parent);
    if (node.kind === 'dir') this.st.addLinks.run(-1, t, parent);
    if (node.kind === 'dir' || node.nlink <= 1) {
      this.st.deleteInode.run(node.ino);
      this.charge(-node.size, -1);
    } else {
      this.st.addLinks.run(-1, t, node.ino);
    }
  }

  protected nameOf(w: WalkResult, whenNull: 'EEXIST' | 'EINVAL' | 'EISDIR' | 'EBUSY'): string {
    return w.name ?? fail(whenNull, 'path names no entry');
  }

  protected fileNode(ino: number): InodeRow {
    const node = this.inode(ino);
    if (node.kind === 'dir') fail('EISDIR', 'is a directory');
    if (node.kind !== 'file') fail('EINVAL', 'not a regular file');
    return node;
  }

  protected checkRange(offset: number, len: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(len) || len < 0) fail('EINVAL', 'bad offset or length');
    if (offset + len > MAX_FILE_SIZE) fail('EFBIG', 'file too large');
  }

  /** The size of regular file `ino` (EBADF / EISDIR / EINVAL otherwise); the I/O fast path. */
  protected fileSize(ino: number): number {
    return checkFile(Number.isSafeInteger(ino) ? this.st.fileSize.get(ino) : undefined)[1];
  }

  /** Write `data` at `at` of file `ino`, now `size` bytes long: quota, chunks, size and times. */
  protected writeAt(ino: number, size: number, at: number, data: Uint8Array): void {
    const end = at + data.byteLength;
    if (end > size) this.charge(end - size, 0);
    writeChunks(this.st, ino, size, at, data);
    const t = nowNs();
    this.st.setSize.run(Math.max(end, size), t, t, ino);
  }

  /** Set a file's size: charge growth, drop the chunks past a shrink. */
  protected resize(node: InodeRow, size: number): void {
    if (size > node.size) this.charge(size - node.size, 0);
    else if (size < node.size) {
      truncateChunks(this.st, node.ino, size);
      this.charge(size - node.size, 0);
    }
    const t = nowNs();
    this.st.setSize.run(size, t, t, node.ino);
  }
}
