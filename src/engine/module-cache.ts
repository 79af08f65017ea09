/**
 * Compiled-module cache: content hash + wall settings → limits-rewritten, compiled module and
 * its description.
 *
 * Owns: the space wall at load time (memory/table maxima rewritten by src/wasm/limits.ts,
 * initial sizes over the cap → MEMORY_LIMIT, imported ones included), compilation, and an LRU bound on what is kept.
 * A `WebAssembly.Module` is shared with workers by `postMessage`, which shares V8's compiled
 * code rather than recompiling. Invariant: the module a worker instantiates is always the
 * rewritten one; the key includes every setting the rewrite depends on.
 *
 * Does not protect against: hash collisions in SHA-256.
 */

import { createHash } from 'node:crypto';
import { SandboxError } from '../errors.ts';
import { applyLimits, describeModule, type LimitsResult, type ModuleDescription } from '../wasm/index.ts';

export interface PreparedModule {
  readonly hash: string;
  readonly module: WebAssembly.Module;
  readonly desc: ModuleDescription;
  readonly limits: LimitsResult<Uint8Array>;
  readonly maxMemoryPages: number;
}

export interface PrepareOptions {
  readonly maxMemoryPages: number;
  readonly maxTableElements: number;
  readonly trapOnGrowFailure: boolean;
}

export const MAX_CACHED_MODULES = 128;

export class ModuleCache {
  private readonly entries = new Map<string, Promise<PreparedModule>>();

  constructor(private readonly capacity = MAX_CACHED_MODULES) {}

  static hash(bytes: Uint8Array): string {
    return createHash('sha256').update(bytes).digest('hex');
  }

  prepare(bytes: Uint8Array, opts: PrepareOptions): Promise<PreparedModule> {
    const hash = ModuleCache.hash(bytes);
    const key = `${hash}:${opts.maxMemoryPages}:${opts.maxTableElements}:${opts.trapOnGrowFailure ? 1 : 0}`;
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const p = this.build(hash, bytes, opts);
    this.entries.set(key, p);
    p.catch(() => this.entries.delete(key));
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return p;
  }

  private async build(hash: string, bytes: Uint8Array, opts: PrepareOptions): Promise<PreparedModule> {
    const desc = describeModule(bytes);
    // applyLimits refuses a defined or imported memory/table whose initial size is over its cap.
    const limits = applyLimits(bytes, opts);
    let module: WebAssembly.Module;
    try {
      module = await WebAssembly.compile(limits.bytes as Uint8Array<ArrayBuffer>);
    } catch (e) {
      const msg = e instanceof Error ? e.message.replace(/^WebAssembly\.compile\(\): /, '') : 'compile failed';
      throw new SandboxError('INVALID_MODULE', `the module does not compile: ${msg.slice(0, 200)}`, {});
    }
    return { hash, module, desc, limits, maxMemoryPages: opts.maxMemoryPages };
  }
}
