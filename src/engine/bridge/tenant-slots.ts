/**
 * The exec cap's per-principal counters (DESIGN §4): concurrent `exec` calls and live processes
 * per tenant (a principal is the tenant, so its instances — and its calls on every tier: an
 * os_process child asks its parent's, broker-proxy.ts — share them).
 *
 * Owns: the counts, and each slot's release. Invariant: check-and-count is one synchronous step
 * on the main thread; a release gives its slot back once, however often it is called; a tenant
 * with no slot held has no entry.
 * Does not protect against: a holder that never releases — its job's end does (host-services.ts).
 */

export const MAX_CONCURRENT_EXECS = 64;
export const MAX_LIVE_PROCESSES = 32;

/** The counters: concurrent execs, live processes. */
export type SlotKind = 'exec' | 'process';

export class TenantSlots {
  private readonly held: Record<SlotKind, Map<string, number>> = { exec: new Map(), process: new Map() };

  /** One of `tenant`'s slots of `kind` (its idempotent release), or null at its limit. */
  take(kind: SlotKind, tenant: string): (() => void) | null {
    const map = this.held[kind];
    if ((map.get(tenant) ?? 0) >= (kind === 'exec' ? MAX_CONCURRENT_EXECS : MAX_LIVE_PROCESSES)) return null;
    map.set(tenant, (map.get(tenant) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const n = (map.get(tenant) ?? 0) - 1;
      if (n <= 0) map.delete(tenant);
      else map.set(tenant, n);
    };
  }

  /** Concurrent execs and live processes of a tenant right now. */
  usage(tenant: string): { execs: number; processes: number } {
    return { execs: this.held.exec.get(tenant) ?? 0, processes: this.held.process.get(tenant) ?? 0 };
  }
}
