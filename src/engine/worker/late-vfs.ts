/**
 * A guest VFS whose database is chosen late, and opened later still: a pooled lane interpreter
 * boots over an empty in-memory placeholder (its preopens are enumerated at boot), is told its
 * call's VFS file when the snippet arrives (src/wasi/port.ts), and opens that file only when the
 * snippet first touches a file — a snippet that never does (most) costs no database open, and a
 * private VFS no file at all. Every use goes through the proxy to the current database.
 *
 * Owns: the swap. Invariant: a swap happens only when the new database has the same root inode
 * for every preopened volume (so the descriptors the interpreter opened at boot — the preopen
 * directories — name the same directories in it), and the placeholder is closed then; otherwise
 * the use that triggered it fails with EIO, as does every later one (nothing is ever served from
 * the placeholder after a bind). Opening creates the file when it does not exist yet (a fresh VFS
 * has the same roots as the placeholder); the host's side of the call may create it too — SQLite
 * serializes the two (storage/vfs-schema.ts creates schema and roots in one immediate transaction).
 *
 * Does not protect against: descriptors to other files the guest opened before the swap (an
 * interpreter's boot opens none of the call's files: it has none yet).
 */

import { Vfs, VfsError, type VolumeName } from '../../storage/index.ts';

export interface LateVfs {
  /** Stands for whichever database is current. */
  readonly vfs: Vfs;
  /** Make `file` current from its first use on (opened then). */
  bind(file: string, limits: { maxBytes?: number; maxInodes?: number }, volumes: readonly VolumeName[]): void;
}

interface Pending {
  readonly file: string;
  readonly limits: { maxBytes?: number; maxInodes?: number };
  readonly volumes: readonly VolumeName[];
}

export function lateVfs(first: Vfs): LateVfs {
  let current = first;
  let pending: Pending | null = null;
  let broken = false;
  const swap = (p: Pending): void => {
    let next: Vfs;
    try {
      next = Vfs.open({ file: p.file, ...p.limits });
    } catch {
      throw new VfsError('EIO', 'the call VFS could not be opened');
    }
    if (p.volumes.some((v) => next.rootIno(v) !== current.rootIno(v))) {
      next.close();
      throw new VfsError('EIO', 'the call VFS does not match the interpreter');
    }
    current.close();
    current = next;
  };
  const vfs = new Proxy(first, {
    get(_target, key) {
      // Flushing or closing a database never opened needs no open: the placeholder has nothing to write.
      if (key === 'flush' || key === 'close') {
        if (key === 'close') pending = null;
        const own = Reflect.get(current, key, current) as () => void;
        return own.bind(current);
      }
      if (broken) throw new VfsError('EIO', 'the call VFS is unavailable');
      if (pending !== null) {
        const p = pending;
        pending = null;
        try {
          swap(p);
        } catch (e) {
          broken = true;
          throw e;
        }
      }
      const v: unknown = Reflect.get(current, key, current);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
    },
  });
  return {
    vfs,
    bind(file, limits, volumes) {
      pending = { file, limits, volumes };
    },
  };
}
