/**
 * The `vfs` cap's path rules, shared by a core guest's imports (engine/worker/vfs-imports.ts, on its worker)
 * and a JS/Python snippet's `vfs.*` powers (src/lanes/vfs.ts, on the main thread), so both
 * lanes see one semantics: guest path → (volume, path) through the preopens, `vfs_list`'s walk
 * and bound, `mkdir -p` of a written file's parents, and VFS errno → guest error code.
 *
 * Owns: `locatePath` (the longest preopen prefix at a component boundary wins; the rest resolves
 * inside that volume, where `..` stops at its root), `listPrefix` (≤ `MAX_LIST_ENTRIES`, symlinks
 * not followed), `makeParents`, `guestCode`, and `appendStep` — the `_steps.jsonl` line every
 * exec-cap call appends, from a core guest's exec or a snippet's `exec.run` — and `readModule`,
 * the bytes of a command named by a path in the caller's VFS.
 * Invariant: pure functions over a `Vfs` handle; a path never leaves the VFS — it is resolved by
 * the VFS's own walk, never by the host filesystem.
 *
 * Does not protect against: anything the VFS's quotas do not bound (they are the VFS's).
 */

import { O_CREAT, VfsError, type Vfs, type VolumeName } from '../storage/index.ts';
import { GUEST_ERR, MAX_VFS_MODULE_BYTES } from './command.ts';
import type { VfsSpec } from '../storage/vfs-config.ts';

/** At most this many entries in one `vfs_list` answer; more is TOO_LARGE (narrow the prefix). */
export const MAX_LIST_ENTRIES = 10_000;

/** A guest path → the volume of the longest matching preopen and the path inside it. */
export function locatePath(spec: VfsSpec, path: string): { volume: VolumeName; rest: string } | number {
  if (!path.startsWith('/') || path.includes('\0')) return GUEST_ERR.INVALID;
  let best: { guestPath: string; volume: VolumeName } | null = null;
  for (const p of spec.preopens) {
    const root = p.guestPath.replace(/\/+$/, '');
    const matches = root === '' || path === root || path.startsWith(`${root}/`);
    if (matches && (!best || root.length > best.guestPath.length)) best = { guestPath: root, volume: p.volume };
  }
  if (!best) return GUEST_ERR.NOT_FOUND;
  const rest = path.slice(best.guestPath.length).replace(/^\/+/, '');
  return { volume: best.volume, rest: rest === '' ? '.' : rest };
}

export interface Listed {
  readonly path: string;
  readonly type: 'file' | 'dir' | 'symlink';
  readonly size: number;
}

/** Every entry whose guest path starts with `prefix`, depth-first, symlinks not followed. */
export function listPrefix(vfs: Vfs, spec: VfsSpec, prefix: string): Listed[] | number {
  if (!prefix.startsWith('/') || prefix.includes('\0')) return GUEST_ERR.INVALID;
  const out: Listed[] = [];
  const walk = (ino: number, dir: string, volume: VolumeName): boolean => {
    let cookie = 0;
    for (;;) {
      const batch = vfs.readdir(ino, cookie, 1024);
      if (batch.length === 0) return true;
      for (const e of batch) {
        cookie = e.next;
        const path = `${dir === '/' ? '' : dir}/${e.name}`;
        // Another preopen mounted here (e.g. /tmp inside /) is listed from its own volume.
        if (dir === '/' && spec.preopens.some((p) => p.guestPath === path && p.volume !== volume)) continue;
        const under = path.startsWith(prefix) || prefix.startsWith(`${path}/`);
        if (!under) continue;
        if (path.startsWith(prefix)) {
          if (out.length >= MAX_LIST_ENTRIES) return false;
          const st = vfs.statIno(e.ino);
          out.push({ path, type: st.kind as Listed['type'], size: st.kind === 'file' ? st.size : 0 });
        }
        if (e.kind === 'dir' && !walk(e.ino, path, volume)) return false;
      }
    }
  };
  for (const p of [...spec.preopens].sort((a, b) => a.guestPath.localeCompare(b.guestPath))) {
    const root = p.guestPath;
    if (!(root.startsWith(prefix) || prefix.startsWith(root))) continue;
    if (root !== '/' && root.startsWith(prefix)) {
      if (out.length >= MAX_LIST_ENTRIES) return GUEST_ERR.TOO_LARGE;
      out.push({ path: root, type: 'dir', size: 0 });
    }
    if (!walk(vfs.rootIno(p.volume), root, p.volume)) return GUEST_ERR.TOO_LARGE;
  }
  return out;
}

