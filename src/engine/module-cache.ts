/**
 * Compiled-module cache: content hash + wall settings → rewritten, compiled module and its
 * description; rewritten bytes also cached on disk so a module is rewritten once per machine.
 *
 * Owns: the load-time walls — limits (src/wasm/limits.ts: memory/table maxima, initial sizes over
 * the cap → MEMORY_LIMIT, the memory.grow guard) then fuel metering (src/wasm/fuel) — and
 * compilation, with an LRU bound in memory and a content-addressed directory on disk
 * (`$MEMBRANE_HOME/cache/rewritten/<sha256>.wasm`, keyed by the input bytes, both rewriters'
 * versions and every option). A `WebAssembly.Module` is shared with workers by `postMessage`,
 * which shares V8's compiled code. Invariant: the module a worker instantiates is always the
 * rewritten one; a disk entry is written atomically (temp file + rename, mode 0600) and one that
 * fails to compile is discarded and rebuilt.
 *
 * Does not protect against: hash collisions in SHA-256; a local user who can write the cache
 * directory (it must be private to the engine's user, like `$MEMBRANE_HOME` itself).
 */

import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { readCachedWasm, writeCacheFile } from '../storage/cache-file.ts';
import { join } from 'node:path';
import { SandboxError } from '../errors.ts';
import {
  FUEL_REWRITER_VERSION,
  applyLimits,
  assertValidModule,
  describeModule,
  instrumentFuel,
  type FuelStats,
  type LimitsResult,
  type ModuleDescription,
} from '../wasm/index.ts';

/** Bump when limits.ts output for the same input could change. */
export const LIMITS_REWRITER_VERSION = 1;

export interface PreparedModule {
  readonly hash: string;
  readonly module: WebAssembly.Module;
  readonly desc: ModuleDescription;
  readonly limits: LimitsResult<Uint8Array>;
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

export class ModuleCache {
  private readonly entries = new Map<string, Promise<PreparedModule>>();

  constructor(
    private readonly diskDir: string | null = null,
    private readonly capacity = MAX_CACHED_MODULES,
  ) {}

  static hash(bytes: Uint8Array): string {
    return createHash('sha256').update(bytes).digest('hex');
  }

  prepare(bytes: Uint8Array, opts: PrepareOptions): Promise<PreparedModule> {
    const hash = ModuleCache.hash(bytes);
    const key = `${hash}:${opts.maxMemoryPages}:${opts.maxTableElements}:${opts.trapOnGrowFailure ? 1 : 0}:${opts.metered ? FUEL_REWRITER_VERSION : 0}:${LIMITS_REWRITER_VERSION}`;
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const p = this.build(hash, key, bytes, opts);
    this.entries.set(key, p);
    p.catch(() => this.entries.delete(key));
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return p;
  }

  private async build(hash: string, key: string, bytes: Uint8Array, opts: PrepareOptions): Promise<PreparedModule> {
    // The bytes as given, once, before any rewriter (or a disk-cache hit) stands in for them.
    assertValidModule(bytes);
    const desc = describeModule(bytes);
    // applyLimits refuses a defined or imported memory/table whose initial size is over its cap;
    // it is cheap, and its result says what the worker needs (grow export, imported memory).
    const limits = applyLimits(bytes, { ...opts, validated: true });
    const diskFile = this.diskDir ? join(this.diskDir, 'rewritten', `${ModuleCache.hash(new TextEncoder().encode(key))}.wasm`) : null;
    const cached = opts.metered && diskFile ? readCachedWasm(diskFile) : null;
    const fromDisk = cached !== null;
    let fuel: FuelStats | null = null;
    let rewritten: Uint8Array = limits.bytes;
    if (cached) {
      rewritten = cached;
    } else if (opts.metered) {
      const r = instrumentFuel(limits.bytes, { validated: true });
      rewritten = r.bytes;
      fuel = r.stats;
      if (diskFile) writeCacheFile(diskFile, rewritten);
    }
    let module: WebAssembly.Module;
    try {
      module = await WebAssembly.compile(rewritten as Uint8Array<ArrayBuffer>);
    } catch (e) {
      if (fromDisk && diskFile) {
        rmSync(diskFile, { force: true });
        return this.build(hash, key, bytes, opts);
      }
      const msg = e instanceof Error ? e.message.replace(/^WebAssembly\.compile\(\): /, '') : 'compile failed';
      throw new SandboxError('INVALID_MODULE', `the module does not compile: ${msg.slice(0, 200)}`, {});
    }
    return { hash, module, desc, limits, maxMemoryPages: opts.maxMemoryPages, metered: opts.metered, fuel, fromDisk };
  }
}
