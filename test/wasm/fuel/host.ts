/**
 * Test host for fuel-instrumented modules: a meter that plays the host side of the contract in
 * src/wasm/fuel/instrument.ts (grant chunks from a budget on refill, throw when it is spent, and
 * keep throwing), plus instantiation helpers. Every fuel test goes through it.
 */

import { FUEL_GLOBAL_EXPORT, FUEL_IMPORT_MODULE, FUEL_IMPORT_NAME, instrumentFuel } from '../../../src/wasm/index.ts';
import type { CostModel, FuelStats } from '../../../src/wasm/index.ts';

/** What the meter throws when the budget cannot cover the guest's deficit. */
export class FuelExhausted extends Error {
  constructor(readonly fuelUsed: number) {
    super(`fuel exhausted after ${fuelUsed} units`);
    this.name = 'FuelExhausted';
  }
}

export class Meter {
  /** Units handed to the guest so far (the counter's starting value counts as granted). */
  granted = 0;
  refills = 0;
  /** Set at the first refusal: everything the guest had charged then; later refills throw too. */
  exhaustedAt: number | null = null;
  private global: WebAssembly.Global | null = null;

  constructor(
    readonly budget: number,
    readonly chunk: number,
  ) {}

  /** `membrane:fuel.refill`: grant whole chunks until the counter is ≥ 0, within the budget. */
  readonly refill = (current: bigint): bigint => {
    this.refills++;
    if (this.exhaustedAt !== null) throw new FuelExhausted(this.exhaustedAt);
    const c = Number(current);
    const chunks = Math.ceil(-c / this.chunk);
    const give = Math.min(Math.max(1, chunks) * this.chunk, this.budget - this.granted);
    if (c + give < 0) {
      this.exhaustedAt = this.granted - c;
      throw new FuelExhausted(this.exhaustedAt);
    }
    this.granted += give;
    return BigInt(c + give);
  };

  attach(global: WebAssembly.Global): void {
    this.global = global;
  }

  /** Everything charged so far: granted − counter (or the total at exhaustion). */
  used(): number {
    if (this.exhaustedAt !== null) return this.exhaustedAt;
    const left = this.global === null ? 0 : Number(this.global.value as bigint);
    return this.granted - left;
  }
}

export interface Metered {
  readonly instance: WebAssembly.Instance;
  readonly exports: Record<string, unknown>;
  readonly meter: Meter;
  readonly stats: FuelStats;
  /** Calls export `name` and returns its result and the fuel it used. */
  call(name: string, ...args: unknown[]): { result: unknown; fuel: number };
}

export interface MeterOptions {
  readonly budget?: number;
  readonly chunk?: number;
  readonly imports?: WebAssembly.Imports;
  readonly costs?: Partial<CostModel>;
}

/** Instantiates an already instrumented module with a meter as its refill. */
export function instantiateMetered(bytes: Uint8Array<ArrayBuffer>, meter: Meter, imports: WebAssembly.Imports = {}): WebAssembly.Instance {
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {
    ...imports,
    [FUEL_IMPORT_MODULE]: { [FUEL_IMPORT_NAME]: meter.refill },
  });
  meter.attach(instance.exports[FUEL_GLOBAL_EXPORT] as WebAssembly.Global);
  return instance;
}

/** Instruments `bytes` and instantiates the result with a fresh meter (ample budget by default). */
export function metered(bytes: Uint8Array, opts: MeterOptions = {}): Metered {
  const r = instrumentFuel(bytes, opts.costs === undefined ? {} : { costs: opts.costs });
  const meter = new Meter(opts.budget ?? 2 ** 52, opts.chunk ?? 1000);
  const instance = instantiateMetered(r.bytes, meter, opts.imports);
  const exports = instance.exports as Record<string, unknown>;
  return {
    instance,
    exports,
    meter,
    stats: r.stats,
    call(name, ...args) {
      const before = meter.used();
      const result = (exports[name] as (...a: unknown[]) => unknown)(...args);
      return { result, fuel: meter.used() - before };
    },
  };
}
