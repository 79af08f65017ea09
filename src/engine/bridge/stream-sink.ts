/**
 * Streaming a job's output while it runs (the caller's `onStdout`/`onStderr`): the main side.
 *
 * Owns: putting the worker's `output` messages (worker/output-forward.ts) in order per job, handing
 * them to the caller's callbacks through `OutputTap` (bounded by the engine's output cap, decoded
 * without splitting a character), and completing them from the job's result frame, which carries
 * every captured byte: what the messages had not brought yet is delivered before the result is.
 * Invariant: each captured byte reaches a callback at most once and in order, so the chunks of a
 * stream joined are the result's text (less its truncation marker); nothing is delivered after
 * `finish`/`end`, so a late message of this job (or one of an earlier job on the same worker, which
 * carries another job number) reaches no one.
 *
 * Does not protect against: a callback that blocks the main thread (see lanes/controls.ts).
 */

import { OutputTap, type CallControls } from '../../lanes/controls.ts';
import type { OutputMessage } from './protocol.ts';

const decoder = new TextDecoder('utf-8', { fatal: false });

export class StreamSink {
  private readonly got = [0, 0];
  private readonly kept: [Uint8Array[], Uint8Array[]] = [[], []];
  private open = true;

  private constructor(
    readonly job: number,
    private readonly taps: readonly [OutputTap, OutputTap],
  ) {}

  /** A sink for job `job`, or null when the caller gave no callback (nothing is streamed then). */
  static for(job: number, controls: CallControls, limitBytes: number): StreamSink | null {
    if (typeof controls.onStdout !== 'function' && typeof controls.onStderr !== 'function') return null; // the hot path
    const out = new OutputTap(controls.onStdout, limitBytes);
    const err = new OutputTap(controls.onStderr, limitBytes);
    return out.active || err.active ? new StreamSink(job, [out, err]) : null;
  }

  /** A message from the worker (any job: another job's is dropped). */
  receive(msg: OutputMessage): void {
    if (!this.open || msg.job !== this.job) return;
    this.take(0, msg.stdout, msg.stdoutAt);
    this.take(1, msg.stderr, msg.stderrAt);
  }

  /** The job's result arrived: deliver what the messages had not, then close. */
  finish(stdout: Uint8Array, stderr: Uint8Array): void {
    if (!this.open) return;
    this.take(0, stdout, 0);
    this.take(1, stderr, 0);
    this.end();
  }

  /** The job ended without a result (its worker terminated or died): close with what arrived. */
  end(): void {
    if (!this.open) return;
    this.open = false;
    this.taps[0].end();
    this.taps[1].end();
  }

  /** What was delivered of one stream, as text (a result whose worker was terminated carries it). */
  text(stream: 'stdout' | 'stderr'): string {
    const parts = this.kept[stream === 'stdout' ? 0 : 1];
    return parts.length === 0 ? '' : decoder.decode(Buffer.concat(parts));
  }

  private take(i: 0 | 1, bytes: Uint8Array | null, at: number): void {
    if (!bytes) return;
    const skip = this.got[i]! - at;
    // Messages are contiguous and ordered; anything else (a gap) is left to the result frame.
    if (skip < 0 || skip >= bytes.length) return;
    const part = skip > 0 ? bytes.subarray(skip) : bytes;
    this.got[i] = this.got[i]! + part.length;
    this.kept[i].push(part);
    this.taps[i].push(part);
  }
}
