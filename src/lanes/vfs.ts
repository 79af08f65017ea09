/**
 * The VFS of one `engine.exec` call granted `vfs` (DESIGN §4, §6): what a JS/TS or Python
 * snippet's `vfs.read/write/list/delete` powers touch, and what the commands it runs see.
 *
 * Owns: choosing and opening the database on first use — a call that never touches its VFS pays
 * nothing — either the named persistent VFS `$MEMBRANE_HOME/vfs/NAME.sqlite` (`ExecOptions.vfs`,
 * the one `membrane run --vfs NAME` uses) or a fresh private file under `$MEMBRANE_HOME/vfs/`
 * (0600, so nested commands on worker threads can open it too) that is removed when the call
 * ends; collecting the private files an engine process killed mid-call left behind (the first
 * private VFS a process opens sweeps `exec-<pid>-<64 hex>.sqlite` and its -wal/-shm/-journal
 * whose pid is no live process; `sweepPrivateVfs`); the four file operations with the core imports' semantics (src/abi/vfs-paths.ts: the same
 * preopens, `..` stopping at a volume root, the same listing bound and error codes); the
 * `_steps.jsonl` line of an exec-cap call.
 * Invariant: a snippet names paths, never a database or a host path; every path is resolved by
 * the VFS's own walk, so `/etc/passwd` is a file of this VFS or nothing. After `close()` the
 * private database file and its -wal/-shm are gone. A sweep removes only private files whose
 * owner is gone (`kill(pid, 0)` → ESRCH): never a live process's, never a named VFS (a private
 * file's base name is longer than the 64 characters a VFS name may have).
 *
 * Does not protect against: a snippet reading what it (or an earlier run on the same named VFS)
 * wrote — the VFS is its own; a busy named VFS making the main thread wait up to SQLite's busy
 * timeout on a write; a dead owner's pid reused by a live process (its leftovers then wait for a
 * later sweep); engines sharing $MEMBRANE_HOME across pid namespaces (containers) — a pid is only
 * meaningful within one.
 */

import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { O_CREAT, O_TRUNC, Vfs, VfsError, removeDatabase, resolveVfs, storageDir } from '../storage/index.ts';
import { DEFAULT_PREOPENS } from '../storage/vfs-config.ts';
import { GUEST_ERR } from '../abi/command.ts';
import type { VfsSpec } from '../storage/vfs-config.ts';
import { appendStep, guestCode, listPrefix, locatePath, makeParents, type Listed } from '../abi/vfs-paths.ts';

/** Longest path a snippet may name (as for the core imports). */
export const MAX_LANE_PATH_BYTES = 4096;
/** Largest file `vfs.read` returns in one answer (it travels as JSON text in a bridge frame). */
export const MAX_LANE_READ_BYTES = 4 * 1024 * 1024;

/**
 * A private VFS file: its owner's pid and 32 random bytes (hex). The base name (≥ 71 characters)
 * is longer than any VFS name (≤ 64), so a sweep can never take a named VFS for a leftover.
 */
const PRIVATE_FILE = /^exec-([1-9][0-9]{0,9})-[0-9a-f]{64}\.sqlite(?:-wal|-shm|-journal)?$/;

/** Whether `pid` is a live process (one owned by another user counts: EPERM). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Remove the private VFS files (and their -wal/-shm/-journal) in `dir` whose owning process is
 * gone — an engine killed mid-call cannot remove its own. Returns the names removed. Files of
 * this process and of every live process are kept, as is every other file.
 */
export function sweepPrivateVfs(dir: string): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  const verdict = new Map<number, boolean>();
  for (const name of names) {
    const m = PRIVATE_FILE.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid) continue;
    let dead = verdict.get(pid);
    if (dead === undefined) verdict.set(pid, (dead = !alive(pid)));
    if (!dead) continue;
    try {
      rmSync(join(dir, name), { force: true });
      removed.push(name);
    } catch {
      // another engine's sweep got there first, or the directory changed: the next sweep retries
    }
  }
  return removed;
}

/** Whether this process has swept yet: once, when it opens its first private VFS. */
let swept = false;

export interface LaneVfsOptions {
  /** A named persistent VFS; without it the call gets a private one, removed at `close()`. */
  readonly name?: string | undefined;
  readonly maxBytes: number;
  readonly maxInodes: number;
}

/** A refused power: its guest error code (a GUEST_ERR value). */
export class PowerRefusal extends Error {
  constructor(readonly errno: number) {
    super(`vfs refused: ${errno}`);
  }
}
const refuse = (errno: number): never => {
  throw new PowerRefusal(errno);
};

export class LaneVfs {
  private vfs: Vfs | null = null;
  private dbFile: string | null = null;
  private closed = false;
  private readonly spec: VfsSpec;

  constructor(private readonly options: LaneVfsOptions) {
    // A bad name is the caller's error, found before the snippet runs.
    if (options.name !== undefined) resolveVfs({ name: options.name });
    this.spec = { file: '', preopens: DEFAULT_PREOPENS, readOnly: false, maxBytes: options.maxBytes, maxInodes: options.maxInodes };
  }