/**
 * Whether a command name is a path (`./a.wasm`, `/out/tool.wasm`, `bin/t.wasm`): it then names a
 * module in the caller's own VFS and is never looked up in the registry — in core guests, the
 * shell and the source lanes alike.
 */
export const isCommandPath = (name: string): boolean => name.includes('/');

/** The VFS path a command path names: absolute as given, a relative one taken from `/` (leading `./` dropped). */
export function commandModulePath(name: string): string {
  return name.startsWith('/') ? name : `/${name.replace(/^(?:\.\/)+/, '')}`;
}

/**
 * The bytes of the module a command name that is a path names in the caller's VFS, or a guest
 * error code (`commandModulePath`: a relative path is taken from `/`, a WASI guest's working
 * directory); at most `MAX_VFS_MODULE_BYTES`.
 */
export function readModule(vfs: Vfs, spec: VfsSpec, name: string): Uint8Array | number {
  const at = locatePath(spec, commandModulePath(name));
  if (typeof at === 'number') return at;
  try {
    const st = vfs.open(at.volume, at.rest, 0);
    if (st.kind !== 'file') return GUEST_ERR.INVALID;
    if (st.size > MAX_VFS_MODULE_BYTES) return GUEST_ERR.TOO_LARGE;
    return vfs.read(st.ino, 0, st.size);
  } catch (e) {
    if (e instanceof VfsError) return guestCode(e);
    throw e;
  }
}

/** `mkdir -p` of a path's parent directories (a write names a file, not a tree to prepare). */
export function makeParents(vfs: Vfs, volume: VolumeName, rest: string): void {
  const parts = rest.split('/').filter((p) => p !== '' && p !== '.');
  let dir = '';
  for (const part of parts.slice(0, -1)) {
    dir = dir ? `${dir}/${part}` : part;
    try {
      vfs.mkdir(volume, dir);
    } catch (e) {
      if (!(e instanceof VfsError && e.code === 'EEXIST')) throw e;
    }
  }
}

export function guestCode(e: VfsError): number {
  switch (e.code) {
    case 'ENOENT':
      return GUEST_ERR.NOT_FOUND;
    case 'ENOSPC':
    case 'EDQUOT':
      return GUEST_ERR.QUOTA;
    case 'EFBIG':
    case 'ENAMETOOLONG':
      return GUEST_ERR.TOO_LARGE;
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return GUEST_ERR.DENIED;
    default:
      return GUEST_ERR.INVALID;
  }
}

/** The exec log on the workspace volume: one JSON line per exec-cap call. */
export const STEPS_FILE = '/_steps.jsonl';

/**
 * Append one JSON line (`time` first) to `STEPS_FILE`. Best effort by design: a full VFS refuses
 * the line (ENOSPC, EDQUOT, or a guest-made directory in the way), never the command that ran.
 */
export function appendStep(vfs: Vfs, record: Record<string, unknown>): void {
  const line = new TextEncoder().encode(`${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`);
  try {
    const st = vfs.open('workspace', STEPS_FILE, O_CREAT);
    if (st.kind === 'file') vfs.write(st.ino, st.size, line);
  } catch {
    // The log is the guest's own file: what it did to it is its business.
  }
}
