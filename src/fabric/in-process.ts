/**
 * The kernel lane's in-process placement (`inProcess: true`): the kernel's instance lives on the
 * host's own thread, for trusted-grade hot loops where a worker round trip (~3 µs) is the cost.
 *
 * Owns: instantiating a prepared (limits-rewritten, fuel-instrumented) kernel with the only
 * imports an in-process kernel may have — the fuel refill and an imported memory; anything else
 * is LINK_UNSATISFIED, naming it — and the per-call fuel/deadline check at each refill. A shared
 * memory is refused (kernel-lane.ts, and here again): an atomic wait on one would block the host
 * thread, and fuel cannot end a wait.
 * Invariant: the kernel's fuel counter is re-armed before every call; a call that overdraws its
 * budget ends FUEL_EXHAUSTED at its next refill; every host read/write goes through abi/kernel-arena.ts.
 *
 * Does not protect against — read this before choosing it: **time**. The kernel shares the host
 * thread; nothing can preempt it. The deadline is checked only when the kernel asks for more fuel
 * (every fuel chunk, default 10 000 then doubling to 1 000 000 units), so the time wall is
 * fuel-only here: a call runs until its fuel or its next refill past the deadline, and the whole
 * event loop waits meanwhile. A V8 bug in the kernel's code runs in the host process. Use the
 * worker placement (the default) for anything you would not run on your own thread.
 */

import { SandboxError } from '../errors.ts';
import { classify, type GrowProbe } from '../abi/signals.ts';
import { FUEL_GLOBAL_EXPORT, FUEL_REFILL_IMPORT, MEMORY_IMPORT, POOL_MEMORY_IMPORT } from '../policy/catalog.ts';
import { checkInput, checkInputRange, checkOutput, type Arena } from '../abi/kernel-arena.ts';

export interface InProcessSpec {
  readonly module: WebAssembly.Module;
  readonly entry: string;
  readonly arena: Arena;
  readonly maxMemoryPages: number;
  readonly growFailedExport: string | null;
  /** The module's own memory made an import (wasm/memory-import.ts): created here with these limits. */
  readonly poolMemory: { readonly initialPages: number; readonly maxPages: number } | null;
  /** The largest fuel grant between two refills (the engine's fuelChunk). */
  readonly chunk: number;
}

export interface KernelBudget {
  readonly ms: number;
  readonly fuel: number;
}

const FIRST_CHUNK = 10_000;

export class InProcessKernel {
  private readonly fn: (len: number) => unknown;
  private readonly memory: WebAssembly.Memory;
  private readonly fuel: WebAssembly.Global;
  private readonly grow: WebAssembly.Global | null;
  private bytes: Uint8Array;
  private granted = 0;
  private next = FIRST_CHUNK;
  private budget = 0;
  private deadline = 0;
  private fault: SandboxError | null = null;
  /** The first grant of the last budget seen, as the BigInt the global takes (no allocation per call). */
  private firstFor = -1;
  private firstBig = 0n;
  /** The last call's fuel, once it is known; null: read it from the counter when asked. */
  private settled: number | null = 0;

  constructor(private readonly spec: InProcessSpec) {
    const imports: Record<string, Record<string, unknown>> = {};
    for (const imp of WebAssembly.Module.imports(spec.module)) {
      if (imp.module === FUEL_REFILL_IMPORT.module && imp.name === FUEL_REFILL_IMPORT.name) {
        (imports[imp.module] ??= {})[imp.name] = this.refill;
      } else if (imp.module === POOL_MEMORY_IMPORT.module && imp.name === POOL_MEMORY_IMPORT.name && imp.kind === 'memory' && spec.poolMemory) {
        (imports[imp.module] ??= {})[imp.name] = new WebAssembly.Memory({ initial: spec.poolMemory.initialPages, maximum: spec.poolMemory.maxPages });
      } else if (imp.module === MEMORY_IMPORT.module && imp.name === MEMORY_IMPORT.name && imp.kind === 'memory') {
        (imports[imp.module] ??= {})[imp.name] = new WebAssembly.Memory({ initial: 1, maximum: spec.maxMemoryPages });
      } else {
        throw new SandboxError('LINK_UNSATISFIED', `an in-process kernel links nothing but its fuel and memory; it imports ${imp.module}.${imp.name}`, {
          import: `${imp.module}.${imp.name}`.slice(0, 128),
          placement: 'inProcess',
        });
      }
    }
    let instance: WebAssembly.Instance;
    try {
      instance = new WebAssembly.Instance(spec.module, imports as WebAssembly.Imports);
    } catch (e) {
      throw classify(e, null);
    }
    const ex = instance.exports;
    const memory = ex['memory'] ?? imports[MEMORY_IMPORT.module]?.[MEMORY_IMPORT.name] ?? imports[POOL_MEMORY_IMPORT.module]?.[POOL_MEMORY_IMPORT.name];
    const fuel = ex[FUEL_GLOBAL_EXPORT];
    const fn = ex[spec.entry];
    if (!(memory instanceof WebAssembly.Memory)) throw new SandboxError('POLICY_INVALID', 'a kernel must export its memory (or import env.memory)');
    if (!(fuel instanceof WebAssembly.Global)) throw new SandboxError('POLICY_INVALID', 'an in-process kernel must be fuel-instrumented (the engine has fuel off)');
    if (typeof fn !== 'function') throw new SandboxError('POLICY_INVALID', `the module has no exported function "${spec.entry.slice(0, 64)}"`, { export: spec.entry.slice(0, 64) });
    this.fn = fn as (len: number) => unknown;
    this.memory = memory;
    this.fuel = fuel;
    const g = spec.growFailedExport ? ex[spec.growFailedExport] : undefined;
    this.grow = g instanceof WebAssembly.Global ? g : null;
    this.bytes = new Uint8Array(memory.buffer);
    // kernel-lane.ts refuses shared memories before this; a shared one here would let an atomic wait block the host thread.
    if (memory.buffer instanceof SharedArrayBuffer) throw new SandboxError('POLICY_INVALID', 'an in-process kernel cannot have a shared memory');
  }

