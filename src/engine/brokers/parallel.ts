/**
 * The `parallel` cap: `run_command_many` fans one registered command over up to 1 024 inputs on
 * the worker pool, each input the stdin of one task, each task with its own timeout.
 *
 * Owns: the request and response layouts (docs/abi.md) and the fan-out: at most `concurrency`
 * tasks at once, results in input order, a task past its timeout stopped (its slot reused), and
 * every task stopped when the caller's job ends.
 *   request:  u8 version=1 · u8 flags=0 · u16 argc · argc × (u32 len · bytes) · u32 timeout_ms
 *             (0 = what the caller has left) · u32 count · count × (u32 len · input)
 *   response: u8 version=1 · u8 0 · u16 0 · u32 count · count × (u32 len · response)
 *             where each response is run_command's (command-abi.ts).
 * Invariant: tasks run as the caller (tenant, policy, VFS), one level deeper; a malformed or
 * oversized request runs nothing.
 *
 * Does not protect against: tasks that write the same VFS paths — the VFS serializes them, the
 * order is theirs.
 */

import { ABI_VERSION, GUEST_ERR, MAX_ARGC, MAX_ARG_BYTES, MAX_REQUEST_BYTES, type CommandRequest } from '../command-abi.ts';

export const MAX_PARALLEL_INPUTS = 1024;

export interface ManyRequest {
  readonly request: CommandRequest;
  readonly timeoutMs: number;
  readonly inputs: readonly Uint8Array[];
}

const decoder = new TextDecoder('utf-8', { fatal: true });

export function decodeManyRequest(bytes: Uint8Array): ManyRequest | number {
  if (bytes.length > MAX_REQUEST_BYTES) return GUEST_ERR.TOO_LARGE;
  if (bytes.length < 4) return GUEST_ERR.INVALID;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint8(0) !== ABI_VERSION || view.getUint8(1) !== 0) return GUEST_ERR.INVALID;
  const argc = view.getUint16(2, true);
  if (argc === 0) return GUEST_ERR.INVALID;
  if (argc > MAX_ARGC) return GUEST_ERR.TOO_LARGE;
  let at = 4;
  const take = (): Uint8Array | number => {
    if (at + 4 > bytes.length) return GUEST_ERR.INVALID;
    const len = view.getUint32(at, true);
    if (at + 4 + len > bytes.length) return GUEST_ERR.INVALID;
    const part = bytes.slice(at + 4, at + 4 + len);
    at += 4 + len;
    return part;
  };
  const argv: string[] = [];
  for (let i = 0; i < argc; i++) {
    const raw = take();
    if (typeof raw === 'number') return raw;
    if (raw.length > MAX_ARG_BYTES) return GUEST_ERR.TOO_LARGE;
    if (raw.includes(0)) return GUEST_ERR.INVALID;
    try {
      argv.push(decoder.decode(raw));
    } catch {
      return GUEST_ERR.INVALID;
    }
  }
  if (at + 8 > bytes.length) return GUEST_ERR.INVALID;
  const timeoutMs = view.getUint32(at, true);
  const count = view.getUint32(at + 4, true);
  at += 8;
  if (count > MAX_PARALLEL_INPUTS) return GUEST_ERR.TOO_LARGE;
  const inputs: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const input = take();
    if (typeof input === 'number') return input;
    inputs.push(input);
  }
  if (at !== bytes.length) return GUEST_ERR.INVALID;
  return { request: { name: argv[0]!, args: argv.slice(1), stdin: new Uint8Array(0) }, timeoutMs, inputs };
}

/** The request bytes (the SDK's layout), for hosts and tests. */
export function encodeManyRequest(argv: readonly string[], inputs: readonly (Uint8Array | string)[], timeoutMs = 0): Uint8Array {
  const enc = new TextEncoder();
  const parts = [...argv.map((a) => enc.encode(a))];
  const ins = inputs.map((i) => (typeof i === 'string' ? enc.encode(i) : i));
  const size = 4 + parts.reduce((n, p) => n + 4 + p.length, 0) + 8 + ins.reduce((n, p) => n + 4 + p.length, 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint8(0, ABI_VERSION);
  view.setUint16(2, parts.length, true);
  let at = 4;
  for (const p of parts) {
    view.setUint32(at, p.length, true);
    out.set(p, at + 4);
    at += 4 + p.length;
  }
  view.setUint32(at, timeoutMs, true);
  view.setUint32(at + 4, ins.length, true);
  at += 8;
  for (const p of ins) {
    view.setUint32(at, p.length, true);
    out.set(p, at + 4);
    at += 4 + p.length;
  }
  return out;
}

export function encodeManyResponse(responses: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(8 + responses.reduce((n, r) => n + 4 + r.length, 0));
  const view = new DataView(out.buffer);
  view.setUint8(0, ABI_VERSION);
  view.setUint32(4, responses.length, true);
  let at = 8;
  for (const r of responses) {
    view.setUint32(at, r.length, true);
    out.set(r, at + 4);
    at += 4 + r.length;
  }
  return out;
}

/** Run `task(i, signal)` for every input, `concurrency` at a time, each stopped after `timeoutMs`. */
export async function fanOut<T>(count: number, concurrency: number, timeoutMs: number, stop: AbortSignal, task: (i: number, signal: AbortSignal) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(count);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const abort = new AbortController();
      const onStop = (): void => abort.abort();
      stop.addEventListener('abort', onStop);
      const timer = setTimeout(() => abort.abort(), timeoutMs);
      try {
        results[i] = await task(i, abort.signal);
      } finally {
        clearTimeout(timer);
        stop.removeEventListener('abort', onStop);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return results;
}
