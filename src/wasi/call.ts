/**
 * The one wrapper every WASI import goes through, ambient or filesystem.
 *
 * Owns: `guard` — stop at once after an exit or fault earlier in the call (a guest that caught
 * it with wasm `catch_all` gets it again), turn guest-caused failures into errnos (a bad pointer
 * → EFAULT, a `WasiError`/`VfsError` → its errno), record a wall (`GuestFault`) so it decides the
 * call's outcome even if the guest swallows it. Invariant: nothing but those becomes an errno;
 * any other exception propagates as the bug it is.
 *
 * Does not protect against: an import that forgets to use it.
 */

import { VfsError } from '../storage/errno.ts';
import { FaultError } from '../abi/memory.ts';
import { GuestFault, type CallState } from '../abi/signals.ts';

export type WasiFn = (...args: never[]) => number | void;

const EFAULT = 21;

/** A guest-caused failure with its WASI errno. */
export class WasiError extends Error {
  constructor(readonly errno: number) {
    super(`wasi errno ${errno}`);
  }
}

export function guard<A extends unknown[]>(state: CallState, fn: (...a: A) => number): WasiFn {
  return ((...a: A) => {
    state.rethrow();
    try {
      return fn(...a);
    } catch (e) {
      if (e instanceof VfsError || e instanceof WasiError) return e.errno;
      if (e instanceof FaultError) return EFAULT;
      if (e instanceof GuestFault) state.fault ??= e;
      throw e;
    }
  }) as unknown as WasiFn;
}
