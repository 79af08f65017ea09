/**
 * Captured, capped output streams (the guest's stdout and stderr).
 *
 * Owns: the output wall (DESIGN §3): each stream keeps at most `limit` bytes; the rest is
 * dropped and the stream is marked truncated, or — with `failOnLimit` — the call ends with
 * OUTPUT_LIMIT. Invariant: a stream never holds more than `limit` bytes of guest data.
 *
 * Does not protect against: a guest that fills its quota with noise; it only bounds the size.
 */

import { SandboxError } from '../../errors.ts';
import { GuestFault } from './signals.ts';

const EMPTY = new Uint8Array(0);

export class CappedStream {
  private chunks: Uint8Array[] = [];
  private size = 0;
  truncated = false;

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
    }
    const take = Math.min(room, data.length);
    if (take > 0) {
      this.chunks.push(data.slice(0, take));
      this.size += take;
    }
    return data.length;
  }

  writeText(text: string): void {
    this.write(new TextEncoder().encode(text));
  }

  /** Everything captured so far; clears the stream. */
  take(): Uint8Array {
    if (this.size === 0) return EMPTY;
    if (this.chunks.length === 1) {
      const only = this.chunks[0]!;
      this.chunks = [];
      this.size = 0;
      return only;
    }
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    this.chunks = [];
    this.size = 0;
    return out;
  }

  resetTruncation(): boolean {
    const t = this.truncated;
    this.truncated = false;
    return t;
  }
}
