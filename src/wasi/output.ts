/**
 * Captured, capped output streams (the guest's stdout and stderr).
 *
 * Owns: the output wall (DESIGN §3): each stream keeps at most `limit` bytes; the rest is
 * counted and dropped and the stream is marked truncated, or — with `failOnLimit` — the call
 * ends with OUTPUT_LIMIT. Invariant: a stream never holds more than `limit` bytes of guest data,
 * in one contiguous buffer whose capacity is at most `max(limit, MIN_CAPACITY)`: capturing N
 * bytes costs O(N) bytes of host heap however the guest splits its writes (a line-buffered
 * guest makes one write per line; a list of per-write copies cost ~200 bytes of heap per write,
 * enough to exhaust a 64 MiB worker heap with under 1 MiB of output).
 *
 * A stream may have one `onWrite` listener (a caller streaming the output, engine/worker/
 * output-forward.ts), told after captured bytes land; it reads them with `peek`.
 *
 * Does not protect against: a guest that fills its quota with noise; it only bounds the size.
 */

import { SandboxError } from '../errors.ts';
import { GuestFault } from '../abi/signals.ts';

const EMPTY = new Uint8Array(0);
/**
 * First allocation of a stream that receives output; doubled as needed, never past the limit.
 * Small: V8 keeps a typed array of up to 64 bytes on its heap, where a larger one costs a backing
 * store of its own, whose external-memory accounting brings on full collections in a worker
 * running thousands of small runs (each printing a line).
 */
const MIN_CAPACITY = 64;

export class CappedStream {
  private buf: Uint8Array = EMPTY;
  private size = 0;
  /** Bytes the guest wrote past the limit (dropped) since the last `resetTruncation`. */
  dropped = 0;
  truncated = false;
  /** Told after bytes were captured (the worker's output forwarding, while a call streams). */
  onWrite: (() => void) | null = null;

  constructor(
    readonly name: 'stdout' | 'stderr',
    private readonly limit: number,
    private readonly failOnLimit: boolean,
  ) {}

  /** Append a copy of `data`; returns the number of bytes the guest is told were written. */
  write(data: Uint8Array): number {
    const room = this.limit - this.size;
    if (data.length > room) {
      if (this.failOnLimit) {
        throw new GuestFault(
          new SandboxError('OUTPUT_LIMIT', `${this.name} exceeded its ${this.limit}-byte limit`, { stream: this.name, limitBytes: this.limit }),
        );
      }
      this.truncated = true;
      this.dropped += data.length - room;
    }
    const take = Math.min(room, data.length);
    if (take > 0) {
      this.reserve(this.size + take);
      this.buf.set(take === data.length ? data : data.subarray(0, take), this.size);
      this.size += take;
      if (this.onWrite !== null) this.onWrite();
    }
    return data.length;
  }

  writeText(text: string): void {
    this.write(new TextEncoder().encode(text));
  }

  /** Bytes captured so far from offset `from` on (a view: copy it before the stream changes). */
  peek(from: number): Uint8Array {
    return from >= this.size ? EMPTY : this.buf.subarray(from, this.size);
  }

  /** How many bytes are captured. */
  get length(): number {
    return this.size;
  }

  /** Everything captured so far (a view of the stream's buffer, which it gives up); clears the stream. */
  take(): Uint8Array {
    if (this.size === 0) return EMPTY;
    const out = this.buf.subarray(0, this.size);
    this.buf = EMPTY;
    this.size = 0;
    return out;
  }

  resetTruncation(): boolean {
    const t = this.truncated;
    this.truncated = false;
    this.dropped = 0;
    return t;
  }

  private reserve(need: number): void {
    if (need <= this.buf.length) return;
    let cap = Math.max(MIN_CAPACITY, this.buf.length);
    while (cap < need) cap *= 2;
    const next = new Uint8Array(Math.min(cap, Math.max(need, this.limit)));
    next.set(this.buf.subarray(0, this.size));
    this.buf = next;
  }
}
