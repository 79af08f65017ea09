/**
 * Mount write-back: a read-write mount's changes, from the run's VFS to its host directory.
 *
 * Owns: which host entries change after a successful run, and how; the `MountSpec` and
 * `MountSnapshot` shapes mounts.ts fills in. Invariant: write-back replaces
 * directory entries and never writes into an existing inode — a changed file is written to a new
 * temporary file beside it (`O_CREAT | O_EXCL | O_NOFOLLOW`, the old file's mode) and renamed over
 * the old name, so a host file that is a hard link to a file outside the mount keeps the outside
 * file as it was; a deletion unlinks the entry, never a link's target. Every host path used is
 * strictly under HOSTDIR and each of its directories is checked with `lstat` to be a real
 * directory (missing ones are created): a path through a host symlink, or onto a host entry that
 * is not a regular file, is skipped with a warning, never followed. Files the guest left
 * byte-identical to what the copy in read are not touched (hard links inside the mount survive).
 * Directories the guest removed are removed when empty (`rmdir`, never recursive). Only the
 * guest's regular files and directories come out; symlinks it made stay in the VFS. Warnings name
 * guest paths and errno codes only, never host paths.
 *
 * Before each rename or unlink the parent's `realpath` is compared with where the lstat walk put
 * it, which narrows a host-side swap of a directory for a symlink to the moment between that check
 * and the call. A guest that removed the mount point itself removed everything in it.
 *
 * Does not protect against: a host process swapping a checked directory for a symlink in that
 * last moment (mounts.ts) — Node has no `openat`/`renameat` to pin the directory.
 */

import { closeSync, constants, fchmodSync, lstatSync, mkdirSync, openSync, realpathSync, renameSync, rmdirSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import { dirname, join } from 'node:path';
import { VfsError, type Vfs } from '../storage/index.ts';

export interface MountSpec {
  readonly hostDir: string;
  readonly guestPath: string;
  readonly readOnly: boolean;
}

/** What the copy in saw of one mount: host-relative paths (with `/`) and their content hashes. */
export interface MountSnapshot {
  readonly mount: MountSpec;
  /** Regular files copied in → sha256 of what was copied (an unchanged file is not written back). */
  readonly files: ReadonlyMap<string, string>;
  /** Directories copied in (a directory the guest removed is removed on the host when empty). */
  readonly dirs: ReadonlySet<string>;
  readonly skipped: readonly string[];
}

export interface WriteBackReport {
  readonly written: number;
  readonly deleted: number;
  /** Entries left alone and why (guest paths only). */
  readonly warnings: readonly string[];
}

export const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** `rel` (host-relative, `/`-separated, possibly empty) as a guest path under the mount point. */
export function guestPathOf(mount: MountSpec, rel: string): string {
  if (rel === '') return mount.guestPath;
  return mount.guestPath === '/' ? `/${rel}` : `${mount.guestPath}/${rel}`;
}

const NEW_FILE_MODE = 0o666; // before the process umask, as a plain create would

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * Whether every directory from `root` down to `root/rel` is a real directory (not a symlink),
 * creating the missing ones when `create`. Missing without `create` → 'missing'.
 */
function realDirs(root: string, rel: string, create: boolean): 'ok' | 'missing' | 'not-a-directory' {
  const top = lstatOrNull(root);
  if (top === null || !top.isDirectory()) return 'not-a-directory';
  let at = root;
  for (const part of rel.split('/').filter(Boolean)) {
    at = join(at, part);
    const st = lstatOrNull(at);
    if (st === null) {
      if (!create) return 'missing';
      mkdirSync(at);
      continue;
    }
    if (!st.isDirectory()) return 'not-a-directory';
  }
  return 'ok';
}

/** Put `data` at `host` as a fresh inode: a new file beside it, renamed over the old entry. */
function replaceEntry(host: string, data: Uint8Array, mode: number | null): void {
  const tmp = join(dirname(host), `.membrane-writeback-${randomUUID()}`);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode ?? NEW_FILE_MODE);
  try {
    try {
      for (let at = 0; at < data.length; ) at += writeSync(fd, data, at, data.length - at);
      if (mode !== null) fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, host);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // already renamed or never created
    }
    throw e;
  }
}

const errnoOf = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? 'EIO';

