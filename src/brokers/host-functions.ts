/**
 * Embedder host functions (DESIGN §9, `createEngine({ hostFunctions })`): the embedder's own
 * capabilities, served like any broker — presence-gated by the grant, through the cadence.
 *
 * Owns: validating the embedder's definitions (`resolveHostFunctions`), and one call of a host
 * function: the cadence (granted → revoked → rate → size), the JSON arguments decoded, the
 * function awaited on the main thread under the calling call's deadline (its `ctx.signal` fires
 * at the deadline, on revocation and when the job ends; the call answers TIMEOUT/REVOKED then,
 * whatever the function does later), the result's size checked, every failure audited.
 * Invariant: `ctx.tenant` and `ctx.instance` are the job's captured principal, never anything
 * the guest sent; a function that throws gives the guest a fixed code (UNAVAILABLE, or the code
 * of a `HostFunctionError` the embedder threw on purpose) — its message, stack and any host path
 * stay on the host (the embedder's `onError` hook); the audit record, which a tenant can read,
 * names the function and the code only.
 *
 * Does not protect against: what the embedder's function does once called (it runs on the
 * host, with the host's authority); a function that ignores `ctx.signal` keeps running after its
 * call was answered — its late result is dropped.
 */

import { SandboxError } from '../errors.ts';
import { GUEST_ERR } from '../abi/command.ts';
import { MAX_HOST_PAYLOAD_BYTES, checkHostCapName, checkHostFunctionName, hostCapGlobal } from '../policy/host-caps.ts';
import type { Cadence, RateLimit } from './cadence.ts';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** What a host function learns about its caller: all of it captured by the engine. */
export interface HostFunctionContext {
  /** The tenant the calling guest runs as (captured when it started; never from the guest). */
  readonly tenant: string;
  /** The calling instance (`run-N`, `exec-N`, or a persistent instance's id). */
  readonly instance: string;
  readonly cap: string;
  readonly function: string;
  /**
   * Fires when the calling call reaches its deadline (reason: a TIMEOUT SandboxError), its
   * principal is revoked (REVOKED), or it is cancelled by its caller's signal or its job ends
   * (CANCELLED).
   */
  readonly signal: AbortSignal;
  /** The calling call's deadline, as a `Date.now()` time. */
  readonly deadline: number;
}

export type HostFunction = (args: JsonValue, ctx: HostFunctionContext) => JsonValue | undefined | void | Promise<JsonValue | undefined | void>;

/** A host cap with settings; a plain record of functions is the same with every default. */
export interface HostCapSettings {
  readonly functions: Readonly<Record<string, HostFunction>>;
  readonly description?: string;
  /** Calls per tenant and window, across the cap's functions. Default: the cadence's default. */
  readonly rate?: Partial<RateLimit>;
  /** Largest JSON argument in bytes. Default 1 MiB. */
  readonly maxArgBytes?: number;
  /** Largest JSON result in bytes. Default 1 MiB. */
  readonly maxResultBytes?: number;
}

export type HostCapDefinition = Readonly<Record<string, HostFunction>> | HostCapSettings;

export type HostFunctionsOptions = Readonly<Record<string, HostCapDefinition>>;

/**
 * A guest-visible refusal the embedder throws on purpose: the guest sees `code` (DESIGN §4's
 * table) with Membrane's fixed message for it — never this error's message.
 */
export class HostFunctionError extends Error {
  constructor(
    readonly code: 'DENIED' | 'NOT_FOUND' | 'INVALID' | 'UNAVAILABLE' | 'QUOTA' | 'RATE_LIMITED',
    message: string = code,
  ) {
    super(message);
    this.name = 'HostFunctionError';
  }
}

export interface HostFailure {
  readonly tenant: string;
  readonly instance: string;
  readonly cap: string;
  readonly function: string;
  readonly error: unknown;
}

export const DEFAULT_HOST_ARG_BYTES = 1024 * 1024;
export const DEFAULT_HOST_RESULT_BYTES = 1024 * 1024;

export interface ResolvedHostCap {
  readonly cap: string;
  readonly global: string;
  readonly description: string;
  readonly functions: ReadonlyMap<string, HostFunction>;
  readonly rate: Partial<RateLimit> | undefined;
  readonly maxArgBytes: number;
  readonly maxResultBytes: number;
}

function isSettings(d: HostCapDefinition): d is HostCapSettings {
  return typeof (d as { functions?: unknown }).functions === 'object' && (d as { functions?: unknown }).functions !== null;
}

function bytesOption(cap: string, name: string, v: number | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_HOST_PAYLOAD_BYTES) {
    throw new SandboxError('POLICY_INVALID', `hostFunctions["${cap}"].${name} must be an integer in 1..${MAX_HOST_PAYLOAD_BYTES}`, { cap, option: name });
  }
  return v;
}

