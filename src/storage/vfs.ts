/**
 * The instance VFS: a POSIX-like filesystem with three volumes in one SQLite database.
 *
 * Owns: the `Vfs` class — path operations (stat, mkdir, rmdir, open, unlink, rename, symlink,
 * readlink, link, readdir), inode I/O (read, write, truncate, times), quotas and volume clearing.
 * The API is synchronous: WASI calls it from a blocked worker thread or from the host.
 *
 * Invariant: every public operation is one SQLite transaction (all or nothing, durable once it
 * returns — see `sqlite.ts`); every guest-supplied path is resolved by `walk()` inside the VFS
 * and never reaches the host filesystem; every failure is a `VfsError` with a WASI errno;
 * `maxBytes` (sum of file and symlink sizes, holes included) and `maxInodes` are never exceeded
 * (ENOSPC for both).
 *
 * Does not protect against: permission bits — `mode` is stored and reported, not enforced (the
 * WASI layer's rights decide who may write); POSIX "unlinked but still open" files — unlinking
 * the last link deletes the contents at once and later inode I/O fails with EBADF; hard links
 * to directories (EPERM).
 */

import { SandboxError } from '../errors.ts';
import { fail, VfsError } from './errno.ts';
import { openDatabase, type Database } from './sqlite.ts';
import {
  MAX_FILE_SIZE, MAX_READ_BYTES, O_CREAT, O_DIRECTORY, O_EXCL, O_TRUNC, resolveVfs,
  type DirEntry, type PathOptions, type Usage, type VfsConfig, type VfsOptions, type VfsStat,
} from './vfs-config.ts';
import { readChunks, truncateChunks, writeChunks } from './vfs-data.ts';
import { byteLength, checkSymlinkTarget } from './vfs-path.ts';
import { walk, type WalkResult } from './vfs-resolve.ts';
import {
  initSchema, nowNs, prepareStatements, readInode, VOLUMES,
  type InodeKind, type InodeRow, type Statements, type VolumeName,
} from './vfs-schema.ts';

export { VOLUMES, CHUNK_SIZE, type VolumeName, type InodeKind } from './vfs-schema.ts';
export * from './vfs-config.ts';

function toStat(r: InodeRow): VfsStat {
  return Object.freeze({
    ino: r.ino, volume: r.volume, kind: r.kind, mode: r.mode, nlink: r.nlink, size: r.size,
    atimeNs: r.atime_ns, mtimeNs: r.mtime_ns, ctimeNs: r.ctime_ns,
  });
}

export class Vfs {
  readonly config: VfsConfig;
  private readonly db: Database;
  private readonly st: Statements;
  private readonly roots: ReadonlyMap<VolumeName, number>;

  private constructor(config: VfsConfig, db: Database) {
    this.config = config;
    this.db = db;
    initSchema(db);
    this.st = prepareStatements(db);
    this.roots = new Map(this.st.volumeRoots.all().map((r) => [r.name, r.root] as const));
  }

