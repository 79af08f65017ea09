/**
 * The `os_process` tier's wire format: lines of JSON (JSON text holds no raw newline). On the
 * child's stdin: a boot line (the engine settings), then the request line, then — stdin stays
 * open for the call — one answer line per broker request. On its stdout: a ready line
 * (`READY_LINE`, once its engine is built and warm), then any number of broker request lines
 * (each starting with `BROKER_MARK`: the parent serves the child's brokered powers), then the
 * reply line. Bytes cross as base64. A pooled child gets its boot line at spawn and its request
 * when a call takes it; a fresh child gets both at once. Shared by the parent (lane.ts, pool.ts,
 * broker-proxy.ts) and the child (child.ts, broker-link.ts).
 *
 * Owns: the request, reply and broker line shapes and their (de)serialization; the bounds of a
 * broker request line and of the requests a child may have in flight.
 * Invariant: only data crosses — module bytes or source text, numbers and strings; no functions,
 * signals or host objects (the parent strips them before sending); of the embedder's host
 * functions, only the names and argument caps of those the call was granted. A broker request
 * names an import (a host request a cap and function) and carries its arguments; never a tenant,
 * a grant or a caller — the parent serves it as the call it gave the child.
 * Does not protect against: a child that lies in its reply — the parent caps the reply's size and
 * checks its shape, but a compromised child can report any result for its own call.
 */

import type { Declaration } from '../../policy/toolkit.ts';

/** Engine settings passed down: the parent's, never anything higher. */
export interface ChildEngineSettings {
  readonly operatorLimits: Record<string, { memoryBytes?: number; timeoutMs?: number; fuel?: number }>;
  readonly strictProfiles: boolean;
  readonly fuel: boolean;
  readonly fuelChunk: number;
  readonly outputLimitBytes: number;
  readonly cacheDir: string | null;
  /** The guest workers' heap and stack (the parent's: a spawned command's worker is bounded as in a worker run). */
  readonly workerHeapMb: number;
  readonly workerStackMb: number;
  /**
   * The parent runs only signed modules: the child, which has no trusted DIDs, refuses every
   * module a guest names by VFS path (DENIED, `artifact.refused`); the call's own module was
   * checked by the parent, and registered commands are the operator's.
   */
  readonly requireSigned: boolean;
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

/** `commands`: the parent's command registry, for a call granted a spawning cap (os-process/commands.ts). */
export type ChildRequest =
  | { readonly kind: 'run'; readonly module: string; readonly opts: Record<string, unknown>; readonly hostFunctions?: HostFunctionTable; readonly stream?: readonly number[]; readonly commands?: readonly CommandEntry[] }
  | { readonly kind: 'exec'; readonly opts: Record<string, unknown>; readonly hostFunctions?: HostFunctionTable; readonly stream?: readonly number[]; readonly commands?: readonly CommandEntry[] };

/**
 * The host caps a call was granted, as its child links and offers them: each cap's function
 * names and its argument size cap (a larger argument travels as its size alone). Never a cap the
 * call was not granted, never a function: the functions stay in the parent, which serves each call.
 */
export type HostFunctionTable = Readonly<Record<string, { readonly fns: readonly string[]; readonly maxArgBytes: number }>>;

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

/** The first byte of a broker request line on the child's stdout (a reply line starts with `{`). */
export const BROKER_MARK = '>';

/**
 * Arguments a child sends with one broker request, in bytes: more than every broker accepts
 * (http_fetch_many's 4 MiB is the largest), so a larger request travels as its size alone
 * (`oversized`) and the parent's cadence refuses it TOO_LARGE, as it would in a worker.
 */
export const MAX_BROKER_ARGS_BYTES = 4 * 1024 * 1024 + 4096;
/** A broker request line's bound (its arguments in base64, and the JSON around them): a longer one kills the child. */
export const MAX_BROKER_LINE_BYTES = Math.ceil(MAX_BROKER_ARGS_BYTES / 3) * 4 + 64 * 1024;
/**
 * Broker requests a child may have in flight (sent, and not yet answered down to its stdin). Its
 * engine runs one call whose guest makes its host calls one at a time; only a forged child goes
 * past this, and it is killed.
 */
export const MAX_BROKER_IN_FLIGHT = 8;

/**
 * A broker request (after BROKER_MARK): `name` a `membrane` broker import with its string
 * arguments (base64) and the guest's `cap` (its out buffer); or only their total size
 * (`oversized`) when they are too large to carry; `leftMs` what is left of the child's call.
 * `cancel` withdraws request `id` (the child's call ended or timed out: its answer is not awaited);
 * `slot` and `release` (SlotLine) hold the tenant's spawn slots.
 */
export type BrokerRequestLine =
  | { readonly kind: 'broker'; readonly id: number; readonly name: string; readonly args?: readonly string[]; readonly oversized?: number; readonly cap: number; readonly leftMs: number }
  | HostRequestLine
  | { readonly kind: 'cancel'; readonly id: number }
  | SlotLine;

/**
 * The command lanes' accounting is the parent's, across all the tenant's calls: `admit` runs the
 * cadence's steps 1-4 (granted, revoked, rate, size) for a call of a spawning cap (answered like
 * a broker request: ok, or the guest errno); `slot` asks for one of the tenant's exec or
 * live-process slots (ok, or QUOTA at the limit); `release` gives back the slot request `id` got
 * (no answer; the parent releases whatever the call still holds when it ends).
 */
export type SlotLine =
  | { readonly kind: 'admit'; readonly id: number; readonly cap: 'commands' | 'exec' | 'parallel'; readonly op: string; readonly bytes: number; readonly max: number }
  | { readonly kind: 'slot'; readonly id: number; readonly slot: 'exec' | 'process' }
  | { readonly kind: 'release'; readonly id: number };

/**
 * A host function call (after BROKER_MARK): `cap`.`fn` with its JSON argument (base64), or only
 * its size (`oversized`: larger than the cap's maxArgBytes); `leftMs` as for a broker request.
 * Answered like a broker request: `value` the JSON answer's length, `payload` the answer.
 */
export interface HostRequestLine {
  readonly kind: 'host';
  readonly id: number;
  readonly cap: string;
  readonly fn: string;
  readonly args?: string;
  readonly oversized?: number;
  readonly leftMs: number;
}

/** The parent's answer to broker request `id` (on the child's stdin): the broker's answer as in a worker. */
export type BrokerAnswerLine =
  | { readonly id: number; readonly ok: true; readonly value: number; readonly payload?: string }
  | { readonly id: number; readonly ok: false; readonly errno: number };

/**
 * One command as the child gets it: a built-in by name and hash; a registered module by its bytes
 * too, or — from INLINE_MAX_BYTES on — by the path of its copy in the engine's shelf.
 */
export interface CommandEntry {
  readonly name: string;
  readonly sha256: string;
  readonly builtin?: true;
  readonly b64?: string;
  readonly path?: string;
  readonly declared?: Declaration;
}
