/**
 * Adaptive spinning for the hot round trips on the channel (the kernel lane's calls, a
 * persistent instance's serve loop): how long one side spins on the state word before it blocks.
 *
 * Owns: the window. It starts at the configured spin; a spin that found nothing halves it, and
 * under an eighth of the maximum it is off (block at once) — on a loaded machine the other thread
 * is often not on a core, and a spin then only keeps it off one longer. While off, every
 * PROBE_EVERY-th wait spins the full window once: if that finds its answer, the window is whole
 * again. Invariant: the window never exceeds the configured maximum (an idle side burns at most
 * that much CPU per wait, then blocks).
 *
 * Does not protect against: nothing — it only decides how long to spin; every wait it shortens
 * still has its bound and its wake-up.
 */

import { State, type Channel } from './channel.ts';

/** While spinning is off, one wait in this many spins the full window to see whether it pays again. */
export const PROBE_EVERY = 32;

export class AdaptiveSpin {
  private window: number;
  private waits = 0;

  /** `maxMs`: the configured spin (the engine's spinMicros). */
  constructor(private readonly maxMs: number) {
    this.window = maxMs;
  }

  /** The window (ms) for the next wait. */
  next(): number {
    if (this.window > 0) return this.window;
    return ++this.waits % PROBE_EVERY === 0 ? this.maxMs : 0;
  }

  /** Whether the wait just done (with window `ms`) found its answer within the window. */
  record(ms: number, found: boolean): void {
    if (found) {
      if (ms > 0) this.window = this.maxMs;
      return;
    }
    if (ms <= 0) return;
    const half = ms / 2;
    this.window = half < this.maxMs / 8 ? 0 : half;
  }
}

/**
 * Worker side: between two jobs of a persistent instance (state DONE, then IDLE once the main
 * thread took the result), spin while that pays, then sleep until the state changes (a job, a
 * stop) or `idleWaitMs` passes. Returns with the state re-read by the caller's loop.
 */
export function awaitJob(ch: Channel, spin: AdaptiveSpin, idleWaitMs: number): void {
  const ms = spin.next();
  const until = performance.now() + ms;
  let s = ch.state;
  while (s === State.DONE || s === State.IDLE) {
    if (performance.now() >= until) break;
    s = ch.state;
  }
  const found = s !== State.DONE && s !== State.IDLE;
  spin.record(ms, found);
  if (!found) ch.waitWhile(s as 0 | 5, idleWaitMs); // main marks IDLE quietly: a sleeper on DONE wakes at the job's set(JOB)
}
