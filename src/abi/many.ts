/**
 * The guest's side of `run_command_many`'s layouts (src/brokers/parallel.ts owns the host's
 * decoding and the fan-out): encoding a request, decoding the response into its per-task
 * run_command responses — for hosts, tests and the component lane's
 * `membrane:engine/run-command-many` (engine/worker/component-imports.ts).
 * Invariant: a response that does not parse whole is null, never a partial list.
 * Does not protect against: anything by itself — the host checks every request.
 */

import { ABI_VERSION, partsSize, writeParts } from './command.ts';

/** The request bytes (the SDK's layout). */
export function encodeManyRequest(argv: readonly string[], inputs: readonly (Uint8Array | string)[], timeoutMs = 0): Uint8Array {
  const enc = new TextEncoder();
  const parts = argv.map((a) => enc.encode(a));
  const ins = inputs.map((i) => (typeof i === 'string' ? enc.encode(i) : i));
  const out = new Uint8Array(4 + partsSize(parts) + 8 + partsSize(ins));
  const view = new DataView(out.buffer);
  view.setUint8(0, ABI_VERSION);
  view.setUint16(2, parts.length, true);
  const at = writeParts(out, view, 4, parts);
  view.setUint32(at, timeoutMs, true);
  view.setUint32(at + 4, ins.length, true);
  writeParts(out, view, at + 8, ins);
  return out;
}

/** Each task's run_command response, in input order, or null for bytes that are not a response. */
export function decodeManyResponse(bytes: Uint8Array): Uint8Array[] | null {
  if (bytes.length < 8 || bytes[0] !== ABI_VERSION) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(4, true);
  const out: Uint8Array[] = [];
  let at = 8;
  for (let i = 0; i < count; i++) {
    if (at + 4 > bytes.length) return null;
    const len = view.getUint32(at, true);
    if (at + 4 + len > bytes.length) return null;
    out.push(bytes.slice(at + 4, at + 4 + len));
    at += 4 + len;
  }
  return at === bytes.length ? out : null;
}
