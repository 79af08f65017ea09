/**
 * The sync channel: one growable SharedArrayBuffer per worker carrying framed messages between
 * the main thread and the guest's worker, with a state word both sides wait on.
 *
 * Owns: the buffer layout, the state machine, and the generic frame (a JSON header plus raw byte
 * blobs, so bulk bytes never pass through JSON); the hot call/result frames are binary (frames.ts). Why hand-written: no library does a blocking
 * cross-thread request/response over `Atomics` with a growable buffer; this is the channel every
 * broker uses, so it stays small and fast.
 *
 * Invariant: exactly one side owns the data region at a time, decided by the state word: the
 * main thread writes in IDLE (a job) and HOST_REQ (a reply); the worker writes in JOB/RUNNING/
 * HOST_REP (a host request or the result). Every wait on the state word has a bound.
 *
 * Both sides spin on the state word before they block, for as long as spinning pays (AdaptiveSpin, adaptive-spin.ts).
 * After a fresh run a pool worker listens for its next one on the LISTEN word (`listenForRun`):
 * main claims it with a compareExchange, or posts a message (counted, and clearing the word).
 *
 * Does not protect against: a worker that corrupts the buffer deliberately — frames are decoded
 * defensively (lengths checked, JSON validated by protocol.ts), and a bad frame is `INTERNAL`.
 */

import { SandboxError } from '../../errors.ts';
import type { AdaptiveSpin } from './adaptive-spin.ts';

export { AdaptiveSpin, FLOOR } from './adaptive-spin.ts';

export const State = {
  /** No job in flight; the main thread may post one. */
  IDLE: 0,
  /** The main thread posted a call in the data region. */
  JOB: 1,
  /** The worker took the job and is running guest code. */
  RUNNING: 2,
  /** The worker posted a host request and is blocked until HOST_REP. */
  HOST_REQ: 3,
  /** The main thread posted the reply to a host request. */
  HOST_REP: 4,
  /** The worker posted the job's result. */
  DONE: 5,
  /** The worker is gone (exited, terminated) or was told to go. */
  DEAD: 6,
} as const;
export type StateValue = (typeof State)[keyof typeof State];

const HEADER_BYTES = 64;
/** Frame kinds (first byte of the data region); binary kinds live in frames.ts. */
export const FRAME_JSON = 0;
const STATE_WORD = 0;
const LENGTH_WORD = 1;
/** Set by the main thread at a job's deadline (or to stop it); read by the worker's fuel meter. */
const INTERRUPT_WORD = 2;
/**
 * Set by the worker while it finishes a job's housekeeping after posting the result (closing a
 * file VFS, whose close may checkpoint the WAL); the pool hands the worker out once it is clear.
 */
const HOUSEKEEPING_WORD = 3;
/**
 * Streamed output (worker → main `output` messages): how many the main thread has taken off its
 * port. The worker keeps at most a window of them unread (output-forward.ts), so a slow main
 * thread costs coalescing, never memory.
 */
const OUTPUT_ACK_WORD = 4;
/**
 * A pool worker listening on the channel for its next fresh run (frames.ts), so that run
 * needs no `postMessage` (whose wake-up of an idle thread costs ~80 µs on a VM): NOT_LISTENING,
 * LISTENING (set by the worker while it spins), CLAIMED (main's compareExchange from LISTENING:
 * the worker takes the next job from the channel). Only one of the two compareExchanges out of
 * LISTENING succeeds — the worker's give-up (→ NOT_LISTENING) or main's claim — so a run is
 * never lost nor run twice.
 */
const LISTEN_WORD = 5;
/**
 * How many messages main has posted to the worker (`unlisten`, before each `postMessage`); a
 * worker that has not received them all yet does not listen — its message is waiting.
 */
const POSTED_WORD = 6;
const NOT_LISTENING = 0;
const LISTENING = 1;
const CLAIMED = 2;
export const INITIAL_CHANNEL_BYTES = 256 * 1024;
/** The largest frame either side may send: bounds what a guest can make the host buffer. */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

export interface Frame<T> {
  readonly header: T;
  readonly blobs: readonly Uint8Array[];
}

const encoder = new TextEncoder();

