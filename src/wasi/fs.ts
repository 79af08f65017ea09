/**
 * WASI preview 1 filesystem over the instance VFS: the preopens, the `fd_*` calls for files and
 * directories, and (from `fs-path.ts`) the `path_*` calls. Descriptors 0–2 are delegated to
 * the ambient stdio functions of `ambient.ts`.
 *
 * Why hand-written: `node:wasi` maps real host directories and says it is not a sandbox. Here a
 * descriptor is a VFS inode in a volume; there is no `node:fs` anywhere in these files.
 *
 * Owns: `vfsWasi()` — the preopen table (fd 3.. in the order given, each a volume root), file
 * offsets, append mode, reads/writes with iovecs, seek/tell, filestat, sizes, times, directory
 * listing with cookies, close/renumber and the rights checks of each call.
 *
 * Invariant: every guest pointer is bounds-checked (EFAULT), every VFS failure is its errno, every
 * write needs FD_WRITE on its descriptor and none is possible on a read-only mount (EROFS); any
 * other exception propagates as a bug. What is acknowledged when (docs/storage.md): `fd_write`s
 * that continue one another at a descriptor's offset (with the creation of a file `path_open
 * (O_CREAT)` made) are held, at most `MAX_HELD_WRITE_BYTES`, and committed in one transaction when
 * `fd_close` returns — or earlier, before any other VFS call, a write elsewhere, a host call or the
 * end of the guest's call; every other write is one VFS transaction, committed when its call
 * returns. Committed survives a crash or `kill -9` of the
 * engine; `fd_sync`/`fd_datasync` commit and make everything so far survive power loss too (an
 * fsync of the VFS database; a no-op for an in-memory VFS).
 *
 * Does not protect against: a guest filling its VFS quota (the VFS answers ENOSPC) or holding
 * `MAX_FDS` descriptors open (EMFILE for itself only).
 */

import {
  DIR_RIGHTS, E, FDFLAG_APPEND, FdTable, FILE_RIGHTS, FILETYPE, fileFd, filetypeOf, guard, MUTATING_RIGHTS,
  mutating, R, refuse, timesFrom, writeFilestat, type OpenFd, type VfsWasiContext, type WasiFn,
} from './fd-table.ts';
import { pathCalls } from './fs-path.ts';
import { pollOneoff } from './ambient.ts';
import { PORT_FD } from './port.ts';

export { MAX_FDS, type Preopen, type VfsWasiContext, type WasiFn } from './fd-table.ts';

const MAX_OFFSET = 2 ** 48;
const DIRENT_HEADER = 24;
const READDIR_BATCH = 256;
const encoder = new TextEncoder();

