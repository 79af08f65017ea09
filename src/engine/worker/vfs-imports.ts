/**
 * The `vfs` cap's own imports (DESIGN §4): `vfs_read`, `vfs_write`, `vfs_list`, `vfs_delete`
 * over the guest's VFS in this worker, and `vfs_query`, which the main thread runs in its query
 * service (storage/query.ts) against this guest's database only.
 *
 * Owns: guest path → (volume, path) through the guest's preopens (the longest preopen prefix at a
 * component boundary wins; the rest resolves inside that volume, where `..` stops at its root),
 * VFS errno → guest error code, and the retry rule for a too-small buffer (the last answer is kept
 * and served to the same request without doing the work again).
 * Invariant: a guest names paths and SQL, never a database or a host path — the database is
 * the one in the guest's spec, chosen by the engine.
 *
 * Does not protect against: a guest reading what it wrote — the VFS is its own.
 */

import { VfsError, type Vfs, type VolumeName } from '../../storage/index.ts';
import { GUEST_ERR } from '../command-abi.ts';
import type { VfsSpec } from '../protocol.ts';
import type { HostBridge } from './guest.ts';
import { FaultError, type GuestMemory } from './memory.ts';
import type { CallState } from './signals.ts';
import { RetryHold } from '../retry-hold.ts';

/** At most this many entries in one `vfs_list` answer; more is TOO_LARGE (narrow the prefix). */
export const MAX_LIST_ENTRIES = 10_000;
const MAX_PATH_BYTES = 4096;
const MAX_SQL_BYTES = 64 * 1024;
const O_CREAT = 1;
const O_TRUNC = 8;

export interface VfsImportsContext {
  readonly host: HostBridge;
  readonly memory: GuestMemory;
  readonly state: CallState;
  readonly spec: VfsSpec;
  readonly vfs: () => Vfs;
}

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

