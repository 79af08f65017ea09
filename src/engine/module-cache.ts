/**
 * Compiled-module cache: content hash + wall settings → rewritten, compiled module and its
 * description; rewritten modules also kept on disk so a module is rewritten once per machine.
 *
 * Owns: the load-time walls — limits (src/wasm/limits.ts: memory/table maxima, initial sizes over
 * the cap → MEMORY_LIMIT, the memory.grow guard) then fuel metering (src/wasm/fuel) — and
 * compilation, done by the rewrite pool's worker threads (engine/rewrite/) so that no upload
 * stalls the main thread (modules ≤ INLINE_PREPARE_BYTES are prepared in place: a few ms); an LRU bound in memory (MAX_CACHED_MODULES); concurrent prepares of
 * one key share one job; and a content-addressed directory on disk
 * (`<cacheDir>/rewritten/<sha256>.entry`, keyed by the input bytes, both rewriters' versions, the
 * entry format and every option) bounded to `maxDiskBytes` with LRU eviction
 * (storage/cache-dir.ts). A `WebAssembly.Module` is shared with workers by `postMessage`, which
 * shares V8's compiled code.
 * Invariants: the module a worker instantiates is always the rewritten one; a module that fails
 * (malformed, over the caps, does not compile, a rewrite over its time or heap) leaves nothing
 * cached, in memory or on disk — the disk entry is produced only after the rewritten module
 * compiled; a disk entry that fails to read back or compile is discarded and rebuilt. On the
 * main thread a prepare costs at most one HASH_CHUNK_BYTES step of hashing between yields, plus
 * the async file I/O; an in-memory hit of a module ≤ INLINE_HASH_BYTES is one synchronous hash,
 * or — for a buffer the caller passed before — one compare with a private copy of the bytes that
 * were hashed (kept beside the buffer while the caller keeps it: a module's size again).
 *
 * Does not protect against: hash collisions in SHA-256; a local user who can write the cache
 * directory (it must be private to the engine's user, like `$MEMBRANE_HOME` itself); the
 * main-thread cost of a description with V8's maximum of 100 000 imports or exports.
 */

import { createHash } from 'node:crypto';
import { SandboxError } from '../errors.ts';
import { BoundedCacheDir, TOUCH_INTERVAL_MS } from '../storage/cache-dir.ts';
import { CACHE_ENTRY_FORMAT, decodeCacheEntry } from '../storage/cache-file.ts';
import { isComponent } from '../wasm/component.ts';
import { FUEL_REWRITER_VERSION, type FuelStats, type ModuleDescription } from '../wasm/index.ts';
import { RewritePool } from './rewrite/pool.ts';
import { compileRewritten, prepareModule } from './rewrite/prepare.ts';
import type { EntryMeta, LimitsInfo } from './rewrite/protocol.ts';
import { locateRewriteWorker } from './worker-file.ts';

/** Bump when limits.ts output for the same input could change. */
export const LIMITS_REWRITER_VERSION = 2; // 2: the memory becomes an import (wasm/memory-import.ts)

export interface PreparedModule {
  readonly hash: string;
  readonly module: WebAssembly.Module;
  readonly desc: ModuleDescription;
  readonly limits: LimitsInfo;
  readonly maxMemoryPages: number;
  readonly metered: boolean;
  /** Fuel instrumentation stats; null when not metered or when loaded from the disk cache. */
  readonly fuel: FuelStats | null;
  readonly fromDisk: boolean;
}

export interface PrepareOptions {
  readonly maxMemoryPages: number;
  readonly maxTableElements: number;
  readonly trapOnGrowFailure: boolean;
  readonly metered: boolean;
}

export const MAX_CACHED_MODULES = 128;
/** 512 MiB of rewritten modules on disk (EngineOptions.cacheMaxBytes). */
export const DEFAULT_CACHE_MAX_BYTES = 512 * 1024 * 1024;
/** Hashed in one go on the caller's thread (~1 ms of SHA-256); larger modules in chunks. */
export const INLINE_HASH_BYTES = 1024 * 1024;
/** One hashing step between yields to the event loop. */
export const HASH_CHUNK_BYTES = 1024 * 1024;
/**
 * Modules up to this size are rewritten and compiled on the caller's thread (≤ ~500 functions:
 * a few ms on a loaded machine): cheaper than a worker's round trip, and a CLI run of a small
 * module starts no thread.
 */
export const INLINE_PREPARE_BYTES = 2 * 1024;
/** Disk entries whose rewritten wasm is up to this size are compiled on the caller's thread. */
export const INLINE_COMPILE_BYTES = 64 * 1024;

export interface ModuleCacheOptions {
  /** In-memory entries. Default MAX_CACHED_MODULES. */
  readonly capacity?: number;
  /** Bytes the disk cache directory may hold. Default DEFAULT_CACHE_MAX_BYTES. */
  readonly maxDiskBytes?: number;
  /** The rewrite threads; default a pool of its own, closed with the cache. */
  readonly rewriter?: RewritePool;
}

