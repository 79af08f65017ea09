/**
 * A run's or call's controls (`signal`, `onStdout`, `onStderr`; lanes/controls.ts is the contract)
 * as the engine and a persistent instance apply them to one job.
 *
 * Owns: `CallWatch` — the signal the job's wait honours (the caller's, and for a spawned process
 * its caller's too), and whether the caller's own signal aborted before the deadline (then the job
 * ends CANCELLED, not TIMEOUT); the CANCELLED result of a call that never ran; a terminated job's
 * result completed with the output it streamed.
 * Invariant: the abort's `reason` is never read; a call whose signal was aborted before it started
 * ran nothing and reports `fuelUsed: 0`.
 *
 * Does not protect against: nothing beyond the above; the walls are worker-handle.ts's.
 */

import { cancelled } from '../lanes/controls.ts';
import type { Awaited } from './bridge/worker-handle.ts';
import type { StreamSink } from './bridge/stream-sink.ts';
import { failure, fromAwaited, type RunResult } from './results.ts';
import type { PolicyConfig } from '../policy/resolve.ts';

export class CallWatch {
  /** What the job's wait honours: aborting it is a deadline that came early. */
  readonly signal: AbortSignal | undefined;
  private abortedAt: number | null = null;
  private readonly onAbort: (() => void) | null = null;

  /** The watch of a call: one shared, inert watch when there is no signal at all (nothing to listen to, nothing to remember). */
  static of(own: AbortSignal | undefined, inherited?: AbortSignal): CallWatch {
    return own === undefined && inherited === undefined ? UNWATCHED : new CallWatch(own, inherited);
  }

  constructor(
    private readonly own: AbortSignal | undefined,
    inherited?: AbortSignal,
  ) {
    this.signal = own && inherited ? AbortSignal.any([own, inherited]) : (own ?? inherited);
    if (own) {
      this.onAbort = (): void => {
        this.abortedAt ??= performance.now();
      };
      own.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** Whether the caller's own signal aborted before `deadline` (`performance.now()` time). */
  cancelledBy(deadline: number): boolean {
    return this.abortedAt !== null && this.abortedAt < deadline;
  }

  dispose(): void {
    if (this.onAbort) this.own?.removeEventListener('abort', this.onAbort);
  }
}

const UNWATCHED = new CallWatch(undefined);

/** A call whose signal aborted before it ran: CANCELLED, nothing ran. */
export function notRun(ctx: { profile: string; warnings: readonly string[] }, t0: number): RunResult {
  return failure(cancelled(), ctx, Math.round((performance.now() - t0) * 1000) / 1000);
}

/** A job that ended without a result frame (terminated, died) still carries what it streamed. */
export function withStreamed(r: RunResult, a: Awaited, sink: StreamSink | null): RunResult {
  if (!sink || a.kind === 'done') return r;
  return { ...r, stdout: sink.text('stdout'), stderr: sink.text('stderr') };
}

/** What a run's wait came to, as its result: its walls' outcome, and what it streamed if it ended without a result frame. */
export function settledRun(
  awaited: Awaited,
  sink: StreamSink | null,
  at: { readonly policy: PolicyConfig; readonly isCommand: boolean; readonly startedAt: number; readonly deadline: number; readonly outputLimitBytes: number; readonly watch: CallWatch },
): RunResult {
  const { policy } = at;
  const r = fromAwaited(awaited, {
    profile: policy.profile,
    warnings: policy.warnings,
    isCommand: at.isCommand,
    timeoutMs: policy.timeoutMs,
    startedAt: at.startedAt,
    outputLimitBytes: at.outputLimitBytes,
    cancelled: at.watch.cancelledBy(at.deadline),
  });
  return withStreamed(r, awaited, sink);
}
