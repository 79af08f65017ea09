/**
 * The agent's files in its own VFS: the steps log (`/_steps.jsonl`, one JSON line per tool call),
 * the session state (`/_session.json`: the conversation, usage, outcome — what `resume` reads)
 * and the review queue (`/_reviews.json`), plus the path mapping the vfs_* tools use.
 *
 * Owns: whole-file reads and writes on the workspace/memory/tmp volumes, the state file replaced
 * by write-then-rename (a kill mid-write leaves the previous state, never half of one).
 * Invariant: only the agent's own VFS is touched; a path is a VFS path, never a host path.
 *
 * Does not protect against: the agent itself editing these files (the shell can write anywhere
 * in its VFS; vfs_write refuses them, a shell redirect does not). The audit log's chained records
 * are the tamper-evident copy of every step.
 */

import { O_CREAT, O_TRUNC, Vfs, VfsError, type VolumeName } from '../storage/index.ts';

export const STEPS_FILE = '/_steps.jsonl';
export const SESSION_FILE = '/_session.json';
export const REVIEWS_FILE = '/_reviews.json';
/** Files the loop owns: vfs_write refuses them. */
export const RESERVED_FILES: readonly string[] = [STEPS_FILE, SESSION_FILE, REVIEWS_FILE, `${SESSION_FILE}.next`];
/** The largest file vfs_read reads (its output is capped again before the model sees it). */
export const MAX_READ_BYTES = 1024 * 1024;

export function locate(path: string): { volume: VolumeName; path: string } {
  const p = path.startsWith('/') ? path : `/${path}`;
  for (const volume of ['tmp', 'memory'] as const) {
    if (p === `/${volume}` || p.startsWith(`/${volume}/`)) return { volume, path: p.slice(volume.length + 1) || '/' };
  }
  return { volume: 'workspace', path: p };
}

export class AgentStore {
  private constructor(private readonly vfs: Vfs) {}

  static open(name: string): AgentStore {
    return new AgentStore(Vfs.open({ name }));
  }

  /** The file's text, or null when it does not exist. Throws VfsError for other failures. */
  read(path: string, max = MAX_READ_BYTES): Uint8Array | null {
    const at = locate(path);
    try {
      const st = this.vfs.open(at.volume, at.path, 0);
      if (st.kind !== 'file') throw new VfsError('EISDIR');
      if (st.size > max) throw new VfsError('EFBIG');
      return this.vfs.read(st.ino, 0, st.size);
    } catch (e) {
      if (e instanceof VfsError && e.code === 'ENOENT') return null;
      throw e;
    }
  }

  write(path: string, data: Uint8Array | string, append = false): number {
    const at = locate(path);
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
    this.ensureParents(at.volume, at.path);
    const st = this.vfs.open(at.volume, at.path, append ? O_CREAT : O_CREAT | O_TRUNC);
    this.vfs.write(st.ino, append ? st.size : 0, bytes);
    return bytes.byteLength;
  }

  /** Replace a file whole: write a sibling, then rename over it. */
  replace(path: string, text: string): void {
    const next = `${path}.next`;
    this.write(next, text);
    const a = locate(next);
    const b = locate(path);
    this.vfs.rename(a.volume, a.path, b.volume, b.path);
  }

  list(path: string, max = 1000): { name: string; kind: string; size?: number }[] {
    const at = locate(path);
    const dir = this.vfs.open(at.volume, at.path, 0);
    if (dir.kind !== 'dir') throw new VfsError('ENOTDIR');
    const out: { name: string; kind: string; size?: number }[] = [];
    let cookie = 0;
    while (out.length < max) {
      const batch = this.vfs.readdir(dir.ino, cookie, Math.min(256, max - out.length));
      if (batch.length === 0) break;
      for (const e of batch) {
        if (e.name === '.' || e.name === '..') continue;
        out.push(e.kind === 'file' ? { name: e.name, kind: e.kind, size: this.vfs.statIno(e.ino).size } : { name: e.name, kind: e.kind });
      }
      cookie = batch.at(-1)!.next;
    }
    return out;
  }

  close(): void {
    this.vfs.close();
  }

  private ensureParents(volume: VolumeName, path: string): void {
    const parts = path.split('/').filter(Boolean).slice(0, -1);
    let at = '';
    for (const part of parts) {
      at += `/${part}`;
      try {
        this.vfs.mkdir(volume, at);
      } catch (e) {
        if (!(e instanceof VfsError && e.code === 'EEXIST')) throw e;
      }
    }
  }
}
