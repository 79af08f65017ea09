/**
 * The bound on the on-disk module cache (`$MEMBRANE_HOME/cache`): at most `maxBytes` in files,
 * least recently used entries evicted first — without blocking the caller's thread.
 *
 * Owns: reading and writing module cache entries with async fs (a missing or damaged file is a
 * miss), marking an entry used (its mtime, refreshed at most once per `TOUCH_INTERVAL_MS`), and
 * eviction. Invariant: before an entry is written, the whole directory tree is measured and the
 * least recently used module entries are removed until the new entry fits under `maxBytes`; an
 * entry that does not fit even after every module entry is gone is not written; writes of one `BoundedCacheDir` are serialized,
 * so its own writes never overshoot. Transpiled components (`components/<hash>.json`) are
 * entries like modules: counted, evicted least recently used first. Interpreter builds of the JS
 * lane (other names) count toward the total but are never evicted — they are a fixed few, written by the engine.
 * Another engine process sharing the directory may evict an entry this one is about to read:
 * that read is a miss, never an error.
 *
 * Does not protect against: two engine processes writing at the same instant (each can overshoot
 * by its one entry until the next write measures again); a local user writing the directory.
 */

import { constants } from 'node:fs';
import { ensurePrivateDirs } from './home-files.ts';
import { open, readdir, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** An entry's mtime is its last use; refreshing it more often than this is wasted syscalls. */
export const TOUCH_INTERVAL_MS = 60_000;
/** A temporary file this old was left by a writer that died. */
const STALE_TMP_MS = 10 * 60_000;
/** Module entries: `<64 hex>.entry` (and bare `.wasm` from before the entry format). */
const MODULE_ENTRY = /^[0-9a-f]{64}\.(?:entry|wasm)$/;
/** Transpiled components (lanes/component/transpile.ts): `components/<64 hex>.json`. */
const COMPONENT_ENTRY = /^[0-9a-f]{64}\.json$/;
const MAX_SCAN_DEPTH = 3;

interface Found {
  readonly path: string;
  readonly size: number;
  readonly mtimeMs: number;
  readonly evictable: boolean;
}

export class BoundedCacheDir {
  private writes: Promise<unknown> = Promise.resolve();
  private readonly touched = new Map<string, number>();
  /** Entries removed by this process to stay under the bound. */
  evicted = 0;

  constructor(
    readonly root: string,
    readonly maxBytes: number,
  ) {}

  /** A file under the root; `rel` is built by the caller from a hash, never from input text. */
  path(rel: string): string {
    return join(this.root, rel);
  }

  /** The file's bytes, or null when it is absent or unreadable. Marks it used. */
  async read(rel: string): Promise<Buffer | null> {
    const file = this.path(rel);
    try {
      // Never through a link planted under the home (storage/home-files.ts's rule).
      const fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      let b: Buffer;
      try {
        if (!(await fh.stat()).isFile()) return null;
        b = await fh.readFile();
      } finally {
        await fh.close();
      }
      this.touch(rel);
      return b;
    } catch {
      return null;
    }
  }

  /** Record a use (LRU order): the file's mtime, at most once per TOUCH_INTERVAL_MS. */
  touch(rel: string): void {
    const now = Date.now();
    const last = this.touched.get(rel);
    if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return;
    this.touched.set(rel, now);
    if (this.touched.size > 4096) this.touched.clear();
    const t = new Date(now);
    utimes(this.path(rel), t, t).catch(() => undefined);
  }

  async remove(rel: string): Promise<void> {
    this.touched.delete(rel);
    await unlink(this.path(rel)).catch(() => undefined);
  }

  /** Write atomically after making room; false when the entry is over the bound or the disk refused. */
  write(rel: string, bytes: Uint8Array): Promise<boolean> {
    const next = this.writes.then(() => this.writeNow(rel, bytes));
    this.writes = next.catch(() => undefined);
    return next;
  }

  /** Bytes in the directory tree now. */
  async usage(): Promise<number> {
    return (await this.scan()).reduce((n, f) => n + f.size, 0);
  }

  private async writeNow(rel: string, bytes: Uint8Array): Promise<boolean> {
    if (bytes.byteLength > this.maxBytes) return false;
    const file = this.path(rel);
    try {
      if (!(await this.makeRoom(bytes.byteLength, file))) return false;
      // Every directory below the root is checked: a planted link is refused, not followed.
      ensurePrivateDirs(dirname(file));
      const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
      try {
        await writeFile(tmp, bytes, { mode: 0o600, flag: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW });
        await rename(tmp, file);
      } catch (e) {
        await unlink(tmp).catch(() => undefined);
        throw e;
      }
      this.touched.set(rel, Date.now());
      return true;
    } catch {
      return false;
    }
  }

  /** Evict least recently used module entries until `incoming` more bytes fit; false if they cannot. */
  private async makeRoom(incoming: number, replacing: string): Promise<boolean> {
    const found = await this.scan();
    let total = found.reduce((n, f) => n + (f.path === replacing ? 0 : f.size), 0);
    if (total + incoming <= this.maxBytes) return true;
    const victims = found.filter((f) => f.evictable && f.path !== replacing).sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const v of victims) {
      if (total + incoming <= this.maxBytes) break;
      try {
        await unlink(v.path);
        this.evicted++;
      } catch {
        // gone already (another process evicted it): it no longer counts either way
      }
      total -= v.size;
    }
    return total + incoming <= this.maxBytes;
  }

  private async scan(): Promise<Found[]> {
    const out: Found[] = [];
    const now = Date.now();
    /** `entries`: the names evictable in this directory (module or component entries), or null. */
    const walk = async (dir: string, depth: number, entries: RegExp | null): Promise<void> => {
      let names;
      try {
        names = await readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      const files: { p: string; name: string }[] = [];
      for (const d of names) {
        const p = join(dir, d.name);
        if (d.isDirectory() && depth < MAX_SCAN_DEPTH) await walk(p, depth + 1, depth === 0 ? (d.name === 'rewritten' ? MODULE_ENTRY : d.name === 'components' ? COMPONENT_ENTRY : null) : null);
        else if (d.isFile()) files.push({ p, name: d.name });
      }
      const stats = await Promise.all(files.map((f) => stat(f.p).catch(() => null)));
      files.forEach((f, i) => {
        const s = stats[i];
        if (!s) return;
        const staleTmp = f.name.endsWith('.tmp') && now - s.mtimeMs > STALE_TMP_MS;
        out.push({ path: f.p, size: s.size, mtimeMs: s.mtimeMs, evictable: staleTmp || (entries !== null && entries.test(f.name)) });
      });
    };
    await walk(this.root, 0, null);
    return out;
  }
}
