/**
 * The `vfs` cap's own imports (DESIGN §4): `vfs_read`, `vfs_write`, `vfs_list`, `vfs_delete`
 * over the guest's VFS in this worker, and `vfs_query`, which the main thread runs in its query
 * service (storage/query.ts) against this guest's database only.
 *
 * Owns: reading paths and data from guest memory and the retry rule for a too-small buffer (the
 * last answer is kept and served to the same request without doing the work again). The path
 * rules (preopens, `..` stopping at a volume root, listing, errno → guest code) are src/abi/vfs-paths.ts,
 * shared with the JS/Python lanes' `vfs.*` powers.
 * Invariant: a guest names paths and SQL, never a database or a host path — the database is
 * the one in the guest's spec, chosen by the engine.
 *
 * Does not protect against: a guest reading what it wrote — the VFS is its own.
 */

import { VfsError, type Vfs, type VolumeName } from '../../storage/index.ts';
import { guestCode, listPrefix, locatePath, makeParents } from '../../abi/vfs-paths.ts';
import { GUEST_ERR } from '../../abi/command.ts';
import type { VfsSpec } from '../bridge/protocol.ts';
import type { HostBridge } from './host-bridge.ts';
import { FaultError, type GuestMemory } from '../../abi/memory.ts';
import type { CallState } from '../../abi/signals.ts';
import { RetryHold } from '../bridge/retry-hold.ts';

const MAX_PATH_BYTES = 4096;
const MAX_SQL_BYTES = 64 * 1024;
const O_CREAT = 1;
const O_TRUNC = 8;

export { MAX_LIST_ENTRIES, locatePath } from '../../abi/vfs-paths.ts';

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
