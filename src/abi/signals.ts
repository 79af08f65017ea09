/**
 * What guest-facing imports throw to end a call, and how any thrown value becomes an `Outcome`.
 *
 * Owns: ExitSignal (WASI proc_exit), GuestFault (a host-side wall hit inside an import:
 * OUTPUT_LIMIT, TIMEOUT while waiting for the host), and trap classification.
 * Invariant: every way a guest call can end maps to exactly one error code; anything
 * unrecognised is INTERNAL with a bare message (no host text reaches the caller).
 *
 * Does not protect against: a guest built with wasm exception handling catching a signal with
 * `catch_all`. The runtime records the first signal per call (`CallState`) and reports it after
 * the export returns, so a swallowed exit or fault is still the call's outcome.
 */

import { SandboxError, type ErrorDetails } from '../errors.ts';

export class ExitSignal {
  constructor(readonly code: number) {}
}

export class GuestFault {
  constructor(readonly error: SandboxError) {}
}

/** The first exit or fault raised during the current call. */
export class CallState {
  exit: ExitSignal | null = null;
  fault: GuestFault | null = null;

  reset(): void {
    this.exit = null;
    this.fault = null;
  }

  /** Called at the top of every import: after an exit or fault, nothing more runs. */
  rethrow(): void {
    if (this.fault) throw this.fault;
    if (this.exit) throw this.exit;
  }
}

export interface GrowProbe {
  /** The requested delta recorded by the grow guard, or 0 when no grow failed. */
  failedDelta(): number;
  currentPages(): number;
  maxPages: number;
}

const PAGE = 65536;

export function classify(err: unknown, probe: GrowProbe | null): SandboxError {
  if (err instanceof GuestFault) return err.error;
  if (err instanceof SandboxError) return err;
  if (err instanceof WebAssembly.RuntimeError) {
    const delta = probe?.failedDelta() ?? 0;
    if (probe && delta !== 0) {
      const current = probe.currentPages();
      const details: ErrorDetails = {
        currentPages: current,
        requestedPages: delta >>> 0,
        reachedBytes: (current + (delta >>> 0)) * PAGE,
        limitBytes: probe.maxPages * PAGE,
      };
      return new SandboxError(
        'MEMORY_LIMIT',
        `memory.grow of ${delta >>> 0} pages would reach ${(current + (delta >>> 0)) * PAGE} bytes, past the ${probe.maxPages * PAGE}-byte limit`,
        details,
      );
    }
    return new SandboxError('GUEST_TRAP', `guest trapped: ${trapText(err.message)}`, { trap: trapText(err.message) });
  }
  if (err instanceof RangeError) {
    if (/call stack size/i.test(err.message)) {
      return new SandboxError('STACK_OVERFLOW', 'the guest overflowed its stack', {});
    }
    if (/memory|allocat/i.test(err.message)) {
      return new SandboxError('MEMORY_LIMIT', 'the guest could not be given the memory it asked for', {});
    }
  }
  if (err instanceof WebAssembly.LinkError) {
    return new SandboxError('LINK_UNSATISFIED', `link failed: ${trapText(err.message)}`, {});
  }
  if (err instanceof WebAssembly.CompileError) {
    return new SandboxError('INVALID_MODULE', `compile failed: ${trapText(err.message)}`, {});
  }
  return new SandboxError('INTERNAL', 'internal error while running the guest', {});
}

/** V8's trap messages are fixed strings; bound and sanitise them anyway. */
function trapText(message: string): string {
  const m = message.replace(/^WebAssembly\.[A-Za-z]+\(\): /, '').replace(/[^\x20-\x7e]/g, '?');
  return m.length > 200 ? `${m.slice(0, 197)}...` : m;
}
