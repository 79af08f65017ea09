/**
 * The machinery under every `Vfs` operation: the connection and its statements, transactions,
 * path resolution in a volume, inode rows, quota accounting and the inode I/O helpers.
 *
 * Owns: `VfsCore`, the base of `Vfs` (`vfs.ts`, which holds the public operations).
 *
 * Invariant: every operation runs inside `atomic()` — one SQLite transaction, so a failure
 * (a quota refusal included) undoes everything the operation did; a write transaction first
 * forgets the read memo; usage counters change only through `charge()`, which refuses (ENOSPC)
 * any increase past `maxBytes` / `maxInodes`. At most one span of one file's writes is held in
 * memory (`Held`: at most `MAX_HELD_WRITE_BYTES`, maybe with the file's staged creation), and every
 * operation — `single()`, `atomic()`, `sync()`, `close()`, `serialize()` — commits it first, so no
 * operation of this connection ever sees the database without it; the commit is one transaction,
 * so a crash loses the held span whole or not at all.
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
  CHUNK_SIZE, checkSchema, initSchema, nowNs, prepareStatements, readInode,
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

/**
 * Bytes of writes held back at most per connection (then they commit, and a new hold begins):
 * what a `kill -9` of the engine may take beyond the acknowledged, and host memory per connection.
 */
export const MAX_HELD_WRITE_BYTES = 1024 * 1024;

/**
 * Writes held in memory instead of committed: one contiguous span of one file, at most
 * `MAX_HELD_WRITE_BYTES`, in one transaction when any other operation comes (see `hold()`). The
 * file is either an inode being written sequentially, or a creation `openInode({ stage: true })`
 * found missing and did not make yet (`create`): its handle is then a negative number standing in
 * for the inode number until the commit.
 */
interface Held {
  /** The inode, or the staged creation's (negative) handle. */
  readonly ino: number;
  readonly create: {
    readonly volume: VolumeName;
    readonly parent: number;
    readonly name: string;
    readonly mode: number;
    /** `PRAGMA data_version` when staged: unchanged at commit = no other connection committed since. */
    readonly version: number;
  } | null;
  /** `used_bytes` and the file's size when the hold began (nothing of this connection runs before the commit). */
  readonly usedBytes: number;
  readonly size: number;
  /** File offset of the held bytes (in `VfsCore.heldBytes`, from 0). */
  readonly start: number;
  length: number;
}

export abstract class VfsCore {
  readonly config: VfsConfig;
  protected readonly db: Database;
  protected readonly st: Statements;
  protected readonly roots: ReadonlyMap<VolumeName, number>;
  protected readonly memo: ChunkMemo;
  private held: Held | null = null;
  /** The held bytes (allocated at the first hold, reused: SQLite copies what it binds). */
  private heldBytes: Buffer | null = null;
  private lastHandle = 0;
  /** Handle of a committed (or refused) staged creation → its inode (or the error, told on next use). */
  private readonly handles = new Map<number, number | VfsError>();
  /** Inode → the error that refused its held writes at commit, told by its next write or release. */
  private readonly refused = new Map<number, VfsError>();

