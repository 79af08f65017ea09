/**
 * The broker cadence (DESIGN §5): every host-mediated power passes the same steps, in this
 * order — granted? → revoked? → rate → size → do it. Every denial appends an audit record;
 * grants are counted.
 *
 * Owns: revocation per principal (a tenant, or one instance of it), held by the engine so it
 * survives instance restarts; the per-principal, per-broker rate limit (a time-bucketed counter,
 * default 120 000 per 60 s, configurable per broker); denial records; grant counters.
 * Invariant: `admit` is synchronous and runs on the main thread, so check-and-count is atomic;
 * a denied call does nothing but leave its record. Long operations call `stillAdmitted` between
 * steps so a revocation stops them mid-flight.
 *
 * Does not protect against: what a broker does once admitted — each broker owns its own limits.
 */

import type { CapWord } from '../policy/profiles.ts';
import { GUEST_ERR } from '../abi/command.ts';

export interface RateLimit {
  readonly limit: number;
  readonly windowMs: number;
}

export const DEFAULT_RATE: RateLimit = Object.freeze({ limit: 120_000, windowMs: 60_000 });

export interface AuditSink {
  append(event: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }): void;
  /**
   * Optional, for an embedder's sink: record `event` like `append` and answer where — the sink's
   * position for it and its own digest (e.g. its hash chain's head after it) — so a receipt can
   * carry them (provenance/anchor.ts). Without it a receipt carries only the record's hash.
   */
  seal?(event: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }): { seq: number; digest: string };
}

export interface Principal {
  readonly tenant: string;
  /** Absent: the whole tenant. */
  readonly instance?: string;
}

export interface CallerOf {
  readonly tenant: string;
  readonly instance: string;
  /** Cap words, or the embedder's host caps (`vendor:name`) for a host function call. */
  readonly caps: readonly (CapWord | string)[];
  /** Added to the detail of every record made for this caller (an os_process call's `tier`). */
  readonly marks?: Readonly<Record<string, string>>;
}

export interface CadenceOptions {
  readonly rate?: Partial<RateLimit> & { readonly perBroker?: Partial<Record<CapWord | string, Partial<RateLimit>>> };
  readonly audit: AuditSink;
  /** Injectable clock (tests). */
  readonly now?: () => number;
}

export class Cadence {
  private readonly revoked = new Set<string>();
  private readonly buckets = new Map<string, { bucket: number; count: number }>();
  private readonly granted = new Map<string, number>();
  private readonly denied = new Map<string, number>();
  /** Rate denials are recorded once per principal, broker and window, then only counted. */
  private readonly rateRecorded = new Map<string, number>();
  /** Quota refusals likewise, per tenant, broker and quota. */
  private readonly quotaRecorded = new Map<string, number>();
  private readonly now: () => number;
  private readonly watchers = new Set<{ tenant: string; instance: string; onRevoke: () => void }>();

  constructor(private readonly options: CadenceOptions) {
    this.now = options.now ?? Date.now;
  }

  revoke(p: Principal): void {
    this.revoked.add(principalKey(p));
    this.options.audit.append({ tenant: p.tenant, instance: p.instance ?? '', kind: 'revoke', detail: {} });
    for (const w of [...this.watchers]) {
      if (w.tenant === p.tenant && (p.instance === undefined || p.instance === w.instance)) w.onRevoke();
    }
  }

  /** Call `onRevoke` if the caller's principal is revoked while a long operation runs; returns the unwatch. */
  watch(caller: CallerOf, onRevoke: () => void): () => void {
    const w = { tenant: caller.tenant, instance: caller.instance, onRevoke };
    this.watchers.add(w);
    return () => void this.watchers.delete(w);
  }

  restore(p: Principal): void {
    this.revoked.delete(principalKey(p));
    this.options.audit.append({ tenant: p.tenant, instance: p.instance ?? '', kind: 'restore', detail: {} });
  }

