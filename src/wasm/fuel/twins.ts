/**
 * Threaded twins: every defined function F of type (P) → (R) gets a twin F′ of type
 * (P, i64) → (R, i64) that receives the fuel counter as its last parameter and returns it after
 * its results, so a direct call between instrumented functions passes the counter in registers
 * instead of through the exported global (a store before the call, a load at the callee's
 * entry, a store at its exit and a load after the return: on recursive code such as `fib` that
 * memory round trip is the critical path — measured 1.40× → 1.27× on fib alone).
 *
 * Owns: the twin index space and the glue bodies.
 * - Twins sit right after the defined functions: F′ = F + N (N defined functions); then
 *   `$refill_local` (writeLocalRefill), the function the fast paths' cold refill paths call; then
 *   the bulk helpers.
 * - A *threaded* function (fast path, no tail call) has its real body in F′ (body.ts writes it);
 *   its original index F holds a wrapper, for exports, tables, `ref.func`, the start function and
 *   calls from unthreaded bodies: `local.get 0 … ; global.get $fuel; call F′; global.set $fuel`.
 * - An *unthreaded* function (exception handling, a tail call, or at V8's locals limit) keeps
 *   its real body at F, and F′ is an adapter for threaded callers:
 *   `local.get |P|; global.set $fuel; local.get 0 … ; call F; global.get $fuel`.
 * Glue bodies are not metered: the callee's own entry charge is the call's whole cost, as before.
 *
 * Invariant: charges are placed exactly as without twins (same blocks, same costs), so fuel
 * counts do not change; the counter is in the global whenever control is outside threaded code
 * (host calls, helpers, refills, indirect calls, unthreaded bodies, returns to the host).
 * Tail calls are never threaded: a `return_call*` body is unthreaded, and a threaded body makes
 * none, so a chain of tail calls still runs in constant stack (glue adds at most one frame per
 * non-tail call).
 *
 * A function whose type is at V8's parameter or result limit cannot have a twin (`canTwin`): its
 * slot holds a placeholder (`() → ()`, `unreachable`) that nothing calls, and threaded callers
 * call it as they call an import, with the counter in the global.
 *
 * Does not protect against: a module with so many functions that doubling them would pass V8's
 * limit (twins are then not made: `twinsFit`); local names of a threaded function still
 * describe its body, which now lives at the twin's index.
 */

import { SandboxError } from '../../errors.ts';
import { Writer } from '../bytes.ts';
import { writeValType } from '../types.ts';
import type { FuncType } from '../types.ts';
import { Sink, lebSize } from './sink.ts';
import { writeGlobalCheck } from './helpers.ts';
import type { TypeTable } from './type-table.ts';

const LOCAL_GET = 0x20;
const GLOBAL_GET = 0x23;
const GLOBAL_SET = 0x24;
const CALL = 0x10;
const END = 0x0b;
const EMPTY = 0x40;

/** The name-section name of `$refill_local`. */
export const LOCAL_REFILL_NAME = '__membrane_fuel_refill';

/** How a body is written as its threaded twin (BodyEmitter.write). */
export interface ThreadedBody {
  /** The counter's parameter index: the original parameter count. */
  readonly param: number;
  /** Twin index − original (renumbered) index, for every defined function. */
  readonly twinOffset: number;
  /** The encoded block type `[] → results` of the wrapping block. */
  readonly blockType: Uint8Array;
  /** By (renumbered) function index: 1 if the function has a twin to call (`canTwin`). */
  readonly twinned: Uint8Array;
  /** False: the entry charges without checking (scan.ts `entryCheck`); its wrapper checks. */
  readonly entryCheck: boolean;
}

/** V8's limits on a function type's parameters and results (kV8MaxWasmFunctionParams/Returns). */
const MAX_PARAMS = 1000;
const MAX_RESULTS = 1000;

/** Whether a function of type `t` can have a twin: one more parameter and result must fit. */
export function canTwin(t: FuncType): boolean {
  return t.params.length < MAX_PARAMS && t.results.length < MAX_RESULTS;
}

/** V8's limit on the functions of one module (kV8MaxWasmFunctions) and a margin for helpers. */
const MAX_FUNCTIONS_WITH_TWINS = 900_000;

/** Whether `functions` (imports, the refill import and defined functions) can be doubled. */
export function twinsFit(imported: number, defined: number): boolean {
  return imported + 1 + 2 * defined <= MAX_FUNCTIONS_WITH_TWINS;
}

