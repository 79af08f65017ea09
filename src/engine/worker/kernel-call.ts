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

/**
 * One loaded kernel's calls. Keeps, between calls, only what the guest cannot change: its entry's
 * function (looked up again when a call names another) and a view of its whole memory (re-made
 * whenever the memory's length is not the view's, so after a grow; every range is checked against
 * the view it is read through).
 */
export class KernelCalls {
  private name = '';
  private fn: ((arg: number) => unknown) | null = null;
  private view: Uint8Array = new Uint8Array(0);

  constructor(private readonly guest: Guest) {}

  call(f: KernelFrame): KernelOutcome {
    const guest = this.guest;
    const len = f.input.length;
    try {
      checkInput(f.arena, len);
      const mem = this.memory();
      checkInputRange(f.arena, len, mem.length);
      mem.set(f.input, f.arena.inOff);
    } catch (e) {
      guest.fuelUsed = 0;
      return refused(e);
    }
    if (f.entry !== this.name || this.fn === null) {
      this.fn = guest.exportedFunction(f.entry);
      this.name = f.entry;
    }
    const fn = this.fn;
    if (fn === null) return (guest.fuelUsed = 0), refused(new SandboxError('POLICY_INVALID', `the module has no exported function "${f.entry.slice(0, 64)}"`, { export: f.entry.slice(0, 64) }));
    const r = guest.callI32(fn, len, f.budget);
    if (typeof r !== 'number') {
      if (!r.ok) return { outcome: r, output: undefined };
      const v = r.values[0];
      return this.output(f, v?.t === 'i32' ? v.v : undefined);
    }
    return this.output(f, r);
  }

  /** The output range the kernel returned, checked: a view of guest memory (the result frame is written from it before the guest runs again). */
  private output(f: KernelFrame, outLen: unknown): KernelOutcome {
    try {
      const mem = this.memory(); // the call may have grown it
      const n = checkOutput(f.arena, outLen, mem.length);
      return { outcome: OK, output: mem.subarray(f.arena.outOff, f.arena.outOff + n) };
    } catch (e) {
      return refused(e);
    }
  }

  private memory(): Uint8Array {
    const length = this.guest.memory.byteLength;
    if (this.view.length !== length) this.view = length === 0 ? new Uint8Array(0) : this.guest.memory.bytes(0, length);
    return this.view;
  }
}

const OK: Outcome = Object.freeze({ ok: true, values: Object.freeze([]) as unknown as [], exitCode: null });

function refused(e: unknown): KernelOutcome {
  const err = e instanceof SandboxError ? e : new SandboxError('INTERNAL', 'the kernel call failed');
  return { outcome: { ok: false, error: err.toPublic(), exitCode: null }, output: undefined };
}
