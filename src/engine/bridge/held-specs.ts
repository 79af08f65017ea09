/**
 * The fixed part of the specs a pool worker holds by id, so a held run (held-modules.ts) carries
 * only what is its own: the spec's fixed part — link plan, walls (memory, output, fuel chunk,
 * host-wait bound), log sink, profile, lane port, VFS spec — travels as JSON once per worker and is
 * named by a **spec id** afterwards; the run's own part — session id and tenant, argv, env, depth,
 * stdin — travels with every run. The worker parses and checks a fixed part once
 * (worker/held-run.ts) instead of the whole spec per run.
 *
 * Owns: spec ids (from a process-wide counter, never reused), the main thread's record of the
 * fixed parts one worker holds (`HeldSpecs`, at most HELD_SPECS, the least recently used
 * forgotten first — the worker is told which id to forget in the message that gives it the new
 * one), and the split of a spec into the two parts.
 * Invariant: a spec id is named only for a fixed part equal, value for value, to the one sent to
 * that same worker under it: the record keeps the parsed JSON that was sent (never the caller's
 * objects, which could change after) and every run's fixed part is compared with it field by
 * field; anything JSON would change (a non-finite wall, bytes) is never sent by id (null: the
 * caller posts the full, structured-cloned spec). Nothing of a run's own part is kept: every run
 * sends its own session, argv, env, depth and stdin.
 *
 * Does not protect against: nothing beyond that mapping — the spec's content is the engine's
 * business (guest-spec.ts).
 */

import type { GuestSpec } from './protocol.ts';
import type { FixedSpec, OwnPart } from '../worker/held-run.ts';

export type { FixedSpec, OwnPart };

/** How many fixed parts one worker keeps by id. */
export const HELD_SPECS = 8;

/** The fixed part of `spec` (its objects shared, not copied). */
export function fixedOf(spec: GuestSpec): FixedSpec {
  return {
    profile: spec.session.profile,
    link: spec.link,
    maxMemoryPages: spec.maxMemoryPages,
    importedMemory: spec.importedMemory,
    growFailedExport: spec.growFailedExport,
    poolMemory: spec.poolMemory,
    output: spec.output,
    port: spec.wasi.port === true,
    logSink: spec.logSink,
    hostWaitMs: spec.hostWaitMs,
    fuel: spec.fuel,
    vfs: spec.vfs,
  };
}

/** The run's own part as JSON text, or null when JSON would change it (a value not a string, a depth not an integer). */
export function ownText(spec: GuestSpec): string | null {
  const { argv, env } = spec.wasi;
  const { id, tenant } = spec.session;
  if (typeof id !== 'string' || typeof tenant !== 'string' || !Number.isSafeInteger(spec.depth)) return null;
  for (const a of argv) if (typeof a !== 'string') return null;
  for (const p of env) if (p.length !== 2 || typeof p[0] !== 'string' || typeof p[1] !== 'string') return null;
  return JSON.stringify([id, tenant, argv, env, spec.depth] satisfies OwnPart);
}

let nextId = 1;

interface Held {
  readonly id: number;
  /** The fixed part as the worker has it: the JSON sent, parsed back. */
  readonly sent: unknown;
}

/** What a held run says about its spec's fixed part: its id, its JSON when new to the worker, an id to forget. */
export interface SpecRef {
  readonly specId: number;
  readonly fixed: string | null;
  readonly forgetSpec: number | null;
}

/** The main thread's view of the fixed parts one worker holds, least recently used first. */
export class HeldSpecs {
  private readonly order: Held[] = [];

  /**
   * The reference for `fixed`: the id of an equal part the worker holds, or a new id with the
   * JSON to send (and an id to forget to make room); null when JSON cannot carry it as it is.
   */
  refer(fixed: FixedSpec): SpecRef | null {
    const order = this.order;
    for (let i = order.length - 1; i >= 0; i--) {
      const h = order[i]!;
      if (!sameJson(fixed, h.sent)) continue;
      if (i !== order.length - 1) order.push(...order.splice(i, 1));
      return { specId: h.id, fixed: null, forgetSpec: null };
    }
    const text = losslessJson(fixed);
    if (text === null) return null;
    order.push({ id: nextId++, sent: JSON.parse(text) });
    const forgotten = order.length > HELD_SPECS ? order.shift()!.id : null;
    return { specId: order[order.length - 1]!.id, fixed: text, forgetSpec: forgotten };
  }

  /** The worker may have lost track (it answered INTERNAL): everything is sent again. */
  clear(): void {
    this.order.length = 0;
  }
}

/**
 * Whether `value` is what JSON `sent` says it is: the same plain data, value for value (a key
 * whose value is undefined counts as absent, as JSON drops it). An object frozen all the way down
 * cannot change, so once found equal to a node of `sent` it is not compared with it again (the
 * memo's frames, fresh-run.ts, are such objects: most runs compare a dozen fields and no more).
 */
export function sameJson(value: unknown, sent: unknown): boolean {
  if (value === sent) return value === null || typeof value !== 'object';
  if (typeof value !== 'object' || value === null || typeof sent !== 'object' || sent === null) return false;
  if (known.get(value) === sent) return true;
  if (!compare(value, sent)) return false;
  if (isDeepFrozen(value)) known.set(value, sent);
  return true;
}

function compare(value: object, sent: object): boolean {
  if (Array.isArray(value)) {
    if (!Array.isArray(sent) || value.length !== sent.length) return false;
    for (let i = 0; i < value.length; i++) if (!sameJson(value[i], sent[i])) return false;
    return true;
  }
  if (Array.isArray(sent) || ArrayBuffer.isView(value)) return false;
  const v = value as Record<string, unknown>;
  const s = sent as Record<string, unknown>;
  let n = 0;
  for (const k in v) {
    if (!Object.hasOwn(v, k) || v[k] === undefined) continue;
    n++;
    if (!Object.hasOwn(s, k) || !sameJson(v[k], s[k])) return false;
  }
  for (const k in s) if (Object.hasOwn(s, k)) n--;
  return n === 0;
}

/** Deep-frozen objects by the node of sent JSON they were found equal to. */
const known = new WeakMap<object, unknown>();
/** Objects found frozen all the way down (freezing cannot be undone). */
const frozen = new WeakSet<object>();

function isDeepFrozen(x: object): boolean {
  if (frozen.has(x)) return true;
  if (!Object.isFrozen(x)) return false;
  for (const v of Object.values(x)) if (typeof v === 'object' && v !== null && !isDeepFrozen(v)) return false;
  frozen.add(x);
  return true;
}

/** `value` as JSON text, or null when JSON would change it (a non-finite number becomes null, bytes an object). */
export function losslessJson(value: unknown): string | null {
  let lossless = true;
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if ((typeof v === 'number' && !Number.isFinite(v)) || typeof v === 'bigint' || ArrayBuffer.isView(v)) lossless = false;
    return typeof v === 'bigint' ? null : v;
  });
  return lossless ? text : null;
}
