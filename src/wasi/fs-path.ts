/**
 * WASI preview 1 `path_*` calls over the VFS: open, stat, times, mkdir/rmdir, unlink, rename,
 * symlink, readlink, link — each relative to a directory descriptor.
 *
 * Owns: turning a (directory fd, guest path) pair into a VFS call on that fd's volume, starting
 * at that fd's inode, and the rights each call needs.
 *
 * Invariant: a guest path is resolved only by the VFS, beneath the directory descriptor it is
 * relative to (`from` = that directory's inode): it names an inode under that directory or fails.
 * `..` past the directory, an absolute guest path and an absolute symlink target are ENOTCAPABLE
 * as WASI requires (never rebased onto the volume root), and `path_symlink` refuses to create a
 * symlink with an absolute target. No host filesystem API is reachable from here. On a
 * read-only mount every mutation answers EROFS.
 *
 * Does not protect against: a hard link (`path_link`) made beneath one descriptor reaching a file
 * that is also reachable under another — both are in the same volume, which is the wall for data.
 */

import { O_CREAT, O_DIRECTORY, O_TRUNC } from '../storage/index.ts';
import {
  DIR_RIGHTS, dirFd, E, FDFLAG_APPEND, FILE_RIGHTS, guard, MUTATING_RIGHTS, mutating, R, readPath, refuse,
  timesFrom, writeFilestat, type FdTable, type OpenFd, type VfsWasiContext, type WasiFn,
} from './fd-table.ts';

const LOOKUP_SYMLINK_FOLLOW = 1;
const KNOWN_OFLAGS = 15;