/** The embedder's definitions, checked: POLICY_INVALID for a bad name, an empty cap or a global clash. */
export function resolveHostFunctions(options: HostFunctionsOptions | undefined): ReadonlyMap<string, ResolvedHostCap> {
  const out = new Map<string, ResolvedHostCap>();
  if (options === undefined) return out;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new SandboxError('POLICY_INVALID', 'hostFunctions must be an object of capabilities');
  const globals = new Map<string, string>();
  for (const [cap, def] of Object.entries(options)) {
    checkHostCapName(cap);
    if (typeof def !== 'object' || def === null) throw new SandboxError('POLICY_INVALID', `hostFunctions["${cap}"] must be an object of functions`, { cap });
    const settings: HostCapSettings = isSettings(def) ? def : { functions: def as Readonly<Record<string, HostFunction>> };
    const functions = new Map<string, HostFunction>();
    for (const [name, fn] of Object.entries(settings.functions)) {
      checkHostFunctionName(cap, name);
      if (typeof fn !== 'function') throw new SandboxError('POLICY_INVALID', `hostFunctions["${cap}"].${name} must be a function`, { cap, function: name });
      functions.set(name, fn);
    }
    if (functions.size === 0) throw new SandboxError('POLICY_INVALID', `hostFunctions["${cap}"] defines no function`, { cap });
    const global = hostCapGlobal(cap);
    const clash = globals.get(global);
    if (clash !== undefined) throw new SandboxError('POLICY_INVALID', `host caps "${clash}" and "${cap}" would both be the global ${global}`, { cap });
    globals.set(global, cap);
    const rate = settings.rate;
    if (rate !== undefined) {
      for (const k of ['limit', 'windowMs'] as const) {
        const v = rate[k];
        if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 1)) throw new SandboxError('POLICY_INVALID', `hostFunctions["${cap}"].rate.${k} must be ≥ 1`, { cap });
      }
    }
    out.set(
      cap,
      Object.freeze({
        cap,
        global,
        description: typeof settings.description === 'string' ? settings.description.slice(0, 500) : '',
        functions,
        rate,
        maxArgBytes: bytesOption(cap, 'maxArgBytes', settings.maxArgBytes, DEFAULT_HOST_ARG_BYTES),
        maxResultBytes: bytesOption(cap, 'maxResultBytes', settings.maxResultBytes, DEFAULT_HOST_RESULT_BYTES),
      }),
    );
  }
  return out;
}

/** Cap → function names: what policy, linking and the lanes need to know (no functions). */
export function hostFunctionNames(caps: ReadonlyMap<string, ResolvedHostCap>): Readonly<Record<string, readonly string[]>> {
  const out: Record<string, readonly string[]> = {};
  for (const [cap, c] of caps) out[cap] = Object.freeze([...c.functions.keys()]);
  return Object.freeze(out);
}

/** Who calls: a core guest's job or an exec call's principal, with the host caps it was granted. */
export interface HostCaller {
  readonly tenant: string;
  readonly instance: string;
  readonly hostCaps: readonly string[];
  /** Added to the detail of every audit record made for this caller (an os_process call's `tier`). */
  readonly marks?: Readonly<Record<string, string>>;
}

export interface HostFunctionsDeps {
  readonly cadence: Cadence;
  readonly record: (event: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }) => void;
  /** The embedder's hook for what a host function threw (host side only). */
  readonly onError: ((failure: HostFailure) => void) | null;
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

const strict = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();
const ERRNO_OF: Readonly<Record<HostFunctionError['code'], number>> = {
  DENIED: GUEST_ERR.DENIED,
  NOT_FOUND: GUEST_ERR.NOT_FOUND,
  INVALID: GUEST_ERR.INVALID,
  UNAVAILABLE: GUEST_ERR.UNAVAILABLE,
  QUOTA: GUEST_ERR.QUOTA,
  RATE_LIMITED: GUEST_ERR.RATE_LIMITED,
};

export class HostFunctions {
  constructor(
    readonly caps: ReadonlyMap<string, ResolvedHostCap>,
    private readonly deps: HostFunctionsDeps,
  ) {}

