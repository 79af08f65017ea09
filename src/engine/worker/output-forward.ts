/**
 * Streaming a job's output while it runs (the caller's `onStdout`/`onStderr`): the worker side.
 *
 * Owns: when captured stdout/stderr bytes leave the worker as `output` messages (protocol.ts).
 * A write after a quiet spell is posted at once; writes that follow within FLUSH_INTERVAL_MS are
 * coalesced and posted at the next write, fuel refill or host call past the interval, and before
 * the guest blocks (a host call, a sleep). The job's result frame still carries everything, so the
 * main thread takes whatever was not posted from it: nothing is lost, nothing waits for this.
 * Invariant: the guest never waits on the host for output — posting is a non-blocking message;
 * at most WINDOW messages are unread by the main thread (it acknowledges each on the channel),
 * past that output coalesces in the stream's own capped buffer, so a slow consumer costs the host
 * no memory beyond the output cap; only captured bytes are posted (never past the cap), each once;
 * a job that did not ask for streaming posts nothing and pays one null check per write.
 *
 * Does not protect against: nothing beyond the above; the callbacks run on the main thread.
 */

import { PROTOCOL_VERSION, type OutputMessage } from '../bridge/protocol.ts';
import type { CappedStream } from '../../wasi/index.ts';

/** Writes within this long of the last post are coalesced (refills and host calls flush them). */
export const FLUSH_INTERVAL_MS = 2;
/** Most output messages the main thread may have unread; past that, output coalesces. */
export const WINDOW = 16;
/** While output is pending, one write in this many checks whether the interval has passed. */
const CLOCK_EVERY = 64;

export class OutputForwarder {
  private job = 0;
  private stdout: CappedStream | null = null;
  private stderr: CappedStream | null = null;
  private sentOut = 0;
  private sentErr = 0;
  private pending = false;
  private last = -Infinity;
  private posted = 0;
  private writes = 0;

  constructor(
    private readonly post: (msg: OutputMessage, transfer: ArrayBuffer[]) => void,
    private readonly acked: () => number,
  ) {}

  /** A job starts: forward `stdout`/`stderr` (the guest's captured streams) when `stream`. */
  begin(job: number, stdout: CappedStream, stderr: CappedStream, stream: boolean): void {
    this.end();
    if (!stream) return;
    this.job = job;
    this.stdout = stdout;
    this.stderr = stderr;
    this.sentOut = stdout.length;
    this.sentErr = stderr.length;
    this.last = -Infinity;
    stdout.onWrite = this.wrote;
    stderr.onWrite = this.wrote;
  }

  /** The job is over (its result carries the rest): stop forwarding. */
  end(): void {
    if (this.stdout) this.stdout.onWrite = null;
    if (this.stderr) this.stderr.onWrite = null;
    this.stdout = this.stderr = null;
    this.pending = false;
  }

  /** A fuel refill (or a write): post what is pending once the interval has passed. */
  readonly tick = (): void => {
    if (this.pending && performance.now() - this.last >= FLUSH_INTERVAL_MS) this.flush();
  };

  /** The guest is about to block: post what is pending now. */
  readonly idle = (): void => {
    if (this.pending) this.flush();
  };

  private readonly wrote = (): void => {
    // Reading the clock costs ~0.3 µs, a write ~0.1 µs: while output is pending only every
    // CLOCK_EVERY-th write looks at it (refills and blocking calls flush in between).
    if (this.pending && (++this.writes & (CLOCK_EVERY - 1)) !== 0) return;
    this.pending = true;
    this.tick();
  };

  private flush(): void {
    const { stdout, stderr } = this;
    if (!stdout || !stderr) return;
    // The main thread is behind: leave the bytes in the capped streams, post them later in one go.
    if (this.posted - this.acked() >= WINDOW) return;
    const out = stdout.length > this.sentOut ? stdout.peek(this.sentOut).slice() : null;
    const err = stderr.length > this.sentErr ? stderr.peek(this.sentErr).slice() : null;
    this.pending = false;
    this.last = performance.now();
    if (!out && !err) return;
    const msg: OutputMessage = { v: PROTOCOL_VERSION, kind: 'output', job: this.job, stdout: out, stdoutAt: this.sentOut, stderr: err, stderrAt: this.sentErr };
    if (out) this.sentOut += out.length;
    if (err) this.sentErr += err.length;
    this.posted++;
    const transfer: ArrayBuffer[] = [];
    if (out) transfer.push(out.buffer as ArrayBuffer);
    if (err) transfer.push(err.buffer as ArrayBuffer);
    this.post(msg, transfer);
  }
}