export class ModuleCache {
  private readonly entries = new Map<string, { readonly p: Promise<PreparedModule>; touchedAt: number }>();
  /** Engine-owned buffers (trust()) → their hash, or null until first hashed. */
  private readonly trusted = new WeakMap<Uint8Array, string | null>();
  /** Callers' buffers (≤ INLINE_HASH_BYTES) → a private copy of what they held when hashed, and its hash. */
  private readonly seen = new WeakMap<Uint8Array, Seen>();
  /** The key looked up last (the most recently used entry): found again, it needs no reordering. */
  private newest: string | null = null;
  private readonly disk: BoundedCacheDir | null;
  private readonly rewriter: RewritePool;
  private readonly ownsRewriter: boolean;
  private readonly capacity: number;

  constructor(diskDir: string | null = null, options: ModuleCacheOptions = {}) {
    this.capacity = options.capacity ?? MAX_CACHED_MODULES;
    this.disk = diskDir ? new BoundedCacheDir(diskDir, options.maxDiskBytes ?? DEFAULT_CACHE_MAX_BYTES) : null;
    this.ownsRewriter = options.rewriter === undefined;
    this.rewriter = options.rewriter ?? new RewritePool({ file: locateRewriteWorker });
  }

  static hash(bytes: Uint8Array): string {
    return createHash('sha256').update(bytes).digest('hex');
  }

  /** Modules in memory, and workers and evictions behind them (for tests and stats). */
  get stats(): { inMemory: number; rewriteWorkers: number; rewritesReplaced: number; diskEvictions: number } {
    return { inMemory: this.entries.size, rewriteWorkers: this.rewriter.liveWorkers, rewritesReplaced: this.rewriter.replaced, diskEvictions: this.disk?.evicted ?? 0 };
  }

  prepare(bytes: Uint8Array, opts: PrepareOptions): Promise<PreparedModule> {
    // A component's core modules come here one by one (engine/component-lane.ts); a whole one never does.
    if (isComponent(bytes)) return Promise.reject(new SandboxError('POLICY_INVALID', 'a WebAssembly component runs with engine.run (the component lane); persistent instances, kernels and commands take core modules only'));
    const known = this.trusted.get(bytes);
    if (typeof known === 'string') return this.lookup(known, bytes, opts, true);
    if (bytes.byteLength <= INLINE_HASH_BYTES) {
      // A caller's buffer seen before: its hash again only if it still holds, byte for byte, the
      // copy that hash was taken of (a compare is ~20x cheaper than SHA-256); else hashed afresh.
      const seen = this.seen.get(bytes);
      if (seen !== undefined && sameBytes(seen.copy, bytes)) return this.lookup(seen.hash, seen.copy, opts, false, seen);
      const copy = new Uint8Array(bytes);
      const hash = ModuleCache.hash(copy);
      const fresh: Seen = { copy, hash, last: null };
      this.seen.set(bytes, fresh);
      return this.lookup(hash, copy, opts, false, fresh);
    }
    if (known === null) {
      // Hashed once, kept by identity: a buffer the engine owns and never changes.
      return copyAndHash(bytes).then(({ hash }) => {
        this.trusted.set(bytes, hash);
        return this.lookup(hash, bytes, opts, true);
      });
    }
    return copyAndHash(bytes).then(({ hash, copy }) => this.lookup(hash, copy, opts));
  }

  /**
   * Mark a buffer the engine owns and never mutates (the toolchain's 75 MB module): its hash is
   * computed once and then found by identity, so a warm run of it costs no hashing. Never call
   * this with a caller's bytes — a caller could change them after the hash.
   */
  trust(bytes: Uint8Array): void {
    if (!this.trusted.has(bytes)) this.trusted.set(bytes, null);
  }

  async close(): Promise<void> {
    if (this.ownsRewriter) await this.rewriter.close();
  }

  private lookup(hash: string, bytes: Uint8Array, opts: PrepareOptions, shared = false, seen: Seen | null = null): Promise<PreparedModule> {
    const last = seen?.last;
    const key = last && (last.opts === opts || sameSettings(last.opts, opts)) ? last.key : cacheKey(hash, opts);
    if (seen && last?.key !== key) seen.last = { key, opts: Object.isFrozen(opts) ? opts : { ...opts } };
    const hit = this.entries.get(key);
    if (hit) {
      if (key !== this.newest) {
        this.entries.delete(key);
        this.entries.set(key, hit);
        this.newest = key;
      }
      if (this.disk && opts.metered) {
        const now = Date.now();
        if (now - hit.touchedAt >= TOUCH_INTERVAL_MS) {
          hit.touchedAt = now;
          this.disk.touch(entryName(key));
        }
      }
      return hit.p;
    }
    const p = this.build(hash, key, shared ? new Uint8Array(bytes) : bytes, opts);
    const entry = { p, touchedAt: Date.now() };
    this.entries.set(key, entry);
    this.newest = key;
    p.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return p;
  }