export class Channel {
  readonly sab: SharedArrayBuffer;
  readonly words: Int32Array;
  /**
   * Fixed-length views of the data region, re-made when the buffer has grown (either side may
   * grow it): V8 reads and writes through a fixed-length view some ten times faster than through
   * a length-tracking one, and a frame makes dozens of such accesses.
   */
  private fixedData: Uint8Array;
  private fixedView: DataView;
  private mapped: number;

  constructor(sab?: SharedArrayBuffer) {
    this.sab =
      sab ??
      new SharedArrayBuffer(INITIAL_CHANNEL_BYTES, { maxByteLength: MAX_FRAME_BYTES + HEADER_BYTES });
    this.words = new Int32Array(this.sab, 0, HEADER_BYTES / 4);
    this.mapped = this.sab.byteLength;
    this.fixedData = new Uint8Array(this.sab, HEADER_BYTES, this.mapped - HEADER_BYTES);
    this.fixedView = new DataView(this.sab, HEADER_BYTES, this.mapped - HEADER_BYTES);
  }

  /** The data region (the whole buffer as it is now, past the header words). */
  get data(): Uint8Array {
    if (this.sab.byteLength !== this.mapped) this.remap();
    return this.fixedData;
  }

  get view(): DataView {
    if (this.sab.byteLength !== this.mapped) this.remap();
    return this.fixedView;
  }

  private remap(): void {
    this.mapped = this.sab.byteLength;
    this.fixedData = new Uint8Array(this.sab, HEADER_BYTES, this.mapped - HEADER_BYTES);
    this.fixedView = new DataView(this.sab, HEADER_BYTES, this.mapped - HEADER_BYTES);
  }

  get state(): number {
    return Atomics.load(this.words, STATE_WORD);
  }

  /** Ask the running job to stop at its next fuel refill (epoch-style interruption). */
  interrupt(): void {
    Atomics.store(this.words, INTERRUPT_WORD, 1);
    Atomics.notify(this.words, INTERRUPT_WORD); // a guest's sleep (`nap`) ends at once
  }

  /** Worker side: sleep up to `ms`, waking at once when the job is interrupted. */
  nap(ms: number): void {
    if (ms > 0) Atomics.wait(this.words, INTERRUPT_WORD, 0, ms);
  }

  /** Main side: one streamed-output message was taken off the port. */
  ackOutput(): void {
    Atomics.add(this.words, OUTPUT_ACK_WORD, 1);
  }

  /** Worker side: how many streamed-output messages the main thread has taken so far. */
  get outputAcked(): number {
    return Atomics.load(this.words, OUTPUT_ACK_WORD);
  }

  clearInterrupt(): void {
    Atomics.store(this.words, INTERRUPT_WORD, 0);
  }

  get interrupted(): boolean {
    return Atomics.load(this.words, INTERRUPT_WORD) !== 0;
  }

  /** Worker side: housekeeping starts (set before the result is posted, so no job sees it clear too early). */
  beginHousekeeping(): void {
    Atomics.store(this.words, HOUSEKEEPING_WORD, 1);
  }

  endHousekeeping(): void {
    Atomics.store(this.words, HOUSEKEEPING_WORD, 0);
    Atomics.notify(this.words, HOUSEKEEPING_WORD);
  }

  /** Main side: whether the worker has no housekeeping left (its next job would start at once). */
  get isHousekept(): boolean {
    return Atomics.load(this.words, HOUSEKEEPING_WORD) === 0;
  }

  /**
   * Main side: wait (without blocking the event loop) until the worker's housekeeping is done, at
   * most `boundMs`; returns whether it is done.
   */
  async housekept(boundMs: number): Promise<boolean> {
    if (Atomics.load(this.words, HOUSEKEEPING_WORD) === 0) return true;
    // A pending Atomics.waitAsync does not keep Node alive by itself: a timer does, until the end.
    const keepAlive = setInterval(() => {}, 60_000);
    try {
      const deadline = performance.now() + boundMs;
      for (;;) {
        if (Atomics.load(this.words, HOUSEKEEPING_WORD) === 0) return true;
        const left = deadline - performance.now();
        if (left <= 0) return false;
        const w = Atomics.waitAsync(this.words, HOUSEKEEPING_WORD, 1, left);
        if (w.async) await w.value;
      }
    } finally {
      clearInterval(keepAlive);
    }
  }

  set(state: StateValue): void {
    Atomics.store(this.words, STATE_WORD, state);
    Atomics.notify(this.words, STATE_WORD);
  }

