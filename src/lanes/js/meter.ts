/**
 * The JS lane's fuel meter: the host half of `membrane:fuel.refill` for one wasm instance — a
 * QuickJS interpreter or a TypeScript stripper (the work and time walls, DESIGN §3) — running in
 * the lane's worker thread.
 *
 * Owns: the refill import and QuickJS's interrupt handler. While the interpreter is being
 * pre-initialized (our own code: runtime, context, console) the meter
 * grants freely and counts nothing. `begin()` arms it for the snippet: each refill then checks,
 * in order, an earlier stop, the main thread's interrupt flag (INTERRUPT_CANCELLED stops the call
 * CANCELLED, INTERRUPT_DEADLINE TIMEOUT), the call's deadline and its fuel
 * budget, and grants the next chunk (10 000 units first, doubling up to 1e6). The fuel the
 * snippet's commands and the TypeScript stripper (its own meter, given `remaining()`) spent is
 * charged in (`charge`): one budget covers all of it, so a refill after the
 * total passed it is FUEL_EXHAUSTED, and `used()` includes the charges. A stop *throws* out
 * of the import, which unwinds the wasm; every later refill throws again and the interrupt
 * handler keeps answering "interrupt", so a snippet cannot catch its way past a stop. A refused
 * heap growth (heap.ts) is a stop too (`refuseMemory`): the snippet may catch QuickJS's "out of
 * memory", but its next refill or interrupt check ends the call MEMORY_LIMIT. A refusal while
 * pre-initializing is remembered (`setupRefused`) so the lane can say the limit is too small.
 * Invariant: after a stop the instance is never used again (its C stack was unwound mid-call).
 *
 * Does not protect against: code that never reaches a refill or an interrupt check (none in an
 * instrumented QuickJS; the main thread's terminate backstop covers the rest).
 */

export const FIRST_CHUNK = 10_000;
export const MAX_CHUNK = 1_000_000;
/** Grants while pre-initializing: our own code, not the snippet's. */
const SETUP_CHUNK = 100_000_000n;

export type StopReason = 'TIMEOUT' | 'FUEL_EXHAUSTED' | 'MEMORY_LIMIT' | 'CANCELLED';

/** Values of the interrupt flag (protocol.ts): the main thread stores the first reason only. */
export const INTERRUPT_DEADLINE = 1;
export const INTERRUPT_CANCELLED = 2;

/** Thrown out of the refill import; never reaches the snippet as a value it can inspect. */
export class FuelStop extends Error {
  constructor(readonly reason: StopReason) {
    super(reason);
  }
}

export class LaneMeter {
  private armed = false;
  private granted = 0;
  /** Fuel spent on the snippet's behalf outside the interpreter (its commands), raw units. */
  private charged = 0;
  private next = FIRST_CHUNK;
  private budget = 0;
  private deadline = 0;
  private global: WebAssembly.Global | null = null;
  stopped: StopReason | null = null;
  /** A heap growth was refused before `begin()`: the interpreter did not fit its limit. */
  setupRefused = false;

  constructor(private readonly interrupt: Int32Array) {}

  readonly imports: WebAssembly.Imports = {
    'membrane:fuel': { refill: (current: bigint): bigint => this.refill(current) },
  };

  attach(exports: WebAssembly.Exports): void {
    const g = exports['__membrane_fuel'];
    if (!(g instanceof WebAssembly.Global)) throw new Error('the QuickJS module is not fuel-instrumented');
    this.global = g;
  }

  /** Arm for the snippet: `budget` units until `deadline` (this thread's performance.now()). */
  begin(budget: number, deadline: number): void {
    if (!this.global) throw new Error('LaneMeter.attach was not called');
    this.armed = true;
    this.charged = 0;
    this.budget = budget;
    this.deadline = deadline;
    const first = Math.min(FIRST_CHUNK, budget);
    this.next = Math.min(FIRST_CHUNK * 2, MAX_CHUNK);
    this.global.value = BigInt(first);
    this.granted = first;
  }

  /** Fuel the snippet used, its charges included; after a stop, everything granted to it (never less than it used). */
  used(): number {
    if (!this.armed || !this.global) return 0;
    if (this.stopped) return this.stopped === 'FUEL_EXHAUSTED' ? Math.max(this.budget, this.charged) : this.granted + this.charged;
    return Math.max(0, this.granted - Number(this.global.value as bigint)) + this.charged;
  }

  /** What is left for work done on the snippet's behalf in another instance (the TypeScript stripper). */
  remaining(): { readonly budget: number; readonly deadline: number } {
    return { budget: Math.max(0, this.budget - this.used()), deadline: this.deadline };
  }

  /**
   * Charge `n` units a command spent on the snippet's behalf. When that leaves nothing of the
   * budget the snippet is stopped (FUEL_EXHAUSTED) at its next interrupt check or refill;
   * otherwise the next refill sees the smaller budget.
   */
  charge(n: number): void {
    if (!this.armed || !this.global || !Number.isFinite(n) || n <= 0) return;
    this.charged += n;
    if (this.stopped === null && this.used() >= this.budget) this.stopped = 'FUEL_EXHAUSTED';
  }

  /** A heap growth past the call's memory limit was refused (heap.ts). */
  refuseMemory(): void {
    if (!this.armed) this.setupRefused = true;
    else if (this.stopped === null) this.stopped = 'MEMORY_LIMIT';
  }

  /** Why the call must stop now (the interrupt flag first: a cancel is not a timeout), or null. */
  private timeUp(): StopReason | null {
    const flag = Atomics.load(this.interrupt, 0);
    if (flag === INTERRUPT_CANCELLED) return 'CANCELLED';
    return flag !== 0 || performance.now() >= this.deadline ? 'TIMEOUT' : null;
  }

  /** QuickJS's interrupt handler: true ends the evaluation with an uncatchable error. */
  readonly shouldInterrupt = (): boolean => {
    if (!this.armed) return false;
    if (this.stopped) return true;
    this.stopped = this.timeUp();
    return this.stopped !== null;
  };

  /** Called at each of the snippet's refills that goes on (the output stream's flush, stream.ts). */
  onRefill: (() => void) | null = null;

  private refill(current: bigint): bigint {
    if (!this.armed) return current + SETUP_CHUNK;
    if (this.stopped) throw new FuelStop(this.stopped);
    const stop = this.timeUp();
    if (stop) throw new FuelStop((this.stopped = stop));
    this.onRefill?.();
    const c = Number(current);
    if (this.granted + this.charged - c > this.budget) throw new FuelStop((this.stopped = 'FUEL_EXHAUSTED'));
    const give = Math.min(Math.max(this.next, -c), this.budget - this.granted - this.charged);
    this.next = Math.min(this.next * 2, MAX_CHUNK);
    this.granted += give;
    return BigInt(c + give);
  }
}