  isRevoked(tenant: string, instance: string): boolean {
    return this.revoked.has(principalKey({ tenant })) || this.revoked.has(principalKey({ tenant, instance }));
  }

  /**
   * Steps 1-4 for one call of `op` on `broker`: null to go ahead, or the guest error code of the
   * first step that refused (and its audit record is written).
   */
  admit(caller: CallerOf, broker: CapWord | string, op: string, size: { bytes: number; max: number }): number | null {
    const deny = (code: keyof typeof GUEST_ERR, why: string, extra: Record<string, unknown> = {}): number => {
      this.bump(this.denied, `${broker}:${code}`);
      this.options.audit.append({ tenant: caller.tenant, instance: caller.instance, kind: 'denied', detail: { broker, op, code, why, ...extra, ...caller.marks } });
      return GUEST_ERR[code];
    };
    if (!caller.caps.includes(broker)) return deny('DENIED', 'not granted');
    if (this.isRevoked(caller.tenant, caller.instance)) return deny('REVOKED', 'principal revoked');
    const rate = this.rateFor(broker);
    const key = `${caller.tenant}\u0000${broker}`;
    const bucket = Math.floor(this.now() / rate.windowMs);
    const b = this.buckets.get(key);
    const count = b && b.bucket === bucket ? b.count : 0;
    if (count >= rate.limit) {
      if (this.rateRecorded.get(key) === bucket) {
        this.bump(this.denied, `${broker}:RATE_LIMITED`);
        return GUEST_ERR.RATE_LIMITED;
      }
      this.rateRecorded.set(key, bucket);
      return deny('RATE_LIMITED', 'rate limit (recorded once per window)', { limit: rate.limit, windowMs: rate.windowMs });
    }
    this.buckets.set(key, { bucket, count: count + 1 });
    if (size.bytes > size.max) return deny('TOO_LARGE', 'request too large', { bytes: size.bytes, max: size.max });
    this.bump(this.granted, broker);
    return null;
  }

  /**
   * A store refused an admitted call over a per-tenant quota (`QUOTA`): counted, and recorded
   * once per tenant, broker, quota and rate window — a flood of refused writes leaves one record.
   */
  quota(caller: CallerOf, broker: CapWord, op: string, quota: string, limit: number): void {
    this.bump(this.denied, `${broker}:QUOTA`);
    const key = `${caller.tenant}\u0000${broker}\u0000${quota}`;
    const bucket = Math.floor(this.now() / this.rateFor(broker).windowMs);
    if (this.quotaRecorded.get(key) === bucket) return;
    this.quotaRecorded.set(key, bucket);
    this.options.audit.append({ tenant: caller.tenant, instance: caller.instance, kind: 'denied', detail: { broker, op, code: 'QUOTA', why: `tenant ${quota} quota (recorded once per window)`, quota, limit, ...caller.marks } });
  }

  /** For long operations: still not revoked? */
  stillAdmitted(caller: CallerOf): boolean {
    return !this.isRevoked(caller.tenant, caller.instance);
  }

  /** Grants and denials so far (metrics). */
  counters(): { granted: Record<string, number>; denied: Record<string, number> } {
    return { granted: Object.fromEntries(this.granted), denied: Object.fromEntries(this.denied) };
  }

  private rateFor(broker: CapWord | string): RateLimit {
    const own = Object.hasOwn(this.options.rate?.perBroker ?? {}, broker) ? this.options.rate?.perBroker?.[broker] : undefined;
    return {
      limit: own?.limit ?? this.options.rate?.limit ?? DEFAULT_RATE.limit,
      windowMs: own?.windowMs ?? this.options.rate?.windowMs ?? DEFAULT_RATE.windowMs,
    };
  }

  private bump(map: Map<string, number>, key: string): void {
    map.set(key, (map.get(key) ?? 0) + 1);
  }
}

function principalKey(p: Principal): string {
  return p.instance === undefined ? `t:${p.tenant}` : `i:${p.tenant}\u0000${p.instance}`;
}
