/**
 * The instance VFS: a POSIX-like filesystem with three volumes in one SQLite database.
 *
 * Owns: the `Vfs` class — path operations (stat, mkdir, rmdir, open, unlink, rename, symlink,
 * readlink, link, readdir), inode I/O (read, readInto, write, append, truncate, times), quotas
 * and volume clearing; the machinery under them (transactions, resolution, accounting) is
 * `VfsCore` in `vfs-core.ts`. The API is synchronous: WASI calls it from a blocked worker thread
 * or from the host.
 *
 * Invariant: every public operation is one SQLite transaction, all or nothing. Once it returns
 * it survives a crash or `kill -9` of the process; after `sync()` it survives power loss too
 * (`durability: 'power-loss'` fsyncs every operation instead — see `sqlite.ts`). The one
 * exceptions are asked for by name: `openInode({ stage: true })` of a missing file stages its
 * creation, and `write(..., hold = true)` may hold a write: the writes that continue either, up
 * to `MAX_HELD_WRITE_BYTES`, are held in memory; all of that commits in one transaction at
 * `release()` or before any other operation of this `Vfs` (and at `sync()` / `close()`), so this
 * connection never observes the difference — until then a crash loses the held span (with the
 * creation), whole. Every
 * guest-supplied path is resolved by `walk()` inside the VFS and never reaches the host
 * filesystem; every failure is a `VfsError` with a WASI errno; `maxBytes` (sum of file and
 * symlink sizes, holes included) and `maxInodes` are never exceeded (ENOSPC for both).
 *
 * Does not protect against: permission bits — `mode` is stored and reported, not enforced (the
 * WASI layer's rights decide who may write); POSIX "unlinked but still open" files — unlinking
 * the last link deletes the contents at once and later inode I/O fails with EBADF; hard links
 * to directories (EPERM); a power loss or kernel crash between a write and the next `sync()`
 * (with the default durability such a write may roll back — whole, never torn).
 */

import { fail } from './errno.ts';
import { openDatabase } from './sqlite.ts';
import {
  MAX_READ_BYTES, O_CREAT, O_DIRECTORY, O_EXCL, O_TRUNC, resolveVfs, CACHE_BYTES, WAL_CHECKPOINT_BYTES,
  type DirEntry, type PathOptions, type Usage, type VfsOptions, type VfsStat,
} from './vfs-config.ts';
import { checkFile, toStat, VfsCore } from './vfs-core.ts';
import { readChunks, readChunksInto, readWithinChunk } from './vfs-data.ts';
import { checkSymlinkTarget } from './vfs-path.ts';
import type { Found } from './vfs-resolve.ts';
import { CHUNK_SIZE, nowNs, VOLUMES, type InodeRow, type VolumeName } from './vfs-schema.ts';

type OpenOptions = PathOptions & {
  mode?: number;
  /**
   * `openInode` only: when the file is missing and `O_CREAT` asks for it, stage its creation
   * instead of committing it (see `VfsCore` `Staged`): the result's `ino` is then a negative
   * handle, valid in every inode operation, that the caller hands to `release()` when done.
   */
  stage?: boolean;
};

export { VOLUMES, CHUNK_SIZE, type VolumeName, type InodeKind } from './vfs-schema.ts';
export { MAX_HELD_WRITE_BYTES } from './vfs-core.ts';
export * from './vfs-config.ts';