  static open(options: VfsOptions = {}): Vfs {
    const config = resolveVfs(options);
    const db = openDatabase(config.file);
    try {
      return new Vfs(config, db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** The whole database as bytes (a snapshot of an in-memory VFS for a read-only query). */
  serialize(): Uint8Array {
    return this.db.serialize();
  }

  // ---- transactions -------------------------------------------------------------------------

  private mutate<R>(fn: () => R): R {
    return this.atomic(fn, true);
  }

  private readonly txWrite = this.dbTx(true);
  private readonly txRead = this.dbTx(false);

  private dbTx(immediate: boolean): (fn: () => unknown) => unknown {
    let tx: ((fn: () => unknown) => unknown) | undefined;
    return (fn) => {
      if (tx === undefined) {
        const t = this.db.transaction((f: () => unknown) => f());
        tx = immediate ? t.immediate : t.deferred;
      }
      return tx(fn);
    };
  }

  private atomic<R>(fn: () => R, write: boolean): R {
    if (!this.db.open) fail('EBADF', 'the VFS is closed');
    try {
      return (write ? this.txWrite : this.txRead)(fn) as R;
    } catch (err) {
      if (err instanceof VfsError || err instanceof SandboxError) throw err;
      throw new SandboxError('INTERNAL', 'VFS storage error', {}, err);
    }
  }

  // ---- helpers -----------------------------------------------------------------------------

  private root(volume: VolumeName): number {
    const root = this.roots.get(volume);
    if (root === undefined) fail('ENOTCAPABLE', 'unknown volume');
    return root;
  }

  private walkIn(volume: VolumeName, path: string, followFinal: boolean, from?: number): WalkResult {
    const root = this.root(volume);
    if (from !== undefined) {
      const dir = this.inode(from);
      if (dir.volume !== volume) fail('EXDEV', 'directory is in another volume');
      if (dir.kind !== 'dir') fail('ENOTDIR', 'not a directory');
    }
    return walk(this.st, root, path, from === undefined ? { followFinal } : { followFinal, from });
  }

  private inode(ino: number): InodeRow {
    return (Number.isSafeInteger(ino) ? readInode(this.st, ino) : undefined) ?? fail('EBADF', 'no such inode');
  }

  private usage(): { bytes: number; inodes: number } {
    let bytes = 0;
    let inodes = 0;
    for (const r of this.st.getUsage.all()) {
      if (r.key === 'used_bytes') bytes = r.value;
      else inodes = r.value;
    }
    return { bytes, inodes };
  }

  private charge(bytes: number, inodes: number): void {
    if (bytes > 0 || inodes > 0) {
      const u = this.usage();
      if (u.bytes + bytes > this.config.maxBytes) fail('ENOSPC', 'VFS byte quota exceeded');
      if (u.inodes + inodes > this.config.maxInodes) fail('ENOSPC', 'VFS inode quota exceeded');
    }
    if (bytes !== 0) this.st.addUsage.run(bytes, 'used_bytes');
    if (inodes !== 0) this.st.addUsage.run(inodes, 'used_inodes');
  }

  private create(volume: VolumeName, parent: number, name: string, kind: InodeKind, mode: number, target: string | null): number {
    const size = target === null ? 0 : byteLength(target);
    this.charge(size, 1);
    const t = nowNs();
    const ino = Number(this.st.insertInode.run(volume, kind, mode & 0o7777, kind === 'dir' ? 2 : 1, size, t, t, t, target).lastInsertRowid);
    this.st.insertEntry.run(parent, name, ino);
    this.st.touchDir.run(t, t, parent);
    if (kind === 'dir') this.st.addLinks.run(1, t, parent);
    return ino;
  }

  /** Remove the entry (parent, name) naming `node`; delete the inode with its last link. */
  private dropEntry(parent: number, name: string, node: InodeRow): void {
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

  private nameOf(w: WalkResult, whenNull: 'EEXIST' | 'EINVAL' | 'EISDIR' | 'EBUSY'): string {
    return w.name ?? fail(whenNull, 'path names no entry');
  }

  // ---- path operations ---------------------------------------------------------------------

  /** Resolve a path to its inode (following a final symlink unless `followFinal: false`). */
  stat(volume: VolumeName, path: string, o: PathOptions = {}): VfsStat {
    return this.atomic(() => {
      const w = this.walkIn(volume, path, o.followFinal ?? true, o.from);
      if (w.node === null) fail('ENOENT', 'no such file or directory');
      return toStat(this.inode(w.node.ino));
    }, false);
  }

  /** Alias of `stat`: resolution is the lookup. */
  resolve(volume: VolumeName, path: string, o: PathOptions = {}): VfsStat {
    return this.stat(volume, path, o);
  }

  statIno(ino: number): VfsStat {
    return this.atomic(() => toStat(this.inode(ino)), false);
  }

  mkdir(volume: VolumeName, path: string, mode = 0o755, o: Pick<PathOptions, 'from'> = {}): VfsStat {
    return this.mutate(() => {
      const w = this.walkIn(volume, path, false, o.from);
      if (w.node !== null) fail('EEXIST', 'file exists');
      const ino = this.create(volume, w.parent, this.nameOf(w, 'EEXIST'), 'dir', mode, null);
      return toStat(this.inode(ino));
    });
  }

  rmdir(volume: VolumeName, path: string, o: Pick<PathOptions, 'from'> = {}): void {
    this.mutate(() => {
      const w = this.walkIn(volume, path, false, o.from);
      if (w.node === null) fail('ENOENT', 'no such file or directory');
      const name = this.nameOf(w, 'EINVAL');
      if (w.node.kind !== 'dir') fail('ENOTDIR', 'not a directory');
      if (this.st.hasEntries.get(w.node.ino) !== undefined) fail('ENOTEMPTY', 'directory not empty');
      this.dropEntry(w.parent, name, this.inode(w.node.ino));
    });
  }

  /** Open (and maybe create or truncate) a file or directory; `oflags` are WASI's bits. */
  open(volume: VolumeName, path: string, oflags = 0, o: PathOptions & { mode?: number } = {}): VfsStat {
    const creating = (oflags & O_CREAT) !== 0;
    const op = (): VfsStat => {
      const w = this.walkIn(volume, path, o.followFinal ?? true, o.from);
      if (w.node === null) {
        if (!creating) fail('ENOENT', 'no such file or directory');
        if ((oflags & O_DIRECTORY) !== 0 || w.trailingSlash) fail('EISDIR', 'cannot create a directory with open');
        const ino = this.create(volume, w.parent, this.nameOf(w, 'EISDIR'), 'file', o.mode ?? 0o644, null);
        return toStat(this.inode(ino));
      }
      if (creating && (oflags & O_EXCL) !== 0) fail('EEXIST', 'file exists');
      const node = this.inode(w.node.ino);
      if (node.kind === 'symlink') fail('ELOOP', 'final component is a symbolic link');
      if ((oflags & O_DIRECTORY) !== 0 && node.kind !== 'dir') fail('ENOTDIR', 'not a directory');
      if (node.kind === 'dir' && (oflags & (O_TRUNC | O_CREAT)) !== 0) fail('EISDIR', 'is a directory');
      if ((oflags & O_TRUNC) !== 0 && node.size !== 0) this.resize(node, 0);
      return toStat(this.inode(node.ino));
    };
    return creating || (oflags & O_TRUNC) !== 0 ? this.mutate(op) : this.atomic(op, false);
  }

  unlink(volume: VolumeName, path: string, o: Pick<PathOptions, 'from'> = {}): void {
    this.mutate(() => {
      const w = this.walkIn(volume, path, false, o.from);
      if (w.node === null) fail('ENOENT', 'no such file or directory');
      const name = this.nameOf(w, 'EISDIR');
      if (w.node.kind === 'dir') fail('EISDIR', 'is a directory');
      this.dropEntry(w.parent, name, this.inode(w.node.ino));
    });
  }

  /** POSIX rename within one volume (across volumes → EXDEV). */
  rename(fromVolume: VolumeName, fromPath: string, toVolume: VolumeName, toPath: string, o: { from?: number; to?: number } = {}): void {
    this.mutate(() => {
      const src = this.walkIn(fromVolume, fromPath, false, o.from);
      if (src.node === null) fail('ENOENT', 'no such file or directory');
      if (fromVolume !== toVolume) fail('EXDEV', 'rename across volumes');
      const srcName = this.nameOf(src, 'EBUSY');
      const dst = this.walkIn(toVolume, toPath, false, o.to);
      const dstName = this.nameOf(dst, 'EBUSY');
      const node = this.inode(src.node.ino);
      if (dst.node === null && dst.trailingSlash && node.kind !== 'dir') fail('ENOTDIR', 'not a directory');
      if (node.kind === 'dir') this.refuseMoveIntoSelf(node.ino, dst.parent);
      if (dst.node !== null) {
        if (dst.node.ino === node.ino) return; // same file: POSIX says do nothing
        const old = this.inode(dst.node.ino);
        if (node.kind === 'dir') {
          if (old.kind !== 'dir') fail('ENOTDIR', 'not a directory');
          if (this.st.hasEntries.get(old.ino) !== undefined) fail('ENOTEMPTY', 'directory not empty');
        } else if (old.kind === 'dir') {
          fail('EISDIR', 'is a directory');
        }
        this.dropEntry(dst.parent, dstName, old);
      }
      const t = nowNs();
      this.st.moveEntry.run(dst.parent, dstName, src.parent, srcName);
      this.st.touchDir.run(t, t, src.parent);
      this.st.touchDir.run(t, t, dst.parent);
      this.st.addLinks.run(0, t, node.ino);
      if (node.kind === 'dir' && src.parent !== dst.parent) {
        this.st.addLinks.run(-1, t, src.parent);
        this.st.addLinks.run(1, t, dst.parent);
      }
    });
  }

  private refuseMoveIntoSelf(dir: number, newParent: number): void {
    for (let cur: number | undefined = newParent; cur !== undefined; cur = this.st.parentOf.get(cur)?.parent) {
      if (cur === dir) fail('EINVAL', 'cannot move a directory into itself');
    }
  }

  symlink(target: string, volume: VolumeName, path: string, o: Pick<PathOptions, 'from'> = {}): VfsStat {
    checkSymlinkTarget(target);
    return this.mutate(() => {
      const w = this.walkIn(volume, path, false, o.from);
      if (w.node !== null) fail('EEXIST', 'file exists');
      const ino = this.create(volume, w.parent, this.nameOf(w, 'EEXIST'), 'symlink', 0o777, target);
      return toStat(this.inode(ino));
    });
  }

  readlink(volume: VolumeName, path: string, o: Pick<PathOptions, 'from'> = {}): string {
    return this.atomic(() => {
      const w = this.walkIn(volume, path, false, o.from);
      if (w.node === null) fail('ENOENT', 'no such file or directory');
      const node = this.inode(w.node.ino);
      if (node.kind !== 'symlink' || node.target === null) fail('EINVAL', 'not a symbolic link');
      return node.target;
    }, false);
  }

  /** Hard link to a file or symlink (directories → EPERM; across volumes → EXDEV). */
  link(fromVolume: VolumeName, fromPath: string, toVolume: VolumeName, toPath: string, o: PathOptions & { to?: number } = {}): VfsStat {
    return this.mutate(() => {
      const src = this.walkIn(fromVolume, fromPath, o.followFinal ?? false, o.from);
      if (src.node === null) fail('ENOENT', 'no such file or directory');
      if (fromVolume !== toVolume) fail('EXDEV', 'link across volumes');
      if (src.node.kind === 'dir') fail('EPERM', 'hard link to a directory');
      const dst = this.walkIn(toVolume, toPath, false, o.to);
      if (dst.node !== null) fail('EEXIST', 'file exists');
      const name = this.nameOf(dst, 'EEXIST');
      if (dst.trailingSlash) fail('ENOENT', 'no such directory');
      const t = nowNs();
      this.st.insertEntry.run(dst.parent, name, src.node.ino);
      this.st.addLinks.run(1, t, src.node.ino);
      this.st.touchDir.run(t, t, dst.parent);
      return toStat(this.inode(src.node.ino));
    });
  }

  /** Entries of a directory after `cookie` (0 = from the start), in a stable order. */
  readdir(ino: number, cookie = 0, max = 1024): DirEntry[] {
    return this.atomic(() => {
      if (this.inode(ino).kind !== 'dir') fail('ENOTDIR', 'not a directory');
      if (!Number.isSafeInteger(cookie) || cookie < 0) fail('EINVAL', 'bad cookie');
      const limit = Math.max(0, Math.min(Math.floor(max), 65_536));
      return this.st.listEntries.all(ino, cookie, limit).map((r) => Object.freeze({ name: r.name, ino: r.ino, kind: r.kind, next: r.seq }));
    }, false);
  }

  // ---- inode I/O ---------------------------------------------------------------------------

  private fileNode(ino: number): InodeRow {
    const node = this.inode(ino);
    if (node.kind === 'dir') fail('EISDIR', 'is a directory');
    if (node.kind !== 'file') fail('EINVAL', 'not a regular file');
    return node;
  }

  private checkRange(offset: number, len: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(len) || len < 0) fail('EINVAL', 'bad offset or length');
    if (offset + len > MAX_FILE_SIZE) fail('EFBIG', 'file too large');
  }

  read(ino: number, offset: number, len: number): Uint8Array {
    if (!Number.isSafeInteger(len) || len < 0) fail('EINVAL', 'bad length');
    const want = Math.min(len, MAX_READ_BYTES);
    return this.atomic(() => {
      this.checkRange(offset, 0);
      const node = this.fileNode(ino);
      return readChunks(this.st, ino, node.size, offset, want);
    }, false);
  }

  /** Write all of `bytes` at `offset` (growing the file); returns the byte count. */
  write(ino: number, at: number, data: Uint8Array): number {
    return this.atomic(() => {
      this.checkRange(at, data.byteLength);
      const node = this.fileNode(ino);
      const end = at + data.byteLength;
      if (end > node.size) this.charge(end - node.size, 0);
      writeChunks(this.st, ino, at, data);
      const t = nowNs();
      this.st.setSize.run(Math.max(end, node.size), t, t, ino);
      return data.byteLength;
    }, true);
  }

  truncate(ino: number, size: number): void {
    this.atomic(() => {
      this.checkRange(size, 0);
      this.resize(this.fileNode(ino), size);
    }, true);
  }

  private resize(node: InodeRow, size: number): void {
    if (size > node.size) this.charge(size - node.size, 0);
    else if (size < node.size) {
      truncateChunks(this.st, node.ino, size);
      this.charge(size - node.size, 0);
    }
    const t = nowNs();
    this.st.setSize.run(size, t, t, node.ino);
  }

  /** Set access and/or modification time (ns since the epoch); ctime becomes now. */
  setTimes(ino: number, atimeNs?: bigint, mtimeNs?: bigint): void {
    this.atomic(() => {
      const node = this.inode(ino);
      this.st.setTimes.run(atimeNs ?? node.atime_ns, mtimeNs ?? node.mtime_ns, nowNs(), ino);
    }, true);
  }

  setMode(ino: number, mode: number): void {
    this.atomic(() => {
      this.inode(ino);
      this.st.setMode.run(mode & 0o7777, nowNs(), ino);
    }, true);
  }

  // ---- volumes and quotas ------------------------------------------------------------------

  rootIno(volume: VolumeName): number {
    return this.root(volume);
  }

  /** Delete everything in a volume, keeping its (now empty) root. */
  clearVolume(volume: VolumeName): void {
    const root = this.root(volume);
    this.atomic(() => {
      this.st.clearVolume.run(volume, root);
      const t = nowNs();
      this.st.resetRoot.run(t, t, root);
      const c = this.st.recount.get() ?? { bytes: 0, inodes: 0 };
      this.st.setUsage.run(c.bytes, 'used_bytes');
      this.st.setUsage.run(c.inodes, 'used_inodes');
    }, true);
  }

  getUsage(): Usage {
    return this.atomic(() => ({ ...this.usage(), maxBytes: this.config.maxBytes, maxInodes: this.config.maxInodes }), false);
  }
}

export function isVolume(v: unknown): v is VolumeName {
  return typeof v === 'string' && (VOLUMES as readonly string[]).includes(v);
}