  /**
   * One call: `args` is the guest's JSON (UTF-8 bytes), or the length of one too large to carry;
   * the answer is the result's JSON bytes or a guest error code. Bounded by `deadline`
   * (`performance.now()`), any of `stops` (the job's end, the calling call's signal) and revocation.
   */
  async call(caller: HostCaller, cap: string, fn: string, given: Uint8Array | number, stops: readonly AbortSignal[], deadline: number): Promise<Uint8Array | number> {
    const def = this.caps.get(cap);
    const who = { tenant: caller.tenant, instance: caller.instance, caps: caller.hostCaps, ...(caller.marks ? { marks: caller.marks } : {}) };
    // A request that travels as its size is too large by definition, whatever size it claims.
    const max = def?.maxArgBytes ?? 0;
    const refused = this.deps.cadence.admit(who, cap, fn, { bytes: typeof given === 'number' ? Math.max(given, max + 1) : given.byteLength, max });
    if (refused !== null) return refused;
    if (typeof given === 'number') return GUEST_ERR.TOO_LARGE;
    const args = given;
    const f = def?.functions.get(fn);
    const audit = (code: string, why: string): void =>
      this.deps.record({ tenant: caller.tenant, instance: caller.instance, kind: 'denied', detail: { broker: cap, op: fn, code, why, ...caller.marks } });
    if (!def || !f) {
      audit('NOT_FOUND', 'no such host function');
      return GUEST_ERR.NOT_FOUND;
    }
    let value: JsonValue;
    try {
      value = args.byteLength === 0 ? null : (JSON.parse(strict.decode(args)) as JsonValue);
    } catch {
      return GUEST_ERR.INVALID;
    }
    const left = deadline - performance.now();
    if (left <= 0 || stops.some((x) => x.aborted)) return GUEST_ERR.TIMEOUT;
    const abort = new AbortController();
    const ctx: HostFunctionContext = Object.freeze({ tenant: caller.tenant, instance: caller.instance, cap, function: fn, signal: abort.signal, deadline: Date.now() + left });
    let returned: unknown;
    try {
      returned = f(value, ctx);
    } catch (e) {
      return this.failed(caller, cap, fn, e, audit);
    }
    // A sync function has answered already: no timer, no watch (the common, cheap path).
    if (!isThenable(returned)) return this.answer(caller, cap, fn, def, returned, audit);
    let why: 'stop' | 'revoked' | 'deadline' | null = null;
    let wake: () => void = () => {};
    const ended = new Promise<void>((resolve) => (wake = resolve));
    const end = (reason: 'stop' | 'revoked' | 'deadline') => (): void => {
      why ??= reason;
      abort.abort(new SandboxError(reason === 'deadline' ? 'TIMEOUT' : reason === 'revoked' ? 'REVOKED' : 'CANCELLED', `the call ${reason === 'deadline' ? 'reached its deadline' : reason === 'revoked' ? 'was revoked' : 'ended'}`));
      wake();
    };
    // The calling call's own signal fires at its deadline too: that is a deadline, not a stop.
    const onStop = (): void => end(performance.now() >= deadline - 1 ? 'deadline' : 'stop')();
    for (const x of stops) x.addEventListener('abort', onStop);
    const unwatch = this.deps.cadence.watch(who, end('revoked'));
    const timer = setTimeout(end('deadline'), Math.ceil(left));
    try {
      type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
      const running = Promise.resolve(returned).then(
        (v): Outcome => ({ ok: true, value: v }),
        (e: unknown): Outcome => ({ ok: false, error: e }),
      );
      const first = await Promise.race([running, ended.then(() => null)]);
      if (first === null || why !== null) {
        // Answered now: what the function does later is dropped (`running` handles a late throw).
        if (why === 'deadline') {
          audit('TIMEOUT', 'host function ran past the call deadline');
          return GUEST_ERR.TIMEOUT;
        }
        if (why === 'revoked') {
          audit('REVOKED', 'revoked in flight');
          return GUEST_ERR.REVOKED;
        }
        return GUEST_ERR.UNAVAILABLE;
      }
      return first.ok ? this.answer(caller, cap, fn, def, first.value, audit) : this.failed(caller, cap, fn, first.error, audit);
    } finally {
      clearTimeout(timer);
      unwatch();
      for (const x of stops) x.removeEventListener('abort', onStop);
    }
  }

  /** A thrown value: its own code for a HostFunctionError, else UNAVAILABLE (reported host side). */
  private failed(caller: HostCaller, cap: string, fn: string, e: unknown, audit: (code: string, why: string) => void): number {
    const own = e instanceof HostFunctionError && Object.hasOwn(ERRNO_OF, e.code) ? e.code : null;
    audit(own ?? 'UNAVAILABLE', own ? 'host function refused' : 'host function threw');
    if (!own) this.report(caller, cap, fn, e);
    return own ? ERRNO_OF[own] : GUEST_ERR.UNAVAILABLE;
  }

  /** A returned value as JSON bytes within the cap's result size. */
  private answer(caller: HostCaller, cap: string, fn: string, def: ResolvedHostCap, value: unknown, audit: (code: string, why: string) => void): Uint8Array | number {
    let text: string | undefined;
    try {
      text = value === undefined ? 'null' : JSON.stringify(value);
    } catch (e) {
      text = undefined;
      this.report(caller, cap, fn, e);
    }
    if (text === undefined) {
      audit('UNAVAILABLE', 'host function result is not JSON');
      return GUEST_ERR.UNAVAILABLE;
    }
    const bytes = encoder.encode(text);
    if (bytes.byteLength > def.maxResultBytes) {
      audit('TOO_LARGE', 'host function result too large');
      return GUEST_ERR.TOO_LARGE;
    }
    return bytes;
  }

  private report(caller: HostCaller, cap: string, fn: string, error: unknown): void {
    const onError = this.deps.onError;
    if (!onError) return;
    try {
      onError({ tenant: caller.tenant, instance: caller.instance, cap, function: fn, error });
    } catch {
      // the embedder's hook failing is not the guest's problem
    }
  }
}
