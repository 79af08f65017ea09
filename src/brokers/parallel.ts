/**
 * The `parallel` cap: `run_command_many` fans one registered command over up to 1 024 inputs on
 * the worker pool, each input the stdin of one task, each task with its own timeout.
 *
 * Owns: the request and response layouts (docs/abi.md). The fan-out itself — at most
 * `parallelism` tasks at once, results in input order, a task past its timeout stopped (its slot
 * reused), every task stopped when the caller's job ends — is the fabric's (src/fabric/fanout.ts),
 * called from engine/bridge/host-services.ts.
 *   request:  u8 version=1 · u8 flags=0 · u16 argc · argc × (u32 len · bytes) · u32 timeout_ms
 *             (0 = what the caller has left) · u32 count · count × (u32 len · input)
 *   response: u8 version=1 · u8 0 · u16 0 · u32 count · count × (u32 len · response)
 *             where each response is run_command's (src/abi/command.ts).
 * Invariant: tasks run as the caller (tenant, policy, VFS), one level deeper; a malformed or
 * oversized request runs nothing.
 *
 * Does not protect against: tasks that write the same VFS paths — the VFS serializes them, the
 * order is theirs.
 */

import { ABI_VERSION, GUEST_ERR, partsSize, readArgv, writeParts, type CommandRequest } from '../abi/command.ts';

export { encodeManyRequest } from '../abi/many.ts';

export const MAX_PARALLEL_INPUTS = 1024;

export interface ManyRequest {
  readonly request: CommandRequest;
  readonly timeoutMs: number;
  readonly inputs: readonly Uint8Array[];
}

export function decodeManyRequest(bytes: Uint8Array): ManyRequest | number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const head = readArgv(bytes, view);
  if (typeof head === 'number') return head;
  let at = head.at;
  if (at + 8 > bytes.length) return GUEST_ERR.INVALID;
  const timeoutMs = view.getUint32(at, true);
  const count = view.getUint32(at + 4, true);
  at += 8;
  if (count > MAX_PARALLEL_INPUTS) return GUEST_ERR.TOO_LARGE;
  const inputs: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    if (at + 4 > bytes.length) return GUEST_ERR.INVALID;
    const len = view.getUint32(at, true);
    if (at + 4 + len > bytes.length) return GUEST_ERR.INVALID;
    inputs.push(bytes.slice(at + 4, at + 4 + len));
    at += 4 + len;
  }
  if (at !== bytes.length) return GUEST_ERR.INVALID;
  return { request: { name: head.argv[0]!, args: head.argv.slice(1), stdin: new Uint8Array(0) }, timeoutMs, inputs };
}

export function encodeManyResponse(responses: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(8 + partsSize(responses));
  const view = new DataView(out.buffer);
  view.setUint8(0, ABI_VERSION);
  view.setUint32(4, responses.length, true);
  writeParts(out, view, 8, responses);
  return out;
}
