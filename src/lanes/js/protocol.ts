/**
 * The JS lane's worker protocol: what the lane's main-thread half (slot.ts) and its worker thread
 * (worker.ts) say to each other. Messages are a discriminated union on `kind`, versioned, and
 * every request carries an `id`; the host parses what the worker sends (`parseWorkerMessage`)
 * instead of trusting its shape.
 *
 * Invariant: only JSON-like data and one compiled `WebAssembly.Module` (the instrumented QuickJS,
 * shared so a replacement worker need not rewrite it) cross the boundary — never a handle into
 * an interpreter.
 *
 * Output: a job that asked for streaming (`stream`) has its kept stdout/stderr posted as
 * `{ kind: 'output', id, fd, text }` while it runs, always before its `result` (one channel, in
 * order), and their concatenation per stream is the result's `stdout`/`stderr`.
 *
 * Powers (src/lanes/powers.ts): the worker, blocked inside a snippet's power call, posts
 * `{ kind: 'power', id, seq, request, fuelUsed }` (request: JSON text; fuelUsed: the snippet's raw
 * fuel so far, from its meter); the host answers on the dedicated
 * `powerPort` with `{ seq, answer }` (answer: JSON text), then stores `seq` into `powerSignal[0]`
 * and notifies. The worker reads the answer with `receiveMessageOnPort` — its event loop is busy
 * running the snippet — and every wait for it is bounded by the call's deadline (bridge.ts).
 */

import type { ExecResult } from '../types.ts';
import type { HostPower } from '../powers.ts';

import type { MessagePort } from 'node:worker_threads';

export const JS_LANE_PROTOCOL_VERSION = 1;

/** Given to each worker at spawn. */
export interface JsWorkerData {
  readonly v: typeof JS_LANE_PROTOCOL_VERSION;
  /** The stock QuickJS wasm file (instrumented in the worker unless `compiled` is given). */
  readonly wasmPath: string;
  /** `@swc/wasm-typescript`'s main file: its inlined wasm is the TypeScript stripper (strip-module.ts). */
  readonly stripperPath: string;
  readonly cacheDir: string | null;
  readonly compiled: WebAssembly.Module | null;
  readonly poolSize: number;
  /** Also keep pre-initialized TypeScript interpreters (each with a never-used stripper). */
  readonly wantTs: boolean;
  readonly outputLimitBytes: number;
  readonly failOnOutputLimit: boolean;
  /** The memory limit the worker's pools start with (then: the limits of recent jobs). */
  readonly memoryBytes: number;
  /**
   * Int32[1]: the main thread sets it to 1 at the current job's deadline, to 2 when its caller
   * aborted (meter.ts INTERRUPT_*) — whichever comes first; reset to 0 when a job starts.
   */
  readonly interrupt: SharedArrayBuffer;
  /** The worker's end of the power answers' channel (transferred at spawn). */
  readonly powerPort: MessagePort;
  /** Int32[1]: the seq of the last power answer posted on `powerPort`. */
  readonly powerSignal: SharedArrayBuffer;
}

/** What the host posts on `powerPort`. */
export interface PowerReply {
  readonly seq: number;
  readonly answer: string;
}

/** The per-call part of an `ExecRequest` the worker needs (caps are resolved on the host). */
export interface ExecJob {
  readonly language: 'js' | 'ts';
  readonly code: string;
  /** `JSON.stringify(context)`, or '' when there is none. */
  readonly contextJson: string;
  readonly timeoutMs: number;
  readonly fuel: number;
  readonly memoryBytes: number;
  /** Granted caps whose powers the snippet gets (src/lanes/powers.ts LANE_POWERS), then granted host caps. */
  readonly powers: readonly (string | HostPower)[];
  /** Post the output of these streams while the job runs (`output` messages); absent: none. */
  readonly stream?: { readonly stdout: boolean; readonly stderr: boolean };
}

export type HostToWorker =
  | { readonly v: 1; readonly kind: 'exec'; readonly id: number; readonly job: ExecJob }
  | { readonly v: 1; readonly kind: 'warm'; readonly id: number; readonly ts: boolean };

export type WorkerToHost =
  | { readonly v: 1; readonly kind: 'ready'; readonly module: WebAssembly.Module }
  | { readonly v: 1; readonly kind: 'boot-failed'; readonly message: string }
  | { readonly v: 1; readonly kind: 'result'; readonly id: number; readonly result: ExecResult }
  | { readonly v: 1; readonly kind: 'pool'; readonly js: number; readonly ts: number }
  | { readonly v: 1; readonly kind: 'warmed'; readonly id: number }
  | { readonly v: 1; readonly kind: 'output'; readonly id: number; readonly fd: 1 | 2; readonly text: string }
  | { readonly v: 1; readonly kind: 'power'; readonly id: number; readonly seq: number; readonly request: string; readonly fuelUsed: number };

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;

function isResult(x: unknown): x is ExecResult {
  return (
    isObj(x) &&
    typeof x['ok'] === 'boolean' &&
    typeof x['stdout'] === 'string' &&
    typeof x['stderr'] === 'string' &&
    typeof x['fuelUsed'] === 'number' &&
    typeof x['durationMs'] === 'number' &&
    typeof x['poolHit'] === 'boolean' &&
    Array.isArray(x['warnings']) &&
    (x['error'] === undefined || (isObj(x['error']) && typeof x['error']['code'] === 'string' && typeof x['error']['message'] === 'string'))
  );
}

/** The worker's message, or null when it is not one this version understands. */
export function parseWorkerMessage(x: unknown): WorkerToHost | null {
  if (!isObj(x) || x['v'] !== JS_LANE_PROTOCOL_VERSION) return null;
  switch (x['kind']) {
    case 'ready':
      return x['module'] instanceof WebAssembly.Module ? { v: 1, kind: 'ready', module: x['module'] } : null;
    case 'boot-failed':
      return { v: 1, kind: 'boot-failed', message: String(x['message']).slice(0, 500) };
    case 'result':
      return typeof x['id'] === 'number' && isResult(x['result']) ? { v: 1, kind: 'result', id: x['id'], result: x['result'] } : null;
    case 'pool':
      return typeof x['js'] === 'number' && typeof x['ts'] === 'number' ? { v: 1, kind: 'pool', js: x['js'], ts: x['ts'] } : null;
    case 'warmed':
      return typeof x['id'] === 'number' ? { v: 1, kind: 'warmed', id: x['id'] } : null;
    case 'output':
      return typeof x['id'] === 'number' && (x['fd'] === 1 || x['fd'] === 2) && typeof x['text'] === 'string' ? { v: 1, kind: 'output', id: x['id'], fd: x['fd'], text: x['text'] } : null;
    case 'power':
      return typeof x['id'] === 'number' && typeof x['seq'] === 'number' && typeof x['request'] === 'string'
        ? { v: 1, kind: 'power', id: x['id'], seq: x['seq'], request: x['request'], fuelUsed: typeof x['fuelUsed'] === 'number' && x['fuelUsed'] >= 0 ? x['fuelUsed'] : 0 }
        : null;
    default:
      return null;
  }
}
