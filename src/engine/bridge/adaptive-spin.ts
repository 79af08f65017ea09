/**
 * How long one side of the channel (channel.ts) spins on the state word before it blocks: a
 * window that adapts to whether spinning found the answer. Split out of channel.ts for size.
 *
 * Owns: `AdaptiveSpin` (its invariant below). Does not protect against: nothing — it only decides
 * how long to spin; every wait it shortens still has its bound and its wake-up.
 */

/** The shortest window, as a share of the configured spin: long enough to catch a partner that is on a core. */
export const FLOOR = 0.2;

/**
 * Adaptive spinning for the hot round trips on the channel (a kernel call's result on the main
 * thread, a persistent instance's next job in its worker): how long one side spins on the state
 * word before it blocks.
 *
 * Owns: the window. It starts at the configured spin (the engine's spinMicros); a spin that found
 * nothing halves it, down to FLOOR of the configured spin; a spin that found its answer makes it
 * whole again. On a loaded machine the other thread is often not on a core, and a long spin then
 * only keeps it off one longer (measured: a 100 µs spin on both sides made each call of a
 * worker kernel cost ~2–3 spins, 250–400 µs, where a short one costs a wake-up, 30–70 µs).
 * Invariant: the window stays within [FLOOR × max, max]: an idle side burns at most the
 * configured spin per wait, then blocks.
 *
 * Does not protect against: nothing — it only decides how long to spin; every wait it shortens
 * still has its bound and its wake-up.
 */
export class AdaptiveSpin {
  private window: number;
  private readonly floor: number;

  /** `maxMs`: the configured spin (the engine's spinMicros). */
  constructor(private readonly maxMs: number) {
    this.window = maxMs;
    this.floor = maxMs * FLOOR;
  }

  /** The window (ms) for the next wait. */
  next(): number {
    return this.window;
  }

  /** Whether the wait just done (with window `ms`) found its answer within the window. */
  record(ms: number, found: boolean): void {
    if (found) this.window = this.maxMs;
    else if (ms > 0) this.window = Math.max(this.floor, ms / 2);
  }
}
