/**
 * The fabric's fan-out (DESIGN §7): one task over many inputs, `width` at a time, results in input
 * order with an outcome per input. `engine.fanout` (engine/fanout-lane.ts) and the `parallel`
 * cap's `run_command_many` (engine/bridge/host-services.ts) both ride `fanMap`.
 *
 * Owns: the width bound (never more than `width` tasks started and unsettled at once), pulling
 * inputs lazily (an iterable is read one input ahead of a free lane, never more: backpressure is
 * bounded by `width`), the per-task timeout (the task's signal aborts), the stop signal (running
 * tasks are aborted, nothing new starts), and `failFast` (the first failure stops the rest: the
 * inputs that did not run are reported CANCELLED, never silently dropped).
 * Invariant: `results[i]` belongs to the i-th input; every pulled input gets exactly one outcome;
 * a task never outlives the fan-out that started it (every task has settled when it returns).
 *
 * Does not protect against: a task that ignores its signal — the fan-out waits for it to settle;
 * the engine's own walls (deadline, fuel) bound every task it runs.
 */

import { setMaxListeners } from 'node:events';
import { SandboxError, toSandboxError, type SerializedError } from '../errors.ts';

export const MAX_FANOUT_WIDTH = 256;
export const DEFAULT_FANOUT_WIDTH = 16;

export type FanOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: SerializedError };

export interface FanOptions {
  /** Tasks in flight at once (1..256, default 16). */
  readonly width?: number;
  /** Each task's own bound: its signal aborts after this long. */
  readonly perTaskTimeoutMs?: number;
  /** Aborting stops the fan-out: running tasks are aborted, nothing new starts. */
  readonly signal?: AbortSignal;
  /** The first failed input stops the rest (default false: every input runs). */
  readonly failFast?: boolean;
}

export function resolveWidth(width: number | undefined): number {
  const w = width ?? DEFAULT_FANOUT_WIDTH;
  if (!Number.isInteger(w) || w < 1 || w > MAX_FANOUT_WIDTH) {
    throw new SandboxError('POLICY_INVALID', `width must be an integer between 1 and ${MAX_FANOUT_WIDTH}`, { width: String(width).slice(0, 24) });
  }
  return w;
}

/**
 * Run `task(input, i, signal)` over `inputs`; a task's thrown error (or rejection) is that input's
 * outcome. Resolves when every started task has settled.
 */
export async function fanMap<I, T>(
  inputs: Iterable<I> | AsyncIterable<I>,
  task: (input: I, index: number, signal: AbortSignal) => Promise<T>,
  opts: FanOptions = {},
): Promise<FanOutcome<T>[]> {
  const width = resolveWidth(opts.width);
  const results: FanOutcome<T>[] = [];
  const stop = new AbortController();
  setMaxListeners(MAX_FANOUT_WIDTH + 8, stop.signal); // one listener per lane
  const outer = opts.signal;
  const onOuter = (): void => stop.abort();
  outer?.addEventListener('abort', onOuter, { once: true });
  if (outer?.aborted) stop.abort();
  const it = Symbol.asyncIterator in inputs ? (inputs as AsyncIterable<I>)[Symbol.asyncIterator]() : (inputs as Iterable<I>)[Symbol.iterator]();
  let next = 0;
  let exhausted = false;
  let pulling: Promise<void> = Promise.resolve();
  /** One pull at a time (an async iterator is not re-entrant); null when there is nothing left. */
  const pull = (): Promise<{ input: I; index: number } | null> => {
    const p = pulling.then(async () => {
      if (exhausted || stop.signal.aborted) return null;
      const r = await it.next();
      if (r.done) {
        exhausted = true;
        return null;
      }
      return { input: r.value, index: next++ };
    });
    pulling = p.then(() => {}, () => {});
    return p;
  };
  const lane = async (): Promise<void> => {
    for (;;) {
      const got = await pull();
      if (!got) return;
      const { input, index } = got;
      const abort = new AbortController();
      const onStop = (): void => abort.abort();
      stop.signal.addEventListener('abort', onStop, { once: true });
      const timer = opts.perTaskTimeoutMs !== undefined ? setTimeout(() => abort.abort(), Math.max(0, opts.perTaskTimeoutMs)) : null;
      try {
        results[index] = { ok: true, value: await task(input, index, abort.signal) };
      } catch (e) {
        results[index] = { ok: false, error: toSandboxError(e).toPublic() };
        if (opts.failFast === true) stop.abort();
      } finally {
        if (timer) clearTimeout(timer);
        stop.signal.removeEventListener('abort', onStop);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: width }, lane));
  } finally {
    outer?.removeEventListener('abort', onOuter);
    if (!exhausted) await (it as { return?: () => unknown }).return?.();
  }
  // Inputs never run (stopped before they started; an array's unpulled tail too): CANCELLED, said so.
  const count = Array.isArray(inputs) ? inputs.length : next;
  for (let i = 0; i < count; i++) {
    results[i] ??= { ok: false, error: new SandboxError('CANCELLED', 'not run: the fan-out was stopped before this input started').toPublic() };
  }
  return results;
}

/** Every outcome's value, in order, for callers whose tasks never throw (they encode errors themselves). */
export function values<T>(outcomes: readonly FanOutcome<T>[], onError: (e: SerializedError) => T): T[] {
  return outcomes.map((o) => (o.ok ? o.value : onError(o.error)));
}
