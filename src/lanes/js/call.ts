/**
 * A JS-lane call's controls on the main thread (src/lanes/controls.ts): the caller's live output
 * callbacks and its abort signal, around the lane's admitted run.
 *
 * Owns: the two `OutputTap`s (the lane's output limit each), fed with the worker's `output`
 * pieces while the job runs; closing them when the call settles; and the settle bound of a
 * cancel — the slot stops the interpreter (or its worker) on its own, and if that has not
 * answered CANCEL_SETTLE_MS after the abort, the caller is answered CANCELLED anyway, with the
 * output delivered so far (the run goes on holding its seat until it stops).
 * Invariant: every chunk is delivered before the call's result resolves, none after; for a
 * result the worker produced, the chunks of each stream concatenate to its `stdout`/`stderr`.
 *
 * Does not protect against: a callback that blocks the main thread (controls.ts says so).
 */

import type { CallControls } from '../controls.ts';
import { CANCELLED_MESSAGE, OutputTap } from '../controls.ts';
import type { ExecResult } from '../types.ts';
import type { RunControls } from './slot.ts';

/** The longest a cancelled call waits for its interpreter to report before it is answered. */
export const CANCEL_SETTLE_MS = 40;

/** Run `start` (the gated run) under `controls`; `stream` says which streams the job posts. */
export function controlledCall(
  controls: CallControls,
  limitBytes: number,
  start: (run: RunControls) => Promise<ExecResult>,
): Promise<ExecResult> {
  const taps = { 1: new OutputTap(controls.onStdout, limitBytes), 2: new OutputTap(controls.onStderr, limitBytes) };
  const seen = { 1: [] as string[], 2: [] as string[] };
  const live = taps[1].active || taps[2].active;
  let open = true;
  const onOutput = live
    ? (fd: 1 | 2, text: string): void => {
        if (!open) return;
        seen[fd].push(text);
        taps[fd].push(text);
      }
    : undefined;
  const signal = controls.signal;
  const t0 = performance.now();
  const running = start({ signal, onOutput });
  if (!signal && !live) return running;
  return new Promise<ExecResult>((resolve) => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const done = (r: ExecResult): void => {
      if (!open) return;
      open = false;
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      taps[1].end();
      taps[2].end();
      resolve(r);
    };
    const onAbort = (): void => {
      timer = setTimeout(
        () =>
          done({
            ok: false,
            stdout: seen[1].join(''),
            stderr: seen[2].join(''),
            error: { code: 'CANCELLED', message: CANCELLED_MESSAGE },
            fuelUsed: 0,
            durationMs: performance.now() - t0,
            warnings: ['the interpreter had not stopped when the call was answered; it is being stopped'],
            poolHit: false,
          }),
        CANCEL_SETTLE_MS,
      );
    };
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    void running.then(done);
  });
}
