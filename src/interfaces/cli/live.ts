/**
 * A CLI call's controls: Ctrl-C (SIGINT) or SIGTERM cancels the running guest — it ends
 * CANCELLED, its worker freed, and the command exits with CANCELLED's exit code; a second Ctrl-C
 * quits at once (130). Human output is streamed as the guest writes it.
 *
 * Owns: the signal handlers for the duration of one call (removed after it) and the bookkeeping
 * that prints, after the call, whatever part of the output was not streamed (so a lane that
 * delivered less than it captured loses nothing, and nothing is printed twice).
 * Invariant: with `--json` nothing is streamed: stdout carries the one JSON object only.
 *
 * Does not protect against: a terminal that is itself slow — the guest does not wait for it.
 */

import type { CallControls } from '../../lanes/controls.ts';

export interface CliCall {
  readonly controls: CallControls;
  /** After the call: print what the callbacks did not, then drop the signal handlers. */
  finish(result: { readonly stdout: string; readonly stderr: string }): void;
}

export function cliCall(json: boolean): CliCall {
  const abort = new AbortController();
  let interrupts = 0;
  const onSignal = (): void => {
    if (++interrupts > 1) process.exit(130);
    if (!json) process.stderr.write('\nmembrane: cancelling (Ctrl-C again to quit at once)\n');
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const shown = { stdout: 0, stderr: 0 };
  const controls: CallControls = json
    ? { signal: abort.signal }
    : {
        signal: abort.signal,
        onStdout: (chunk) => {
          shown.stdout += chunk.length;
          process.stdout.write(chunk);
        },
        onStderr: (chunk) => {
          shown.stderr += chunk.length;
          process.stderr.write(chunk);
        },
      };
  let finished = false;
  return {
    controls,
    finish(result) {
      if (finished) return;
      finished = true;
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (json) return;
      if (result.stdout.length > shown.stdout) process.stdout.write(result.stdout.slice(shown.stdout));
      if (result.stderr.length > shown.stderr) process.stderr.write(result.stderr.slice(shown.stderr));
    },
  };
}
