/**
 * The snippet's captured stdout and stderr (the output wall, DESIGN §3): each stream keeps at
 * most `limitBytes` of UTF-8 (default 1 MiB, set by the lane); the rest is dropped and the
 * truncation is named in `warnings` (or, with `failOnLimit`, the call fails with OUTPUT_LIMIT).
 *
 * Does not protect against: the time spent producing dropped output (fuel and the deadline bound
 * that).
 */

export const DEFAULT_OUTPUT_LIMIT_BYTES = 1024 * 1024;

type Stream = 'stdout' | 'stderr';

export class OutputSink {
  private readonly parts: Record<Stream, string[]> = { stdout: [], stderr: [] };
  private readonly bytes: Record<Stream, number> = { stdout: 0, stderr: 0 };
  private readonly dropped: Record<Stream, number> = { stdout: 0, stderr: 0 };

  /** Told each piece of text as it is kept (the live stream, stream.ts); null: nobody listens. */
  listener: ((stream: Stream, text: string) => void) | null = null;

  constructor(
    private readonly limitBytes: number,
    readonly failOnLimit = false,
  ) {}

  write(stream: Stream, text: string): void {
    const room = this.limitBytes - this.bytes[stream];
    const n = Buffer.byteLength(text);
    if (n <= room) {
      this.parts[stream].push(text);
      this.bytes[stream] += n;
      this.listener?.(stream, text);
      return;
    }
    if (room > 0) {
      // Keep the longest prefix that fits (never splitting a character).
      const kept = Buffer.from(text).subarray(0, room).toString('utf8').replace(/\uFFFD$/, '');
      this.parts[stream].push(kept);
      this.bytes[stream] += Buffer.byteLength(kept);
      this.listener?.(stream, kept);
    }
    this.dropped[stream] += n - Math.max(0, room);
    this.bytes[stream] = Math.max(this.bytes[stream], this.limitBytes);
  }

  /** Count `n` bytes the snippet wrote past its limit without handing them over. */
  drop(stream: Stream, n: number): void {
    if (!Number.isFinite(n) || n <= 0) return;
    this.dropped[stream] += n;
    this.bytes[stream] = this.limitBytes;
  }

  /** Bytes still accepted on `stream`. */
  room(stream: Stream): number {
    return Math.max(0, this.limitBytes - this.bytes[stream]);
  }

  finish(warnings: string[]): { stdout: string; stderr: string; overLimit: boolean } {
    for (const s of ['stdout', 'stderr'] as const) {
      if (this.dropped[s] > 0) warnings.push(`${s} truncated at ${this.limitBytes} bytes (${this.dropped[s]} more bytes dropped)`);
    }
    return { stdout: this.parts.stdout.join(''), stderr: this.parts.stderr.join(''), overLimit: this.dropped.stdout + this.dropped.stderr > 0 };
  }
}
