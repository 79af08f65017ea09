/**
 * The retry rule of DESIGN §4 for byte answers: when an answer is larger than the guest's buffer,
 * the import returns its size and the guest calls again with a bigger buffer. The work must not
 * run twice (a command re-run, a page fetched again), so the answer is kept, keyed by its exact
 * request, and served to the retry.
 *
 * Owns: one kept answer per guest context (the newest; any answer that fits forgets it).
 * Invariant: a kept answer is served only to a request with the same key — a different request
 * never sees another's answer.
 *
 * Does not protect against: a guest retrying with a request that differs — that is new work,
 * done again under the same caps and budgets.
 */

import { createHash } from 'node:crypto';

export class RetryHold {
  private held: { readonly key: string; readonly answer: Uint8Array } | null = null;

  /** The answer kept for exactly this request, if its last answer did not fit. */
  kept(key: string): Uint8Array | null {
    return this.held !== null && this.held.key === key ? this.held.answer : null;
  }

  /** Whether `answer` fits a buffer of `cap` bytes; if not, it is kept for the retry under `key`. */
  fits(key: string, answer: Uint8Array, cap: number): boolean {
    if (answer.length > cap >>> 0) {
      this.held = { key, answer };
      return false;
    }
    this.held = null;
    return true;
  }
}

/** A key naming a request made of an operation and byte strings (length-prefixed, so parts cannot run together). */
export function retryKey(op: string, parts: readonly Uint8Array[]): string {
  const hash = createHash('sha256').update(op);
  for (const p of parts) hash.update(`\0${p.length}:`).update(p);
  return hash.digest('hex');
}
