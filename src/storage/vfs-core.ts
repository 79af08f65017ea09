/**
 * The machinery under every `Vfs` operation: the connection and its statements, transactions,
 * path resolution in a volume, inode rows, quota accounting and the inode I/O helpers.
 *
 * Owns: `VfsCore`, the base of `Vfs` (`vfs.ts`, which holds the public operations).
 *
 * Invariant: every operation runs inside `atomic()` — one SQLite transaction, so a failure
 * (a quota refusal included) undoes everything the operation did; a write transaction first
 * forgets the read memo; usage counters change only through `charge()`, which refuses (ENOSPC)
 * any increase past `maxBytes` / `maxInodes`.
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
import { walk, type WalkResult } from './vfs-resolve.ts';
import {
  initSchema, nowNs, prepareStatements, readInode,
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

export abstract class VfsCore {
  readonly config: VfsConfig;
  protected readonly db: Database;
  protected readonly st: Statements;
  protected readonly roots: ReadonlyMap<VolumeName, number>;
  protected readonly memo: ChunkMemo;

  protected constructor(config: VfsConfig, db: Database) {
    this.config = config;
    this.db = db;
    initSchema(db);
    this.st = prepareStatements(db);
    this.roots = new Map(this.st.volumeRoots.all().map((r) => [r.name, r.root] as const));
    this.memo = new ChunkMemo(() => (this.st.dataVersion.get() as [number])[0]);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /**
   * Make every write acknowledged so far survive power loss, not only a crash of the process
   * (`fd_sync` / `fd_datasync`); a failure of the host's fsync is EIO.
   */
  sync(): void {
    if (!this.db.open) fail('EBADF', 'the VFS is closed');
    try {
      syncDatabase(this.db);
    } catch {
      fail('EIO', 'sync failed');
    }
  }

  /** The whole database as bytes (a snapshot of an in-memory VFS for a read-only query). */
  serialize(): Uint8Array {
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
    return this.single(() => (write ? this.txWrite : this.txRead)(fn) as R);
  }

  /**
   * Run `fn` without an explicit transaction: only for a read that is one statement (SQLite runs
   * each statement in a snapshot of its own). Errors are mapped as in `atomic`.
   */
  protected single<R>(fn: () => R): R {
    if (!this.db.open) fail('EBADF', 'the VFS is closed');
    try {
      return fn();
    } catch (err) {
      if (err instanceof VfsError || err instanceof SandboxError) throw err;
      throw new SandboxError('INTERNAL', 'VFS storage error', {}, err);
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
    let bytes = 0;
    let inodes = 0;
    for (const r of this.st.getUsage.all()) {
      if (r.key === 'used_bytes') bytes = r.value;
      else inodes = r.value;
    }
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

  /** Make an inode and its entry (parent, name); returns the new row as stored. */
  protected create(volume: VolumeName, parent: number, name: string, kind: InodeKind, mode: number, target: string | null): InodeRow {
    const size = target === null ? 0 : byteLength(target);
    this.charge(size, 1);
    const t = nowNs();
    const nlink = kind === 'dir' ? 2 : 1;
    const ino = Number(this.st.insertInode.run(volume, kind, mode & 0o7777, nlink, size, t, t, t, target).lastInsertRowid);
    this.st.insertEntry.run(parent, name, ino);
    this.st.touchDir.run(t, t, parent);
    if (kind === 'dir') this.st.addLinks.run(1, t, parent);
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