export function vfsWasi(ctx: VfsWasiContext, stdio: Record<string, WasiFn>): Record<string, WasiFn> {
  const { memory, vfs } = ctx;
  const table = new FdTable();
  const ro = ctx.readOnly === true ? ~MUTATING_RIGHTS : ~0n;
  for (const p of ctx.preopens) {
    if (typeof p.guestPath !== 'string' || !p.guestPath.startsWith('/')) throw new TypeError('a preopen guestPath is absolute');
    const own = p.image?.vfs ?? vfs;
    const rights = p.image ? ~MUTATING_RIGHTS : ro;
    table.add({
      kind: 'dir', vfs: own, imageDev: p.image?.dev ?? null, volume: p.volume, ino: own.rootIno(p.volume), preopen: encoder.encode(p.guestPath),
      rightsBase: DIR_RIGHTS & rights, rightsInheriting: (DIR_RIGHTS | FILE_RIGHTS) & rights, fdflags: 0, offset: 0,
    });
  }

  const g = <A extends unknown[]>(fn: (...a: A) => number) => guard(ctx.state, fn);
  /** A descriptor naming a stdio stream (0–2 unless renumbered). */
  const isStdio = (fd: number): boolean => table.stdioOf(fd) !== undefined;
  /** A stdio descriptor's call goes to the ambient implementation, on the stream it names. */
  const delegate = (name: string, fd: number, ...a: number[]): number =>
    (stdio[name] as unknown as (...x: number[]) => number)(table.stdioOf(fd) as number, ...a);
  /** Sockets: Membrane never creates one, so an open descriptor is never a socket. */
  const noSocket = g((fd: number) => (table.isOpen(fd) ? E.NOTSOCK : E.BADF));
  /** A non-stdio fd of any kind. */
  const anyFd = (fd: number): OpenFd => table.get(fd);

  /** Read at `at` straight into the guest's iovecs (one VFS transaction, no staging copy). */
  const readInto = (f: OpenFd, iovs: number, count: number, at: number): number =>
    f.vfs.readInto(f.ino, at, memory.iovecs(iovs, count).map(([p, l]) => memory.bytes(p, l)));

  /**
   * The bytes of the guest's iovecs: a view of guest memory when one iovec is non-empty (the VFS
   * copies what it stores before the guest runs again), a gathered copy otherwise.
   */
  const gather = (iovs: number, count: number): Uint8Array => {
    const vecs = memory.iovecs(iovs, count).filter(([, l]) => l > 0);
    if (vecs.length === 1) return memory.bytes(...(vecs[0] as [number, number]));
    const out = new Uint8Array(vecs.reduce((n, [, l]) => n + l, 0));
    let at = 0;
    for (const [p, l] of vecs) {
      out.set(memory.bytes(p, l), at);
      at += l;
    }
    return out;
  };

  const offsetArg = (v: bigint): number => {
    if (v < 0n || v > BigInt(MAX_OFFSET)) refuse(E.INVAL);
    return Number(v);
  };

  return {
    ...pathCalls(ctx, table),

    fd_read: g((fd: number, iovs: number, count: number, nread: number) => {
      if (fd === PORT_FD && ctx.wasi?.port) return (stdio['fd_read'] as unknown as (...x: number[]) => number)(fd, iovs, count, nread);
      if (isStdio(fd)) return delegate('fd_read', fd, iovs, count, nread);
      const f = fileFd(table, fd, R.FD_READ);
      memory.check(nread, 4);
      const n = readInto(f, iovs, count, f.offset);
      f.offset += n;
      memory.setU32(nread, n);
      return E.SUCCESS;
    }),

    fd_pread: g((fd: number, iovs: number, count: number, offset: bigint, nread: number) => {
      if (isStdio(fd)) return E.SPIPE;
      const f = fileFd(table, fd, R.FD_READ | R.FD_SEEK);
      memory.check(nread, 4);
      memory.setU32(nread, readInto(f, iovs, count, offsetArg(offset)));
      return E.SUCCESS;
    }),

    fd_write: g((fd: number, iovs: number, count: number, nwritten: number) => {
      if (fd === PORT_FD && ctx.wasi?.port) return (stdio['fd_write'] as unknown as (...x: number[]) => number)(fd, iovs, count, nwritten);
      if (isStdio(fd)) return delegate('fd_write', fd, iovs, count, nwritten);
      mutating(ctx);
      const f = fileFd(table, fd, R.FD_WRITE);
      mutating(ctx, f);
      memory.check(nwritten, 4);
      const data = gather(iovs, count);
      let at = f.offset;
      if ((f.fdflags & FDFLAG_APPEND) !== 0) at = f.vfs.append(f.ino, data);
      else f.vfs.write(f.ino, at, data, true); // may be held: sequential writes commit together
      f.offset = at + data.length;
      memory.setU32(nwritten, data.length);
      return E.SUCCESS;
    }),

    fd_pwrite: g((fd: number, iovs: number, count: number, offset: bigint, nwritten: number) => {
      if (isStdio(fd)) return E.SPIPE;
      mutating(ctx);
      const f = fileFd(table, fd, R.FD_WRITE | R.FD_SEEK);
      mutating(ctx, f);
      memory.check(nwritten, 4);
      const at = offsetArg(offset);
      memory.setU32(nwritten, f.vfs.write(f.ino, at, gather(iovs, count)));
      return E.SUCCESS;
    }),

    fd_seek: g((fd: number, offset: bigint, whence: number, out: number) => {
      if (isStdio(fd)) return delegate('fd_seek', fd);
      const f = fileFd(table, fd, offset === 0n && whence === 1 ? R.FD_TELL : R.FD_SEEK);
      memory.check(out, 8);
      let base: bigint;
      if (whence === 0) base = 0n;
      else if (whence === 1) base = BigInt(f.offset);
      else if (whence === 2) base = BigInt(f.vfs.statIno(f.ino).size);
      else return E.INVAL;
      f.offset = offsetArg(base + BigInt.asIntN(64, offset));
      memory.setU64(out, BigInt(f.offset));
      return E.SUCCESS;
    }),

    fd_tell: g((fd: number, out: number) => {
      if (isStdio(fd)) return delegate('fd_tell', fd);
      const f = fileFd(table, fd, R.FD_TELL);
      memory.setU64(out, BigInt(f.offset));
      return E.SUCCESS;
    }),

    fd_close: g((fd: number) => {
      if (isStdio(fd)) {
        table.close(fd);
        return E.SUCCESS;
      }
      const f = anyFd(fd);
      table.close(fd);
      f.vfs.release(f.ino); // commits held writes; a refusal only the commit finds (e.g. ENOSPC) is close's errno
      return E.SUCCESS;
    }),

    fd_renumber: g((from: number, to: number) => {
      const closed = table.renumber(from, to);
      if (closed !== null) closed.vfs.release(closed.ino);
      return E.SUCCESS;
    }),

    ...(ctx.wasi ? { poll_oneoff: pollOneoff(ctx.wasi, (fd) => table.stdioOf(fd)) } : {}),
    sock_accept: noSocket,
    sock_recv: noSocket,
    sock_send: noSocket,
    sock_shutdown: noSocket,

    fd_fdstat_get: g((fd: number, out: number) => {
      if (isStdio(fd)) return delegate('fd_fdstat_get', fd, out);
      const f = anyFd(fd);
      memory.check(out, 24);
      const v = memory.view(); // one view for the whole record (wasi-libc asks on every fopen)
      const p = out >>> 0;
      v.setUint8(p, f.kind === 'dir' ? FILETYPE.DIRECTORY : FILETYPE.REGULAR_FILE);
      v.setUint8(p + 1, 0);
      v.setUint16(p + 2, f.fdflags, true);
      v.setUint32(p + 4, 0, true);
      v.setBigUint64(p + 8, f.rightsBase, true);
      v.setBigUint64(p + 16, f.rightsInheriting, true);
      return E.SUCCESS;
    }),

    fd_fdstat_set_flags: g((fd: number, flags: number) => {
      if (isStdio(fd)) return delegate('fd_fdstat_set_flags', fd, flags);
      const f = anyFd(fd);
      if ((f.rightsBase & R.FD_FDSTAT_SET_FLAGS) === 0n) return E.NOTCAPABLE;
      if (f.kind === 'dir' && (flags & FDFLAG_APPEND) !== 0) return E.ISDIR;
      f.fdflags = flags & 0x1f;
      return E.SUCCESS;
    }),

    fd_fdstat_set_rights: g((fd: number, base: bigint, inheriting: bigint) => {
      if (isStdio(fd)) return E.NOTSUP;
      const f = anyFd(fd);
      const b = BigInt.asUintN(64, base);
      const i = BigInt.asUintN(64, inheriting);
      // Rights only ever narrow.
      if ((b & ~f.rightsBase) !== 0n || (i & ~f.rightsInheriting) !== 0n) return E.NOTCAPABLE;
      f.rightsBase = b;
      f.rightsInheriting = i;
      return E.SUCCESS;
    }),

    fd_sync: g((fd: number) => {
      if (isStdio(fd)) return delegate('fd_sync', fd);
      const f = anyFd(fd);
      if ((f.rightsBase & R.FD_SYNC) === 0n) return E.NOTCAPABLE;
      f.vfs.sync(f.ino);
      return E.SUCCESS;
    }),

    fd_datasync: g((fd: number) => {
      if (isStdio(fd)) return delegate('fd_datasync', fd);
      const f = anyFd(fd);
      if ((f.rightsBase & R.FD_DATASYNC) === 0n) return E.NOTCAPABLE;
      f.vfs.sync(f.ino);
      return E.SUCCESS;
    }),

    fd_advise: g((fd: number, offset: bigint, len: bigint, advice: number) => {
      if (isStdio(fd)) return E.SPIPE;
      fileFd(table, fd, R.FD_ADVISE);
      if (offset < 0n || len < 0n || advice < 0 || advice > 5) return E.INVAL;
      return E.SUCCESS;
    }),

    fd_allocate: g((fd: number, offset: bigint, len: bigint) => {
      if (isStdio(fd)) return E.SPIPE;
      mutating(ctx);
      const f = fileFd(table, fd, R.FD_ALLOCATE);
      mutating(ctx, f);
      const end = offsetArg(BigInt.asIntN(64, offset) + BigInt.asIntN(64, len));
      if (offset < 0n || len <= 0n) return E.INVAL;
      if (end > f.vfs.statIno(f.ino).size) f.vfs.truncate(f.ino, end);
      return E.SUCCESS;
    }),

    fd_filestat_get: g((fd: number, buf: number) => {
      if (isStdio(fd)) {
        memory.check(buf, 64);
        memory.bytes(buf, 64).fill(0);
        memory.setU8(buf + 16, FILETYPE.CHARACTER_DEVICE);
        return E.SUCCESS;
      }
      const f = anyFd(fd);
      if ((f.rightsBase & R.FD_FILESTAT_GET) === 0n) return E.NOTCAPABLE;
      writeFilestat(memory, buf, f.vfs.statIno(f.ino), f.imageDev);
      return E.SUCCESS;
    }),

    fd_filestat_set_size: g((fd: number, size: bigint) => {
      if (isStdio(fd)) return E.INVAL;
      mutating(ctx);
      const f = fileFd(table, fd, R.FD_FILESTAT_SET_SIZE);
      mutating(ctx, f);
      f.vfs.truncate(f.ino, offsetArg(BigInt.asIntN(64, size)));
      return E.SUCCESS;
    }),

    fd_filestat_set_times: g((fd: number, atim: bigint, mtim: bigint, fst: number) => {
      if (isStdio(fd)) return E.NOTCAPABLE;
      mutating(ctx);
      const f = anyFd(fd);
      mutating(ctx, f);
      if ((f.rightsBase & R.FD_FILESTAT_SET_TIMES) === 0n) return E.NOTCAPABLE;
      const t = timesFrom(atim, mtim, fst);
      f.vfs.setTimes(f.ino, t.atime, t.mtime);
      return E.SUCCESS;
    }),

    fd_prestat_get: g((fd: number, out: number) => {
      const f = isStdio(fd) ? refuse(E.BADF) : anyFd(fd);
      if (f.preopen === null) return E.BADF;
      memory.check(out, 8);
      memory.setU32(out, 0); // tag 0 = directory (and padding)
      memory.setU32(out + 4, f.preopen.length);
      return E.SUCCESS;
    }),

    fd_prestat_dir_name: g((fd: number, ptr: number, len: number) => {
      const f = isStdio(fd) ? refuse(E.BADF) : anyFd(fd);
      if (f.preopen === null) return E.BADF;
      if (len >>> 0 < f.preopen.length) return E.NAMETOOLONG;
      memory.write(ptr, f.preopen);
      return E.SUCCESS;
    }),

    fd_readdir: g((fd: number, buf: number, bufLen: number, cookie: bigint, used: number) => {
      if (isStdio(fd)) return E.NOTDIR;
      const d = anyFd(fd);
      if (d.kind !== 'dir') return E.NOTDIR;
      if ((d.rightsBase & R.FD_READDIR) === 0n) return E.NOTCAPABLE;
      const cap = bufLen >>> 0;
      memory.check(buf, cap);
      memory.check(used, 4);
      const c = BigInt.asUintN(64, cookie);
      if (c > BigInt(Number.MAX_SAFE_INTEGER)) return E.INVAL;
      const out = direntBytes(ctx, d, Number(c), cap);
      memory.write(buf, out.subarray(0, Math.min(cap, out.length)));
      memory.setU32(used, Math.min(cap, out.length));
      return E.SUCCESS;
    }),
  };
}

