/**
 * The host side of a Python call's live output (issue #15): the child streams `output` messages
 * (child-output.mjs) while the snippet runs; this relays them to the caller's `onStdout` /
 * `onStderr` through `OutputTap`s built with the lane's output cap.
 *
 * Owns: which streams the child is asked to forward (only those with a callback), the count of
 * what the child sent (more than the cap per stream is a misbehaving child: the lane kills it),
 * and the end of the call: what the result holds beyond what was streamed is delivered before the
 * result resolves, so the chunks' concatenation equals the result's stdout/stderr; a call that was
 * killed (timeout, cancel) reports what was streamed as its output.
 * Invariant: the callbacks get at most the cap per stream, in order, each chunk before the call's
 * result; this side keeps at most the cap per stream (the streamed text), never more.
 *
 * Does not protect against: a callback that blocks (it runs on the host's event loop); the
 * interleaving of stdout with stderr (each is in order; the two are batched together).
 */

import { OutputTap, type CallControls } from '../controls.ts';

export type StreamName = 'stdout' | 'stderr';

export class OutputRelay {
  private readonly taps: Record<StreamName, OutputTap>;
  private readonly seen: Record<StreamName, string[]> = { stdout: [], stderr: [] };
  private readonly count: Record<StreamName, number> = { stdout: 0, stderr: 0 };
  private readonly asked: Record<StreamName, boolean>;
  private ended = false;

  constructor(controls: CallControls, private readonly limitBytes: number) {
    this.taps = { stdout: new OutputTap(controls.onStdout, limitBytes), stderr: new OutputTap(controls.onStderr, limitBytes) };
    this.asked = { stdout: this.taps.stdout.active, stderr: this.taps.stderr.active };
  }

  /** Whether the child should forward this stream (it had a callback when the call started). */
  wants(stream: StreamName): boolean {
    return this.asked[stream];
  }

  /** A chunk from the child; false when it sent more than the cap (or an unasked stream). */
  push(stream: StreamName, text: string): boolean {
    if (this.ended) return true;
    this.count[stream] += text.length;
    // The child forwards only kept bytes (≤ cap), and a UTF-16 unit never stands for fewer than one byte.
    if (!this.wants(stream) || this.count[stream] > this.limitBytes) return false;
    this.seen[stream].push(text);
    this.taps[stream].push(text);
    return true;
  }

  /** The result arrived: deliver the rest of its text (what was not streamed yet) and end. */
  finish(final: Readonly<Record<StreamName, string>>): void {
    if (this.ended) return;
    for (const s of ['stdout', 'stderr'] as const) {
      if (!this.wants(s)) continue;
      const sent = this.text(s);
      if (final[s].length > sent.length && final[s].startsWith(sent)) this.taps[s].push(final[s].slice(sent.length));
    }
    this.end();
  }

  /** The call ended without a result (killed): stop; what was streamed is its output. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.taps.stdout.end();
    this.taps.stderr.end();
  }

  text(stream: StreamName): string {
    const parts = this.seen[stream];
    if (parts.length > 1) parts.splice(0, parts.length, parts.join(''));
    return parts[0] ?? '';
  }
}
