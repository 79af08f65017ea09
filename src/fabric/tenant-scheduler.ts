/**
 * Tenant-fair admission (DESIGN §11, "honest tenant's p99 under 10% hostile load"): the engine's
 * top-level calls (`run`, `exec`, each fan-out input) pass through here before they take a worker,
 * so one tenant's spinners cannot starve another tenant's calls.
 *
 * Owns: `slots` calls in flight engine-wide, at most `perTenant` of them for any one tenant (and
 * no more than its fair share while other tenants are present), and
 * the order in which waiting calls are admitted: round-robin across tenants (each tenant's own
 * calls in arrival order), never one global FIFO — a tenant with a thousand queued spinners gets
 * one turn per round like a tenant with one call. A call waits at most `waitMs` (its own timeout)
 * and then fails OVERLOADED — declared, retryable, nothing ran; its caller's signal aborting
 * takes it out of the line at once (CANCELLED).
 * Invariant: admitted ≤ slots; admitted(tenant) ≤ perTenant; every admission is released exactly
 * once (the release function is idempotent); a free slot goes to the next tenant in the ring
 * that has a waiter below its cap, so a waiter is passed over only by tenants that were ahead of
 * it in the ring.
 *
 * Does not protect against: what an admitted call does with its time — the walls (deadline,
 * fuel) bound that; nested work a call starts (a process it spawns, a lane's interpreter) is
 * admitted as part of its caller, not again (admitting it again could deadlock the caller).
 */

import { SandboxError } from '../errors.ts';

export interface SchedulerLimits {
  /** Calls in flight engine-wide (the engine's maxWorkers). */
  readonly slots: number;
  /** Calls in flight for one tenant. */
  readonly perTenant: number;
}

interface Waiter {
  readonly tenant: string;
  readonly admit: (release: () => void) => void;
  readonly fail: (e: SandboxError) => void;
}

/** The default share one tenant may hold: half the engine's workers (at least one). */
export function defaultPerTenant(slots: number): number {
  return Math.max(1, Math.ceil(slots / 2));
}

export class TenantScheduler {
  private inFlight = 0;
  private readonly active = new Map<string, number>();
  /** Waiting calls per tenant; the map's key order is the round-robin ring. */
  private readonly queues = new Map<string, Waiter[]>();
  private closed = false;

  constructor(private readonly limits: SchedulerLimits) {}

  /** Calls admitted now, engine-wide and for `tenant`. */
  running(tenant?: string): number {
    return tenant === undefined ? this.inFlight : (this.active.get(tenant) ?? 0);
  }

  /** Calls waiting for `tenant` (all tenants without one). */
  waiting(tenant?: string): number {
    if (tenant !== undefined) return this.queues.get(tenant)?.length ?? 0;
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  /**
   * A turn now, without waiting: the release function, or null when `admit` must decide (the
   * engine is closed, the signal aborted, the tenant has calls waiting, or a cap is reached) —
   * the same test as `admit`'s own first step, so a caller that falls back to `admit` is
   * admitted exactly as `admit` alone would.
   */
  tryAdmit(tenant: string, signal?: AbortSignal): (() => void) | null {
    if (this.closed || signal?.aborted) return null;
    return !this.queues.has(tenant) && this.canRun(tenant) ? this.take(tenant) : null;
  }

  /** Wait for a turn; resolves with the release function. */
  admit(tenant: string, waitMs: number, signal?: AbortSignal): Promise<() => void> {
    if (this.closed) return Promise.reject(new SandboxError('INSTANCE_DEAD', 'the engine is closed'));
    if (signal?.aborted) return Promise.reject(new SandboxError('CANCELLED', 'the call was cancelled'));
    // Below both caps and nobody of this tenant ahead: go (any other waiter is at its own cap, or pump would have served it).
    if (!this.queues.has(tenant) && this.canRun(tenant)) return Promise.resolve(this.take(tenant));
    return new Promise((resolve, reject) => {
      const leave = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const q = this.queues.get(tenant);
        const i = q?.indexOf(w) ?? -1;
        if (q && i >= 0) q.splice(i, 1);
        if (q && q.length === 0) this.queues.delete(tenant);
      };
      const onAbort = (): void => {
        leave();
        reject(new SandboxError('CANCELLED', 'the call was cancelled'));
      };
      const timer = setTimeout(() => {
        leave();
        reject(new SandboxError('OVERLOADED', `the engine is busy: this call was not admitted within its ${Math.round(waitMs)} ms; nothing ran`, { waitedMs: Math.round(waitMs) }));
        this.pump(); // a tenant that left may unblock nobody, but keep the ring honest
      }, Math.max(1, waitMs));
      const w: Waiter = {
        tenant,
        admit: (release) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        fail: (e) => {
          leave();
          reject(e);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const q = this.queues.get(tenant);
      if (q) q.push(w);
      else this.queues.set(tenant, [w]);
      this.pump();
    });
  }

  /** Run `work` once admitted; released when it settles. */
  async around<T>(tenant: string, waitMs: number, signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    const release = await this.admit(tenant, waitMs, signal);
    try {
      return await work();
    } finally {
      release();
    }
  }

  close(): void {
    this.closed = true;
    for (const q of [...this.queues.values()]) for (const w of [...q]) w.fail(new SandboxError('INSTANCE_DEAD', 'the engine is closed'));
    this.queues.clear();
  }

  /**
   * Below both caps: `perTenant`, and the tenant's fair share of the slots among the tenants
   * present now (running or waiting) — with four tenants competing for eight slots none is
   * admitted past two; alone, a tenant may use up to `perTenant`. Calls already running are never
   * preempted: the share applies to admissions.
   */
  private canRun(tenant: string): boolean {
    if (this.inFlight >= this.limits.slots) return false;
    // Tenants present: running, waiting, and this one (counted once each).
    let present = this.active.size;
    for (const t of this.queues.keys()) if (!this.active.has(t)) present++;
    if (!this.active.has(tenant) && !this.queues.has(tenant)) present++;
    const share = Math.max(1, Math.ceil(this.limits.slots / present));
    return (this.active.get(tenant) ?? 0) < Math.min(this.limits.perTenant, share);
  }

  private take(tenant: string): () => void {
    this.inFlight++;
    this.active.set(tenant, (this.active.get(tenant) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight--;
      const n = (this.active.get(tenant) ?? 1) - 1;
      if (n <= 0) this.active.delete(tenant);
      else this.active.set(tenant, n);
      this.pump();
    };
  }

  /** Hand free slots out: round-robin over tenants with waiters that are below their cap. */
  private pump(): void {
    while (this.inFlight < this.limits.slots && this.queues.size > 0) {
      let served = false;
      for (const [tenant, q] of this.queues) {
        if (!this.canRun(tenant)) continue;
        const w = q.shift()!;
        // Move the tenant to the back of the ring (or out of it): the next free slot goes to the next tenant.
        this.queues.delete(tenant);
        if (q.length > 0) this.queues.set(tenant, q);
        w.admit(this.take(tenant));
        served = true;
        break;
      }
      if (!served) return;
    }
  }
}
