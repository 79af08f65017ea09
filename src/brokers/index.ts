/**
 * The engine's brokers as one object: the engine database, the audit sink, the cadence, the
 * secrets and the hub that serves broker imports. The engine owns one; it outlives instances,
 * so revocations and rate windows survive restarts.
 *
 * Owns: opening the engine database lazily (a guest that never calls a broker never opens it),
 * and closing everything — secrets zeroized — on engine close.
 * Invariant: every broker call goes through `call` → `BrokerHub.call` → `Cadence.admit`.
 *
 * Does not protect against: an operator sharing one engine database between engines with
 * different audit keys (the chain then fails to verify, loudly).
 */

import { setMaxListeners } from 'node:events';
import { openDatabase, type Database } from '../storage/sqlite.ts';
import { engineDatabaseFile, startAuditLog } from '../storage/audit.ts';
import { resolveStoreQuotas, type StoreQuotaOptions } from '../storage/store-quotas.ts';
import { Cadence, type AuditSink, type CadenceOptions, type CallerOf, type Principal } from './cadence.ts';
import { BrokerHub, type BrokerAnswer } from './hub.ts';
import { SecretStore, type SecretSpec } from './secrets.ts';
import { NET_CALLS, NetBroker, type NetBrokerOptions } from './net.ts';
import { LLM_MAX_REQUEST_BYTES, LlmBroker, llmOptionsFromEnv, type LlmOptions } from './llm.ts';
import { GUEST_ERR } from '../abi/command.ts';
import { lookupImport, MEMBRANE_MODULE } from '../policy/catalog.ts';
import type { CapWord } from '../policy/profiles.ts';
import { anchorEvent, type BuiltinAnchor } from './audit-anchor.ts';
import type { AnchoredEvent, AuditAnchor } from '../provenance/anchor.ts';
import { HostFunctions, type HostCaller, type HostFailure, type ResolvedHostCap } from './host-functions.ts';

export { decodeManyRequest, encodeManyResponse } from './parallel.ts';
export type { BrokerAnswer } from './hub.ts';
export type { Cadence, Principal, RateLimit } from './cadence.ts';
export {
  HostFunctionError,
  hostFunctionNames,
  resolveHostFunctions,
  type HostCapDefinition,
  type HostCapSettings,
  type HostFailure,
  type HostFunction,
  type HostFunctionContext,
  type HostFunctionsOptions,
  type JsonValue,
  type ResolvedHostCap,
} from './host-functions.ts';

/**
 * How far past the calling call's deadline a remote call's own timers are set. The caller's
 * signal aborts the call at the deadline itself (and answers the guest TIMEOUT); the broker's
 * timers are the backstop, set just after, so they never answer first with a -7 the guest could
 * read and carry on from.
 */
export const DEADLINE_BACKSTOP_MS = 25;

/** Who calls a broker: a core guest's `Caller`, or an exec call's principal (src/lanes/power-server.ts). */
export interface BrokerCaller {
  readonly tenant: string;
  readonly instance: string;
  readonly policy: { readonly caps: readonly CapWord[] };
  /** Added to the detail of every audit record made for this caller (an os_process call's `tier`). */
  readonly marks?: Readonly<Record<string, string>>;
}

/**
 * Brokers that live in another engine: `call` and `net` are handed there as they are, and the
 * cadence, the stores, the secrets and the network guard run there — never here (an os_process
 * child's engine forwards to its parent: src/engine/os-process/broker-link.ts). The caller is not
 * forwarded: the other side knows whose call it serves.
 */
export interface BrokerForward {
  call(name: string, args: readonly Uint8Array[], cap: number): Promise<BrokerAnswer>;
  net(name: string, args: readonly Uint8Array[], stop: AbortSignal, deadline: number): Promise<Uint8Array | number>;
  /**
   * Host functions served on the other side: the caps and function names this engine links and
   * offers (its `EngineConfig.hostFunctions`; the other side fills it for its call), and each call
   * of one, answered there — its cadence, its function, its audit.
   */
  readonly hostFunctions?: Readonly<Record<string, readonly string[]>>;
  host?(cap: string, fn: string, args: Uint8Array | number, stops: readonly AbortSignal[], deadline: number): Promise<Uint8Array | number>;
  /** The caller's tenant's exec or live-process slot, counted on the other side (its release), or null at the limit. */
  slot?(kind: 'exec' | 'process'): Promise<(() => void) | null>;
  /** The cadence's steps 1-4 for a spawning cap (`commands`, `exec`, `parallel`), run on the other side: null = go. */
  admit?(cap: 'commands' | 'exec' | 'parallel', op: string, bytes: number, max: number): Promise<number | null>;
}

