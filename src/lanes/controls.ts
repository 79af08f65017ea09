/**
 * What every call takes besides its limits, whatever the lane (core `run`/`call`, `exec` in the
 * source lanes): the caller's `signal` and live output callbacks. One contract, so each lane
 * behaves the same.
 *
 * Owns: `CallControls` (the options), `OutputTap` (one stream's callback, bounded and decoded),
 * `cancelled()` (the one CANCELLED error) and `abortedBefore()` (a signal aborted before the call
 * started: nothing runs) and `unlessAborted()` (a wait the caller may give up).
 * Invariant: a tap delivers at most `limitBytes` UTF-8 bytes per stream, in order, never
 * splitting a character; a callback that throws is dropped for the rest of the call and never
 * reaches the guest or ends the call; the abort's `reason` never travels into a result (it is
 * the caller's value, and may hold anything).
 *
 * Does not protect against: a callback that blocks the main thread (it runs there, synchronously;
 * the guest runs on its own thread and does not wait for it, so a slow consumer delays other calls
 * on this thread, not the guest's walls).
 */

import { SandboxError } from '../errors.ts';
import { raceSignal } from '../net/net-error.ts';

export interface CallControls {
  /**
   * Aborting ends the call with CANCELLED, as a timeout would (the thread freed, the same walls;
   * a persistent instance then follows its `onTimeout` rule). Aborted before the call starts:
   * nothing runs.
   */
  readonly signal?: AbortSignal | undefined;
  /** stdout as the guest writes it (UTF-8 text, in order, at most the output cap in all). */
  readonly onStdout?: ((chunk: string) => void) | undefined;
  /** stderr as the guest writes it (UTF-8 text, in order, at most the output cap in all). */
  readonly onStderr?: ((chunk: string) => void) | undefined;
}

export const CANCELLED_MESSAGE = 'the call was cancelled';

/** The one error a cancelled call ends with; the abort reason is not carried. */
export function cancelled(): SandboxError {
  return new SandboxError('CANCELLED', CANCELLED_MESSAGE);
}

/** A signal already aborted when the call would start: the call ends CANCELLED without running. */
export function abortedBefore(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/**
 * `promise`, unless `signal` aborts first: then CANCELLED at once (the work behind `promise` goes
 * on — e.g. a lane's interpreter pool still starts for the next call; its outcome is dropped).
 */
export function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  return signal ? raceSignal(promise, signal, cancelled) : promise;
}

/**
 * One stream's callback: bytes or text in, UTF-8 chunks out, at most `limitBytes` in all. Bytes
 * are decoded incrementally (a character split across writes is delivered whole, with the second
 * write); text is counted by its UTF-8 length and cut on a character boundary at the cap.
 */
export class OutputTap {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  private sent = 0;
  private live: boolean;

  constructor(
    private readonly callback: ((chunk: string) => void) | undefined,
    private readonly limitBytes: number,
  ) {
    this.live = typeof callback === 'function' && limitBytes > 0;
  }

  /** Whether anything is listening (a lane may skip forwarding output when not). */
  get active(): boolean {
    return this.live;
  }

  /** Bytes written so far that were (or would have been) delivered. */
  get deliveredBytes(): number {
    return this.sent;
  }

  push(data: Uint8Array | string): void {
    if (!this.live) return;
    if (typeof data === 'string') {
      this.deliverText(data);
      return;
    }
    const room = this.limitBytes - this.sent;
    const bytes = data.byteLength > room ? data.subarray(0, room) : data;
    this.sent += bytes.byteLength;
    const text = this.decoder.decode(bytes, { stream: true });
    if (text.length > 0) this.call(text);
    if (this.sent >= this.limitBytes) this.finish();
  }

  /** Flush a trailing partial character (as U+FFFD) and stop. */
  end(): void {
    if (!this.live) return;
    this.finish();
  }

  private deliverText(text: string): void {
    const room = this.limitBytes - this.sent;
    const n = Buffer.byteLength(text);
    if (n <= room) {
      this.sent += n;
      if (text.length > 0) this.call(text);
      if (this.sent >= this.limitBytes) this.live = false;
      return;
    }
    const kept = Buffer.from(text).subarray(0, room).toString('utf8').replace(/\uFFFD$/, '');
    this.sent = this.limitBytes;
    if (kept.length > 0) this.call(kept);
    this.live = false;
  }

  private finish(): void {
    const rest = this.decoder.decode();
    this.live = false;
    if (rest.length > 0 && this.callback) this.safe(rest);
  }

  private call(text: string): void {
    this.safe(text);
  }

  private safe(text: string): void {
    try {
      this.callback!(text);
    } catch {
      // A consumer's fault is the consumer's: stop calling it, and the guest never notices.
      this.live = false;
    }
  }
}
