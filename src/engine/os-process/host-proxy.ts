/**
 * The parent's side of an `os_process` call's host functions (`createEngine({ hostFunctions })`,
 * DESIGN §9): the child's engine links the call's granted host caps as stand-ins (broker-link.ts)
 * whose every call is a `host` request line; this module reads one as hostile input and serves
 * it through the parent engine's own host-function broker (src/brokers/host-functions.ts), as
 * the call the parent gave the child. broker-proxy.ts owns the lines, their ids, the in-flight
 * bound and cancels; this module only the `host` kind.
 *
 * Owns: a host request's shape (strings of the lengths a cap and a function name may have, a
 * base64 argument or its size alone, a finite `leftMs`; anything else is a malformed line and
 * kills the child), names that are no host cap or function name (INVALID, as a broker import
 * that does not exist), and the request's deadline: what the child says is left, never past the
 * child's kill time.
 * Invariant: every call is served as the call — its tenant, its instance, its resolved host caps
 * and `tier: 'os_process'` on each audit record — never as anything the line names. So the
 * cadence (granted → revoked → rate → size), the function (its ctx the call's, its `signal`
 * firing at the deadline, on a cancel and when the call ends however it ends, the child's death
 * included), the answer's size and the audit records are the parent's, once, as for the same
 * call in a worker: an ungranted cap is DENIED and recorded; what the embedder's function threw
 * stays here (its `onHostFunctionError` hook), the child gets the code alone.
 * Does not protect against: see host-functions.ts (what the embedder's function does once
 * called; a function that ignores its signal runs on after its call was answered).
 */

import { GUEST_ERR } from '../../abi/command.ts';
import type { HostCaller } from '../../brokers/host-functions.ts';
import { MAX_HOST_CAP_CHARS, isHostCapName, isHostFunctionName } from '../../policy/host-caps.ts';
import { fromB64, toB64, type BrokerAnswerLine, type HostFunctionTable, type HostRequestLine } from './protocol.ts';

/** The parent engine's host-function broker (`Brokers.hostCall`). */
export type HostDesk = (caller: HostCaller, cap: string, fn: string, args: Uint8Array | number, stops: readonly AbortSignal[], deadline: number) => Promise<Uint8Array | number>;

/**
 * What a call's child is told of its granted host caps (its request's `hostFunctions`): each
 * granted cap's function names and argument size cap — no other cap, no function, no rate.
 * Undefined when none is granted.
 */
export function hostFunctionTable(granted: readonly string[], shapes: { hostCapShape(cap: string): { readonly fns: readonly string[]; readonly maxArgBytes: number } | null }): HostFunctionTable | undefined {
  if (granted.length === 0) return undefined;
  const table: Record<string, HostFunctionTable[string]> = {};
  for (const cap of granted) {
    const shape = shapes.hostCapShape(cap);
    if (shape !== null) table[cap] = { fns: [...shape.fns], maxArgBytes: shape.maxArgBytes };
  }
  return table;
}

/** A function name's longest (host-caps.ts: 32), with room: a longer string is no request. */
const MAX_FN_CHARS = 64;

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER;

/** The fields of a `host` line after its kind and id, or null when one has the wrong shape. */
export function parseHostRequest(o: Record<string, unknown>, id: number): HostRequestLine | null {
  const { cap, fn, args, oversized, leftMs } = o;
  if (typeof cap !== 'string' || cap.length === 0 || cap.length > MAX_HOST_CAP_CHARS) return null;
  if (typeof fn !== 'string' || fn.length === 0 || fn.length > MAX_FN_CHARS) return null;
  if (typeof leftMs !== 'number' || !Number.isFinite(leftMs)) return null;
  if (oversized !== undefined) return args === undefined && isCount(oversized) ? { kind: 'host', id, cap, fn, oversized, leftMs } : null;
  return typeof args === 'string' ? { kind: 'host', id, cap, fn, args, leftMs } : null;
}

/**
 * Serve one host request as `caller` (the call's tenant, instance, host caps and marks), bounded
 * by `signal` (the request's cancel, the call's end) and `deadline` (the child's kill time).
 */
export async function serveHost(host: HostDesk, caller: HostCaller, req: HostRequestLine, signal: AbortSignal, deadline: number): Promise<BrokerAnswerLine> {
  const { id } = req;
  if (!isHostCapName(req.cap) || !isHostFunctionName(req.fn)) return { id, ok: false, errno: GUEST_ERR.INVALID };
  const until = Math.min(deadline, performance.now() + Math.max(0, req.leftMs));
  const got = await host(caller, req.cap, req.fn, req.oversized ?? fromB64(req.args ?? ''), [signal], until);
  return typeof got === 'number' ? { id, ok: false, errno: got } : { id, ok: true, value: got.byteLength, payload: toB64(got) };
}