/** Broker calls that wait on the outside world (served asynchronously, abortable): their request caps. */
export const REMOTE_CALLS: Readonly<Record<string, number>> = { ...NET_CALLS, llm_complete: LLM_MAX_REQUEST_BYTES };

export interface BrokerOptions {
  /** Operator secrets (names → values); `SecretStore.fromEnv()` / `fromFile()` build these. */
  readonly secrets?: Readonly<Record<string, SecretSpec | string>>;
  readonly rate?: CadenceOptions['rate'];
  /** The engine database file. Default `$MEMBRANE_HOME/engine.sqlite`. */
  readonly databaseFile?: string;
  /** The network guard's operator settings (allowCidrs, resolver; tests: a CA). */
  readonly net?: NetBrokerOptions;
  /** The operator's OpenAI-compatible endpoint for `llm_complete` (absent: MEMBRANE_LLM_URL/MODEL, else UNAVAILABLE). */
  readonly llm?: LlmOptions;
  /** Per-tenant quotas of the durable stores (kv, queues); defaults in storage/store-quotas.ts. */
  readonly quotas?: StoreQuotaOptions;
  /** Where audit records go; default the tamper-evident log in the engine database. */
  readonly audit?: (db: () => Database) => AuditSink;
  /**
   * Told each record after its sink took it (a remote worker copies a job's records into its
   * reply). Unlike replacing `audit`, the log stays the engine's own: started with the database.
   */
  readonly auditCopy?: (event: AnchoredEvent) => void;
  /** Serve `call` and `net` elsewhere (an os_process child's parent engine); absent: here. */
  readonly forward?: BrokerForward;
}

/** The engine's default sink: an AuditSink that can also anchor a receipt in its keyed log. */
export type BuiltinSink = AuditSink & { readonly anchor: BuiltinAnchor };

/** What a denied network call was aimed at, for its audit record (the URL or host:port, cut short). */
function describeTarget(name: string, first: Uint8Array | undefined): string {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(first?.subarray(0, 2048) ?? new Uint8Array(0));
  if (name === 'http_fetch') {
    try {
      const url = (JSON.parse(text) as { url?: unknown }).url;
      return typeof url === 'string' ? url.slice(0, 512) : '';
    } catch {
      return '';
    }
  }
  return text.slice(0, 512);
}

/** `sink`, telling `copy` each record it took (`append` or `seal`). */
function teeSink(sink: AuditSink, copy: (event: AnchoredEvent) => void): AuditSink {
  const seal = sink.seal?.bind(sink);
  return {
    append(e) {
      sink.append(e);
      copy(e);
    },
    ...(seal ? { seal: (e: AnchoredEvent) => { const at = seal(e); copy(e); return at; } } : {}),
  };
}

export class Brokers {
  readonly cadence: Cadence;
  private readonly audit: AuditSink;
  private readonly builtinAnchor: BuiltinAnchor | null;
  private readonly secrets: SecretStore;
  private readonly hub: BrokerHub;
  private readonly network: NetBroker;
  private readonly llm: LlmBroker;
  private readonly host: HostFunctions;
  private database: Database | null = null;

