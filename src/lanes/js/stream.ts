/**
 * A job's live output (worker side): what the snippet's console writes — the text the output
 * sink kept, so already within the output limit — posted to the main thread while the job runs,
 * for a job that asked for it (`ExecJob.stream`; without it nothing here runs).
 *
 * Owns: batching. QuickJS runs synchronously on this thread, so nothing is posted by a timer: a
 * write is posted at once when the last post was at least STREAM_FLUSH_MS ago (the first write
 * always), else kept and posted at the next write, fuel refill (meter.ts `onRefill`) or power call
 * past that interval, when STREAM_FLUSH_CHARS pile up, and before the job's result.
 * Invariant: every kept piece is posted exactly once, in order, before the job's `result` (both on
 * the one parent port), so the main thread's chunks concatenate to the result's stdout/stderr.
 *
 * Does not protect against: a snippet that writes and then blocks without a refill (none in an
 * instrumented QuickJS; a power call flushes first) — its last batch waits for the result.
 */

import type { WorkerToHost } from './protocol.ts';

/** Longest a kept piece waits before it is posted (while the snippet runs). */
export const STREAM_FLUSH_MS = 2;
/** Text kept beyond this is posted at once. */
export const STREAM_FLUSH_CHARS = 64 * 1024;

export class OutputStream {
  private pending: { fd: 1 | 2; text: string }[] = [];
  private pendingChars = 0;
  private last = -Infinity;

  constructor(
    private readonly id: number,
    private readonly want: { readonly stdout: boolean; readonly stderr: boolean },
    private readonly send: (m: WorkerToHost) => void,
  ) {}

  /** The sink's listener: one kept piece of `stream`. */
  readonly push = (stream: 'stdout' | 'stderr', text: string): void => {
    if (!this.want[stream] || text === '') return;
    const fd = stream === 'stdout' ? 1 : 2;
    const tail = this.pending[this.pending.length - 1];
    if (tail?.fd === fd) tail.text += text;
    else this.pending.push({ fd, text });
    this.pendingChars += text.length;
    if (this.pendingChars >= STREAM_FLUSH_CHARS || performance.now() - this.last >= STREAM_FLUSH_MS) this.flush();
  };

  /** At a refill: post what waited long enough. */
  readonly tick = (): void => {
    if (this.pendingChars > 0 && performance.now() - this.last >= STREAM_FLUSH_MS) this.flush();
  };

  /** Post everything kept so far. */
  flush(): void {
    for (const p of this.pending) this.send({ v: 1, kind: 'output', id: this.id, fd: p.fd, text: p.text });
    this.pending = [];
    this.pendingChars = 0;
    this.last = performance.now();
  }
}
