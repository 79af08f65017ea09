/**
 * The guest thread's line to the main thread, as the import implementations see it: one host
 * call in, one answer out, and the compiled module of a nested command. worker/main.ts implements
 * it over the channel; guest.ts, commands.ts, vfs-imports.ts and broker-imports.ts use it.
 * Invariant: an answer is a value or an errno, never an exception from the host.
 * Does not protect against: anything by itself — it is a type; the channel and frames bound the
 * bytes that cross.
 */

import type { CommandModuleMessage, HostOp } from '../bridge/protocol.ts';

export type HostAnswer = { readonly ok: true; readonly value: number; readonly payload: Uint8Array | null } | { readonly ok: false; readonly errno: number };

/** The worker's line to the main thread (worker/main.ts implements it over the channel). */
export interface HostBridge {
  call(op: HostOp, blobs?: readonly Uint8Array[]): HostAnswer;
  /** The compiled module main posted for a `command` call just answered. */
  receiveModule(): CommandModuleMessage | null;
}