  constructor(
    private readonly options: BrokerOptions,
    defaultAudit: (db: () => Database) => BuiltinSink,
    hostCaps: ReadonlyMap<string, ResolvedHostCap> = new Map(),
    onHostError: ((failure: HostFailure) => void) | null = null,
  ) {
    const db = (): Database => this.db();
    this.secrets = new SecretStore(options.secrets ?? {});
    const sink = options.audit ? options.audit(db) : defaultAudit(db);
    const copy = options.auditCopy;
    this.audit = copy ? teeSink(sink, copy) : sink;
    const builtin = options.audit ? null : (sink as BuiltinSink).anchor;
    this.builtinAnchor = builtin && copy ? (e) => { const at = builtin(e); copy(e); return at; } : builtin;
    // A host cap's own rate joins the per-broker table (its name can never be a built-in word's).
    const hostRates = Object.fromEntries([...hostCaps.values()].filter((c) => c.rate !== undefined).map((c) => [c.cap, c.rate!]));
    const rate = options.rate || Object.keys(hostRates).length > 0 ? { ...options.rate, perBroker: { ...options.rate?.perBroker, ...hostRates } } : undefined;
    this.cadence = new Cadence({ audit: this.audit, ...(rate ? { rate } : {}) });
    this.host = new HostFunctions(hostCaps, { cadence: this.cadence, record: (e) => this.audit.append(e), onError: onHostError });
    this.hub = new BrokerHub({ cadence: this.cadence, secrets: this.secrets, db, quotas: resolveStoreQuotas(options.quotas) });
    this.network = new NetBroker(options.net ?? {});
    this.llm = new LlmBroker(options.llm ?? llmOptionsFromEnv());
  }

  /**
   * A remote call (network brokers, `llm_complete`): the cadence, then the call, bounded by the
   * calling call's `deadline` (a `performance.now()` value): the broker's own timeout is cut to
   * what is left, and at the deadline the call is aborted down to its sockets (TIMEOUT).
   * Revoking the principal (REVOKED) or `stop` (the job ending) aborts it too. Guard refusals are
   * audited like cadence denials.
   */
  async net(caller: BrokerCaller, name: string, args: readonly Uint8Array[], stop: AbortSignal, deadline = Infinity): Promise<Uint8Array | number> {
    if (this.options.forward) return this.options.forward.net(name, args, stop, deadline);
    const who = { tenant: caller.tenant, instance: caller.instance, caps: caller.policy.caps, ...(caller.marks ? { marks: caller.marks } : {}) };
    const cap = lookupImport(MEMBRANE_MODULE, name)?.grant as CapWord;
    const bytes = args.reduce((n, a) => n + a.byteLength, 0);
    const refused = this.cadence.admit(who, cap, name, { bytes, max: REMOTE_CALLS[name] ?? 0 });
    if (refused !== null) return refused;
    if (deadline - performance.now() <= 0) return GUEST_ERR.TIMEOUT;
    const left = Math.ceil(deadline - performance.now()) + DEADLINE_BACKSTOP_MS;
    const abort = new AbortController();
    // A batch listens on it once per request in flight (≤ MAX_BATCH_CONCURRENCY).
    setMaxListeners(64, abort.signal);
    let why: 'stop' | 'revoked' | 'deadline' | null = null;
    const end = (reason: 'stop' | 'revoked' | 'deadline') => (): void => {
      why ??= reason;
      abort.abort();
    };
    const onStop = end('stop');
    if (stop.aborted) onStop();
    stop.addEventListener('abort', onStop);
    const unwatch = this.cadence.watch(who, end('revoked'));
    const timer = Number.isFinite(left) ? setTimeout(end('deadline'), left) : null;
    const limitMs = Number.isFinite(left) ? left : undefined;
    try {
      if (name === 'llm_complete') {
        const answer = await this.llm.complete(args[0] ?? new Uint8Array(0), abort.signal, limitMs);
        return why === 'deadline' ? GUEST_ERR.TIMEOUT : answer;
      }
      const answer = await this.network.call(name, args, abort.signal, limitMs);
      if (why === 'deadline') return GUEST_ERR.TIMEOUT;
      if (answer.ok) {
        for (const target of answer.denied) {
          this.audit.append({ tenant: caller.tenant, instance: caller.instance, kind: 'denied', detail: { broker: cap, op: name, code: 'DENIED', why: 'network guard', target, ...caller.marks } });
        }
        return answer.bytes;
      }
      if (answer.errno === GUEST_ERR.DENIED || answer.errno === GUEST_ERR.REVOKED) {
        this.audit.append({ tenant: caller.tenant, instance: caller.instance, kind: 'denied', detail: { broker: cap, op: name, code: answer.errno === GUEST_ERR.DENIED ? 'DENIED' : 'REVOKED', why: answer.errno === GUEST_ERR.DENIED ? 'network guard' : 'revoked in flight', target: describeTarget(name, args[0]), ...caller.marks } });
      }
      return answer.errno;
    } finally {
      if (timer) clearTimeout(timer);
      unwatch();
      stop.removeEventListener('abort', onStop);
    }
  }