  /**
   * Store a state without waking anyone: for moves no waiter needs to see (the worker taking a
   * job: the main thread waits for what comes after RUNNING; the main thread taking a result: a
   * worker asleep on DONE sleeps on until its next job's `set(JOB)` wakes it). A wake-up saved is
   * a thread not rescheduled for nothing on a loaded machine.
   */
  mark(state: StateValue): void {
    Atomics.store(this.words, STATE_WORD, state);
  }

  /** Atomically move from `from` to `to`; returns whether it did. */
  transition(from: StateValue, to: StateValue): boolean {
    const ok = Atomics.compareExchange(this.words, STATE_WORD, from, to) === from;
    if (ok) Atomics.notify(this.words, STATE_WORD);
    return ok;
  }

  /**
   * Block (worker side only) while the state equals `current`, spinning first for `spinMs`,
   * then sleeping; gives up after `boundMs`. Returns the state seen last.
   */
  waitWhile(current: StateValue, boundMs: number, spinMs = 0): number {
    const start = performance.now();
    let s = this.state;
    if (s !== current) return s;
    if (spinMs > 0) {
      const spinEnd = start + Math.min(spinMs, boundMs);
      while (s === current && performance.now() < spinEnd) s = this.state;
      if (s !== current) return s;
    }
    for (;;) {
      const left = boundMs - (performance.now() - start);
      if (left <= 0) return this.state;
      Atomics.wait(this.words, STATE_WORD, current, left);
      s = this.state;
      if (s !== current) return s;
    }
  }

  /**
   * Worker side: between two jobs of a persistent instance (state DONE, then IDLE once the main
   * thread took the result), spin while that pays (AdaptiveSpin), then sleep until the state
   * changes (a job, a stop) or `idleWaitMs` passes; the caller's loop re-reads the state.
   */
  awaitJob(spin: AdaptiveSpin, idleWaitMs: number): void {
    const ms = spin.next();
    const until = performance.now() + ms;
    let s = this.state;
    while (s === State.DONE || s === State.IDLE) {
      if (performance.now() >= until) break;
      s = this.state;
    }
    const found = s !== State.DONE && s !== State.IDLE;
    spin.record(ms, found);
    if (!found) this.waitWhile(s as 0 | 5, idleWaitMs); // main marks IDLE quietly: a sleeper on DONE wakes at the job's set(JOB)
  }

  /**
   * Worker side, after a fresh run: listen for the next one on the channel — spinning for the
   * adaptive window, then asleep on the word for at most `sleepMs` (a sleeper costs no CPU and
   * wakes with a futex, about half a `postMessage`'s wake-up) — then back to the event loop.
   * Returns true when main claimed the worker and posted the job (state JOB, a held-run frame);
   * false when nothing came, main cleared the word (a message is coming by `postMessage`), or
   * the worker is told to go. A claim whose job does not follow within `sleepMs` (main is between
   * two statements) is given up: that job then ends at its deadline on main's side.
   */
  listenForRun(spin: AdaptiveSpin, sleepMs: number, received: number): boolean {
    const w = this.words;
    Atomics.store(w, LISTEN_WORD, LISTENING);
    // After the store: a message main posts from now on finds LISTENING and clears it (unlisten);
    // one posted before is counted here. Both atomics are sequentially consistent: no gap.
    if (Atomics.load(w, POSTED_WORD) !== received) {
      Atomics.compareExchange(w, LISTEN_WORD, LISTENING, NOT_LISTENING);
      return false;
    }
    const ms = spin.next();
    const until = performance.now() + ms;
    let seen = Atomics.load(w, LISTEN_WORD);
    while (seen === LISTENING && performance.now() < until) seen = Atomics.load(w, LISTEN_WORD);
    spin.record(ms, seen === CLAIMED);
    if (seen === LISTENING && Atomics.load(w, STATE_WORD) !== State.DEAD) {
      Atomics.wait(w, LISTEN_WORD, LISTENING, sleepMs);
      seen = Atomics.load(w, LISTEN_WORD);
    }
    // Give up: of this and main's claim, exactly one compareExchange out of LISTENING succeeds.
    if (seen === LISTENING) seen = Atomics.compareExchange(w, LISTEN_WORD, LISTENING, NOT_LISTENING);
    if (seen !== CLAIMED) return false;
    Atomics.store(w, LISTEN_WORD, NOT_LISTENING);
    return this.waitWhile(State.IDLE, sleepMs, ms) === State.JOB;
  }

