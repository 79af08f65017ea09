/**
 * One fresh QuickJS interpreter (worker side): a new wasm instance of the fuel-instrumented
 * QuickJS, its own linear memory, a runtime and a plain context — made ahead of time by
 * `prepare()` (the pool) and used for exactly one `evaluate()`, then dropped.
 *
 * Owns: the snippet's world. Globals are the ECMAScript built-ins QuickJS provides, `console`
 * (log/info/debug → stdout, error/warn → stderr, captured and capped) and `context` (a deep-frozen
 * copy parsed from JSON, non-writable). No `std`/`os` modules, no module loader, no host object.
 * Powers: only the job's granted caps (`job.powers`) become globals (`kv`, `fetch`, …; guest.ts);
 * an ungranted one is absent, never a stub. Each power call goes through the host function
 * `power`, which hands it to the job's `PowerCall` (the bridge to the main thread, bridge.ts).
 * TypeScript: a TS interpreter comes with a never-used TypeScript stripper of its own (stripper.ts:
 * swc's strip-only transform as a wasm guest with the call's memory limit, fuel and deadline),
 * which turns the snippet into JavaScript with the same lines and columns before it is evaluated;
 * its fuel counts toward the call.
 * Space: the instance's linear memory is created for one memory limit (`prepare`'s
 * `limitBytes`, the call's memory) and can never grow past it (heap.ts); a refused growth stops
 * the call MEMORY_LIMIT even when the snippet catches QuickJS's "out of memory". QuickJS's own
 * allocation counter is off (under emscripten it counts 8 bytes per allocation, whatever its
 * size): the linear memory's maximum is the one wall. What the host copies out of the instance
 * is bounded before the copy: the result (MAX_RESULT_CHARS), each console write (the output
 * limit), a power request (MAX_POWER_FRAME_BYTES) and an uncaught exception's report (report.ts).
 * Evaluation itself — top-level await, settling a promise result — is snippet.ts's.
 * Invariant: an interpreter is never reused — not its context, runtime or linear memory.
 *
 * Does not protect against: the snippet mislabelling its own failure (throwing a hand-made
 * `InternalError('out of memory')` reads as MEMORY_LIMIT); it only fools its own result.
 */

import * as releaseSyncModule from '@jitl/quickjs-wasmfile-release-sync';
import { newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten-core';
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSSyncVariant } from 'quickjs-emscripten-core';
import type { ExecJob } from './protocol.ts';
import type { ExecResult } from '../types.ts';
import { FuelStop, LaneMeter } from './meter.ts';
import { OutputSink } from './output.ts';
import { GUEST_PRELUDE } from './guest.ts';
import { classifyHost, type Failure } from './report.ts';
import { evaluateSnippet } from './snippet.ts';
import { createLinearMemory, guardHeapGrowth } from './heap.ts';
import { MAX_POWER_FRAME_BYTES } from '../powers.ts';
import { Stripper, StripperTooLarge } from './stripper.ts';
import type { StripperModule } from './strip-module.ts';

// Node loads the variant's ESM build, whose default export is the variant itself.
const RELEASE_SYNC = (releaseSyncModule as unknown as { default: QuickJSSyncVariant }).default;

/** QuickJS's own stack limit for the snippet (its recursion fails with a catchable InternalError). */
export const MAX_GUEST_STACK_BYTES = 512 * 1024;

export interface Interpreter {
  readonly kind: 'js' | 'ts';
  readonly meter: LaneMeter;
  readonly sink: OutputSink;
  readonly rt: QuickJSRuntime;
  readonly ctx: QuickJSContext;
  /** `{ setContext, stringify, describe }`, kept host-side (never a global). */
  readonly helpers: QuickJSHandle;
  /** A TS interpreter's never-used stripper; dropped (null) once it has stripped the snippet. */
  stripper: Stripper | null;
  /** Where the host function `power` sends a call: set by `evaluate` for its one job. */
  readonly powers: { call: PowerCall | null };
  /** The limit its linear memory was created for: it runs only calls with exactly this limit. */
  readonly limitBytes: number;
}

/**
 * One power call: the power's name and its arguments as JSON → the answer as JSON (powers.ts).
 * Arguments past MAX_POWER_FRAME_BYTES are never copied out: `{ oversized }` says how large.
 */
export type PowerCall = (power: string, args: string | { readonly oversized: number }) => string;