export function pathCalls(ctx: VfsWasiContext, table: FdTable): Record<string, WasiFn> {
  const { memory } = ctx;
  const g = <A extends unknown[]>(fn: (...a: A) => number) => guard(ctx.state, fn);

  /** The guest path at (ptr, len), refused when absolute. */
  const path = (ptr: number, len: number): string => {
    const p = readPath(memory, ptr, len);
    if (p.startsWith('/')) refuse(E.NOTCAPABLE);
    return p;
  };

  return {
    path_open: g((fd: number, dirflags: number, ptr: number, len: number, oflags: number,
      base: bigint, inheriting: bigint, fdflags: number, out: number) => {
      const d = dirFd(table, fd, R.PATH_OPEN);
      const p = path(ptr, len);
      if ((oflags & ~KNOWN_OFLAGS) !== 0) refuse(E.INVAL);
      const want = BigInt.asUintN(64, base);
      const wantInh = BigInt.asUintN(64, inheriting);
      if ((oflags & (O_CREAT | O_TRUNC)) !== 0 || (want & MUTATING_RIGHTS) !== 0n) mutating(ctx, d);
      if ((oflags & O_CREAT) !== 0 && (d.rightsBase & R.PATH_CREATE_FILE) === 0n) refuse(E.NOTCAPABLE);
      if ((oflags & O_TRUNC) !== 0 && (d.rightsBase & R.PATH_FILESTAT_SET_SIZE) === 0n) refuse(E.NOTCAPABLE);
      // A descriptor never gains a right its directory cannot hand down.
      if ((want & ~d.rightsInheriting & (FILE_RIGHTS | DIR_RIGHTS)) !== 0n) refuse(E.NOTCAPABLE);
      memory.check(out, 4);
      table.reserve();
      // A new file's creation is staged: it commits with the first bytes written to it, at the
      // latest when this descriptor closes (see fs.ts on what is acknowledged when).
      const st = d.vfs.openInode(d.volume, p, oflags, { from: d.ino, followFinal: (dirflags & LOOKUP_SYMLINK_FOLLOW) !== 0, stage: true });
      if (st.kind === 'dir') {
        // A directory is never opened for writing (POSIX open(dir, O_RDWR) is EISDIR too).
        if ((fdflags & FDFLAG_APPEND) !== 0 || (want & R.FD_WRITE) !== 0n) refuse(E.ISDIR);
      } else if ((oflags & O_DIRECTORY) !== 0) {
        refuse(E.NOTDIR);
      }
      const entry: OpenFd = {
        kind: st.kind === 'dir' ? 'dir' : 'file',
        vfs: d.vfs,
        imageDev: d.imageDev,
        volume: d.volume,
        ino: st.ino,
        preopen: null,
        rightsBase: want & d.rightsInheriting & (st.kind === 'dir' ? DIR_RIGHTS : FILE_RIGHTS),
        rightsInheriting: wantInh & d.rightsInheriting,
        fdflags: fdflags & 0xffff,
        offset: 0,
      };
      memory.setU32(out, table.add(entry));
      return E.SUCCESS;
    }),

    path_filestat_get: g((fd: number, flags: number, ptr: number, len: number, buf: number) => {
      const d = dirFd(table, fd, R.PATH_FILESTAT_GET);
      const st = d.vfs.stat(d.volume, path(ptr, len), { from: d.ino, followFinal: (flags & LOOKUP_SYMLINK_FOLLOW) !== 0 });
      writeFilestat(memory, buf, st, d.imageDev);
      return E.SUCCESS;
    }),

    path_filestat_set_times: g((fd: number, flags: number, ptr: number, len: number, atim: bigint, mtim: bigint, fst: number) => {
      mutating(ctx);
      const d = dirFd(table, fd, R.PATH_FILESTAT_SET_TIMES);
      mutating(ctx, d);
      const p = path(ptr, len);
      const t = timesFrom(atim, mtim, fst);
      const st = d.vfs.stat(d.volume, p, { from: d.ino, followFinal: (flags & LOOKUP_SYMLINK_FOLLOW) !== 0 });
      d.vfs.setTimes(st.ino, t.atime, t.mtime);
      return E.SUCCESS;
    }),

    path_create_directory: g((fd: number, ptr: number, len: number) => {
      mutating(ctx);
      const d = dirFd(table, fd, R.PATH_CREATE_DIRECTORY);
      mutating(ctx, d);
      d.vfs.mkdir(d.volume, path(ptr, len), 0o755, { from: d.ino });
      return E.SUCCESS;
    }),

    path_remove_directory: g((fd: number, ptr: number, len: number) => {
      mutating(ctx);
      const d = dirFd(table, fd, R.PATH_REMOVE_DIRECTORY);
      mutating(ctx, d);
      d.vfs.rmdir(d.volume, path(ptr, len), { from: d.ino });
      return E.SUCCESS;
    }),

    path_unlink_file: g((fd: number, ptr: number, len: number) => {
      mutating(ctx);
      const d = dirFd(table, fd, R.PATH_UNLINK_FILE);
      mutating(ctx, d);
      d.vfs.unlink(d.volume, path(ptr, len), { from: d.ino });
      return E.SUCCESS;
    }),

    path_rename: g((fd: number, ptr: number, len: number, newFd: number, newPtr: number, newLen: number) => {
      mutating(ctx);
      // Across file systems (the image and the guest's VFS) EXDEV, before either side's rights.
      if (dirFd(table, fd, 0n).vfs !== dirFd(table, newFd, 0n).vfs) refuse(E.XDEV);
      const a = dirFd(table, fd, R.PATH_RENAME_SOURCE);
      const b = dirFd(table, newFd, R.PATH_RENAME_TARGET);
      mutating(ctx, a);
      mutating(ctx, b);
      if (a.vfs !== b.vfs) refuse(E.XDEV);
      a.vfs.rename(a.volume, path(ptr, len), b.volume, path(newPtr, newLen), { from: a.ino, to: b.ino });
      return E.SUCCESS;
    }),

    path_symlink: g((oldPtr: number, oldLen: number, fd: number, ptr: number, len: number) => {
      mutating(ctx);
      const d = dirFd(table, fd, R.PATH_SYMLINK);
      // The target is stored as text and only ever expanded beneath the directory a path is
      // relative to: an absolute target could never resolve, so it is refused up front.
      const target = readPath(memory, oldPtr, oldLen);
      if (target.startsWith('/')) refuse(E.NOTCAPABLE);
      mutating(ctx, d);
      d.vfs.symlink(target, d.volume, path(ptr, len), { from: d.ino });
      return E.SUCCESS;
    }),

    path_readlink: g((fd: number, ptr: number, len: number, buf: number, bufLen: number, used: number) => {
      const d = dirFd(table, fd, R.PATH_READLINK);
      const target = new TextEncoder().encode(d.vfs.readlink(d.volume, path(ptr, len), { from: d.ino }));
      memory.check(used, 4);
      const n = Math.min(target.length, bufLen >>> 0);
      memory.write(buf, target.subarray(0, n));
      memory.setU32(used, n);
      return E.SUCCESS;
    }),

    path_link: g((oldFd: number, oldFlags: number, oldPtr: number, oldLen: number, newFd: number, newPtr: number, newLen: number) => {
      mutating(ctx);
      // Across file systems (the image and the guest's VFS) EXDEV, before either side's rights.
      if (dirFd(table, oldFd, 0n).vfs !== dirFd(table, newFd, 0n).vfs) refuse(E.XDEV);
      const a = dirFd(table, oldFd, R.PATH_LINK_SOURCE);
      const b = dirFd(table, newFd, R.PATH_LINK_TARGET);
      mutating(ctx, a);
      mutating(ctx, b);
      if (a.vfs !== b.vfs) refuse(E.XDEV);
      a.vfs.link(a.volume, path(oldPtr, oldLen), b.volume, path(newPtr, newLen), {
        from: a.ino, to: b.ino, followFinal: (oldFlags & LOOKUP_SYMLINK_FOLLOW) !== 0,
      });
      return E.SUCCESS;
    }),
  };
}