  /** One call: input into the arena, `entry(len)`, the output copied out. Throws SandboxError. */
  call(input: Uint8Array, budget: KernelBudget): Uint8Array {
    const arena = this.spec.arena;
    const len = input.length;
    checkInput(arena, len);
    let bytes = this.view();
    checkInputRange(arena, len, bytes.length);
    bytes.set(input, arena.inOff);
    this.arm(budget);
    let outLen: unknown;
    try {
      outLen = this.fn(len);
    } catch (e) {
      const trapped = e instanceof WebAssembly.RuntimeError || e instanceof RangeError;
      this.settled = trapped ? this.granted : this.used();
      const err = this.fault ?? classify(e, this.probe());
      if (err.code === 'FUEL_EXHAUSTED') this.settled = this.budget;
      throw err;
    }
    this.settled = null; // read from the counter only if someone asks (a BigInt read per call saved)
    bytes = this.view();
    const n = checkOutput(arena, outLen, bytes.length);
    return bytes.slice(arena.outOff, arena.outOff + n);
  }

  /** Fuel the last call used. */
  get fuelUsed(): number {
    return this.settled ?? this.used();
  }

  get memoryBytes(): number {
    return this.memory.buffer.byteLength;
  }

  private view(): Uint8Array {
    // A grown memory detaches the old buffer (its view reads 0 bytes): re-make the view only then,
    // without asking the memory for its buffer per call (memories here are never shared). A stale
    // view could only be shorter than the memory, so every check against it stays inside.
    const b = this.bytes;
    if (b.byteLength === 0) this.bytes = new Uint8Array(this.memory.buffer);
    return this.bytes;
  }

  private arm(budget: KernelBudget): void {
    this.fault = null;
    this.settled = 0;
    this.budget = budget.fuel;
    this.deadline = performance.now() + budget.ms;
    this.next = Math.min(FIRST_CHUNK, this.spec.chunk);
    const first = Math.min(this.next, budget.fuel);
    this.next = Math.min(this.next * 2, this.spec.chunk);
    if (first !== this.firstFor) {
      this.firstFor = first;
      this.firstBig = BigInt(first);
    }
    this.fuel.value = this.firstBig;
    this.granted = first;
  }

  private used(): number {
    return this.granted - Number(this.fuel.value as bigint);
  }

  private readonly refill = (current: bigint): bigint => {
    if (this.fault) throw this.fault;
    if (performance.now() >= this.deadline) throw (this.fault = new SandboxError('TIMEOUT', 'the kernel call ran past its budget (checked at a fuel refill: in process there is no preemption)', {}));
    const c = Number(current);
    if (this.granted - c > this.budget) {
      throw (this.fault = new SandboxError('FUEL_EXHAUSTED', `the call used its whole fuel budget of ${this.budget}`, { fuelUsed: this.budget, budget: this.budget }));
    }
    const give = Math.min(Math.max(this.next, -c), this.budget - this.granted);
    this.next = Math.min(this.next * 2, this.spec.chunk);
    this.granted += give;
    return BigInt(c + give);
  };

  private probe(): GrowProbe | null {
    const g = this.grow;
    if (!g) return null;
    return { failedDelta: () => Number(g.value) | 0, currentPages: () => this.memory.buffer.byteLength / 65536, maxPages: this.spec.maxMemoryPages };
  }
}
