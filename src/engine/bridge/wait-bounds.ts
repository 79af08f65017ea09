/**
 * The bounds of a worker wait (worker-handle.ts): how long a cancelled job gets to stop by itself,
 * when a host answer counts as past the call's limit, and a host call's wait past the deadline.
 *
 * Owns: CANCEL_GRACE_MS, the TIMEOUT errno of a host reply, and the clock-tick tolerance of a
 * handler's own timer. Invariant: pure functions of their arguments and the clock.
 *
 * Does not protect against: a handler that ignores its abort — `within` only stops waiting for it.
 */

import type { HostReply } from './protocol.ts';

/** What a job whose caller's signal aborted gets to stop by itself before its worker goes. */
export const CANCEL_GRACE_MS = 25;
/** The errno of a host reply that says TIMEOUT. */
export const TIMEOUT_ERRNO = -7;

/**
 * How early a handler's own deadline timer may fire against `performance.now()`: timers run on
 * the event loop's millisecond clock, cached at the start of each turn.
 */
const CLOCK_TICK_MS = 2;

/** A host answer that comes at (or, being a TIMEOUT, within a clock tick of) the call's limit. */
export function pastLimit(reply: HostReply, limit: number): boolean {
  const now = performance.now();
  return now >= limit || (!reply.ok && reply.errno === TIMEOUT_ERRNO && now >= limit - CLOCK_TICK_MS);
}

/** Once the caller's signal aborted, what the job gets to stop by itself is at most CANCEL_GRACE_MS. */
export function grace(ms: number, signal: AbortSignal | undefined): number {
  return signal?.aborted ? Math.min(ms, CANCEL_GRACE_MS) : ms;
}

/**
 * `work`'s reply, or null once `limit` (a `performance.now()` value) passes; `work` itself is
 * left to its own abort and its late result is ignored. (Bookkeeping past the deadline only.)
 */
export function within(work: Promise<HostReply>, limit: number): Promise<HostReply | null> {
  return new Promise<HostReply | null>((resolve, reject) => {
    const done = (): void => clearTimeout(timer);
    const timer = setTimeout(() => resolve(null), Math.max(0, limit - performance.now()));
    work.then(
      (r) => {
        done();
        resolve(r);
      },
      (e: unknown) => {
        done();
        reject(e);
      },
    );
  });
}
