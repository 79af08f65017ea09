/**
 * The request and result every source lane (js/ts, python) speaks: `engine.exec` builds an
 * `ExecRequest` from the caller's options and the resolved profile, and a lane answers with an
 * `ExecResult`. Shared so the lanes and the engine agree on one shape.
 *
 * Invariant: a request never carries more than its profile grants (the engine narrows it first);
 * a lane adds nothing to `caps`, and offers a snippet only the powers of `caps` that `powers`
 * serves.
 */

import type { HostPower, PowerServer } from './powers.ts';
import type { CallControls } from './controls.ts';
import type { ErrorDetails } from '../errors.ts';

export type Language = 'js' | 'ts' | 'python';
export interface ExecRequest extends CallControls {
  readonly language: Language;
  readonly code: string;
  /** JSON-serializable; visible to the snippet as a read-only value named `context`. */
  readonly context?: unknown;
  readonly timeoutMs: number;
  readonly fuel: number;          // budget; FUEL_EXHAUSTED past it
  readonly memoryBytes: number;   // linear memory cap
  readonly caps: readonly string[]; // granted cap words; a power is present only if granted
  /** Serves the granted caps' powers (src/lanes/powers.ts); without it no power is present. */
  readonly powers?: PowerServer;
  /** The embedder's host caps this call was granted, as globals (served by `powers` too). */
  readonly hostPowers?: readonly HostPower[];
  /**
   * With `vfs`: the path of the call's VFS database file (the one `powers` serves `vfs.*` from);
   * asking neither opens nor creates it — whoever first uses it does (the interpreter's worker,
   * or the power server). A lane that mounts files for its interpreter asks; one that only
   * serves powers never does.
   */
  readonly vfsFile?: () => string;
}
export interface ExecResult {
  readonly ok: boolean;
  /** The value of the last expression, JSON-serialized then parsed (undefined → absent). */
  readonly result?: unknown;
  readonly stdout: string;
  readonly stderr: string;
  /**
   * Why the call failed. GUEST_EXCEPTION (an uncaught exception in the snippet) carries
   * `details: { name, message, stack: [{ file, line, column, function }] }` in snippet-relative
   * terms (`<snippet>`), never a host path; Python adds `traceback` (the formatted text).
   */
  readonly error?: { readonly code: string; readonly message: string; readonly details?: ErrorDetails };
  readonly fuelUsed: number;
  readonly durationMs: number;
  readonly warnings: readonly string[];
  /** Whether a pre-initialized, never-used interpreter was ready (pool hit). */
  readonly poolHit: boolean;
}