/**
 * Serialised dirents starting after `cookie` until at least `cap` bytes (or the end). Cookies:
 * 0 = start, 1 = after `.`, 2 = after `..`, then a VFS entry's `next` + 2.
 */
function direntBytes(ctx: VfsWasiContext, d: OpenFd, cookie: number, cap: number): Uint8Array {
  const parts: Uint8Array[] = [];
  let total = 0;
  const push = (next: number, ino: number, type: number, name: string): void => {
    const nb = encoder.encode(name);
    const e = new Uint8Array(DIRENT_HEADER + nb.length);
    const v = new DataView(e.buffer);
    v.setBigUint64(0, BigInt(next), true);
    v.setBigUint64(8, BigInt(ino), true);
    v.setUint32(16, nb.length, true);
    v.setUint8(20, type);
    e.set(nb, DIRENT_HEADER);
    parts.push(e);
    total += e.length;
  };
  if (cookie === 0) push(1, d.ino, FILETYPE.DIRECTORY, '.');
  if (cookie <= 1 && total < cap) {
    push(2, d.vfs.parentIno(d.ino), FILETYPE.DIRECTORY, '..');
  }
  let vfsCookie = Math.max(0, cookie - 2);
  while (total < cap) {
    const batch = d.vfs.readdir(d.ino, vfsCookie, READDIR_BATCH);
    for (const e of batch) {
      push(e.next + 2, e.ino, filetypeOf(e.kind), e.name);
      vfsCookie = e.next;
      if (total >= cap) break;
    }
    if (batch.length < READDIR_BATCH) break;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
