/**
 * WASI preview 2, `wasi:filesystem` (types, preopens) over the instance's VFS — the `vfs` cap's
 * interfaces for components, with the same preopens as WASI preview 1 (`/`, `/tmp`, `/memory`).
 *
 * Owns: descriptors (a volume and an inode, opened read and/or write), their streams, directory
 * listings, and the mapping from the VFS's errnos to WASI p2 `error-code`s.
 * Invariant: every path is resolved by the VFS beneath the descriptor it is relative to
 * (`from` = that directory's inode, src/storage/vfs-resolve.ts): `..` past it, an absolute path
 * and an absolute symlink target are refused (`not-permitted`, p2's name for ENOTCAPABLE), never
 * rebased; `symlink-at` refuses an absolute target; a read-only VFS answers `read-only` to every
 * mutation. No host filesystem API is reachable from here.
 *
 * Does not protect against: a hard link made under one preopen reaching a file also reachable
 * under another — both are in the same volume, which is the wall for data.
 */

import { O_CREAT, O_DIRECTORY, O_EXCL, O_TRUNC, VfsError, type Vfs, type VfsSpec, type VfsStat, type VolumeName } from '../../storage/index.ts';
import { InputStream, IoError, OutputStream, ownBytes, type P2Context } from './streams.ts';

const CODES: Readonly<Record<string, string>> = {
  EACCES: 'access', EAGAIN: 'would-block', EBADF: 'bad-descriptor', EBUSY: 'busy', EDQUOT: 'quota', EEXIST: 'exist',
  EFBIG: 'file-too-large', EINVAL: 'invalid', EIO: 'io', EISDIR: 'is-directory', ELOOP: 'loop', EMLINK: 'too-many-links',
  ENAMETOOLONG: 'name-too-long', ENOENT: 'no-entry', ENOSPC: 'insufficient-space', ENOTDIR: 'not-directory',
  ENOTEMPTY: 'not-empty', ENOTSUP: 'unsupported', ENOSYS: 'unsupported', EPERM: 'not-permitted', EROFS: 'read-only',
  EXDEV: 'cross-device', ENOTCAPABLE: 'not-permitted',
};

/** Run a VFS operation; its refusal is thrown as the p2 error code (the glue lowers it). */
function vfsCall<R>(fn: () => R): R {
  try {
    return fn();
  } catch (e) {
    if (e instanceof VfsError) throw CODES[e.code] ?? 'io';
    throw e;
  }
}

const typeOf = (kind: string): string => (kind === 'dir' ? 'directory' : kind === 'symlink' ? 'symbolic-link' : kind === 'file' ? 'regular-file' : 'unknown');
const stamp = (ns: bigint): { seconds: bigint; nanoseconds: number } => ({ seconds: ns / 1_000_000_000n, nanoseconds: Number(ns % 1_000_000_000n) });

interface Flags {
  readonly read?: boolean;
  readonly write?: boolean;
  readonly mutateDirectory?: boolean;
}

export interface P2FsContext {
  readonly vfs: () => Vfs;
  readonly spec: VfsSpec;
  readonly run: P2Context;
}

