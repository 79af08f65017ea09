/**
 * The kernel lane's arena rules (DESIGN §7, lane `kernel`): where a call's input is written in the
 * guest's memory and where its output is read back, checked against the memory as it is at that
 * moment — shared by both placements (the worker's guest, engine/worker/kernel-call.ts, and the host
 * thread's, fabric/in-process.ts).
 *
 * Owns: the layout (`inOff`, the input capacity, `outOff`), the input check (too large for the
 * arena → POLICY_INVALID before anything runs), and the output check (an out length that is
 * negative, past the memory's end or past `maxOutputBytes` → GUEST_TRAP / OUTPUT_LIMIT, never a
 * host read out of range).
 * Invariant: every byte the host reads or writes lies inside the guest memory's current length;
 * lengths are treated as unsigned 32-bit after a sign check, offsets as unsigned.
 *
 * Does not protect against: a kernel that overwrites its own input arena or data — its memory is
 * its own business.
 */

import { SandboxError } from '../errors.ts';

/** The most output one call hands back (the worker's channel frame is 64 MiB). */
export const MAX_KERNEL_OUTPUT_BYTES = 16 * 1024 * 1024;

export interface ArenaOptions {
  /** Where the input is written (default 0). */
  readonly inOff?: number;
  /** Where the output is read from (default: 32 KiB past `inOff`). */
  readonly outOff?: number;
  /** The most input one call may pass (default: the gap between `inOff` and `outOff` when out follows in, else 32 KiB). */
  readonly inCap?: number;
  /** The most output one call may return (default and ceiling MAX_KERNEL_OUTPUT_BYTES). */
  readonly maxOutputBytes?: number;
}

export interface Arena {
  readonly inOff: number;
  readonly inCap: number;
  readonly outOff: number;
  readonly maxOutputBytes: number;
}

export const DEFAULT_IN_CAP = 32 * 1024;

function offset(name: string, v: number | undefined, dflt: number): number {
  const n = v ?? dflt;
  if (!Number.isSafeInteger(n) || n < 0 || n > 0xffffffff) {
    throw new SandboxError('POLICY_INVALID', `${name} must be an integer between 0 and 2^32-1`, { [name]: String(v).slice(0, 32) });
  }
  return n;
}

export function resolveArena(o: ArenaOptions = {}): Arena {
  const inOff = offset('inOff', o.inOff, 0);
  const outOff = offset('outOff', o.outOff, inOff + DEFAULT_IN_CAP);
  const gap = outOff > inOff ? outOff - inOff : DEFAULT_IN_CAP;
  const inCap = offset('inCap', o.inCap, gap);
  const maxOutputBytes = Math.min(offset('maxOutputBytes', o.maxOutputBytes, MAX_KERNEL_OUTPUT_BYTES), MAX_KERNEL_OUTPUT_BYTES);
  return Object.freeze({ inOff, inCap, outOff, maxOutputBytes });
}

/** Before a call: the input fits the arena (else POLICY_INVALID, nothing ran). */
export function checkInput(arena: Arena, len: number): void {
  if (len > arena.inCap) {
    throw new SandboxError('POLICY_INVALID', `the input is ${len} bytes; the kernel's input arena holds ${arena.inCap}`, { inputBytes: len, inCap: arena.inCap });
  }
}

/** The input arena lies inside a memory of `memoryBytes` (else GUEST_TRAP: the guest's memory is too small for its own layout). */
export function checkInputRange(arena: Arena, len: number, memoryBytes: number): void {
  if (arena.inOff + len > memoryBytes) {
    throw new SandboxError('GUEST_TRAP', `the input arena (${arena.inOff} + ${len} bytes) lies past the guest memory's ${memoryBytes} bytes`, {
      inOff: arena.inOff,
      inputBytes: len,
      memoryBytes,
    });
  }
}

/** After a call: the returned length, checked; the output range lies inside the memory. */
export function checkOutput(arena: Arena, outLen: unknown, memoryBytes: number): number {
  if (typeof outLen !== 'number' || !Number.isInteger(outLen) || outLen < 0) {
    throw new SandboxError('GUEST_TRAP', 'the kernel returned a negative or non-integer output length', { outLen: String(outLen).slice(0, 24) });
  }
  if (arena.outOff + outLen > memoryBytes) {
    throw new SandboxError('GUEST_TRAP', `the kernel's output (${arena.outOff} + ${outLen} bytes) lies past the guest memory's ${memoryBytes} bytes`, {
      outOff: arena.outOff,
      outLen,
      memoryBytes,
    });
  }
  if (outLen > arena.maxOutputBytes) {
    throw new SandboxError('OUTPUT_LIMIT', `the kernel returned ${outLen} bytes; a call returns at most ${arena.maxOutputBytes}`, { outLen, maxOutputBytes: arena.maxOutputBytes });
  }
  return outLen;
}
