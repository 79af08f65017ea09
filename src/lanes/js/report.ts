/**
 * How a JS-lane call that failed is reported (worker side): an uncaught exception becomes
 * GUEST_EXCEPTION with `details: { name, message, stack: [{ file, line, column, function }] }` in
 * snippet-relative terms; a stop of the meter or a fault of the wasm keeps its own code.
 *
 * Owns: reading the thrown value. The prelude's `describe` (guest.ts) reads `name`, `message` and
 * `stack` inside QuickJS, each in a try, with intrinsics captured before the snippet ran, and cuts
 * them there (name 128, message 4 096, stack text 16 384 characters) into a fresh array; the host
 * reads that array's elements — own data properties of an array literal, no getter runs — and
 * checks each is a string within its bound before copying it out. The stack text is parsed here:
 * only frames of the snippet's own file (`<snippet>`) are kept (the prelude's, native ones and
 * anything else are dropped), at most 32, with the user's line and column.
 * Invariant: a report names no file but `<snippet>`, carries no host path or host stack, and is
 * bounded: name ≤ 128 characters, message ≤ 4 KiB of UTF-8, ≤ 32 frames.
 *
 * Does not protect against: a snippet lying about its own failure (a hand-written `stack`
 * naming `<snippet>` lines, an `InternalError('out of memory')`); it only misleads its own report.
 * Hostile getters run inside QuickJS under the call's fuel and deadline: one that never returns
 * ends the call TIMEOUT (or FUEL_EXHAUSTED) — the host never waits on it unbounded.
 */

import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten-core';
import type { ErrorDetails } from '../../errors.ts';
import { CANCELLED_MESSAGE } from '../controls.ts';
import { FuelStop } from './meter.ts';

/** The snippet's file name, in its own stack traces and in reports. */
export const SNIPPET_FILE = '<snippet>';
export const MAX_EXCEPTION_NAME_CHARS = 128;
export const MAX_EXCEPTION_MESSAGE_BYTES = 4096;
/** The stack text handed out of QuickJS (frames past this are not seen). */
export const MAX_STACK_TEXT_CHARS = 16_384;
export const MAX_STACK_FRAMES = 32;

export interface Frame {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly function: string;
}
export interface ExceptionReport {
  readonly name: string;
  readonly message: string;
  readonly stack: readonly Frame[];
}
export type Failure = { readonly code: string; readonly message: string; readonly details?: ErrorDetails };

export const MEMORY_STOP: Failure = { code: 'MEMORY_LIMIT', message: 'the snippet reached its memory limit' };
const UNDESCRIBED: ExceptionReport = { name: 'Error', message: 'an exception that cannot be described', stack: [] };

/** `text` cut to at most `max` UTF-8 bytes, never splitting a character. */
export function cutUtf8(text: string, max: number): string {
  if (text.length * 3 <= max || Buffer.byteLength(text) <= max) return text;
  return Buffer.from(text).subarray(0, max).toString('utf8').replace(/\uFFFD+$/, '');
}

/** `    at fn (<snippet>:3:7)` or `    at <snippet>:3:7` (a syntax error) → a frame; anything else → null. */
const FRAME = /^\s*at (?:(.*?) \((.*):(\d+):(\d+)\)|(.*):(\d+):(\d+))$/;

/** The snippet's frames of a QuickJS stack text, innermost first. */
export function parseStack(text: string): Frame[] {
  const frames: Frame[] = [];
  for (const line of text.split('\n')) {
    if (frames.length >= MAX_STACK_FRAMES) break;
    const m = FRAME.exec(line);
    if (!m) continue;
    const file = m[2] ?? m[5];
    if (file !== SNIPPET_FILE) continue;
    const fn = m[1] === undefined ? '' : m[1] === '<eval>' ? '<top-level>' : m[1];
    frames.push({ file: SNIPPET_FILE, line: Number(m[3] ?? m[6]), column: Number(m[4] ?? m[7]), function: fn.slice(0, MAX_EXCEPTION_NAME_CHARS) });
  }
  return frames;
}

