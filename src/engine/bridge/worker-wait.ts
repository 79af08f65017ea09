/**
 * The vocabulary of waiting on a guest worker (worker-handle.ts): its limits, a host call's
 * bound, the parked reply and what a wait ends with; split out of worker-handle.ts for size.
 *
 * Owns: these types and constants. Invariant: none beyond worker-handle.ts's, which uses them.
 *
 * Does not protect against: nothing — declarations only.
 */

import type { SandboxError } from '../../errors.ts';
import { CANCEL_GRACE_MS, TIMEOUT_ERRNO } from './wait-bounds.ts';
import { PROTOCOL_VERSION, type DoneFrame, type HostReply } from './protocol.ts';

export interface WorkerLimits {
  /** JS heap of the worker (guest linear memory is separate and capped by the rewriter). */
  readonly heapMb: number;
  /** Thread stack: bounds guest recursion (STACK_OVERFLOW). */
  readonly stackMb: number;
  /** Main-thread spin before sleeping, and the worker's, in milliseconds. */
  readonly spinMs: number;
  /** How long an idle persistent worker sleeps between checks of its channel. */
  readonly idleWaitMs: number;
}

/**
 * The calling call's bound on one host call: `deadline` is its absolute end (a `performance.now()`
 * value), `signal` fires there (or when the call is stopped early). A handler passes both down —
 * its own timeouts can only be shorter — and once `signal` has fired it changes nothing the
 * worker could see (no module posted, no answer kept): its late answer is thrown away.
 */
export interface HostCall {
  readonly deadline: number;
  readonly signal: AbortSignal;
}


/**
 * How long a worker whose host call was cut at the deadline has to post its TIMEOUT (it throws
 * as soon as it reads the reply) before it is terminated and replaced.
 */
export const HOST_CALL_GRACE_MS = 50;

/**
 * After the caller's signal aborts (a cancel, a killed process), how long the job has to stop by
 * itself (its next fuel refill; a host call it was blocked in is answered at once) before its
 * worker is terminated and replaced: the call settles within this of the abort.
 */
export { CANCEL_GRACE_MS };

/** Host calls served even past the deadline: they only release what the call holds (an exec slot, a process). */
export const RELEASE_OPS: ReadonlySet<string> = new Set(['command_end', 'process_kill']);

export const TIMEOUT_REPLY: HostReply = { v: PROTOCOL_VERSION, kind: 'host-reply', ok: false, errno: TIMEOUT_ERRNO };

/**
 * A host handler's reply that holds the job where it is: its host call stays unanswered and the
 * wait returns `parked`; `answerParked` answers it later and a new wait goes on (a pooled lane
 * interpreter, booted, waiting for its snippet).
 */
export const PARKED: HostReply = Object.freeze({ v: PROTOCOL_VERSION, kind: 'host-reply', ok: true, value: 0 });

export type Awaited =
  | { readonly kind: 'done'; readonly frame: DoneFrame; readonly stdout: Uint8Array; readonly stderr: Uint8Array; readonly output?: Uint8Array }
  | { readonly kind: 'parked' }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'dead'; readonly error: SandboxError };

