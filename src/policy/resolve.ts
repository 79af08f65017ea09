/**
 * Policy resolution: a profile name plus caller options → a complete, frozen `PolicyConfig`.
 *
 * Owns: fail-closed profile lookup (unknown → `compute` + warning, or `POLICY_INVALID` when
 * strict), the operator's limit overrides, and narrowing (per instance, then per call).
 * Invariant: a caller can only lower memory, timeout and fuel and only drop cap words; anything
 * higher than the operator-configured profile is clamped to it and reported in `warnings`. Only
 * `OperatorLimits` (engine configuration) can raise a profile's numbers.
 *
 * Does not protect against: an operator who configures generous limits.
 */

import { SandboxError } from '../errors.ts';
import {
  FALLBACK_PROFILE,
  PROFILES,
  PROFILE_NAMES,
  allowHttp,
  isCapWord,
  isProfileName,
  type CapWord,
  type ProfileName,
} from './profiles.ts';
import { isHostCapName } from './host-caps.ts';

/** What a caller may pass, per instance or per call: each value may only lower the profile's. */
export interface LimitOptions {
  memoryBytes?: number;
  timeoutMs?: number;
  fuel?: number;
  /**
   * A subset of the profile's cap words; intersected, never widened. It may also name the
   * engine's host function caps (`vendor:name`): those are granted only when named here — a
   * profile never includes them.
   */
  caps?: readonly string[];
}

export interface PolicyOptions extends LimitOptions {
  profile?: string;
}

/** Operator configuration (engine options): the only way to raise a profile's numbers. */
export type OperatorLimits = Partial<Record<ProfileName, { memoryBytes?: number; timeoutMs?: number; fuel?: number }>>;

export interface PolicyConfig {
  readonly profile: ProfileName;
  readonly requestedProfile: string;
  readonly caps: readonly CapWord[];
  /** The embedder's host function caps granted (`vendor:name`); empty unless a grant named them. */
  readonly hostCaps: readonly string[];
  readonly memoryBytes: number;
  readonly timeoutMs: number;
  readonly fuel: number;
  readonly allowHttp: boolean;
  readonly warnings: readonly string[];
}

export interface ResolveContext {
  strictProfiles?: boolean;
  operatorLimits?: OperatorLimits;
  /** The engine's host function caps and their function names (EngineOptions.hostFunctions). */
  hostFunctions?: Readonly<Record<string, readonly string[]>>;
}

const WASM_PAGE = 65536;

export function resolvePolicy(opts: PolicyOptions, ctx: ResolveContext = {}): PolicyConfig {
  const warnings: string[] = [];
  const requested = opts.profile ?? FALLBACK_PROFILE;
  let profile: ProfileName;
  if (isProfileName(requested)) {
    profile = requested;
  } else if (ctx.strictProfiles) {
    throw new SandboxError('POLICY_INVALID', `unknown profile "${printable(requested)}"`, {
      profile: printable(requested),
      known: [...PROFILE_NAMES],
    });
  } else {
    profile = FALLBACK_PROFILE;
    warnings.push(`unknown profile "${printable(requested)}": running under "${FALLBACK_PROFILE}"`);
  }
  const base = PROFILES[profile];
  const op = ctx.operatorLimits?.[profile] ?? {};
  const ceiling: PolicyConfig = {
    profile,
    requestedProfile: printable(requested),
    caps: base.caps,
    hostCaps: Object.keys(ctx.hostFunctions ?? {}),
    memoryBytes: positive('operator memoryBytes', op.memoryBytes) ?? base.memoryBytes,
    timeoutMs: positive('operator timeoutMs', op.timeoutMs) ?? base.timeoutMs,
    fuel: positive('operator fuel', op.fuel) ?? base.fuel,
    allowHttp: allowHttp(base.caps),
    warnings: [],
  };
  if (opts.caps === undefined) return narrowPolicy({ ...ceiling, hostCaps: [] }, opts, warnings);
  if (Array.isArray(opts.caps)) {
    for (const word of opts.caps) {
      if (isHostCapName(word) && !ceiling.hostCaps.includes(word)) {
        throw new SandboxError('POLICY_INVALID', `unknown cap word "${printable(word)}": this engine defines no such host function capability`, { cap: printable(word) });
      }
    }
  }
  return narrowPolicy(ceiling, opts, warnings);
}

/**
 * Lower `base` by `opts`. Never raises: a larger request is clamped with a warning, a cap word
 * outside `base.caps` is dropped with a warning, an unknown cap word is `POLICY_INVALID`.
 */
export function narrowPolicy(base: PolicyConfig, opts: LimitOptions, warnings: string[] = []): PolicyConfig {
  const all = [...base.warnings, ...warnings];
  const lower = (name: 'memoryBytes' | 'timeoutMs' | 'fuel', unit: string): number => {
    const want = positive(name, opts[name]);
    if (want === undefined) return base[name];
    if (want > base[name]) {
      all.push(`${name} ${want}${unit} exceeds the ${base.profile} ceiling of ${base[name]}${unit}: clamped`);
      return base[name];
    }
    return want;
  };
  const memoryBytes = lower('memoryBytes', ' bytes');
  const timeoutMs = lower('timeoutMs', ' ms');
  const fuel = lower('fuel', '');
  if (memoryBytes < WASM_PAGE) {
    throw new SandboxError('POLICY_INVALID', `memoryBytes must be at least one wasm page (${WASM_PAGE})`, { memoryBytes });
  }
  let caps = base.caps;
  let hostCaps = base.hostCaps;
  if (opts.caps !== undefined) {
    if (!Array.isArray(opts.caps)) throw new SandboxError('POLICY_INVALID', 'caps must be an array of cap words');
    const wanted: CapWord[] = [];
    const wantedHost: string[] = [];
    for (const word of opts.caps) {
      if (isHostCapName(word)) {
        if (!base.hostCaps.includes(word)) all.push(`cap "${word}" is not granted here: dropped (a subset can only narrow)`);
        else if (!wantedHost.includes(word)) wantedHost.push(word);
        continue;
      }
      if (!isCapWord(word)) {
        throw new SandboxError('POLICY_INVALID', `unknown cap word "${printable(String(word))}"`, { cap: printable(String(word)) });
      }
      if (!base.caps.includes(word)) {
        all.push(`cap "${word}" is not granted by ${base.profile}: dropped (a subset can only narrow)`);
      } else if (!wanted.includes(word)) {
        wanted.push(word);
      }
    }
    caps = base.caps.filter((c) => wanted.includes(c));
    hostCaps = base.hostCaps.filter((c) => wantedHost.includes(c));
  }
  return Object.freeze({
    profile: base.profile,
    requestedProfile: base.requestedProfile,
    caps: Object.freeze([...caps]),
    hostCaps: Object.freeze([...hostCaps]),
    memoryBytes,
    timeoutMs,
    fuel,
    allowHttp: allowHttp(caps),
    warnings: Object.freeze(all),
  });
}

export function memoryPages(policy: PolicyConfig): number {
  return Math.floor(policy.memoryBytes / WASM_PAGE);
}

/** A limit option's value: undefined, or a positive finite number (floored); anything else is POLICY_INVALID. */
export function positive(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new SandboxError('POLICY_INVALID', `${name} must be a positive finite number`, { [name]: String(value) });
  }
  return Math.floor(value);
}

/** Bound and sanitize user-supplied names before they reach messages and logs. */
function printable(s: string): string {
  const clean = s.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 64 ? `${clean.slice(0, 61)}...` : clean;
}
