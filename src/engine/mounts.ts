/**
 * Mounts: `--mount HOSTDIR:/guest[:ro]` copies a host directory into the guest's VFS before a run
 * and, for a read-write mount after a successful run, writes the guest's changes back.
 *
 * Owns: parsing mount specs, the copy in (regular files and directories only; host symlinks,
 * devices and sockets are skipped and reported) and the write-back. Invariant: the guest never
 * touches the host filesystem — it works on its VFS copy; the write-back is done by the host,
 * writes only regular files and directories strictly under HOSTDIR, never follows a symlink
 * (neither one the guest made in the VFS, which is skipped, nor one on the host, which is refused),
 * and deletes only host files that the copy-in saw and the guest removed.
 *
 * Does not protect against: a host process changing HOSTDIR during the run (the write-back wins
 * for files the guest wrote); a read-only mount is read-only for the host: the guest may change
 * its private copy, and those changes are discarded.
 */

import { lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve, sep } from 'node:path';
import { SandboxError, toSandboxError } from '../errors.ts';
import { O_CREAT, O_TRUNC, Vfs, VfsError, removeDatabase, resolveVfs, storageDir } from '../storage/index.ts';
import { randomUUID } from 'node:crypto';
import type { PolicyConfig } from '../policy/resolve.ts';
import type { RunResult } from './results.ts';

export interface MountSpec {
  readonly hostDir: string;
  readonly guestPath: string;
  readonly readOnly: boolean;
}

/** Files copied into one mount: host-relative paths (with `/`), for deletions at write-back. */
export interface MountSnapshot {
  readonly mount: MountSpec;
  readonly files: ReadonlySet<string>;
  readonly skipped: readonly string[];
}

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
  if (guest === '/' || guest === '/tmp' || guest.startsWith('/tmp/') || guest === '/memory' || guest.startsWith('/memory/')) {
    throw new SandboxError('POLICY_INVALID', 'mount points live in the workspace volume, below / and outside /tmp and /memory', { guestPath: guest });
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

/** Copy every mount into the VFS's workspace volume. */
export function copyIn(vfs: Vfs, mounts: readonly MountSpec[], maxFiles = MAX_MOUNT_FILES): MountSnapshot[] {
  return mounts.map((mount) => {
    const files = new Set<string>();
    const skipped: string[] = [];
    mkdirs(vfs, mount.guestPath);
    const walk = (rel: string): void => {
      for (const e of readdirSync(join(mount.hostDir, rel), { withFileTypes: true })) {
        const r = rel ? `${rel}/${e.name}` : e.name;
        const guest = `${mount.guestPath}/${r}`;
        if (e.isDirectory()) {
          guarded(() => vfs.mkdir('workspace', guest), guest);
          walk(r);
        } else if (e.isFile()) {
          if (files.size >= maxFiles) throw new SandboxError('POLICY_INVALID', `a mount holds more than ${maxFiles} files`, { maxFiles });
          const data = readFileSync(join(mount.hostDir, r));
          guarded(() => vfs.write(vfs.open('workspace', guest, O_CREAT | O_TRUNC).ino, 0, data), guest);
          files.add(r);
        } else {
          skipped.push(r);
        }
      }
    };
    walk('');
    return { mount, files, skipped };
  });
}

/** Write a read-write mount's changes back to its host directory. */
export function writeBack(vfs: Vfs, snap: MountSnapshot): { written: number; deleted: number } {
  const { mount } = snap;
  if (mount.readOnly) return { written: 0, deleted: 0 };
  const seen = new Set<string>();
  let written = 0;
  const walk = (rel: string, ino: number): void => {
    for (let cookie = 0; ; ) {
      const batch = vfs.readdir(ino, cookie, 256);
      if (batch.length === 0) break;
      for (const e of batch) {
        cookie = e.next;
        if (e.name === '.' || e.name === '..' || e.name.includes('/') || e.name.includes('\0')) continue;
        const r = rel ? `${rel}/${e.name}` : e.name;
        const host = hostPathUnder(mount.hostDir, r);
        if (e.kind === 'dir') {
          ensureRealDir(mount.hostDir, r);
          walk(r, e.ino);
        } else if (e.kind === 'file') {
          ensureRealDir(mount.hostDir, rel);
          refuseSymlink(host);
          const size = vfs.statIno(e.ino).size;
          writeFileSync(host, vfs.read(e.ino, 0, size));
          seen.add(r);
          written++;
        }
        // symlinks the guest made stay in the VFS: never followed, never copied out
      }
    }
  };
  walk('', vfs.resolve('workspace', mount.guestPath).ino);
  let deleted = 0;
  for (const r of snap.files) {
    if (seen.has(r)) continue;
    const host = hostPathUnder(mount.hostDir, r);
    refuseSymlink(host);
    rmSync(host, { force: true });
    deleted++;
  }
  return { written, deleted };
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

/** `rel` joined under `root`, refusing anything that would land outside it. */
function hostPathUnder(root: string, rel: string): string {
  const p = resolve(root, rel);
  if (isAbsolute(rel) || (p !== root && !p.startsWith(root + sep))) {
    throw new SandboxError('INTERNAL', 'a write-back path left its mount');
  }
  return p;
}

/** Create `rel`'s directories under root, each a real directory, never a symlink. */
function ensureRealDir(root: string, rel: string): void {
  let at = root;
  for (const part of rel.split('/').filter(Boolean)) {
    at = join(at, part);
    let st;
    try {
      st = lstatSync(at);
    } catch {
      mkdirSync(at);
      continue;
    }
    if (!st.isDirectory()) throw new SandboxError('POLICY_INVALID', 'write-back refused: a path component on the host is not a real directory');
  }
}

function refuseSymlink(host: string): void {
  try {
    if (lstatSync(host).isSymbolicLink()) throw new SandboxError('POLICY_INVALID', 'write-back refused: the host path is a symlink');
  } catch (e) {
    if (e instanceof SandboxError) throw e;
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
          for (const s of snapshots) writeBack(vfs, s);
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
