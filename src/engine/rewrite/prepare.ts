/**
 * One module's preparation: describe, limits, fuel, compile — and, for the disk cache, the entry.
 * Runs on a rewrite worker (rewrite/worker.ts), or on the caller's thread for modules small
 * enough that it costs less than handing them over (module-cache.ts, INLINE_PREPARE_BYTES).
 *
 * Owns: the order of the load-time walls and the mapping of failures. Invariant: the result holds
 * a module that compiled, or the call throws a SandboxError — INVALID_MODULE (malformed, does not
 * compile) or MEMORY_LIMIT (over the caps, too large for the rewriter); an entry is produced only
 * after the rewritten module compiled.
 *
 * Does not protect against: its own cost — a caller on a thread that must stay free hands large
 * modules to the rewrite pool.
 */

import { SandboxError } from '../../errors.ts';
import { encodeCacheEntry } from '../../storage/cache-file.ts';
import { applyLimits, describeModule, importMemory, instrumentFuel, type FuelStats, type ModuleDescription } from '../../wasm/index.ts';
import type { EntryMeta, LimitsInfo, RewriteSettings } from './protocol.ts';

export interface PreparedParts {
  readonly module: WebAssembly.Module;
  readonly desc: ModuleDescription;
  readonly limits: LimitsInfo;
  readonly fuel: FuelStats | null;
  /** The disk cache entry when `entryKey` was given. */
  readonly entry: Uint8Array<ArrayBuffer> | null;
}

export async function prepareModule(bytes: Uint8Array, settings: RewriteSettings, entryKey: string | null): Promise<PreparedParts> {
  try {
    // applyLimits validates the bytes as given (INVALID_MODULE with V8's reason) before anything
    // reads them further, and refuses a memory or table whose initial size is over its cap.
    const { bytes: limited, ...limits } = applyLimits(bytes, settings);
    const desc = describeModule(bytes);
    let rewritten: Uint8Array = limited;
    let fuel: FuelStats | null = null;
    if (settings.metered) {
      const r = instrumentFuel(limited, { validated: true });
      rewritten = r.bytes;
      fuel = r.stats;
    }
    // Last: the memory becomes an import the worker can fill with a recycled, zeroed one (no index moves).
    const pooled = importMemory(rewritten);
    rewritten = pooled.bytes;
    const module = await compileRewritten(rewritten);
    const info: LimitsInfo = { ...limits, poolMemory: pooled.memory };
    const entry = entryKey === null ? null : encodeCacheEntry(JSON.stringify({ key: entryKey, desc, limits: info } satisfies EntryMeta), rewritten);
    return { module, desc, limits: info, fuel, entry };
  } catch (e) {
    throw asGuestError(e);
  }
}

export async function compileRewritten(bytes: Uint8Array): Promise<WebAssembly.Module> {
  try {
    return await WebAssembly.compile(bytes as Uint8Array<ArrayBuffer>);
  } catch (e) {
    const msg = e instanceof Error ? e.message.replace(/^WebAssembly\.compile\(\): /, '') : 'compile failed';
    throw new SandboxError('INVALID_MODULE', `the module does not compile: ${msg.slice(0, 200)}`, {});
  }
}

export function asGuestError(e: unknown): SandboxError {
  if (e instanceof SandboxError) return e;
  // The rewriter's only non-SandboxError failures on hostile input are resource ones
  // ("Invalid array length", "Maximum call stack size exceeded").
  if (e instanceof RangeError) return new SandboxError('MEMORY_LIMIT', 'the module is too large to rewrite', {});
  return new SandboxError('INTERNAL', 'the module rewriter failed', {});
}