/** Per original type: the twin's type index and the wrapping block type, made once. */
export class TwinTypes {
  private readonly twin = new Map<number, number>();
  private readonly block = new Map<number, Uint8Array>();

  constructor(
    private readonly types: readonly FuncType[],
    private readonly table: TypeTable,
  ) {}

  /** The twin's type index, or the placeholder's `() → ()` when `canTwin` is false. */
  twinType(typeIndex: number): number {
    let t = this.twin.get(typeIndex);
    if (t === undefined) {
      const f = this.types[typeIndex]!;
      t = canTwin(f) ? this.table.index({ params: [...f.params, 'i64'], results: [...f.results, 'i64'] }) : this.table.index({ params: [], results: [] });
      this.twin.set(typeIndex, t);
    }
    return t;
  }

  /** `[] → results`: empty, one value type, or a type index for several results. */
  blockType(typeIndex: number): Uint8Array {
    let b = this.block.get(typeIndex);
    if (b === undefined) {
      const f = this.types[typeIndex]!;
      const w = new Writer(8);
      if (f.results.length === 0) w.u8(EMPTY);
      else if (f.results.length === 1) writeValType(w, f.results[0]!);
      else w.s32(this.table.index({ params: [], results: f.results })); // a type index as s33: non-negative, same bytes
      b = w.finish();
      this.block.set(typeIndex, b);
    }
    return b;
  }
}

/**
 * The wrapper at a threaded function's original index: global in, twin, global out. With
 * `refill` (the import's index, encoded), the wrapper first checks the counter as an entry
 * would — `global.get $fuel; i64.const 0; i64.lt_s; if; global.get $fuel; call $refill;
 * global.set $fuel; end` — for a twin whose entry does not (ThreadedBody `entryCheck`), so every
 * call from outside threaded code (the host, a table, an unthreaded body) still meets a check.
 */
export function writeWrapper(out: Sink, params: number, twin: number, fuel: Uint8Array, refill: Uint8Array | null = null): void {
  // Written straight into `out` (one per threaded function: no scratch buffer each time).
  let size = 5 + 2 * fuel.length + lebSize(twin);
  for (let p = 0; p < params; p++) size += 1 + lebSize(p);
  if (refill !== null) size += 10 + 3 * fuel.length + refill.length;
  out.u32(size);
  out.room(size);
  const start = out.len;
  out.byte(0); // no locals
  if (refill !== null) writeGlobalCheck(out, fuel, refill);
  for (let p = 0; p < params; p++) {
    out.byte(LOCAL_GET);
    out.u32(p);
  }
  out.byte(GLOBAL_GET);
  out.bytes(fuel);
  out.byte(CALL);
  out.u32(twin);
  out.byte(GLOBAL_SET);
  out.bytes(fuel);
  out.byte(END);
  if (out.len - start !== size) throw new SandboxError('INTERNAL', `fuel rewriter: wrapper is ${out.len - start} bytes, expected ${size}`);
}

/** `$refill_local` (i64) → (i64): `local.get 0; global.set $fuel; local.get 0; call $refill`. */
export function writeLocalRefill(out: Sink, fuel: Uint8Array, refill: number): void {
  const body = new Sink(16);
  body.byte(0);
  body.byte(LOCAL_GET);
  body.u32(0);
  body.byte(GLOBAL_SET);
  body.bytes(fuel);
  body.byte(LOCAL_GET);
  body.u32(0);
  body.byte(CALL);
  body.u32(refill);
  body.byte(END);
  out.u32(body.len);
  out.span(body.buf, 0, body.len);
}

/** The twin slot of a function that cannot have one: never called. */
export function writePlaceholder(out: Sink): void {
  out.u32(3);
  out.byte(0);
  out.byte(0x00); // unreachable
  out.byte(END);
}

/** The adapter at an unthreaded function's twin index: counter to the global, call, back. */
export function writeAdapter(out: Sink, params: number, original: number, fuel: Uint8Array): void {
  let size = 6 + 2 * fuel.length + lebSize(params) + lebSize(original);
  for (let p = 0; p < params; p++) size += 1 + lebSize(p);
  out.u32(size);
  out.room(size);
  out.byte(0);
  out.byte(LOCAL_GET);
  out.u32(params);
  out.byte(GLOBAL_SET);
  out.bytes(fuel);
  for (let p = 0; p < params; p++) {
    out.byte(LOCAL_GET);
    out.u32(p);
  }
  out.byte(CALL);
  out.u32(original);
  out.byte(GLOBAL_GET);
  out.bytes(fuel);
  out.byte(END);
}
