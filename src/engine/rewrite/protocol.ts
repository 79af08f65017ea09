/**
 * Messages between the engine and its rewrite workers (engine/rewrite/worker.ts).
 *
 * Owns: the shape of a job and its answer — an uploaded module to prepare, or a disk cache entry
 * to compile. Invariant: every message is versioned and carries the
 * job's `id`; bytes travel as transferred ArrayBuffers (never copied twice); errors travel as
 * plain `SerializedError` records, because structured clone drops a SandboxError's fields.
 *
 * Does not protect against: a worker that lies — the worker runs our own code only, never a
 * guest's; the module it compiles is not instantiated there.
 */

import type { SerializedError } from '../../errors.ts';
import type { FuelStats, ImportedMemory, LimitsResult, ModuleDescription } from '../../wasm/index.ts';

export const REWRITE_PROTOCOL_VERSION = 1;

/** What the rewriter needs besides the bytes: the wall settings of the cache key. */
export interface RewriteSettings {
  readonly maxMemoryPages: number;
  readonly maxTableElements: number;
  readonly trapOnGrowFailure: boolean;
  readonly metered: boolean;
}

/** A LimitsResult without its bytes: what the engine keeps about the limits rewrite. */
export type LimitsInfo = Omit<LimitsResult<Uint8Array>, 'bytes'> & {
  /** The module's memory as an import the worker fills (wasm/memory-import.ts); absent in entries written before it. */
  readonly poolMemory?: ImportedMemory | null;
};

/** What a disk cache entry says about its input, beside the rewritten wasm. */
export interface EntryMeta {
  readonly key: string;
  readonly desc: ModuleDescription;
  readonly limits: LimitsInfo;
}

export type RewriteRequest =
  | {
      readonly v: typeof REWRITE_PROTOCOL_VERSION;
      readonly kind: 'prepare';
      readonly id: number;
      /** The module as uploaded (transferred: the sender keeps no view of it). */
      readonly bytes: Uint8Array<ArrayBuffer>;
      readonly settings: RewriteSettings;
      /** Send back a disk cache entry (storage/cache-file.ts) under this key, or null for none. */
      readonly entryKey: string | null;
    }
  | {
      readonly v: typeof REWRITE_PROTOCOL_VERSION;
      readonly kind: 'compile';
      readonly id: number;
      /** A disk cache entry's file (transferred); its rewritten wasm starts at `offset`. */
      readonly bytes: Uint8Array<ArrayBuffer>;
      readonly offset: number;
    };

export type RewriteReply =
  | { readonly v: typeof REWRITE_PROTOCOL_VERSION; readonly kind: 'ready' }
  | {
      readonly v: typeof REWRITE_PROTOCOL_VERSION;
      readonly kind: 'prepared';
      readonly id: number;
      readonly module: WebAssembly.Module;
      readonly desc: ModuleDescription;
      readonly limits: LimitsInfo;
      readonly fuel: FuelStats | null;
      /** The disk cache entry when asked for (transferred), else null. */
      readonly entry: Uint8Array<ArrayBuffer> | null;
    }
  | { readonly v: typeof REWRITE_PROTOCOL_VERSION; readonly kind: 'compiled'; readonly id: number; readonly module: WebAssembly.Module }
  | { readonly v: typeof REWRITE_PROTOCOL_VERSION; readonly kind: 'failed'; readonly id: number; readonly error: SerializedError };
