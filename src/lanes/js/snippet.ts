/**
 * Evaluating a snippet's (already stripped) JavaScript in its fresh context (worker side): the
 * completion value of the last statement is the result, a promise result is settled by running
 * pending jobs, and `await` works at top level.
 *
 * Top-level await: a snippet whose text contains the word `await` is evaluated as an async global
 * script (QuickJS's `JS_EVAL_FLAG_ASYNC`, QuickJS 2025-09-13): declarations stay global as in any
 * script, and the evaluation answers a promise of `{ value: <completion value> }`, settled here
 * like any promise result. Every other snippet is evaluated exactly as a plain global script, and
 * so is one that does not compile as an async script but does as a plain one (`await` used as a
 * name, legal in sloppy scripts): nothing ran before the retry, as compiling runs no code.
 * Invariant: the loop that settles a promise runs jobs only while they make progress, each bounded
 * by the meter (fuel, deadline, cancellation); a promise that can never settle ends the call.
 *
 * Does not protect against: jobs the snippet leaves queued after its result settled (they run,
 * metered, and their failures are ignored) — the interpreter is dropped after the call anyway.
 */

import type { QuickJSContext, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten-core';
import { readResult } from './guest.ts';
import { exceptionFailure, readException, SNIPPET_FILE, type Failure } from './report.ts';

/** QuickJS's flag for a global script with top-level await (quickjs.h, 2025-09-13: `1 << 7`). */
export const JS_EVAL_FLAG_ASYNC = 1 << 7;
const JS_EVAL_TYPE_GLOBAL = 0;
const AWAIT = /\bawait\b/;

const NEVER_SETTLES: Failure = { code: 'GUEST_TRAP', message: 'the result is a promise that never settles' };

interface Evaluating {
  readonly ctx: QuickJSContext;
  readonly rt: QuickJSRuntime;
  readonly helpers: QuickJSHandle;
}

/** Settle `value` (consumed) when it is a promise: its fulfilled value, or the failure it was rejected with. */
function settle(it: Evaluating, value: QuickJSHandle): { value: QuickJSHandle } | { failure: Failure } {
  const { ctx, rt, helpers } = it;
  for (;;) {
    const state = ctx.getPromiseState(value);
    if (state.type === 'rejected') {
      value.dispose();
      return { failure: exceptionFailure(readException(ctx, helpers, state.error)) };
    }
    if (state.type === 'fulfilled') {
      if (state.notAPromise) return { value };
      value.dispose();
      return { value: state.value };
    }
    const ran = rt.executePendingJobs(64);
    const n = ran.error ? (ran.error.dispose(), 1) : ran.value;
    if (n === 0) {
      value.dispose();
      return { failure: NEVER_SETTLES };
    }
  }
}

/** Evaluate `source` as the snippet; its result goes to `setResult`, problems with it to `warnings`. */
export function evaluateSnippet(it: Evaluating, source: string, warnings: string[], setResult: (v: unknown) => void): Failure | null {
  const { ctx, rt, helpers } = it;
  let async = AWAIT.test(source);
  let evaluated = ctx.evalCode(source, SNIPPET_FILE, JS_EVAL_TYPE_GLOBAL | (async ? JS_EVAL_FLAG_ASYNC : 0));
  if (evaluated.error && async) {
    // An async script fails here only to compile (its run's failures reject the promise): a sloppy
    // script using `await` as a name compiles as a plain one, as it did before top-level await.
    const plain = ctx.evalCode(source, SNIPPET_FILE, JS_EVAL_TYPE_GLOBAL);
    if (plain.error) plain.error.dispose();
    else {
      evaluated.error.dispose();
      evaluated = plain;
      async = false;
    }
  }
  if (evaluated.error) return exceptionFailure(readException(ctx, helpers, evaluated.error));
  let settled = settle(it, evaluated.value);
  if ('failure' in settled) return settled.failure;
  if (async) {
    // `{ value }`, made by QuickJS: an own data property, read without running snippet code.
    const completion = ctx.getProp(settled.value, 'value');
    settled.value.dispose();
    settled = settle(it, completion);
    if ('failure' in settled) return settled.failure;
  }
  drainJobs(rt);
  readResult(ctx, helpers, settled.value, warnings, setResult);
  settled.value.dispose();
  return null;
}

function drainJobs(rt: QuickJSRuntime): void {
  for (;;) {
    const ran = rt.executePendingJobs(64);
    if (ran.error) {
      ran.error.dispose();
      continue;
    }
    if (ran.value === 0) return;
  }
}
