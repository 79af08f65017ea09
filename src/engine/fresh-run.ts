/**
 * What a fresh run (`engine.run`) decides before a worker sees it, remembered between runs: the
 * policy a call's limit options resolve to, the load-time walls per policy, and per prepared
 * module and policy the link plan, the spec's fixed part and whether `_start` is the entry.
 *
 * Owns: `RunMemo` — policies keyed by the exact values of a call's `profile`, `caps`,
 * `memoryBytes`, `timeoutMs` and `fuel` (read once, and resolved from that same reading), at most
 * MAX_MEMO_POLICIES of them; frames keyed by the identity of a `PreparedModule` (its content
 * hash and wall settings) and of a frozen `PolicyConfig`, held weakly.
 * Invariant: a remembered value is exactly what resolving or planning again would give — every
 * input it depends on is in its key or fixed for the engine (its frozen config); only successes
 * are remembered, so a call that would be refused (an unknown cap word, a missing import) is
 * refused again every time. Nothing per call (id, tenant, argv, env, stdin, VFS, signal) is
 * remembered: those are read afresh for every run. The fallback audit, `requireSigned`, the tier
 * check and fair admission run for every call as before; this only skips recomputation.
 *
 * Does not protect against: nothing beyond the above — a memo is not a wall.
 */

import type { PolicyConfig, PolicyOptions } from '../policy/resolve.ts';
import { memoryPages, resolvePolicy } from '../policy/resolve.ts';
import type { CapWord } from '../policy/profiles.ts';
import { planLinks, type LinkPlan } from './linker.ts';
import type { PreparedModule, PrepareOptions } from './module-cache.ts';
import type { EngineConfig } from './options.ts';
import { chooseEntry, specFrame, type RunOptions, type SpecFrame } from './guest-spec.ts';
import type { Entry } from './bridge/protocol.ts';

/** Distinct limit options remembered per engine (a caller cycling through more only misses). */
export const MAX_MEMO_POLICIES = 64;
/** Option values longer than this are resolved every time, never kept as a key. */
const MAX_KEY_CHARS = 1024;

/** A module's plan under one policy and caps: what every run of them shares. */
export interface RunFrame {
  readonly plan: LinkPlan;
  readonly spec: SpecFrame;
  /** The module exports `_start` (a run without `invoke` starts it). */
  readonly hasStart: boolean;
}

const START = Object.freeze({ entry: Object.freeze({ kind: 'start' as const }), isCommand: true });

export class RunMemo {
  private readonly policies = new Map<string, PolicyConfig>();
  private readonly frames = new WeakMap<PreparedModule, WeakMap<PolicyConfig, RunFrame>>();
  private readonly walls = new WeakMap<PolicyConfig, PrepareOptions>();

  constructor(private readonly config: EngineConfig) {}

  /** `resolvePolicy(opts, config)`, remembered for plain values. */
  policy(opts: PolicyOptions): PolicyConfig {
    const given = opts.caps;
    const caps = Array.isArray(given) ? given.slice() : given; // one reading of the caller's array: the key and the policy both come from it
    const read: PolicyOptions = { profile: opts.profile, caps, memoryBytes: opts.memoryBytes, timeoutMs: opts.timeoutMs, fuel: opts.fuel };
    const key = policyKey(read);
    if (key === null) return resolvePolicy(read, this.config);
    const hit = this.policies.get(key);
    if (hit) return hit;
    const policy = deepFreeze(resolvePolicy(read, this.config)); // shared by every run with this key: nobody may change it
    if (this.policies.size >= MAX_MEMO_POLICIES) this.policies.delete(this.policies.keys().next().value!);
    this.policies.set(key, policy);
    return policy;
  }

  /** The load-time walls a module is prepared under for `policy` (frozen; one object per policy). */
  prepareOptions(policy: PolicyConfig): PrepareOptions {
    let o = this.walls.get(policy);
    if (!o) {
      o = Object.freeze({ maxMemoryPages: memoryPages(policy), maxTableElements: this.config.maxTableElements, trapOnGrowFailure: this.config.trapOnGrowFailure, metered: this.config.fuel });
      this.walls.set(policy, o);
    }
    return o;
  }

  /** The frame of `prepared` under `policy` and its own caps (a top-level run's). */
  frame(prepared: PreparedModule, policy: PolicyConfig): RunFrame {
    let byPolicy = this.frames.get(prepared);
    const hit = byPolicy?.get(policy);
    if (hit) return hit;
    const frame = runFrame(this.config, prepared, policy, policy.caps);
    if (!byPolicy) this.frames.set(prepared, (byPolicy = new WeakMap()));
    byPolicy.set(policy, frame);
    return frame;
  }
}

/** A frame computed now: the link plan (LINK_UNSATISFIED when an import is outside `caps`), the spec's fixed part. */
export function runFrame(config: EngineConfig, prepared: PreparedModule, policy: PolicyConfig, caps: readonly CapWord[]): RunFrame {
  const plan = planLinks(prepared.desc, caps, { defined: config.hostFunctions, granted: policy.hostCaps });
  const hasStart = prepared.desc.exports.some((e) => e.name === '_start' && e.kind === 'func');
  return deepFreeze({ plan, spec: specFrame(config, prepared, plan, policy), hasStart });
}

/** Shared between runs, so no one may change it: frozen all the way down (plain data only). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The run's entry: `_start` known from the frame, else chosen (and checked) from the options. */
export function entryOf(frame: RunFrame, prepared: PreparedModule, opts: RunOptions): { entry: Entry; isCommand: boolean } {
  return opts.invoke === undefined && frame.hasStart ? START : chooseEntry(prepared, opts);
}

/** A key that differs whenever the values differ, or null when they are not plain (then nothing is kept). */
function policyKey(o: PolicyOptions): string | null {
  if (o.profile === undefined && o.caps === undefined && o.memoryBytes === undefined && o.timeoutMs === undefined && o.fuel === undefined) return '';
  if (o.profile !== undefined && typeof o.profile !== 'string') return null;
  for (const n of [o.memoryBytes, o.timeoutMs, o.fuel]) if (n !== undefined && (typeof n !== 'number' || !Number.isFinite(n))) return null;
  if (o.caps !== undefined && (!Array.isArray(o.caps) || !o.caps.every((c) => typeof c === 'string'))) return null;
  // JSON keeps strings apart (quoted) and finite numbers apart (their shortest text); undefined is null.
  const key = JSON.stringify([o.profile ?? null, o.caps ?? null, o.memoryBytes ?? null, o.timeoutMs ?? null, o.fuel ?? null]);
  return key.length <= MAX_KEY_CHARS ? key : null;
}
