/**
 * Mounts: `--mount HOSTDIR:/guest[:ro]` copies a host directory into the guest's VFS before a run
 * and, for a read-write mount after a successful run, writes the guest's changes back. A mount at
 * `/` is the workspace volume's root.
 *
 * Owns: parsing mount specs, the copy in (regular files and directories only; host symlinks,
 * devices and sockets are skipped and reported) and the write-back (mount-writeback.ts).
 * Invariant: the guest never touches the host filesystem — it works on its VFS copy. The copy in
 * never follows a host symlink: it descends only into directories that `readdir` reports as
 * directories and opens each file with `O_NOFOLLOW`, checking that it is a regular file. What a
 * named VFS held under a mount point from earlier runs is removed first: the mount shows the host
 * directory exactly. Two mounts never nest (one write-back would carry the other's files into its
 * host directory).
 *
 * Does not protect against: a host process changing HOSTDIR during the run (it can swap a checked
 * directory for a symlink between the check and the use); a read-only mount is read-only for the
 * host: the guest may change its private copy, and those changes are discarded.
 */

import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { SandboxError, toSandboxError } from '../errors.ts';
import { O_CREAT, O_TRUNC, Vfs, VfsError, removeDatabase, resolveVfs, storageDir } from '../storage/index.ts';
import type { PolicyConfig } from '../policy/resolve.ts';
import type { RunResult } from './results.ts';
import { guestPathOf, sha256, writeBack, type MountSnapshot, type MountSpec } from './mount-writeback.ts';

export type { MountSnapshot, MountSpec };

const GUEST_PATH = /^\/[A-Za-z0-9._\-/]{0,255}$/;
/** Bounds what a mount can make the host read or write. */
export const MAX_MOUNT_FILES = 20_000;

export function parseMount(text: string): MountSpec {
  const ro = text.endsWith(':ro');
  const body = ro ? text.slice(0, -3) : text.endsWith(':rw') ? text.slice(0, -3) : text;
  const at = body.lastIndexOf(':');
  if (at <= 0) throw new SandboxError('POLICY_INVALID', 'a mount is HOSTDIR:/guest/path[:ro]', { mount: text.slice(0, 200) });
  return checkMount({ hostDir: body.slice(0, at), guestPath: body.slice(at + 1), readOnly: ro });
}

export function checkMount(m: MountSpec): MountSpec {
  const guest = m.guestPath.replace(/\/+$/, '') || '/';
  if (!GUEST_PATH.test(guest) || guest.split('/').some((c) => c === '..' || c === '.')) {
    throw new SandboxError('POLICY_INVALID', 'a mount point is an absolute guest path without . or ..', { guestPath: m.guestPath.slice(0, 200) });
  }
  if (guest === '/tmp' || guest.startsWith('/tmp/') || guest === '/memory' || guest.startsWith('/memory/')) {
    throw new SandboxError('POLICY_INVALID', 'mount points live in the workspace volume (/ or below it), outside /tmp and /memory', { guestPath: guest });
  }
  const hostDir = resolve(m.hostDir);
  let st;
  try {
    st = lstatSync(hostDir);
  } catch {
    throw new SandboxError('POLICY_INVALID', `cannot mount ${m.hostDir}: no such directory`, { hostDir: m.hostDir.slice(0, 200) });
  }
  if (!st.isDirectory()) throw new SandboxError('POLICY_INVALID', `cannot mount ${m.hostDir}: not a directory`, { hostDir: m.hostDir.slice(0, 200) });
  return { hostDir, guestPath: guest, readOnly: m.readOnly };
}

/** Refuse two mounts at the same point or one inside the other. */
export function checkDisjoint(mounts: readonly MountSpec[]): void {
  const inside = (a: string, b: string): boolean => a === b || b === '/' || a.startsWith(`${b}/`);
  mounts.forEach((a, i) => {
    mounts.forEach((b, j) => {
      if (i !== j && inside(a.guestPath, b.guestPath)) {
        throw new SandboxError('POLICY_INVALID', 'mount points may not nest or repeat', { mounts: [b.guestPath, a.guestPath] });
      }
    });
  });
}

