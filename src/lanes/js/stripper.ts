/**
 * One TypeScript stripper instance (worker side): swc's strip-only transform as a sandboxed wasm
 * guest (strip-module.ts, strip-glue.ts), made ahead of time with a TypeScript interpreter
 * (interpreter.ts) and used for exactly one snippet, then dropped.
 *
 * Owns: the strip step of a TypeScript call, under the call's walls. Space: the instance's
 * memory is one the lane creates, whose maximum is the call's memory limit (whole 64 KiB pages);
 * a `memory.grow` past it traps and the call ends MEMORY_LIMIT. Work and time: the stripper has
 * a meter of its own (meter.ts) armed with what is left of the call's fuel and the call's
 * deadline, and watching the same interrupt flag; what it used is charged to the call's meter,
 * so one budget covers stripping and running. Stack: a recursion that exhausts the worker's
 * stack is STACK_OVERFLOW. All of it in the lane's worker thread — the main thread never parses
 * the snippet.
 * What it produces: strip-only output — every type annotation, interface, type alias, `declare`,
 * `as`/`satisfies` and generic argument becomes spaces, so the JavaScript has the same lines and
 * columns as the TypeScript (an error at line 5 of the snippet is at line 5 of the code QuickJS
 * runs). TypeScript that needs code generated — `enum`, a `namespace` with values, constructor
 * parameter properties (`constructor(public x: number)`), `<T>x` assertions — and invalid
 * syntax fail GUEST_EXCEPTION, name `SyntaxError`, with swc's message and the snippet's line and
 * column (1-based) in `details.stack[0]`.
 * Preparation strips a fixed text of ours once, unmetered (swc's first-use setup), like the
 * interpreter's own preparation; the caller's strip is the instance's second and last.
 * Invariant: a stripper is never reused — a caller's source never shares an instance, a memory
 * or a value table with another caller's.
 *
 * Does not protect against: the stripper's memory being in addition to the interpreter's (each
 * is capped at the call's limit; the stripper's is dropped before the snippet runs and reclaimed
 * by the worker's garbage collector).
 */

import { FuelStop, LaneMeter } from './meter.ts';
import { StripGlue, StripGlueRefused, type StripDiagnostic } from './strip-glue.ts';
import { STRIP_MEMORY_IMPORT, type StripperModule } from './strip-module.ts';
import { GROW_FAILED_EXPORT } from '../../wasm/limits.ts';
import type { ErrorDetails } from '../../errors.ts';
import { CANCELLED_MESSAGE } from '../controls.ts';

const PAGE = 65536;
/** Stripped once when an instance is made (before any caller's source), so the call does not pay swc's first-use setup. */
const STRIPPER_WARMUP = 'interface W { a?: number }\nconst w = <T,>(x: T): T => x;\nclass C<T> implements W { a?: number; m(b: T = 1 as T): void {} }\nw<W>({} as W);';

export interface StripFailure {
  readonly code: string;
  readonly message: string;
  readonly details?: ErrorDetails;
}

export type StripResult = { readonly ok: true; readonly code: string } | { readonly ok: false; readonly failure: StripFailure };

/** The stripper's memory does not fit in the call's limit. */
export class StripperTooLarge extends Error {}

export class Stripper {
  private used = false;

  private constructor(
    private readonly glue: StripGlue,
    private readonly meter: LaneMeter,
    private readonly exports: WebAssembly.Exports,
  ) {}

  /** A never-used instance whose memory can never pass `limitBytes`. */
  static create(m: StripperModule, interrupt: Int32Array, limitBytes: number): Stripper {
    const maximum = Math.floor(limitBytes / PAGE);
    if (maximum < m.initialPages) throw new StripperTooLarge(`the TypeScript stripper needs ${m.initialPages * PAGE} bytes`);
    const memory = new WebAssembly.Memory({ initial: m.initialPages, maximum });
    const glue = new StripGlue(memory);
    const meter = new LaneMeter(interrupt);
    const instance = new WebAssembly.Instance(m.module, {
      ...glue.imports,
      ...meter.imports,
      [STRIP_MEMORY_IMPORT.module]: { [STRIP_MEMORY_IMPORT.name]: memory },
    });
    meter.attach(instance.exports);
    glue.bind(instance.exports);
    // swc initializes lazily on its first strip; do it now, unmetered, on our own text.
    if (!glue.strip(STRIPPER_WARMUP).ok) throw new Error('the TypeScript stripper failed its warm-up');
    return new Stripper(glue, meter, instance.exports);
  }

  /** Strip `source` within what is left of `call`'s budget and deadline; its fuel is charged to `call`. */
  strip(source: string, call: LaneMeter): StripResult {
    if (this.used) throw new Error('a TypeScript stripper ran twice');
    this.used = true;
    const { budget, deadline } = call.remaining();
    this.meter.begin(budget, deadline);
    try {
      const out = this.glue.strip(source);
      return out.ok ? { ok: true, code: out.code } : { ok: false, failure: syntaxFailure(out.diagnostic) };
    } catch (e) {
      return { ok: false, failure: this.classify(e, budget) };
    } finally {
      call.charge(this.meter.used());
    }
  }

  private classify(e: unknown, budget: number): StripFailure {
    const stop = e instanceof FuelStop ? e.reason : this.meter.stopped;
    if (stop === 'CANCELLED') return { code: 'CANCELLED', message: CANCELLED_MESSAGE };
    if (stop === 'TIMEOUT') return { code: 'TIMEOUT', message: 'the call ran past its wall-clock budget (stripping TypeScript)' };
    if (stop === 'FUEL_EXHAUSTED') return { code: 'FUEL_EXHAUSTED', message: `the call used its whole fuel budget of ${budget} (stripping TypeScript)` };
    const grew = this.exports[GROW_FAILED_EXPORT];
    if (stop === 'MEMORY_LIMIT' || (grew instanceof WebAssembly.Global && grew.value !== 0)) {
      return { code: 'MEMORY_LIMIT', message: 'stripping the TypeScript reached the call\'s memory limit' };
    }
    if (e instanceof RangeError && /call stack/i.test(e.message)) return { code: 'STACK_OVERFLOW', message: 'stripping the TypeScript overflowed the thread stack' };
    if (e instanceof WebAssembly.RuntimeError || e instanceof StripGlueRefused) {
      return { code: 'GUEST_TRAP', message: `TypeScript: the stripper could not process this source (${e.message.slice(0, 200)})` };
    }
    return { code: 'INTERNAL', message: 'internal error' };
  }
}

const HINT: Readonly<Record<string, string>> = {
  UnsupportedSyntax: '; the ts lane only erases types (enums, namespaces with values, parameter properties and <T>x assertions need code generated): use a plain object, a module-level const, explicit fields, or `as`',
};

function syntaxFailure(d: StripDiagnostic): StripFailure {
  const line = Math.max(1, d.line);
  const column = d.column + 1;
  const message = `${d.message}${HINT[d.kind] ?? ''}`;
  return {
    code: 'GUEST_EXCEPTION',
    message: `SyntaxError: ${message} (<snippet>:${line}:${column})`,
    details: { name: 'SyntaxError', message, stack: [{ file: '<snippet>', line, column, function: '' }] },
  };
}