/** One element of `describe`'s array, copied out only when it is a string within `max` code units. */
function element(ctx: QuickJSContext, arr: QuickJSHandle, i: number, max: number): string | null {
  const h = ctx.getProp(arr, i);
  try {
    if (ctx.typeof(h) !== 'string') return null;
    const n = ctx.getProp(h, 'length');
    const len = ctx.typeof(n) === 'number' ? ctx.getNumber(n) : Infinity;
    n.dispose();
    return len <= max ? ctx.getString(h) : null;
  } finally {
    h.dispose();
  }
}

/** Read a thrown value (disposed here) through the prelude's `describe`; never throws a guest value. */
export function readException(ctx: QuickJSContext, helpers: QuickJSHandle, err: QuickJSHandle): ExceptionReport {
  try {
    const fn = ctx.getProp(helpers, 'describe');
    const r = ctx.callFunction(fn, ctx.undefined, err);
    fn.dispose();
    if (r.error) {
      r.error.dispose();
      return UNDESCRIBED;
    }
    try {
      const name = element(ctx, r.value, 0, MAX_EXCEPTION_NAME_CHARS);
      const message = element(ctx, r.value, 1, MAX_EXCEPTION_MESSAGE_BYTES);
      const stack = element(ctx, r.value, 2, MAX_STACK_TEXT_CHARS);
      if (name === null || message === null) return UNDESCRIBED;
      return { name: name || 'Error', message: cutUtf8(message, MAX_EXCEPTION_MESSAGE_BYTES), stack: stack === null ? [] : parseStack(stack) };
    } finally {
      r.value.dispose();
    }
  } finally {
    err.dispose();
  }
}

/** The failure for an uncaught exception: a stop QuickJS reports as an error keeps its code. */
export function exceptionFailure(e: ExceptionReport): Failure {
  if (e.name === 'InternalError' && /out of memory/i.test(e.message)) return MEMORY_STOP;
  if (e.name === 'InternalError' && /stack overflow/i.test(e.message)) return { code: 'STACK_OVERFLOW', message: 'the snippet overflowed its stack' };
  const stack = e.stack.map((f) => ({ file: f.file, line: f.line, column: f.column, function: f.function }));
  return {
    code: 'GUEST_EXCEPTION',
    message: e.message === '' ? e.name : `${e.name}: ${e.message}`,
    details: { name: e.name, message: e.message, stack },
  };
}

/** A failure reported by our own code (the TypeScript stripper's syntax error): a SyntaxError at `line:column`. */
export function syntaxFailure(message: string): Failure {
  const m = /\((\d+):(\d+)\)\s*$/.exec(message);
  const text = cutUtf8(message, MAX_EXCEPTION_MESSAGE_BYTES);
  const stack = m ? [{ file: SNIPPET_FILE, line: Number(m[1]), column: Number(m[2]), function: '' }] : [];
  return { code: 'GUEST_EXCEPTION', message: `SyntaxError: ${text}`, details: { name: 'SyntaxError', message: text, stack } };
}

/** Map a host-side exception out of the interpreter (a stop, or the wasm itself failing). */
export function classifyHost(e: unknown, budget: number): Failure {
  if (e instanceof FuelStop) {
    if (e.reason === 'MEMORY_LIMIT') return MEMORY_STOP;
    if (e.reason === 'CANCELLED') return { code: 'CANCELLED', message: CANCELLED_MESSAGE };
    return e.reason === 'TIMEOUT'
      ? { code: 'TIMEOUT', message: 'the call ran past its wall-clock budget' }
      : { code: 'FUEL_EXHAUSTED', message: `the call used its whole fuel budget of ${budget}` };
  }
  if (e instanceof RangeError && /call stack/i.test(e.message)) return { code: 'STACK_OVERFLOW', message: 'the snippet overflowed the thread stack' };
  if (e instanceof WebAssembly.RuntimeError) return { code: 'GUEST_TRAP', message: `the interpreter trapped: ${e.message.slice(0, 200)}` };
  return { code: 'INTERNAL', message: 'internal error' };
}