export class Vfs extends VfsCore {
  static open(options: VfsOptions = {}): Vfs {
    const config = resolveVfs(options);
    const db = openDatabase(config.file, { durability: config.durability, walCheckpointBytes: WAL_CHECKPOINT_BYTES, cacheBytes: CACHE_BYTES });
    try {
      return new Vfs(config, db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /**
   * A read-only VFS image (e.g. a toolchain's sysroot, built once and shared by every guest that
   * mounts it): opened read-only by SQLite, so even a bug above cannot write to it.
   */
  static openImage(file: string): Vfs {
    const config = resolveVfs({ file });
    const db = openDatabase(config.file, { readonly: true, cacheBytes: CACHE_BYTES });
    try {
      return new Vfs(config, db, true);
    } catch (err) {
      db.close();
      throw err;
    }
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
    ino = this.real(ino);
    return this.atomic(() => toStat(this.inode(ino)), false);
  }

  mkdir(volume: VolumeName, path: string, mode = 0o755, o: Pick<PathOptions, 'from'> = {}): VfsStat {
    return this.mutate(() => {
      const w = this.walkIn(volume, path, false, o.from);
      if (w.node !== null) fail('EEXIST', 'file exists');
      return toStat(this.create(volume, w.parent, this.nameOf(w, 'EEXIST'), 'dir', mode, null));
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
  open(volume: VolumeName, path: string, oflags = 0, o: OpenOptions = {}): VfsStat {
    return this.opening(oflags, () => {
      const r = this.openNode(volume, path, oflags, o, false) as InodeRow | Found;
      return toStat('nlink' in r ? r : this.inode(r.ino));
    });
  }

  /**
   * `open` for a caller that needs only the inode and its kind (WASI `path_open`). With `stage`,
   * a creation (or an open that changes nothing) is only a read; a truncation commits as usual.
   */
  openInode(volume: VolumeName, path: string, oflags = 0, o: OpenOptions = {}): Found {
    if (o.stage === true && (oflags & O_CREAT) !== 0) {
      const r = this.atomic(() => this.openNode(volume, path, oflags, o, true), false);
      if (r !== null) return { ino: r.ino, kind: r.kind };
    }
    return this.opening(oflags, () => {
      const r = this.openNode(volume, path, oflags, o, false) as InodeRow | Found;
      return { ino: r.ino, kind: r.kind };
    });
  }

  /** Done with what `openInode({ stage: true })` returned: commits a staged creation, or throws what refused it. */
  release(ino: number): void {
    this.forget(ino);
  }

  /** Run an open in a write transaction when it may create or truncate, a read one otherwise. */
  private opening<R>(oflags: number, op: () => R): R {
    return (oflags & (O_CREAT | O_TRUNC)) !== 0 ? this.mutate(op) : this.atomic(op, false);
  }

  /**
   * The opened node: its full row when created or truncated, else what the walk found. When
   * `staging` (a read transaction), a creation is staged, and a truncation answers null (the
   * caller opens again in a write transaction).
   */
  private openNode(volume: VolumeName, path: string, oflags: number, o: OpenOptions, staging: boolean): InodeRow | Found | null {
    const w = this.walkIn(volume, path, o.followFinal ?? true, o.from);
    if (w.node === null) {
      if ((oflags & O_CREAT) === 0) fail('ENOENT', 'no such file or directory');
      if ((oflags & O_DIRECTORY) !== 0 || w.trailingSlash) fail('EISDIR', 'cannot create a directory with open');
      const name = this.nameOf(w, 'EISDIR');
      if (staging) return this.stage(volume, w.parent, name, o.mode ?? 0o644);
      return this.create(volume, w.parent, name, 'file', o.mode ?? 0o644, null);
    }
    if ((oflags & O_CREAT) !== 0 && (oflags & O_EXCL) !== 0) fail('EEXIST', 'file exists');
    const { kind } = w.node;
    if (kind === 'symlink') fail('ELOOP', 'final component is a symbolic link');
    if ((oflags & O_DIRECTORY) !== 0 && kind !== 'dir') fail('ENOTDIR', 'not a directory');
    if (kind === 'dir' && (oflags & (O_TRUNC | O_CREAT)) !== 0) fail('EISDIR', 'is a directory');
    if ((oflags & O_TRUNC) === 0) return w.node;
    const node = this.inode(w.node.ino);
    if (node.size === 0) return node;
    if (staging) return null;
    this.resize(node, 0);
    return this.inode(node.ino);
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
      if (w.trailingSlash) fail('ENOENT', 'a new symlink\'s name cannot end in "/"');
      return toStat(this.create(volume, w.parent, this.nameOf(w, 'EEXIST'), 'symlink', 0o777, target));
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

  /** The directory holding directory `ino` (a volume root is its own parent). */
  parentIno(ino: number): number {
    return this.atomic(() => {
      const real = this.real(ino);
      return this.st.parentOf.get(real)?.parent ?? real;
    }, false);
  }

  /** Entries of a directory after `cookie` (0 = from the start), in a stable order. */
  readdir(ino: number, cookie = 0, max = 1024): DirEntry[] {
    ino = this.real(ino);
    return this.atomic(() => {
      if (this.inode(ino).kind !== 'dir') fail('ENOTDIR', 'not a directory');
      if (!Number.isSafeInteger(cookie) || cookie < 0) fail('EINVAL', 'bad cookie');
      const limit = Math.max(0, Math.min(Math.floor(max), 65_536));
      return this.st.listEntries.all(ino, cookie, limit).map((r) => Object.freeze({ name: r.name, ino: r.ino, kind: r.kind, next: r.seq }));
    }, false);
  }

  // ---- inode I/O ---------------------------------------------------------------------------

  read(ino: number, offset: number, len: number): Uint8Array {
    if (!Number.isSafeInteger(len) || len < 0) fail('EINVAL', 'bad length');
    const want = Math.min(len, MAX_READ_BYTES);
    ino = this.real(ino);
    return this.atomic(() => {
      this.checkRange(offset, 0);
      return readChunks(this.st, ino, this.fileSize(ino), offset, want);
    }, false);
  }

  /**
   * Read from `offset` straight into `targets` (e.g. views of a guest's iovecs), filling them in
   * order; returns the byte count (short at end of file; at most `MAX_READ_BYTES` in all).
   */
  readInto(ino: number, offset: number, targets: readonly Uint8Array[]): number {
    ino = this.real(ino);
    let room = MAX_READ_BYTES;
    const capped: Uint8Array[] = [];
    for (const t of targets) {
      if (room === 0) break;
      capped.push(t.length <= room ? t : t.subarray(0, room));
      room -= Math.min(t.length, room);
    }
    this.checkRange(offset, 0);
    if (!this.memo.holds(ino)) {
      // Most reads of small files, and every read at end of file, need one chunk at most: try
      // that in one statement (the chunk holding `offset`, with the file's size).
      const idx = Math.floor(offset / CHUNK_SIZE);
      const end = offset + capped.reduce((n, t) => n + t.length, 0);
      const n = this.single(() => {
        const row = Number.isSafeInteger(ino) ? this.st.fileChunk.get(offset, end, (idx + 1) * CHUNK_SIZE, ino, idx, ino) : undefined;
        const [, size, chunk] = checkFile(row);
        return readWithinChunk(size, chunk, offset, capped);
      });
      if (n !== null) return n;
    }
    return this.atomic(() => readChunksInto(this.st, ino, this.fileSize(ino), offset, capped, this.memo), false);
  }

  /**
   * Write all of `bytes` at `offset` (growing the file); returns the byte count. With `hold`, the
   * write may be held in memory and committed with the writes that continue it (see `VfsCore`
   * `hold()`; WASI `fd_write` at a descriptor's offset); a staged creation's writes always may.
   * An error that refused this file's held writes at their commit is told here or by `release()`.
   */
  write(ino: number, at: number, data: Uint8Array, hold = false): number {
    if (this.hold(ino, at, data, false)) return data.byteLength;
    ino = this.real(ino);
    if (hold && this.hold(ino, at, data, true)) return data.byteLength;
    this.flush();
    this.tellRefusal(ino);
    return this.atomic(() => {
      this.checkRange(at, data.byteLength);
      this.writeAt(ino, this.fileSize(ino), at, data);
      return data.byteLength;
    }, true);
  }

  /** Write all of `data` at the end of the file, in one transaction; returns where it landed. */
  append(ino: number, data: Uint8Array): number {
    ino = this.real(ino);
    return this.atomic(() => {
      const size = this.fileSize(ino);
      this.checkRange(size, data.byteLength);
      this.writeAt(ino, size, size, data);
      return size;
    }, true);
  }

  truncate(ino: number, size: number): void {
    ino = this.real(ino);
    this.atomic(() => {
      this.checkRange(size, 0);
      this.resize(this.fileNode(ino), size);
    }, true);
  }

  /** Set access and/or modification time (ns since the epoch); ctime becomes now. */
  setTimes(ino: number, atimeNs?: bigint, mtimeNs?: bigint): void {
    ino = this.real(ino);
    this.atomic(() => {
      const node = this.inode(ino);
      this.st.setTimes.run(atimeNs ?? node.atime_ns, mtimeNs ?? node.mtime_ns, nowNs(), ino);
    }, true);
  }

  setMode(ino: number, mode: number): void {
    ino = this.real(ino);
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