/** A host regular file's bytes, never through a symlink (null when it is not a regular file now). */
function readRegular(path: string): Uint8Array | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    if (!fstatSync(fd).isFile()) return null;
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Copy every mount into the VFS's workspace volume. */
export function copyIn(vfs: Vfs, mounts: readonly MountSpec[], maxFiles = MAX_MOUNT_FILES): MountSnapshot[] {
  checkDisjoint(mounts);
  return mounts.map((mount) => {
    const files = new Map<string, string>();
    const dirs = new Set<string>();
    const skipped: string[] = [];
    mkdirs(vfs, mount.guestPath);
    emptyDir(vfs, mount.guestPath);
    const walk = (rel: string): void => {
      for (const e of readdirSync(join(mount.hostDir, rel), { withFileTypes: true })) {
        const r = rel ? `${rel}/${e.name}` : e.name;
        const guest = guestPathOf(mount, r);
        if (e.isDirectory()) {
          guarded(() => vfs.mkdir('workspace', guest), guest);
          dirs.add(r);
          walk(r);
        } else if (e.isFile()) {
          if (files.size >= maxFiles) throw new SandboxError('POLICY_INVALID', `a mount holds more than ${maxFiles} files`, { maxFiles });
          const data = readRegular(join(mount.hostDir, r));
          if (data === null) {
            skipped.push(r);
            continue;
          }
          guarded(() => vfs.write(vfs.open('workspace', guest, O_CREAT | O_TRUNC).ino, 0, data), guest);
          files.set(r, sha256(data));
        } else {
          skipped.push(r);
        }
      }
    };
    walk('');
    return { mount, files, dirs, skipped };
  });
}

function mkdirs(vfs: Vfs, guestPath: string): void {
  let at = '';
  for (const part of guestPath.split('/').filter(Boolean)) {
    at += `/${part}`;
    try {
      vfs.mkdir('workspace', at);
    } catch (e) {
      if (!(e instanceof VfsError) || e.code !== 'EEXIST') throw e;
    }
  }
}

/**
 * Remove what a named VFS still holds under a mount point from earlier runs, so the mount shows
 * the host directory exactly (and write-back never resurrects files the host has since removed).
 */
function emptyDir(vfs: Vfs, guestPath: string): void {
  const dir = vfs.stat('workspace', guestPath, { followFinal: false });
  if (dir.kind !== 'dir') throw new SandboxError('POLICY_INVALID', `the mount point ${guestPath} is not a directory in the VFS`, { guestPath });
  for (;;) {
    const batch = vfs.readdir(dir.ino, 0, 256).filter((e) => e.name !== '.' && e.name !== '..');
    if (batch.length === 0) return;
    for (const e of batch) {
      const path = guestPath === '/' ? `/${e.name}` : `${guestPath}/${e.name}`;
      if (e.kind === 'dir') {
        emptyDir(vfs, path);
        vfs.rmdir('workspace', path);
      } else {
        vfs.unlink('workspace', path);
      }
    }
  }
}

function guarded<T>(fn: () => T, guest: string): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof VfsError) {
      throw new SandboxError('POLICY_INVALID', `cannot copy the mount into the VFS at ${guest}: ${e.code}`, { errno: e.code });
    }
    throw e;
  }
}

/**
 * Copy mounts into the run's VFS (a named one, or a private file removed after the run) and
 * return what to do when the run ends: write read-write mounts back after a success.
 */
export function mountForRun(
  mounts: readonly (string | MountSpec)[],
  vfsName: string | undefined,
  policy: PolicyConfig,
  id: string,
  maxMountFiles: number,
): { file: string; finish: (r: RunResult) => RunResult } | null {
  const specs = mounts.map((m) => (typeof m === 'string' ? parseMount(m) : checkMount(m)));
  if (specs.length === 0) return null;
  if (!policy.caps.includes('vfs')) throw new SandboxError('POLICY_INVALID', 'mounts need the vfs cap', { caps: [...policy.caps] });
  checkDisjoint(specs);
  const temporary = vfsName === undefined;
  const file = temporary ? join(storageDir('vfs'), `run-${id}-${randomUUID()}.sqlite`) : resolveVfs({ name: vfsName }).file;
  const cleanup = (): void => {
    if (temporary) removeDatabase(file);
  };
  let snapshots: MountSnapshot[];
  try {
    const vfs = Vfs.open({ file });
    try {
      snapshots = copyIn(vfs, specs, maxMountFiles);
    } finally {
      vfs.close();
    }
  } catch (e) {
    cleanup();
    throw e;
  }
  const skipped = snapshots.filter((s) => s.skipped.length).map((s) => `mount ${s.mount.guestPath}: skipped ${s.skipped.length} entries that are not regular files or directories`);
  return {
    file,
    finish: (r) => {
      try {
        const warnings = [...r.warnings, ...skipped];
        if (!r.ok || (r.exitCode ?? 0) !== 0) return { ...r, warnings };
        const vfs = Vfs.open({ file });
        try {
          for (const s of snapshots) warnings.push(...writeBack(vfs, s).warnings);
        } finally {
          vfs.close();
        }
        return { ...r, warnings };
      } catch (e) {
        const err = toSandboxError(e);
        return { ...r, ok: false, error: err.toPublic(), warnings: [...r.warnings, 'the mount write-back failed'] };
      } finally {
        cleanup();
      }
    },
  };
}