export function vfsImports(ctx: VfsImportsContext): Record<string, (...a: number[]) => number> {
  const hold = new RetryHold();

  const text = (ptr: number, len: number, max: number): string | number => {
    if (len >>> 0 > max) return GUEST_ERR.TOO_LARGE;
    try {
      return decoder.decode(ctx.memory.copy(ptr, len >>> 0));
    } catch (e) {
      if (e instanceof FaultError || e instanceof TypeError) return GUEST_ERR.INVALID;
      throw e;
    }
  };
  const bytes = (ptr: number, len: number): Uint8Array | number => {
    try {
      return ctx.memory.copy(ptr, len >>> 0);
    } catch (e) {
      if (e instanceof FaultError) return GUEST_ERR.INVALID;
      throw e;
    }
  };
  /** Write `answer` if it fits; else keep it for the retry under `key` and return its size. */
  const deliver = (key: string, answer: Uint8Array, outPtr: number, outCap: number): number => {
    if (!hold.fits(key, answer, outCap)) return answer.length;
    try {
      ctx.memory.write(outPtr, answer);
    } catch (e) {
      if (e instanceof FaultError) return GUEST_ERR.INVALID;
      throw e;
    }
    return answer.length;
  };
  const kept = (key: string): Uint8Array | null => hold.kept(key);
  const guarded = (body: () => number): number => {
    ctx.state.rethrow();
    try {
      return body();
    } catch (e) {
      if (e instanceof VfsError) return guestCode(e);
      throw e;
    }
  };
  const locate = (path: string): { volume: VolumeName; rest: string } | number => locatePath(ctx.spec, path);

  return {
    vfs_read: (pathPtr, pathLen, outPtr, outCap) =>
      guarded(() => {
        const path = text(pathPtr, pathLen, MAX_PATH_BYTES);
        if (typeof path === 'number') return path;
        const hit = kept(`read:${path}`);
        if (hit) return deliver(`read:${path}`, hit, outPtr, outCap);
        const at = locate(path);
        if (typeof at === 'number') return at;
        const vfs = ctx.vfs();
        const st = vfs.stat(at.volume, at.rest);
        if (st.kind !== 'file') return st.kind === 'dir' ? GUEST_ERR.INVALID : GUEST_ERR.NOT_FOUND;
        if (st.size > outCap >>> 0) return st.size; // ask for the size without reading the file
        return deliver(`read:${path}`, vfs.read(st.ino, 0, st.size), outPtr, outCap);
      }),
    vfs_write: (pathPtr, pathLen, dataPtr, dataLen) =>
      guarded(() => {
        if (ctx.spec.readOnly) return GUEST_ERR.DENIED;
        const path = text(pathPtr, pathLen, MAX_PATH_BYTES);
        if (typeof path === 'number') return path;
        const data = bytes(dataPtr, dataLen);
        if (typeof data === 'number') return data;
        const at = locate(path);
        if (typeof at === 'number') return at;
        const vfs = ctx.vfs();
        makeParents(vfs, at.volume, at.rest);
        const st = vfs.open(at.volume, at.rest, O_CREAT | O_TRUNC);
        if (st.kind !== 'file') return GUEST_ERR.INVALID;
        vfs.write(st.ino, 0, data);
        return 0;
      }),
    vfs_delete: (pathPtr, pathLen) =>
      guarded(() => {
        if (ctx.spec.readOnly) return GUEST_ERR.DENIED;
        const path = text(pathPtr, pathLen, MAX_PATH_BYTES);
        if (typeof path === 'number') return path;
        const at = locate(path);
        if (typeof at === 'number') return at;
        const vfs = ctx.vfs();
        const st = vfs.stat(at.volume, at.rest, { followFinal: false });
        if (st.kind === 'dir') vfs.rmdir(at.volume, at.rest);
        else vfs.unlink(at.volume, at.rest);
        return 0;
      }),
    vfs_list: (prefixPtr, prefixLen, outPtr, outCap) =>
      guarded(() => {
        const prefix = text(prefixPtr, prefixLen, MAX_PATH_BYTES);
        if (typeof prefix === 'number') return prefix;
        const hit = kept(`list:${prefix}`);
        if (hit) return deliver(`list:${prefix}`, hit, outPtr, outCap);
        const entries = listPrefix(ctx.vfs(), ctx.spec, prefix);
        if (typeof entries === 'number') return entries;
        return deliver(`list:${prefix}`, encoder.encode(JSON.stringify(entries)), outPtr, outCap);
      }),
    vfs_query: (sqlPtr, sqlLen, outPtr, outCap) =>
      guarded(() => {
        const sql = text(sqlPtr, sqlLen, MAX_SQL_BYTES);
        if (typeof sql === 'number') return sql;
        const hit = kept(`query:${sql}`);
        if (hit) return deliver(`query:${sql}`, hit, outPtr, outCap);
        // An in-memory VFS lives only in this thread: the query service gets a snapshot of it.
        const snapshot = ctx.spec.file === ':memory:' ? ctx.vfs().serialize() : new Uint8Array(0);
        const answer = ctx.host.call({ op: 'vfs_query', sql }, [snapshot]);
        if (!answer.ok) return answer.errno;
        return deliver(`query:${sql}`, answer.payload ?? new Uint8Array(0), outPtr, outCap);
      }),
  };
}

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

interface Listed {
  readonly path: string;
  readonly type: 'file' | 'dir' | 'symlink';
  readonly size: number;
}

/** Every entry whose guest path starts with `prefix`, depth-first, symlinks not followed. */
function listPrefix(vfs: Vfs, spec: VfsSpec, prefix: string): Listed[] | number {
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

/** `mkdir -p` of a path's parent directories (a write names a file, not a tree to prepare). */
function makeParents(vfs: Vfs, volume: VolumeName, rest: string): void {
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

function guestCode(e: VfsError): number {
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
