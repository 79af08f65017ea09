/**
 * The kernel lane inside a worker: one FRAME_KERNEL call on a loaded guest — the input written
 * into the guest's arena, `entry(len)` called under the frame's budget, the output checked and
 * handed on as a view of the guest memory that the result frame is copied from, once, before the
 * guest runs again (abi/kernel-arena.ts does every range check).
 *
 * Owns: the order of those steps. Invariant: nothing is read or written outside the guest
 * memory's current length; a bad length is the call's GUEST_TRAP, the worker lives on.
 *
 * Does not protect against: nothing beyond the guest's own walls — the fuel meter and the main
 * thread's deadline (worker-handle.ts) stop a spinning kernel as they stop any call.
 */

import { SandboxError } from '../../errors.ts';
import { checkInput, checkInputRange, checkOutput } from '../../abi/kernel-arena.ts';
import type { KernelFrame } from '../bridge/frames.ts';
import type { Outcome } from '../bridge/protocol.ts';
import type { Guest } from './guest.ts';

export interface KernelOutcome {
  readonly outcome: Outcome;
  readonly output: Uint8Array | undefined;
}

export function kernelCall(guest: Guest, f: KernelFrame): KernelOutcome {
  const len = f.input.length;
  try {
    checkInput(f.arena, len);
    checkInputRange(f.arena, len, guest.memory.byteLength);
    guest.memory.bytes(f.arena.inOff, len).set(f.input);
  } catch (e) {
    guest.fuelUsed = 0;
    return refused(e);
  }
  const outcome = guest.call(f.entry, [{ t: 'i32', v: len }], f.budget);
  if (!outcome.ok) return { outcome, output: undefined };
  try {
    const v = outcome.values[0];
    const n = checkOutput(f.arena, v?.t === 'i32' ? v.v : undefined, guest.memory.byteLength);
    // A view, not a copy: the result frame is written from it before the guest runs again.
    return { outcome: { ok: true, values: [], exitCode: null }, output: guest.memory.bytes(f.arena.outOff, n) };
  } catch (e) {
    return refused(e);
  }
}

function refused(e: unknown): KernelOutcome {
  const err = e instanceof SandboxError ? e : new SandboxError('INTERNAL', 'the kernel call failed');
  return { outcome: { ok: false, error: err.toPublic(), exitCode: null }, output: undefined };
}
