/**
 * The `os_process` tier's wire format. On the child's stdin: a boot line (the engine settings,
 * one JSON document and a newline), then the request (one JSON document, then end of input). On
 * its stdout: a ready line (`READY_LINE`, once its engine is built and warm), then the reply (one
 * JSON document and a newline: JSON text holds no raw newline, so the reply ends there). Bytes cross as base64. A pooled child gets its boot line at spawn and its request
 * when a call takes it; a fresh child gets both at once. Shared by the parent (lane.ts, pool.ts)
 * and the child (child.ts).
 *
 * Owns: the request and reply shapes and their (de)serialization.
 * Invariant: only data crosses — module bytes or source text, numbers and strings; no functions,
 * signals or host objects (the parent strips them before sending).
 * Does not protect against: a child that lies in its reply — the parent caps the reply's size and
 * checks its shape, but a compromised child can report any result for its own call.
 */

/** Engine settings passed down: the parent's, never anything higher. */
export interface ChildEngineSettings {
  readonly operatorLimits: Record<string, { memoryBytes?: number; timeoutMs?: number; fuel?: number }>;
  readonly strictProfiles: boolean;
  readonly fuel: boolean;
  readonly fuelChunk: number;
  readonly outputLimitBytes: number;
  readonly cacheDir: string | null;
}

/** The first line on a child's stdin: what its engine is built from (the same for every call of one parent engine). */
export interface ChildBoot {
  readonly kind: 'boot';
  readonly engine: ChildEngineSettings;
  /**
   * What a pooled child readies before its ready line: `run` a guest worker, the rewriter and the
   * compile path (it runs a built-in no-op module once), `js` the JS/TS interpreter pool; null (a
   * fresh child): nothing, its request is already there.
   */
  readonly warm: WarmKind | null;
}

export type WarmKind = 'run' | 'js';

export type ChildRequest =
  | { readonly kind: 'run'; readonly module: string; readonly opts: Record<string, unknown> }
  | { readonly kind: 'exec'; readonly opts: Record<string, unknown> };

/** The child's first line on stdout: its engine is built and it waits for its request. */
export const READY_LINE = 'ready\n';

/** The reply text after the ready line (a child that never sent one has no reply). */
export function replyText(out: string): string | null {
  return out.startsWith(READY_LINE) && out.endsWith('\n') ? out.slice(READY_LINE.length, -1) : null;
}

export interface ChildReply {
  readonly result: Record<string, unknown>;
  /** Audit records the child's engine made for the call (merged into the parent's log). */
  readonly audit: readonly { kind: string; detail?: unknown }[];
}

export const toB64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
export const fromB64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'));

/** JSON with BigInt (i64 arguments and results) carried as `{ "$bigint": "digits" }`. */
export const encode = (value: unknown): string => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? { $bigint: v.toString() } : v));
export const decode = (text: string): unknown =>
  JSON.parse(text, (_k, v: unknown) => {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const keys = Object.keys(v);
      const b = (v as { $bigint?: unknown }).$bigint;
      if (keys.length === 1 && typeof b === 'string' && /^-?\d{1,40}$/.test(b)) return BigInt(b);
    }
    return v;
  });
