/**
 * Admission to a lane: at most `maxRunning` calls run at once (the JS lane: one per worker; the
 * Python lane: a few child processes, each ~100 MB and a CPU-heavy boot on a pool miss), at most
 * `maxWaiting` wait for a place, and none waits longer than its own timeout.
 *
 * Owns: the count of running calls and the FIFO of waiting ones. Invariant: `running ≤
 * maxRunning` and `waiting ≤ maxWaiting` at every moment; a call refused at the door or after
 * waiting its whole budget ran nothing and is answered OVERLOADED — a flood of snippets queues no
 * unbounded work and starts no unbounded number of interpreters.
 *
 * Does not protect against: one tenant taking every place — fairness between tenants is the
 * interfaces' per-tenant rate limits' job.
 */

import type { ExecResult } from './types.ts';
import { CANCELLED_MESSAGE } from './controls.ts';

export interface GateStats {
  readonly running: number;
  readonly waiting: number;
  readonly refused: number;
}

export class LaneGate {
  private running = 0;
  private refused = 0;
  private closed = false;
  private readonly waiting: { readonly go: (admitted: 'go' | 'late' | 'closed') => void; timer: ReturnType<typeof setTimeout> | null }[] = [];

  constructor(
    private readonly name: string,
    private readonly maxRunning: number,
    private readonly maxWaiting: number,
  ) {}

  /**
   * Run `work` once a place is free, waiting at most `waitMs`; otherwise answer OVERLOADED. A
   * `signal` aborted before or while waiting answers CANCELLED, and nothing runs.
   */
  async run(waitMs: number, work: () => Promise<ExecResult>, signal?: AbortSignal): Promise<ExecResult> {
    const t0 = performance.now();
    if (this.closed) return this.refusal(t0, 'INSTANCE_DEAD', `the ${this.name} lane is closed`);
    if (signal?.aborted) return this.refusal(t0, 'CANCELLED', CANCELLED_MESSAGE);
    if (this.running >= this.maxRunning) {
      if (this.waiting.length >= this.maxWaiting) return this.overloaded(t0, `${this.waiting.length} calls are already waiting`);
      const admitted = await new Promise<'go' | 'late' | 'closed' | 'cancelled'>((resolve) => {
        const entry = { go: resolve, timer: null as ReturnType<typeof setTimeout> | null };
        const leave = (why: 'late' | 'cancelled'): void => {
          const i = this.waiting.indexOf(entry);
          if (i < 0) return; // already admitted: the place is ours, the work sees the signal
          this.waiting.splice(i, 1);
          if (entry.timer) clearTimeout(entry.timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(why);
        };
        const onAbort = (): void => leave('cancelled');
        entry.go = (admitted) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(admitted);
        };
        entry.timer = setTimeout(() => leave('late'), Math.max(1, waitMs));
        entry.timer.unref?.();
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiting.push(entry);
      });
      if (admitted === 'closed') return this.refusal(t0, 'INSTANCE_DEAD', `the ${this.name} lane is closed`);
      if (admitted === 'cancelled') return this.refusal(t0, 'CANCELLED', CANCELLED_MESSAGE);
      if (admitted === 'late') return this.overloaded(t0, `no place freed within the call's ${waitMs} ms budget; nothing ran`);
    } else {
      this.running++;
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) {
        // The place passes straight to the next waiter: `running` does not change.
        if (next.timer) clearTimeout(next.timer);
        next.go('go');
      } else {
        this.running--;
      }
    }
  }

  /** Refuse every waiting call and every later one (INSTANCE_DEAD); running calls finish. */
  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) {
      if (w.timer) clearTimeout(w.timer);
      w.go('closed');
    }
  }

  stats(): GateStats {
    return { running: this.running, waiting: this.waiting.length, refused: this.refused };
  }

  private overloaded(t0: number, why: string): ExecResult {
    this.refused++;
    return this.refusal(t0, 'OVERLOADED', `the ${this.name} lane is at capacity (${this.maxRunning} running): ${why}`);
  }

  private refusal(t0: number, code: string, message: string): ExecResult {
    return {
      ok: false,
      stdout: '',
      stderr: '',
      error: { code, message },
      fuelUsed: 0,
      durationMs: performance.now() - t0,
      warnings: [],
      poolHit: false,
    };
  }
}