export function filesystemP2(fs: P2FsContext): Record<string, Record<string, unknown>> {
  const { readOnly } = fs.spec;
  const writable = (): void => {
    if (readOnly) throw 'read-only';
  };

  class DirectoryEntryStream {
    private cookie = 0;
    private done = false;
    constructor(private readonly ino: number) {}
    readDirectoryEntry(): { type: string; name: string } | undefined {
      if (this.done) return undefined;
      const [e] = vfsCall(() => fs.vfs().readdir(this.ino, this.cookie, 1));
      if (!e) {
        this.done = true;
        return undefined;
      }
      this.cookie = e.next;
      return { type: typeOf(e.kind), name: e.name };
    }
  }

  class Descriptor {
    /** `ino` null: a preopen's root, looked up on first use (a guest that never touches files opens no database). */
    constructor(readonly volume: VolumeName, private root: number | null, readonly kind: string, readonly flags: Flags) {}

    get ino(): number {
      return (this.root ??= vfsCall(() => fs.vfs().rootIno(this.volume)));
    }

    private info(): VfsStat {
      return vfsCall(() => fs.vfs().statIno(this.ino));
    }
    private dir(): void {
      if (this.kind !== 'dir') throw 'not-directory';
    }
    private file(): void {
      if (this.kind === 'dir') throw 'is-directory';
    }
    private at = (extra: { followFinal?: boolean } = {}): { from: number; followFinal?: boolean } => ({ from: this.ino, ...extra });

    getType(): string {
      return typeOf(this.kind);
    }
    getFlags(): Flags {
      return { ...this.flags };
    }
    private statDescriptor(s: VfsStat): Record<string, unknown> {
      return {
        type: typeOf(s.kind),
        linkCount: BigInt(s.nlink),
        size: BigInt(s.size),
        dataAccessTimestamp: stamp(s.atimeNs),
        dataModificationTimestamp: stamp(s.mtimeNs),
        statusChangeTimestamp: stamp(s.ctimeNs),
      };
    }
    stat(): Record<string, unknown> {
      return this.statDescriptor(this.info());
    }
    statAt(pathFlags: { symlinkFollow?: boolean }, path: string): Record<string, unknown> {
      this.dir();
      return this.statDescriptor(vfsCall(() => fs.vfs().stat(this.volume, path, this.at({ followFinal: pathFlags.symlinkFollow === true }))));
    }
    metadataHash(): { upper: bigint; lower: bigint } {
      const s = this.info();
      return { upper: BigInt(s.ino), lower: BigInt(s.mtimeNs) };
    }
    metadataHashAt(pathFlags: { symlinkFollow?: boolean }, path: string): { upper: bigint; lower: bigint } {
      this.dir();
      const s = vfsCall(() => fs.vfs().stat(this.volume, path, this.at({ followFinal: pathFlags.symlinkFollow === true })));
      return { upper: BigInt(s.ino), lower: BigInt(s.mtimeNs) };
    }
    isSameObject(other: Descriptor): boolean {
      return other instanceof Descriptor && other.volume === this.volume && other.ino === this.ino;
    }
    openAt(pathFlags: { symlinkFollow?: boolean }, path: string, open: { create?: boolean; directory?: boolean; exclusive?: boolean; truncate?: boolean }, flags: Flags): Descriptor {
      this.dir();
      const oflags = (open.create ? O_CREAT : 0) | (open.directory ? O_DIRECTORY : 0) | (open.exclusive ? O_EXCL : 0) | (open.truncate ? O_TRUNC : 0);
      if (readOnly && (oflags & (O_CREAT | O_TRUNC)) !== 0) throw 'read-only';
      if (readOnly && (flags.write || flags.mutateDirectory)) throw 'read-only';
      if ((flags.write || (oflags & (O_CREAT | O_TRUNC)) !== 0) && !this.flags.mutateDirectory) throw 'not-permitted';
      const found = vfsCall(() => fs.vfs().openInode(this.volume, path, oflags, this.at({ followFinal: pathFlags.symlinkFollow === true })));
      if (found.kind === 'dir' && flags.write) throw 'is-directory';
      // A directory opened for mutation keeps that right only if this one had it.
      const mutate = (flags.mutateDirectory ?? false) && (this.flags.mutateDirectory ?? false);
      return new Descriptor(this.volume, found.ino, found.kind, { read: flags.read ?? false, write: flags.write ?? false, mutateDirectory: mutate });
    }
    readViaStream(offset: bigint): InputStream {
      this.file();
      if (!this.flags.read) throw 'bad-descriptor';
      const ino = this.ino;
      const base = Number(offset);
      return new InputStream({ read: (at, len) => vfsCall(() => fs.vfs().read(ino, base + at, len)), size: () => Math.max(0, this.info().size - base) });
    }
    writeViaStream(offset: bigint): OutputStream {
      this.file();
      if (!this.flags.write) throw 'bad-descriptor';
      let at = Number(offset);
      return new OutputStream((d) => {
        at += vfsCall(() => fs.vfs().write(this.ino, at, d));
      });
    }
    appendViaStream(): OutputStream {
      this.file();
      if (!this.flags.write) throw 'bad-descriptor';
      return new OutputStream((d) => void vfsCall(() => fs.vfs().append(this.ino, d)));
    }
    read(length: bigint, offset: bigint): [Uint8Array, boolean] {
      this.file();
      if (!this.flags.read) throw 'bad-descriptor';
      const data = vfsCall(() => fs.vfs().read(this.ino, Number(offset), Number(length)));
      return [data, Number(offset) + data.length >= this.info().size];
    }
    write(buffer: unknown, offset: bigint): bigint {
      this.file();
      if (!this.flags.write) throw 'bad-descriptor';
      return BigInt(vfsCall(() => fs.vfs().write(this.ino, Number(offset), ownBytes(buffer))));
    }
    setSize(size: bigint): void {
      this.file();
      if (!this.flags.write) throw 'bad-descriptor';
      vfsCall(() => fs.vfs().truncate(this.ino, Number(size)));
    }
    advise(): void {}
    syncData(): void {}
    sync(): void {}
    setTimes(): void {}
    setTimesAt(): void {}
    readDirectory(): DirectoryEntryStream {
      this.dir();
      return new DirectoryEntryStream(this.ino);
    }
    createDirectoryAt(path: string): void {
      this.dir();
      writable();
      vfsCall(() => fs.vfs().mkdir(this.volume, path, 0o755, this.at()));
    }
    removeDirectoryAt(path: string): void {
      this.dir();
      writable();
      vfsCall(() => fs.vfs().rmdir(this.volume, path, this.at()));
    }
    unlinkFileAt(path: string): void {
      this.dir();
      writable();
      vfsCall(() => fs.vfs().unlink(this.volume, path, this.at()));
    }
    renameAt(oldPath: string, newDescriptor: Descriptor, newPath: string): void {
      this.dir();
      writable();
      if (!(newDescriptor instanceof Descriptor)) throw 'bad-descriptor';
      vfsCall(() => fs.vfs().rename(this.volume, oldPath, newDescriptor.volume, newPath, { from: this.ino, to: newDescriptor.ino }));
    }
    symlinkAt(oldPath: string, newPath: string): void {
      this.dir();
      writable();
      // A link whose target is absolute would be a way out of the descriptor: refused up front.
      if (oldPath.startsWith('/')) throw 'not-permitted';
      vfsCall(() => fs.vfs().symlink(oldPath, this.volume, newPath, this.at()));
    }
    readlinkAt(path: string): string {
      this.dir();
      return vfsCall(() => fs.vfs().readlink(this.volume, path, this.at()));
    }
    linkAt(pathFlags: { symlinkFollow?: boolean }, oldPath: string, newDescriptor: Descriptor, newPath: string): void {
      this.dir();
      writable();
      if (!(newDescriptor instanceof Descriptor)) throw 'bad-descriptor';
      vfsCall(() => fs.vfs().link(this.volume, oldPath, newDescriptor.volume, newPath, { from: this.ino, to: newDescriptor.ino, followFinal: pathFlags.symlinkFollow === true }));
    }
  }

  let preopens: [Descriptor, string][] | null = null;
  return {
    'wasi:filesystem/types': {
      Descriptor,
      DirectoryEntryStream,
      filesystemErrorCode: (e: unknown) => (e instanceof IoError && e.code !== null ? e.code : undefined),
    },
    'wasi:filesystem/preopens': {
      getDirectories: () =>
        (preopens ??= fs.spec.preopens.map((p): [Descriptor, string] => [new Descriptor(p.volume, null, 'dir', { read: true, write: false, mutateDirectory: !readOnly }), p.guestPath])),
    },
  };
}
