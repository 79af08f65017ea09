/**
 * A guest VFS whose database is chosen late: a pooled lane interpreter boots over an empty
 * in-memory placeholder (its preopens are enumerated at boot) and gets its call's VFS when the
 * snippet arrives (src/wasi/port.ts). Every use goes through the proxy to the current database.
 *
 * Owns: the swap. Invariant: a swap happens only when the new database has the same root inode
 * for every preopened volume (so the descriptors the interpreter opened at boot — the preopen
 * directories — name the same directories in it), and the placeholder is closed then; otherwise
 * the swap is refused and nothing changes.
 *
 * Does not protect against: descriptors to other files the guest opened before the swap (an
 * interpreter's boot opens none of the call's files: it has none yet).
 */

import { Vfs, type VolumeName } from '../../storage/index.ts';

export interface LateVfs {
  /** Stands for whichever database is current. */
  readonly vfs: Vfs;
  /** Make `file` current (opened here); false, and nothing changed, when its roots differ. */
  bind(file: string, limits: { maxBytes?: number; maxInodes?: number }, volumes: readonly VolumeName[]): boolean;
}

export function lateVfs(first: Vfs): LateVfs {
  let current = first;
  const vfs = new Proxy(first, {
    get(_target, key) {
      const v: unknown = Reflect.get(current, key, current);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
    },
  });
  return {
    vfs,
    bind(file, limits, volumes) {
      const next = Vfs.open({ file, ...limits });
      if (volumes.some((v) => next.rootIno(v) !== current.rootIno(v))) {
        next.close();
        return false;
      }
      current.close();
      current = next;
      return true;
    },
  };
}