  protected constructor(config: VfsConfig, db: Database, image = false) {
    this.config = config;
    this.db = db;
    // An image is opened read-only: its schema was written when it was built, and is only checked.
    if (image) checkSchema(db);
    else initSchema(db);
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

  /** Commit the held writes, if any (every operation does this first anyway). */
  flush(): void {
    if (this.db.open) this.settle();
  }

  /**
   * Make every write acknowledged so far survive power loss, not only a crash of the process
   * (`fd_sync` / `fd_datasync`); a failure of the host's fsync is EIO. With `ino`, also throws
   * what refused that file's held writes at their commit (as `fsync` reports a deferred error).
   */
  sync(ino?: number): void {
    if (!this.db.open) fail('EBADF', 'the VFS is closed');
    this.settle();
    try {
      syncDatabase(this.db);
    } catch {
      fail('EIO', 'sync failed');
    }
    if (ino !== undefined) this.tellRefusal(this.real(ino));
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
    if (this.held !== null && this.db.open) this.settle();
    return this.unstaged(fn);
  }

  private dataVersion(): number {
    return (this.st.dataVersion.get() as [number])[0];
  }

  /** `single` without committing the held writes first. */
  private unstaged<R>(fn: () => R): R {
    if (!this.db.open) fail('EBADF', 'the VFS is closed');
    try {
      return fn();
    } catch (err) {
      if (err instanceof VfsError || err instanceof SandboxError) throw err;
      throw new SandboxError('INTERNAL', 'VFS storage error', {}, err);
    }
  }

  // ---- held writes and staged creation -----------------------------------------------------

  /** Stage the creation of file `name` in `parent` (found missing): a handle, nothing written yet. */
  protected stage(volume: VolumeName, parent: number, name: string, mode: number): Found {
    // The inode quota answers at open, as for an immediate creation (charged again at commit).
    const used = this.usage();
    if (used.inodes >= this.config.maxInodes) fail('ENOSPC', 'VFS inode quota exceeded');
    const handle = --this.lastHandle;
    const version = this.db.memory ? 0 : this.dataVersion();
    this.held = { ino: handle, create: { volume, parent, name, mode: mode & 0o7777, version }, usedBytes: used.bytes, size: 0, start: 0, length: 0 };
    return { ino: handle, kind: 'file' };
  }

  /**
   * Hold `data`, written at `at` of `ino`, instead of committing it: when it continues the held
   * span of that file (a staged creation's always may), or — `start`, in a file database — begins a
   * new span of a regular file (committing what was held before). False when it must be written for real: past
   * `MAX_HELD_WRITE_BYTES`, past the byte quota (so the real write answers ENOSPC), not contiguous.
   */
  protected hold(ino: number, at: number, data: Uint8Array, start: boolean): boolean {
    const n = data.byteLength;
    let h = this.held;
    if (h === null || h.ino !== ino || at !== h.start + h.length || (start && h.length + n > MAX_HELD_WRITE_BYTES)) {
      // A private in-memory database commits without I/O: holding would only copy.
      if (!start || ino < 0 || n > MAX_HELD_WRITE_BYTES || this.db.memory || !Number.isSafeInteger(ino)) return false;
      this.settle();
      this.tellRefusal(ino); // a refusal of this file's last span is this write's errno; nothing is held
      this.checkRange(at, n);
      const [size, usedBytes] = this.atomic(() => [this.fileSize(ino), this.usage().bytes] as const, false);
      h = this.held = { ino, create: null, usedBytes, size, start: at, length: 0 };
    }
    const end = at + n;
    if (h.length + n > MAX_HELD_WRITE_BYTES || end > MAX_FILE_SIZE) return false;
    // The byte quota answers at the write that passes it: this connection has done nothing since
    // the hold began, and what another connection did is caught by the charge at commit.
    if (h.usedBytes + Math.max(0, end - h.size) > this.config.maxBytes) return false;
    const buf = (this.heldBytes ??= Buffer.allocUnsafe(MAX_HELD_WRITE_BYTES));
    buf.set(data, h.length); // a copy: `data` may be a view of guest memory
    h.length += n;
    return true;
  }

  /** The inode number behind `ino`: itself, or what a staged creation's handle became (committing it). */
  protected real(ino: number): number {
    if (ino >= 0) return ino;
    if (this.held?.ino === ino) this.settle();
    const r = this.handles.get(ino) ?? fail('EBADF', 'no such inode');
    if (typeof r !== 'number') throw r;
    return r;
  }

  /** Throw (once) the error that refused the held writes of inode `ino` at their commit, if any. */
  protected tellRefusal(ino: number): void {
    const err = this.refused.get(ino);
    if (err === undefined) return;
    this.refused.delete(ino);
    throw err;
  }

  /** Forget a handle: commit what is held; throw the error that refused its writes or creation, if any. */
  protected forget(ino: number): void {
    this.flush();
    if (ino >= 0) return this.tellRefusal(ino);
    try {
      this.real(ino);
    } finally {
      this.handles.delete(ino);
    }
  }

  /** Commit the held writes (with a staged creation) in one transaction; a refusal is kept for the file. */
  private settle(): void {
    const h = this.held;
    if (h === null) return;
    this.held = null;
    const data = (this.heldBytes ?? Buffer.alloc(0)).subarray(0, h.length);
    try {
      const ino = this.atomic(() => {
        const c = h.create;
        if (c === null) {
          this.writeAt(h.ino, this.fileSize(h.ino), h.start, data);
          return h.ino;
        }
        // Only another connection can have changed the directory since the open.
        if (!this.db.memory && this.dataVersion() !== c.version) {
          const dir = this.st.inodeBrief.get(c.parent);
          if (dir === undefined || dir.kind !== 'dir') fail('ENOENT', 'no such file or directory');
          if (this.st.lookup.get(c.parent, c.name) !== undefined) fail('EEXIST', 'file exists');
        }
        return this.create(c.volume, c.parent, c.name, 'file', c.mode, null, data).ino;
      }, true);
      if (h.create !== null) this.handles.set(h.ino, ino);
    } catch (err) {
      const told = err instanceof VfsError ? err : new VfsError('EIO', 'could not write the file');
      if (h.create !== null) this.handles.set(h.ino, told);
      else this.refused.set(h.ino, told);
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