/** The interpreter could not even be set up within its memory limit. */
export class InterpreterTooLarge extends Error {
  constructor(readonly limitBytes: number) {
    super(`the interpreter does not fit in ${limitBytes} bytes`);
  }
}
const NO_POWER = '{"ok":false,"code":"DENIED"}';

export interface PrepareConfig {
  readonly module: WebAssembly.Module;
  readonly interrupt: Int32Array;
  readonly outputLimitBytes: number;
  readonly failOnOutputLimit: boolean;
  /** The compiled TypeScript stripper, loaded on the first TS interpreter's preparation. */
  readonly stripper: () => Promise<StripperModule>;
}

export async function prepare(kind: 'js' | 'ts', cfg: PrepareConfig, limitBytes: number): Promise<Interpreter> {
  const meter = new LaneMeter(cfg.interrupt);
  let linear: ReturnType<typeof createLinearMemory>;
  try {
    linear = createLinearMemory(limitBytes);
  } catch {
    throw new InterpreterTooLarge(limitBytes);
  }
  const { memory, maxPages } = linear;
  try {
    return await build(kind, cfg, limitBytes, meter, memory, maxPages);
  } catch (e) {
    if (meter.setupRefused) throw new InterpreterTooLarge(limitBytes);
    throw e;
  }
}

async function build(kind: 'js' | 'ts', cfg: PrepareConfig, limitBytes: number, meter: LaneMeter, memory: WebAssembly.Memory, maxPages: number): Promise<Interpreter> {
  const variant = newVariant(RELEASE_SYNC, {
    wasmMemory: memory,
    emscriptenModule: {
      // Emscripten passes only the imports it knows; the instrumented module also needs refill.
      instantiateWasm(imports: WebAssembly.Imports, onSuccess: (instance: WebAssembly.Instance) => void): WebAssembly.Exports {
        guardHeapGrowth(imports, memory, maxPages, () => meter.refuseMemory());
        const instance = new WebAssembly.Instance(cfg.module, { ...imports, ...meter.imports });
        meter.attach(instance.exports);
        onSuccess(instance);
        return instance.exports;
      },
    },
  });
  const mod = await newQuickJSWASMModuleFromVariant(variant);
  const rt = mod.newRuntime();
  const ctx = rt.newContext();
  const sink = new OutputSink(cfg.outputLimitBytes, cfg.failOnOutputLimit);
  // The prelude hands over at most what is left of the stream (it learns that from each answer); `dropped` counts the rest.
  const write = ctx.newFunction('write', hostSide((fd, text, dropped) => {
    const stream = ctx.getNumber(fd) === 2 ? 'stderr' : 'stdout';
    if (ctx.typeof(text) === 'string') {
      if (stringLength(ctx, text) > sink.room(stream)) sink.drop(stream, stringLength(ctx, text));
      else sink.write(stream, ctx.getString(text));
    }
    if (ctx.typeof(dropped) === 'number') sink.drop(stream, ctx.getNumber(dropped));
    return ctx.newNumber(sink.room(stream));
  }));
  const powers: Interpreter['powers'] = { call: null };
  const power = ctx.newFunction('power', hostSide((name, args) => {
    const ok = ctx.typeof(name) === 'string' && ctx.typeof(args) === 'string' && powers.call !== null;
    if (!ok) return ctx.newString(NO_POWER);
    // UTF-16 length ≤ UTF-8 bytes: a request longer than the frame cap in code units is oversized without copying it.
    const n = stringLength(ctx, args);
    return ctx.newString(powers.call!(ctx.getString(name).slice(0, 100), n > MAX_POWER_FRAME_BYTES ? { oversized: n } : ctx.getString(args)));
  }));
  const factory = ctx.unwrapResult(ctx.evalCode(GUEST_PRELUDE, 'membrane:prelude'));
  const limit = ctx.newNumber(cfg.outputLimitBytes);
  const helpers = ctx.unwrapResult(ctx.callFunction(factory, ctx.undefined, write, power, limit));
  limit.dispose();
  factory.dispose();
  write.dispose();
  power.dispose();
  let stripper: Stripper | null = null;
  if (kind === 'ts') {
    try {
      stripper = Stripper.create(await cfg.stripper(), cfg.interrupt, limitBytes);
    } catch (e) {
      if (e instanceof StripperTooLarge || e instanceof RangeError) throw new InterpreterTooLarge(limitBytes);
      throw e;
    }
  }
  return { kind, meter, sink, rt, ctx, helpers, stripper, powers, limitBytes };
}

