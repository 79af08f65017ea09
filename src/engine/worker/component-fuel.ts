/**
 * The work wall for a component: one fuel budget shared by all of its core modules, each metered
 * by the rewriter with a counter global of its own (DESIGN §3 "work").
 *
 * Owns: one `membrane:fuel.refill` per core module and the pooled accounting behind them. A
 * refill checks, in order: the interrupt flag, the deadline, the budget; then grants the module
 * its next chunk (doubling up to the configured chunk) or ends the call with TIMEOUT or
 * FUEL_EXHAUSTED.
 * Invariant: fuelUsed = Σ(granted to a module − its counter) + extra (nested commands); a grant
 * never takes the sum of grants and extra past the budget, so fuel parked unspent in one module's counter (at most one chunk)
 * is counted as spent when another module asks — conservative, never generous.
 *
 * Does not protect against: code that never reaches a refill (a blocked host call): the main
 * thread's terminate backstop covers that.
 */

import { SandboxError } from '../../errors.ts';
import { GuestFault, type CallState } from '../../abi/signals.ts';
import { FIRST_CHUNK } from './fuel.ts';

export class PooledFuel {
  private readonly granted: number[] = [];
  private readonly globals: (WebAssembly.Global | null)[] = [];
  private next = FIRST_CHUNK;
  private budget = 0;
  private deadline = 0;
  /** Fuel spent on the run's behalf outside its own code (nested commands). */
  private extra = 0;

  constructor(
    private readonly chunk: number,
    private readonly interrupted: () => boolean,
    private readonly state: CallState,
    private readonly onRefill: (() => void) | null,
  ) {}

  /**
   * A call's budget from zero: every module's counter is emptied (fuel parked there by an earlier
   * call of a persistent instance is not carried over), so its first charge asks for fuel.
   */
  begin(budget: number, deadline: number): void {
    this.budget = budget;
    this.deadline = deadline;
    this.next = Math.min(FIRST_CHUNK, this.chunk);
    this.extra = 0;
    for (let i = 0; i < this.granted.length; i++) {
      this.granted[i] = 0;
      const g = this.globals[i];
      if (g) g.value = 0n;
    }
  }

  /** A new module's refill import (its counter starts at 0: its first charge asks for fuel). */
  refillFor(): { index: number; refill: (current: bigint) => bigint } {
    const index = this.granted.length;
    this.granted.push(0);
    this.globals.push(null);
    return { index, refill: (current) => this.refill(index, current) };
  }

  attach(index: number, global: WebAssembly.Global): void {
    this.globals[index] = global;
  }

  used(): number {
    let n = this.extra;
    for (let i = 0; i < this.granted.length; i++) {
      const g = this.globals[i];
      n += this.granted[i]! - (g ? Number(g.value as bigint) : 0);
    }
    return n;
  }

  billed(): number {
    return this.granted.reduce((a, b) => a + b, 0) + this.extra;
  }

  /** What the run may still spend (a nested command's budget). */
  remaining(): number {
    return Math.max(0, this.budget - this.used());
  }

  /** Bill `n` units spent on the run's behalf (a nested command). */
  spend(n: number): void {
    this.extra += Math.max(0, n);
  }

  private refill(index: number, current: bigint): bigint {
    this.state.rethrow();
    if (this.onRefill !== null) this.onRefill();
    if (this.interrupted() || performance.now() >= this.deadline) {
      throw (this.state.fault = new GuestFault(new SandboxError('TIMEOUT', 'the call ran past its budget', {})));
    }
    const c = Number(current);
    const all = this.billed();
    if (all - c > this.budget) {
      throw (this.state.fault = new GuestFault(
        new SandboxError('FUEL_EXHAUSTED', `the call used its whole fuel budget of ${this.budget}`, { fuelUsed: this.budget, budget: this.budget }),
      ));
    }
    const give = Math.min(Math.max(this.next, -c), this.budget - all);
    this.next = Math.min(this.next * 2, this.chunk);
    this.granted[index]! += give;
    return BigInt(c + give);
  }
}