/** What the guest left in the mount: its regular files (by host-relative path) and directories. */
function guestTree(vfs: Vfs, snap: MountSnapshot): { files: Map<string, number>; dirs: string[]; links: number; removed: boolean } {
  const files = new Map<string, number>();
  const dirs: string[] = [];
  let links = 0;
  const walk = (rel: string, ino: number): void => {
    for (let cookie = 0; ; ) {
      const batch = vfs.readdir(ino, cookie, 256);
      if (batch.length === 0) break;
      for (const e of batch) {
        cookie = e.next;
        if (e.name === '.' || e.name === '..' || e.name.includes('/') || e.name.includes('\0')) continue;
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.kind === 'dir') {
          dirs.push(r);
          walk(r, e.ino);
        } else if (e.kind === 'file') {
          files.set(r, e.ino);
        } else {
          links++;
        }
      }
    }
  };
  const top = mountPoint(vfs, snap.mount.guestPath);
  if (top !== null) walk('', top);
  return { files, dirs, links, removed: top === null };
}

/** The mount point's directory inode, or null when the guest removed it (or made it a non-directory). */
function mountPoint(vfs: Vfs, guestPath: string): number | null {
  try {
    const st = vfs.stat('workspace', guestPath, { followFinal: false });
    return st.kind === 'dir' ? st.ino : null;
  } catch (e) {
    if (e instanceof VfsError) return null;
    throw e;
  }
}

const depth = (rel: string): number => rel.split('/').length;
const parentOf = (rel: string): string => (rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '');

/**
 * Write a read-write mount's changes back to its host directory: first what the guest removed
 * (files, then directories left empty, deepest first), then the directories and files it made or
 * changed — so a file replaced by a directory of the same name, or the reverse, comes out whole.
 */
export function writeBack(vfs: Vfs, snap: MountSnapshot): WriteBackReport {
  const { mount } = snap;
  if (mount.readOnly) return { written: 0, deleted: 0, warnings: [] };
  const root = mount.hostDir;
  const warnings: string[] = [];
  const skip = (rel: string, why: string): void => {
    warnings.push(`mount ${mount.guestPath}: ${guestPathOf(mount, rel)} was not written back: ${why}`);
  };
  const attempt = (rel: string, fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      skip(rel, errnoOf(err));
    }
  };
  const tree = guestTree(vfs, snap);
  if (tree.removed) warnings.push(`mount ${mount.guestPath}: the guest removed the mount point; its files are removed on the host`);
  const guestDirs = new Set(tree.dirs);
  const rootReal = realpathSync(root);
  /** The directory of `rel` still is where the lstat walk found it (no component swapped for a symlink since). */
  const stillInside = (rel: string): boolean => realpathSync(join(root, ...rel.split('/').filter(Boolean))) === join(rootReal, ...rel.split('/').filter(Boolean));
  let written = 0;
  let deleted = 0;

  for (const r of snap.files.keys()) {
    if (tree.files.has(r)) continue;
    attempt(r, () => {
      if (realDirs(root, parentOf(r), false) !== 'ok') return;
      const host = join(root, ...r.split('/'));
      const st = lstatOrNull(host);
      if (st === null) return;
      if (!st.isFile()) return skip(r, 'the guest removed it, but the host entry is no longer a regular file');
      if (!stillInside(parentOf(r))) return skip(r, 'a host path component changed during the write-back');
      unlinkSync(host);
      deleted++;
    });
  }
  for (const r of [...snap.dirs].filter((d) => !guestDirs.has(d)).sort((a, b) => depth(b) - depth(a))) {
    attempt(r, () => {
      if (realDirs(root, r, false) !== 'ok') return;
      rmdirSync(join(root, ...r.split('/')));
      deleted++;
    });
  }
  for (const r of tree.dirs) {
    if (realDirs(root, r, true) !== 'ok') skip(r, 'a host path component is a symlink or not a directory');
  }
  for (const [r, ino] of tree.files) {
    attempt(r, () => {
      const data = vfs.read(ino, 0, vfs.statIno(ino).size);
      if (snap.files.get(r) === sha256(data)) return;
      if (realDirs(root, parentOf(r), true) !== 'ok') return skip(r, 'a host path component is a symlink or not a directory');
      const host = join(root, ...r.split('/'));
      const st = lstatOrNull(host);
      if (st !== null && !st.isFile()) {
        return skip(r, st.isSymbolicLink() ? 'the host entry is a symlink' : 'the host entry is not a regular file');
      }
      if (!stillInside(parentOf(r))) return skip(r, 'a host path component changed during the write-back');
      replaceEntry(host, data, st === null ? null : st.mode & 0o7777);
      written++;
    });
  }
  if (tree.links > 0) warnings.push(`mount ${mount.guestPath}: ${tree.links} symlinks the guest made stay in the VFS`);
  return { written, deleted, warnings };
}