/** What the snippet sees when one of our host functions fails: a fixed error, never the host's message. */
class HostCallFailed extends Error {
  constructor() {
    super('the host could not complete the call');
    this.name = 'InternalError';
  }
}

/** Wrap a host function so that a host exception reaches QuickJS as `HostCallFailed` (a stop still unwinds). */
function hostSide<A extends QuickJSHandle[], R>(fn: (...args: A) => R): (...args: A) => R {
  return (...args: A): R => {
    try {
      return fn(...args);
    } catch (e) {
      if (e instanceof FuelStop) throw e;
      throw new HostCallFailed();
    }
  };
}

/** A QuickJS string's length in UTF-16 code units, read without copying the string out. */
function stringLength(ctx: QuickJSContext, s: QuickJSHandle): number {
  const h = ctx.getProp(s, 'length');
  try {
    return ctx.typeof(h) === 'number' ? ctx.getNumber(h) : Infinity;
  } finally {
    h.dispose();
  }
}

/** Run one job in `it`, which must never be used again afterwards. */
export function evaluate(it: Interpreter, job: ExecJob, poolHit: boolean, t0: number, powerCall: PowerCall | null = null): ExecResult {
  const { ctx, rt, meter, sink } = it;
  const warnings: string[] = [];
  let failure: Failure | null = null;
  let result: unknown;
  let hasResult = false;
  // The linear memory's maximum is the limit (heap.ts); QuickJS's own counter stays off.
  if (it.limitBytes !== job.memoryBytes) throw new Error('an interpreter ran a call with another memory limit');
  rt.setMemoryLimit(-1);
  rt.setMaxStackSize(MAX_GUEST_STACK_BYTES);
  rt.setInterruptHandler(meter.shouldInterrupt);
  it.powers.call = powerCall;
  meter.begin(job.fuel, performance.now() + job.timeoutMs);
  try {
    failure = run(it, job, warnings, (v) => {
      result = v;
      hasResult = true;
    });
  } catch (e) {
    failure = classifyHost(e, job.fuel);
  }
  // A stop reported through the interpreter (an "interrupted" error) is still a stop.
  if (meter.stopped && failure?.code !== meter.stopped) failure = classifyHost(new FuelStop(meter.stopped), job.fuel);
  const out = sink.finish(warnings);
  if (out.overLimit && failure === null && sink.failOnLimit) failure = { code: 'OUTPUT_LIMIT', message: 'the snippet wrote more output than allowed' };
  return {
    ok: failure === null,
    ...(failure === null && hasResult ? { result } : {}),
    stdout: out.stdout,
    stderr: out.stderr,
    ...(failure ? { error: failure } : {}),
    fuelUsed: meter.used(),
    durationMs: performance.now() - t0,
    warnings,
    poolHit,
  };
}

function run(it: Interpreter, job: ExecJob, warnings: string[], setResult: (v: unknown) => void): Failure | null {
  const { ctx, helpers } = it;
  const call = (name: string, ...args: QuickJSHandle[]) => {
    const fn = ctx.getProp(helpers, name);
    try {
      return ctx.callFunction(fn, ctx.undefined, ...args);
    } finally {
      fn.dispose();
    }
  };
  const ctxArg = ctx.newString(job.contextJson);
  const set = call('setContext', ctxArg);
  ctxArg.dispose();
  if (set.error) return { code: 'INTERNAL', message: 'the context could not be set' };
  set.value.dispose();
  if (job.powers.length > 0) {
    const capsArg = ctx.newString(JSON.stringify(job.powers));
    const installed = call('installPowers', capsArg);
    capsArg.dispose();
    if (installed.error) return { code: 'INTERNAL', message: 'the powers could not be installed' };
    installed.value.dispose();
  }

  let source = job.code;
  if (job.language === 'ts') {
    const stripper = it.stripper;
    if (!stripper) return { code: 'INTERNAL', message: 'no TypeScript stripper in this interpreter' };
    it.stripper = null;
    const stripped = stripper.strip(job.code, it.meter);
    if (!stripped.ok) return stripped.failure;
    source = stripped.code;
  }

  return evaluateSnippet(it, source, warnings, setResult);
}