  /**
   * Main side: claim a listening worker for a job written on the channel (frames.ts); true
   * when claimed (the caller then sets JOB), false when it is not listening (post by message).
   */
  claimListener(): boolean {
    if (Atomics.compareExchange(this.words, LISTEN_WORD, LISTENING, CLAIMED) !== LISTENING) return false;
    Atomics.notify(this.words, LISTEN_WORD); // a worker past its spin sleeps on the word
    return true;
  }

  /** Main side, before any `postMessage` to the worker: it is counted, and a listening worker leaves at once. */
  unlisten(): void {
    Atomics.add(this.words, POSTED_WORD, 1);
    if (Atomics.compareExchange(this.words, LISTEN_WORD, LISTENING, NOT_LISTENING) === LISTENING) Atomics.notify(this.words, LISTEN_WORD);
  }

  /** Grow the buffer so the data region holds `size` bytes. */
  ensure(size: number): void {
    if (size > MAX_FRAME_BYTES) {
      throw new SandboxError('INTERNAL', `channel frame of ${size} bytes exceeds ${MAX_FRAME_BYTES}`, { size });
    }
    const need = HEADER_BYTES + size;
    if (need > this.sab.byteLength) this.sab.grow(Math.min(MAX_FRAME_BYTES + HEADER_BYTES, roundUp(need)));
  }

  /** The kind byte of the frame in the data region (see frames.ts). */
  get frameKind(): number {
    return this.fixedData[0]!;
  }

  /** Write a JSON frame (kind 0): a header object plus raw byte blobs. */
  write(header: object, blobs: readonly Uint8Array[] = []): void {
    const json = encoder.encode(JSON.stringify(header));
    let size = 9 + json.length;
    for (const b of blobs) size += 4 + b.length;
    this.ensure(size);
    const { data, view } = this;
    data[0] = FRAME_JSON;
    view.setUint32(1, json.length, true);
    data.set(json, 5);
    let at = 5 + json.length;
    view.setUint32(at, blobs.length, true);
    at += 4;
    for (const b of blobs) {
      view.setUint32(at, b.length, true);
      data.set(b, at + 4);
      at += 4 + b.length;
    }
    Atomics.store(this.words, LENGTH_WORD, size);
  }

  /** Read the JSON frame in the data region; `header` is untyped JSON for protocol.ts to validate. */
  read(): Frame<unknown> {
    const size = this.frameLength();
    const { data, view } = this;
    if (size < 9 || data[0] !== FRAME_JSON) throw bad('not a JSON frame');
    const jsonLen = view.getUint32(1, true);
    if (5 + jsonLen + 4 > size) throw bad('header length out of range');
    let header: unknown;
    try {
      header = JSON.parse(Buffer.from(this.sab, HEADER_BYTES + 5, jsonLen).toString('utf8'));
    } catch {
      throw bad('header is not JSON');
    }
    let at = 5 + jsonLen;
    const count = view.getUint32(at, true);
    at += 4;
    if (count > 64) throw bad('too many blobs');
    const blobs: Uint8Array[] = [];
    for (let i = 0; i < count; i++) {
      if (at + 4 > size) throw bad('blob header out of range');
      const len = view.getUint32(at, true);
      if (at + 4 + len > size) throw bad('blob out of range');
      blobs.push(data.slice(at + 4, at + 4 + len));
      at += 4 + len;
    }
    return { header, blobs };
  }

  /** Record the length of a frame written directly into `data` (frames.ts). */
  setFrameLength(size: number): void {
    Atomics.store(this.words, LENGTH_WORD, size);
  }

  /** The current frame's length, checked against the buffer. */
  frameLength(): number {
    const size = Atomics.load(this.words, LENGTH_WORD);
    // Checked against the views the frame is read through (re-made first if the writer grew the buffer).
    if (size < 1 || size > this.data.length) throw bad('frame length out of range');
    return size;
  }
}

function roundUp(n: number): number {
  let size = INITIAL_CHANNEL_BYTES;
  while (size < n) size *= 2;
  return size;
}

function bad(why: string): SandboxError {
  return new SandboxError('INTERNAL', `malformed channel frame: ${why}`);
}
