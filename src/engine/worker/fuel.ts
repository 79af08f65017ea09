/**
 * The fuel meter: the host side of the work wall inside a worker (DESIGN §3 "work").
 *
 * Owns: `membrane:fuel.refill`, the import an instrumented guest calls when its chunk of fuel
 * runs out (src/wasm/fuel). Each refill checks, in order: the interrupt flag the main thread sets
 * at a deadline, the job's own deadline, then the job's fuel budget; it grants the next chunk
 * (at least the deficit) or ends the call with TIMEOUT or FUEL_EXHAUSTED. This is epoch-style
 * interruption: a runaway is stopped at its next refill and the worker lives on.
 * Invariant: fuelUsed = granted − the guest's counter, which is exactly the sum of the charges
 * the guest executed; the chunk size changes when refills happen, never the count. Chunks start
 * small (FIRST_CHUNK) and double up to the configured chunk: a call that *traps* loses the
 * charges its frames still held in locals, so it is billed everything granted to it (`billed()`),
 * which is at most twice what it used plus FIRST_CHUNK — never less than it used.
 *
 * Does not protect against: code that never reaches a refill (blocked in a host call, or
 * uninstrumented): the main thread's terminate backstop covers that.
 */

import { SandboxError } from '../../errors.ts';
import { GuestFault, type CallState } from '../../abi/signals.ts';

/** The first grant of every job; later grants double up to the configured chunk. */
export const FIRST_CHUNK = 10_000;

export class FuelMeter {
  private granted = 0;
  /** Fuel spent on the guest's behalf outside its own code (nested commands it ran). */
  private extra = 0;
  private next = FIRST_CHUNK;
  private budget = 0;
  private deadline = 0;
  private global: WebAssembly.Global | null = null;
  /** The first grant of the last budget seen, as the BigInt the global takes (no allocation per call). */
  private firstFor = -1;
  private firstBig = 0n;

  constructor(
    private readonly chunk: number,
    private readonly interrupted: () => boolean,
    private readonly state: CallState,
    /** Told at every refill (streamed output that is due goes out). */
    private readonly onRefill: (() => void) | null = null,
  ) {}

  attach(global: WebAssembly.Global | null): void {
    this.global = global;
  }

  /** Arm the meter for one job: `budget` units, until `deadline` (performance.now() time). */
  begin(budget: number, deadline: number): void {
    this.budget = budget;
    this.deadline = deadline;
    this.granted = 0;
    this.extra = 0;
    this.next = Math.min(FIRST_CHUNK, this.chunk);
    if (this.global) {
      const first = Math.min(this.next, budget);
      this.next = Math.min(this.next * 2, this.chunk);
      if (first !== this.firstFor) {
        this.firstFor = first;
        this.firstBig = BigInt(first);
      }
      this.global.value = this.firstBig;
      this.granted = first;
    }
  }

  /** What a job that trapped is billed: every unit granted to it. */
  billed(): number {
    return this.granted + this.extra;
  }

  /** Fuel consumed by the current job so far. */
  used(): number {
    if (!this.global) return this.extra;
    return this.granted - Number(this.global.value as bigint) + this.extra;
  }

  /** What the job may still spend (a nested command's budget). */
  remaining(): number {
    return Math.max(0, this.budget - this.used());
  }

  /**
   * Bill `n` units spent on the job's behalf (a nested command). The job's next refill then
   * sees the smaller budget; a command that used it all leaves its caller FUEL_EXHAUSTED.
   */
  spend(n: number): void {
    this.extra += Math.max(0, n);
  }

  readonly refill = (current: bigint): bigint => {
    // A guest that caught an earlier stop (wasm catch_all) is stopped again at once.
    this.state.rethrow();
    if (this.onRefill !== null) this.onRefill();
    if (this.interrupted() || performance.now() >= this.deadline) {
      throw (this.state.fault = new GuestFault(new SandboxError('TIMEOUT', 'the call ran past its budget', {})));
    }
    const c = Number(current);
    // Everything charged so far, including the block about to run (c < 0 means overdrawn).
    if (this.granted + this.extra - c > this.budget) throw (this.state.fault = this.exhausted());
    const give = Math.min(Math.max(this.next, -c), this.budget - this.granted - this.extra);
    this.next = Math.min(this.next * 2, this.chunk);
    this.granted += give;
    return BigInt(c + give);
  };

  /** End the job now: a nested command spent the rest of its budget, or its deadline passed. */
  stop(code: 'FUEL_EXHAUSTED' | 'TIMEOUT'): never {
    throw (this.state.fault = code === 'FUEL_EXHAUSTED' ? this.exhausted() : new GuestFault(new SandboxError('TIMEOUT', 'the call ran past its budget', {})));
  }

  private exhausted(): GuestFault {
    return new GuestFault(
      new SandboxError('FUEL_EXHAUSTED', `the call used its whole fuel budget of ${this.budget}`, { fuelUsed: this.budget, budget: this.budget }),
    );
  }
}