  private async build(hash: string, key: string, bytes: Uint8Array, opts: PrepareOptions): Promise<PreparedModule> {
    // Our own copy (before any await), transferred to the rewrite worker: the caller keeps its bytes.
    const own: Uint8Array<ArrayBuffer> = bytes.byteLength <= INLINE_HASH_BYTES ? new Uint8Array(bytes) : (bytes as Uint8Array<ArrayBuffer>);
    const base = { hash, maxMemoryPages: opts.maxMemoryPages, metered: opts.metered };
    const name = entryName(key);
    const disk = opts.metered ? this.disk : null;
    if (disk) {
      const fromDisk = await this.readEntry(disk, name, key);
      if (fromDisk) return { ...base, ...fromDisk, fuel: null, fromDisk: true };
    }
    const settings = { maxMemoryPages: opts.maxMemoryPages, maxTableElements: opts.maxTableElements, trapOnGrowFailure: opts.trapOnGrowFailure, metered: opts.metered };
    const r = own.byteLength <= INLINE_PREPARE_BYTES ? await prepareModule(own, settings, disk ? key : null) : await this.rewriter.prepare(own, settings, disk ? key : null);
    // Written before the module is handed out: a prepare that resolved left its entry on disk.
    if (disk && r.entry) await disk.write(name, r.entry);
    return { ...base, module: r.module, desc: r.desc, limits: r.limits, fuel: r.fuel, fromDisk: false };
  }

  /** A disk entry for `key` compiled by a rewrite worker, or null (absent, damaged: removed). */
  private async readEntry(disk: BoundedCacheDir, name: string, key: string): Promise<Omit<PreparedModule, 'hash' | 'maxMemoryPages' | 'metered' | 'fuel' | 'fromDisk'> | null> {
    const file = await disk.read(name);
    if (!file) return null;
    const entry = decodeCacheEntry(file);
    const meta = entry ? parseMeta(entry.meta, key) : null;
    if (entry && meta) {
      try {
        const module =
          file.byteLength - entry.wasmOffset <= INLINE_COMPILE_BYTES
            ? await compileRewritten(file.subarray(entry.wasmOffset))
            : await this.rewriter.compile(new Uint8Array(file.buffer as ArrayBuffer, file.byteOffset, file.byteLength), entry.wasmOffset);
        return { module, desc: meta.desc, limits: meta.limits };
      } catch (e) {
        if (!(e instanceof SandboxError) || e.code !== 'INVALID_MODULE') throw e;
      }
    }
    await disk.remove(name);
    return null;
  }
}

/** The entry's file: named by a hash of the whole key, never by anything the uploader chose. */
function entryName(key: string): string {
  return `rewritten/${createHash('sha256').update(key).digest('hex')}.entry`;
}

function parseMeta(text: string, key: string): EntryMeta | null {
  try {
    const m = JSON.parse(text) as Partial<EntryMeta> | null;
    if (!m || m.key !== key || typeof m.desc !== 'object' || m.desc === null || typeof m.limits !== 'object' || m.limits === null) return null;
    if (!Array.isArray(m.desc.imports) || !Array.isArray(m.desc.exports)) return null;
    return m as EntryMeta;
  } catch {
    return null;
  }
}

/** A caller's buffer as last hashed: a private copy of its bytes then, their hash, and the last cache key it was looked up under. */
interface Seen {
  readonly copy: Uint8Array<ArrayBuffer>;
  readonly hash: string;
  last: { readonly key: string; readonly opts: PrepareOptions } | null;
}

/** The in-memory (and disk) key: the content hash, every wall setting, both rewriters' versions and the entry format. */
function cacheKey(hash: string, opts: PrepareOptions): string {
  return `${hash}:${opts.maxMemoryPages}:${opts.maxTableElements}:${opts.trapOnGrowFailure ? 1 : 0}:${opts.metered ? FUEL_REWRITER_VERSION : 0}:${LIMITS_REWRITER_VERSION}:${CACHE_ENTRY_FORMAT}`;
}

function sameSettings(a: PrepareOptions, b: PrepareOptions): boolean {
  return a.maxMemoryPages === b.maxMemoryPages && a.maxTableElements === b.maxTableElements && a.trapOnGrowFailure === b.trapOnGrowFailure && a.metered === b.metered;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

/** Copy (so the caller can't change the bytes under us) and hash, one chunk per event-loop turn. */
async function copyAndHash(bytes: Uint8Array): Promise<{ hash: string; copy: Uint8Array<ArrayBuffer> }> {
  const h = createHash('sha256');
  const copy = new Uint8Array(bytes.byteLength);
  for (let at = 0; at < bytes.byteLength; at += HASH_CHUNK_BYTES) {
    const end = Math.min(at + HASH_CHUNK_BYTES, bytes.byteLength);
    copy.set(bytes.subarray(at, end), at);
    h.update(copy.subarray(at, end));
    if (end < bytes.byteLength) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return { hash: h.digest('hex'), copy };
}