  /** The database file, opened (and for a private VFS created) on first use. */
  file(): string {
    this.open();
    return this.dbFile!;
  }

  /**
   * The database file's path, neither opened nor created here: a lane interpreter opens (for a
   * private VFS: creates) it on its first file access (engine/worker/late-vfs.ts). `close()`
   * removes a private one either way.
   */
  path(): string {
    if (this.closed) return refuse(GUEST_ERR.UNAVAILABLE);
    if (this.dbFile !== null) return this.dbFile;
    const { name } = this.options;
    if (name !== undefined) this.dbFile = resolveVfs({ name }).file;
    else {
      const dir = storageDir('vfs');
      if (!swept) {
        swept = true;
        sweepPrivateVfs(dir);
      }
      this.dbFile = join(dir, `exec-${process.pid}-${randomBytes(32).toString('hex')}.sqlite`);
    }
    return this.dbFile;
  }

  private open(): Vfs {
    if (this.closed) return refuse(GUEST_ERR.UNAVAILABLE);
    if (this.vfs) return this.vfs;
    const file = this.path();
    this.vfs = Vfs.open({ file, maxBytes: this.options.maxBytes, maxInodes: this.options.maxInodes });
    return this.vfs;
  }

  private at(path: unknown): { volume: Parameters<Vfs['stat']>[0]; rest: string } {
    if (typeof path !== 'string') return refuse(GUEST_ERR.INVALID);
    if (Buffer.byteLength(path) > MAX_LANE_PATH_BYTES) return refuse(GUEST_ERR.TOO_LARGE);
    const at = locatePath(this.spec, path);
    return typeof at === 'number' ? refuse(at) : at;
  }

  /** A VFS error as a guest code; anything else is thrown on (the power answers UNAVAILABLE). */
  private guarded<R>(body: () => R): R {
    try {
      return body();
    } catch (e) {
      if (e instanceof VfsError) return refuse(guestCode(e));
      throw e;
    }
  }

  /** The file's bytes, or null when there is no such file. */
  /** A file's bytes (null when there is none), at most `max` (TOO_LARGE past it). */
  read(path: unknown, max = MAX_LANE_READ_BYTES): Uint8Array | null {
    const at = this.at(path);
    return this.guarded(() => {
      const vfs = this.open();
      let st;
      try {
        st = vfs.stat(at.volume, at.rest);
      } catch (e) {
        if (e instanceof VfsError && (e.code === 'ENOENT' || e.code === 'ENOTDIR')) return null;
        throw e;
      }
      if (st.kind !== 'file') return refuse(GUEST_ERR.INVALID);
      if (st.size > max) return refuse(GUEST_ERR.TOO_LARGE);
      return vfs.read(st.ino, 0, st.size);
    });
  }

  /** Create or replace a file (its parent directories made). */
  write(path: unknown, data: Uint8Array): void {
    const at = this.at(path);
    this.guarded(() => {
      const vfs = this.open();
      makeParents(vfs, at.volume, at.rest);
      const st = vfs.open(at.volume, at.rest, O_CREAT | O_TRUNC);
      if (st.kind !== 'file') return refuse(GUEST_ERR.INVALID);
      vfs.write(st.ino, 0, data);
      return undefined;
    });
  }

  /** Every entry whose guest path starts with `prefix` (≤ MAX_LIST_ENTRIES, else TOO_LARGE). */
  list(prefix: unknown): Listed[] {
    if (typeof prefix !== 'string') return refuse(GUEST_ERR.INVALID);
    if (Buffer.byteLength(prefix) > MAX_LANE_PATH_BYTES) return refuse(GUEST_ERR.TOO_LARGE);
    return this.guarded(() => {
      const entries = listPrefix(this.open(), this.spec, prefix);
      return typeof entries === 'number' ? refuse(entries) : entries;
    });
  }

  /** Delete a file, symlink or empty directory: false when there was none. */
  delete(path: unknown): boolean {
    const at = this.at(path);
    return this.guarded(() => {
      const vfs = this.open();
      let st;
      try {
        st = vfs.stat(at.volume, at.rest, { followFinal: false });
      } catch (e) {
        if (e instanceof VfsError && (e.code === 'ENOENT' || e.code === 'ENOTDIR')) return false;
        throw e;
      }
      if (st.kind === 'dir') vfs.rmdir(at.volume, at.rest);
      else vfs.unlink(at.volume, at.rest);
      return true;
    });
  }

  /**
   * Append one JSON line to `/_steps.jsonl` (an exec-cap call). Best effort, as for core guests:
   * a full VFS refuses the line, never the command that already ran.
   */
  step(record: Record<string, unknown>): void {
    try {
      appendStep(this.open(), record);
    } catch {
      // The VFS could not be opened: the log is best effort, like the line itself.
    }
  }

  /** Close the connection; a private VFS's files are removed. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.vfs?.close();
    } finally {
      if (this.dbFile !== null && this.options.name === undefined) removeDatabase(this.dbFile);
      this.vfs = null;
    }
  }
}