  /**
   * An embedder host function (`cap`.`fn`): the cadence with the caller's host caps, then the
   * function, bounded by `deadline` (`performance.now()`), `stops` and revocation.
   */
  hostCall(caller: HostCaller, cap: string, fn: string, args: Uint8Array | number, stops: readonly AbortSignal[], deadline: number): Promise<Uint8Array | number> {
    const forward = this.options.forward;
    if (forward?.host) return forward.host(cap, fn, args, stops, deadline);
    return this.host.call(caller, cap, fn, args, stops, deadline);
  }

  /** A defined host cap's function names and size caps (what an os_process child is told of a granted cap), or null. */
  hostCapShape(cap: string): { readonly fns: readonly string[]; readonly maxArgBytes: number; readonly maxResultBytes: number } | null {
    const c = this.host.caps.get(cap);
    return c ? { fns: [...c.functions.keys()], maxArgBytes: c.maxArgBytes, maxResultBytes: c.maxResultBytes } : null;
  }

  private db(): Database {
    if (this.database === null) {
      const db = openDatabase(this.options.databaseFile ?? engineDatabaseFile());
      try {
        // The engine database always holds a started log (its genesis), so a log that is missing there was dropped.
        if (this.options.audit === undefined) startAuditLog(db);
      } catch (err) {
        db.close();
        throw err;
      }
      this.database = db;
    }
    return this.database;
  }

  /**
   * The cadence's steps 1-4 for a call of a spawning cap (`commands`, `exec`, `parallel`: the
   * command lanes); forwarded (a promise) when the brokers live elsewhere — an os_process child's
   * tenant is revoked and rate-limited in its parent.
   */
  spawnAdmit(caller: CallerOf, cap: 'commands' | 'exec' | 'parallel', op: string, bytes: number, max: number): number | null | Promise<number | null> {
    const forward = this.options.forward;
    return forward?.admit ? forward.admit(cap, op, bytes, max) : this.cadence.admit(caller, cap, op, { bytes, max });
  }

  /** A main-thread broker call (kv, queue, secrets): the cadence, then the store; forwarded (a promise) when the brokers live elsewhere. */
  call(caller: BrokerCaller, name: string, args: readonly Uint8Array[], cap: number): BrokerAnswer | Promise<BrokerAnswer> {
    if (this.options.forward) return this.options.forward.call(name, args, cap);
    return this.hub.call({ tenant: caller.tenant, instance: caller.instance, caps: caller.policy.caps, ...(caller.marks ? { marks: caller.marks } : {}) }, name, args, cap);
  }

  /**
   * A request too large to be carried here (an os_process child sends its size instead): refused
   * by the cadence exactly as the call itself would be — not granted, revoked, rate, then
   * TOO_LARGE — and recorded. Not a broker import: INVALID.
   */
  refuseOversized(caller: BrokerCaller, name: string, bytes: number): number {
    const entry = lookupImport(MEMBRANE_MODULE, name);
    const max = Object.hasOwn(REMOTE_CALLS, name) ? REMOTE_CALLS[name]! : BrokerHub.requestCap(name);
    if (!entry?.abi || max === null) return GUEST_ERR.INVALID;
    const who = { tenant: caller.tenant, instance: caller.instance, caps: caller.policy.caps, ...(caller.marks ? { marks: caller.marks } : {}) };
    return this.cadence.admit(who, entry.grant as CapWord, name, { bytes: Math.max(bytes, max + 1), max }) ?? GUEST_ERR.TOO_LARGE;
  }

  /** An engine-level audit record (e.g. a policy fallback); details must not hold secrets. */
  record(event: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }): void {
    this.audit.append(event);
  }

  /** Record a receipt's event and say where (brokers/audit-anchor.ts): the engine's log, or the embedder's sink. */
  anchor(event: AnchoredEvent): AuditAnchor {
    return anchorEvent(this.audit, this.builtinAnchor, event);
  }

  revoke(p: Principal): void {
    this.cadence.revoke(p);
    if (p.instance === undefined) this.secrets.revokeTenant(p.tenant);
  }

  restore(p: Principal): void {
    this.cadence.restore(p);
  }

  close(): void {
    this.secrets.zeroize();
    this.llm.zeroize();
    if (this.database?.open) this.database.close();
    this.database = null;
  }
}
