/**
 * The worker protocol: every message between the main thread and a guest worker, typed and
 * versioned, with validators for everything that arrives.
 *
 * Owns: the message unions (control messages over `postMessage`, frames over the channel) and
 * the wire form of wasm values (i64 as decimal strings, non-finite floats as strings, since
 * frames are JSON).
 * Invariant: nothing crosses the boundary untyped; a message that fails validation is rejected
 * as `INTERNAL` rather than trusted. PROTOCOL_VERSION changes whenever a shape changes.
 *
 * Does not protect against: a compromised worker lying within the protocol (e.g. reporting a
 * smaller `memoryBytes`); the worker is the guest's jailer, not the guest.
 */

import { SandboxError, isErrorCode, type SerializedError } from '../../errors.ts';
import type { ImageMount, VfsSpec } from '../../storage/vfs-config.ts';

export const PROTOCOL_VERSION = 4;

export type WasmValue = number | bigint;
export type WireValue =
  | { readonly t: 'i32'; readonly v: number }
  | { readonly t: 'i64'; readonly v: string }
  | { readonly t: 'f32' | 'f64'; readonly v: number | 'NaN' | 'Infinity' | '-Infinity' };

export interface SessionInfo {
  readonly id: string;
  readonly tenant: string;
  readonly profile: string;
}

/** Everything a worker needs to build a guest's world. Plain data (structured-cloneable). */
export interface GuestSpec {
  readonly session: SessionInfo;
  /** Import keys (`module.name`) to link; the worker links these and nothing else. */
  readonly link: readonly string[];
  /** The memory cap in pages, for a memory the guest imports (`env.memory`). */
  readonly maxMemoryPages: number;
  readonly importedMemory: { readonly initial: number; readonly maximum: number | null; readonly shared: boolean } | null;
  /** The export the limits rewriter added to report a failed `memory.grow`, if any. */
  readonly growFailedExport: string | null;
  /** The module's own memory, made an import by the rewriter (wasm/memory-import.ts): the worker passes a zeroed one of these limits. */
  readonly poolMemory: { readonly initialPages: number; readonly maxPages: number } | null;
  readonly output: { readonly limitBytes: number; readonly failOnLimit: boolean };
  readonly wasi: {
    readonly argv: readonly string[];
    readonly env: readonly (readonly [string, string])[];
    readonly stdin: Uint8Array;
    /** Whether the run has a lane port (src/wasi/port.ts): only a lane's own interpreter runs do. */
    readonly port?: boolean;
  };
  /** Where `membrane.log` goes: the captured stderr, or a host call to the engine's log hook. */
  readonly logSink: 'stderr' | 'host';
  /** Upper bound on any single wait for the host, so a worker never blocks forever. */
  readonly hostWaitMs: number;
  /** Whether the module was fuel-instrumented, and the chunk the meter grants per refill. */
  readonly fuel: { readonly metered: boolean; readonly chunk: number };
  /** The guest's filesystem (with the `vfs` cap): a VFS database the worker opens itself. */
  readonly vfs: VfsSpec | null;
  /** How many commands deep this guest runs (0 for a guest the operator started; ≤ MAX_EXEC_DEPTH). */
  readonly depth: number;
}

export type { VfsSpec };

/** What one job may spend: wall-clock milliseconds and fuel units. */
export interface Budget {
  readonly ms: number;
  readonly fuel: number;
}

export type Entry =
  | { readonly kind: 'start' }
  | { readonly kind: 'invoke'; readonly export: string; readonly args: readonly WireValue[] };

/** main → worker over postMessage (these carry a WebAssembly.Module, which frames cannot). */
export type ControlMessage =
  | {
      readonly v: typeof PROTOCOL_VERSION;
      readonly kind: 'run';
      readonly job: number;
      readonly module: WebAssembly.Module;
      readonly spec: GuestSpec;
      readonly entry: Entry;
      readonly budget: Budget;
      /** Forward the job's stdout/stderr as it is written (`OutputMessage`s); the result still carries it all. */
      readonly stream?: boolean;
      /** The worker holds `module` by this id from now on, and forgets `forget` (bridge/run-frame.ts). */
      readonly moduleId?: number;
      readonly forget?: number | null;
    }
  | { readonly v: typeof PROTOCOL_VERSION; readonly kind: 'load'; readonly job: number; readonly module: WebAssembly.Module; readonly spec: GuestSpec; readonly budget: Budget }
  | ComponentMessage;

/** One core module of a component, prepared (limits, fuel) like any guest module. */
export interface ComponentCore {
  /** The name jco's glue asks for (`getCoreModule(name)`). */
  readonly name: string;
  readonly module: WebAssembly.Module;
  readonly growFailedExport: string | null;
  /** It defines a memory: its share of the cap was planned for one instance of it. */
  readonly definesMemory: boolean;
  /** Its memory, made an import by the rewriter (wasm/memory-import.ts): the worker passes a fresh one of these limits. */
  readonly poolMemory: GuestSpec['poolMemory'];
}

/** main → worker: run a component's `wasi:cli/run` (src/engine/component-lane.ts). */
export interface ComponentMessage {
  readonly v: typeof PROTOCOL_VERSION;
  readonly kind: 'component';
  readonly job: number;
  /** The component's hash: the worker keeps the evaluated glue under it. */
  readonly key: string;
  /** jco's glue, as a script whose completion value is its `instantiate` function. */
  readonly glue: string;
  readonly cores: readonly ComponentCore[];
  /** The `wasi:cli/run` export's name as the glue returns it (e.g. `wasi:cli/run@0.2.0`). */
  readonly run: string;
  readonly spec: GuestSpec;
  readonly budget: Budget;
  readonly stream?: boolean;
  /** Instantiate only and then serve calls of its exports (engine.start; component-instance.ts). */
  readonly load?: boolean;
}

/** main → worker over the channel: a call into a loaded instance. */
export interface CallFrame {
  readonly v: typeof PROTOCOL_VERSION;
  readonly kind: 'call';
  readonly job: number;
  readonly export: string;
  readonly args: readonly WireValue[];
  readonly budget: Budget;
  /** Forward the call's stdout/stderr as it is written (frames.ts: its own frame kind). */
  readonly stream?: boolean;
}

/**
 * worker → main over postMessage, only for a job that asked for streaming: the bytes of
 * stdout/stderr captured since the last message, at their offsets in the job's captured streams
 * (so the main thread can drop what it already has, and take the rest from the result frame).
 */
export interface OutputMessage {
  readonly v: typeof PROTOCOL_VERSION;
  readonly kind: 'output';
  readonly job: number;
  readonly stdout: Uint8Array | null;
  readonly stdoutAt: number;
  readonly stderr: Uint8Array | null;
  readonly stderrAt: number;
}

export type Outcome =
  | { readonly ok: true; readonly values: readonly WireValue[]; readonly exitCode: number | null }
  | { readonly ok: false; readonly error: SerializedError; readonly exitCode: number | null };

/** worker → main over the channel: a job's result. Blobs: [stdout, stderr]. */
export interface DoneFrame {
  readonly v: typeof PROTOCOL_VERSION;
  readonly kind: 'done';
  readonly job: number;
  readonly outcome: Outcome;
  readonly memoryBytes: number;
  /** Fuel the job consumed (0 when the module is not metered). */
  readonly fuelUsed: number;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  readonly durationMs: number;
}

/**
 * worker → main over the channel: a guest's host call. Bytes travel as the frame's blobs:
 * `vfs_query` sends the serialized database of an in-memory VFS (empty for a file VFS),
 * `process_spawn` the request (src/abi/command.ts).
 */
export type HostRequest = { readonly v: typeof PROTOCOL_VERSION; readonly kind: 'host'; readonly job: number } & HostOp;

export type HostOp =
  | { readonly op: 'log'; readonly level: number; readonly message: string }
  /** Resolve a registered command for a nested run; the module arrives on the module port. */
  | { readonly op: 'command'; readonly mode: 'run' | 'exec'; readonly name: string; readonly depth: number }
  /** An `exec` ended: release its concurrency slot. */
  | { readonly op: 'command_end'; readonly slot: number }
  | { readonly op: 'vfs_query'; readonly sql: string }
  | { readonly op: 'process_spawn'; readonly depth: number }
  | { readonly op: 'process_wait'; readonly pid: number; readonly cap: number }
  | { readonly op: 'process_kill'; readonly pid: number }
  /** A broker import (catalog entry with an `abi`): its string arguments are the blobs. */
  | { readonly op: 'broker'; readonly name: string; readonly cap: number }
  /**
   * An embedder host function (import module `cap`, field `fn`): its JSON argument is the blob;
   * `out` the guest's out_cap. `oversized` instead of a blob: an argument too large to carry
   * (its length), refused — and audited — by the cadence's size step.
   */
  | { readonly op: 'hostfn'; readonly cap: string; readonly fn: string; readonly out: number; readonly oversized?: number }
  /**
   * A lane port exchange (src/wasi/port.ts): the request is the blob; `fuelUsed` is what the
   * guest's meter counted so far. The reply's payload is the answer; `value`'s bit 0 means the
   * snippet starts now — the worker counts the job's fuel from here (an interpreter's boot is
   * not the snippet's) — and `value >> 1` is fuel spent on the guest's behalf, charged to it.
   */
  | { readonly op: 'port'; readonly fuelUsed: number };

/**
 * main → worker: the reply. `value` is op-specific; `errno` is a guest error code (DESIGN §4).
 * `payload` (not part of the JSON header) travels as the frame's blob.
 */
export type HostReply =
  | { readonly v: typeof PROTOCOL_VERSION; readonly kind: 'host-reply'; readonly ok: true; readonly value: number; readonly payload?: Uint8Array }
  | { readonly v: typeof PROTOCOL_VERSION; readonly kind: 'host-reply'; readonly ok: false; readonly errno: number };

/** What main posts on a worker's module port before answering a `command` host call. */
export interface CommandModuleMessage {
  readonly kind: 'command-module';
  readonly module: WebAssembly.Module;
  readonly link: readonly string[];
  readonly maxMemoryPages: number;
  readonly importedMemory: GuestSpec['importedMemory'];
  readonly growFailedExport: string | null;
  readonly poolMemory: GuestSpec['poolMemory'];
  readonly metered: boolean;
  /** Image VFSes the command mounts beside its caller's VFS (a toolchain's sysroot). */
  readonly images?: readonly ImageMount[];
  /** Arguments the registry puts before the caller's (a toolchain driver's target and sysroot). */
  readonly argsPrefix?: readonly string[];
}

// ---- wire values ----

export function toWire(type: string, value: WasmValue): WireValue {
  switch (type) {
    case 'i32':
      return { t: 'i32', v: Number(value) | 0 };
    case 'i64':
      return { t: 'i64', v: BigInt.asIntN(64, typeof value === 'bigint' ? value : BigInt(Math.trunc(value))).toString() };
    case 'f32':
    case 'f64': {
      const n = Number(value);
      return { t: type, v: Number.isFinite(n) ? n : (String(n) as 'NaN' | 'Infinity' | '-Infinity') };
    }
    default:
      throw new SandboxError('POLICY_INVALID', `values of type ${type} cannot cross the boundary`, { type });
  }
}

export function fromWire(w: WireValue): WasmValue {
  switch (w.t) {
    case 'i32':
      return w.v;
    case 'i64':
      return BigInt(w.v);
    default:
      return typeof w.v === 'number' ? w.v : Number(w.v);
  }
}

/** Guess a wire value from a JS result whose static type is unknown (V8 gives bigint for i64). */
export function wireFromResult(value: unknown): WireValue {
  if (typeof value === 'bigint') return { t: 'i64', v: value.toString() };
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff && !Object.is(value, -0)) return { t: 'i32', v: value };
    return toWire('f64', value);
  }
  throw new SandboxError('GUEST_TRAP', 'the export returned a value that cannot cross the boundary', { type: typeof value });
}

// ---- validators ----

type Obj = Record<string, unknown>;

function isObj(x: unknown): x is Obj {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function invalid(what: string): SandboxError {
  return new SandboxError('INTERNAL', `protocol violation: ${what}`);
}

function checkVersion(x: unknown, kind: string): Obj {
  if (!isObj(x) || x['v'] !== PROTOCOL_VERSION || x['kind'] !== kind) throw invalid(`expected a v${PROTOCOL_VERSION} ${kind} message`);
  return x;
}

export function isWireValue(x: unknown): x is WireValue {
  if (!isObj(x)) return false;
  const t = x['t'];
  const v = x['v'];
  if (t === 'i32') return typeof v === 'number' && Number.isInteger(v);
  if (t === 'i64') return typeof v === 'string' && /^-?\d{1,20}$/.test(v);
  if (t === 'f32' || t === 'f64') return typeof v === 'number' || v === 'NaN' || v === 'Infinity' || v === '-Infinity';
  return false;
}

function isSerializedError(x: unknown): x is SerializedError {
  return isObj(x) && isErrorCode(x['code']) && typeof x['message'] === 'string' && isObj(x['details']);
}

export function parseDoneFrame(x: unknown): DoneFrame {
  const o = checkVersion(x, 'done');
  if (typeof o['job'] !== 'number' || typeof o['memoryBytes'] !== 'number' || typeof o['durationMs'] !== 'number' || typeof o['fuelUsed'] !== 'number') {
    throw invalid('done fields');
  }
  if (typeof o['stdoutTruncated'] !== 'boolean' || typeof o['stderrTruncated'] !== 'boolean') throw invalid('done flags');
  const out = o['outcome'];
  if (!isObj(out) || typeof out['ok'] !== 'boolean') throw invalid('done outcome');
  const exitCode = out['exitCode'];
  if (exitCode !== null && typeof exitCode !== 'number') throw invalid('done exitCode');
  if (out['ok'] === true) {
    const values = out['values'];
    if (!Array.isArray(values) || !values.every(isWireValue)) throw invalid('done values');
  } else if (!isSerializedError(out['error'])) {
    throw invalid('done error');
  }
  return o as unknown as DoneFrame;
}

export function parseHostRequest(x: unknown): HostRequest {
  const o = checkVersion(x, 'host');
  if (typeof o['job'] !== 'number') throw invalid('host job');
  const num = (...keys: string[]): boolean => keys.every((k) => typeof o[k] === 'number' && Number.isFinite(o[k]));
  let ok: boolean;
  switch (o['op']) {
    case 'log':
      ok = num('level') && typeof o['message'] === 'string';
      break;
    case 'command':
      ok = (o['mode'] === 'run' || o['mode'] === 'exec') && typeof o['name'] === 'string' && num('depth');
      break;
    case 'command_end':
      ok = num('slot');
      break;
    case 'vfs_query':
      ok = typeof o['sql'] === 'string';
      break;
    case 'process_spawn':
      ok = num('depth');
      break;
    case 'process_wait':
      ok = num('pid', 'cap');
      break;
    case 'process_kill':
      ok = num('pid');
      break;
    case 'broker':
      ok = typeof o['name'] === 'string' && num('cap');
      break;
    case 'hostfn':
      ok = typeof o['cap'] === 'string' && typeof o['fn'] === 'string' && num('out') && (o['oversized'] === undefined || num('oversized'));
      break;
    case 'port':
      ok = num('fuelUsed');
      break;
    default:
      throw invalid('unknown host op');
  }
  if (!ok) throw invalid(`${String(o['op'])} fields`);
  return o as unknown as HostRequest;
}

export function parseHostReply(x: unknown): HostReply {
  const o = checkVersion(x, 'host-reply');
  if (o['ok'] === true && typeof o['value'] === 'number') return o as unknown as HostReply;
  if (o['ok'] === false && typeof o['errno'] === 'number') return o as unknown as HostReply;
  throw invalid('host-reply fields');
}

export function parseOutputMessage(x: unknown): OutputMessage | null {
  if (!isObj(x) || x['v'] !== PROTOCOL_VERSION || x['kind'] !== 'output') return null;
  const part = (b: unknown, at: unknown): boolean => (b === null || b instanceof Uint8Array) && typeof at === 'number' && Number.isSafeInteger(at) && at >= 0;
  if (typeof x['job'] !== 'number' || !part(x['stdout'], x['stdoutAt']) || !part(x['stderr'], x['stderrAt'])) throw invalid('output fields');
  return x as unknown as OutputMessage;
}

export function isControlMessage(x: unknown): x is ControlMessage {
  if (isObj(x) && x['kind'] === 'component') return isComponentMessage(x);
  return (
    isObj(x) &&
    x['v'] === PROTOCOL_VERSION &&
    (x['kind'] === 'run' || x['kind'] === 'load') &&
    typeof x['job'] === 'number' &&
    x['module'] instanceof WebAssembly.Module &&
    isObj(x['spec']) &&
    isObj(x['budget']) &&
    typeof x['budget']['ms'] === 'number' &&
    typeof x['budget']['fuel'] === 'number'
  );
}

function isComponentMessage(x: Obj): boolean {
  const cores = x['cores'];
  return (
    x['v'] === PROTOCOL_VERSION &&
    typeof x['job'] === 'number' &&
    typeof x['key'] === 'string' &&
    typeof x['glue'] === 'string' &&
    typeof x['run'] === 'string' &&
    (x['load'] === undefined || typeof x['load'] === 'boolean') &&
    Array.isArray(cores) &&
    cores.every((c: unknown) => isObj(c) && typeof c['name'] === 'string' && c['module'] instanceof WebAssembly.Module) &&
    isObj(x['spec']) &&
    isObj(x['budget']) &&
    typeof x['budget']['ms'] === 'number' &&
    typeof x['budget']['fuel'] === 'number'
  );
}

/**
 * A lane snippet's start (the `port` reply whose value has bit 0 set): its own budget and, for a
 * pooled interpreter that booted without them, the call's VFS database — host-chosen, never the
 * guest's — and whether its output is streamed from now on. Travels before the answer in the
 * reply's payload: ms (f64), fuel (f64), the file's length (u32), flags (u32: bit 0 stream), the file.
 */
export interface SnippetStart {
  readonly ms: number;
  readonly fuel: number;
  readonly vfsFile?: string;
  readonly stream?: boolean;
}

const START_HEADER = 24;

export function encodeStart(start: SnippetStart, answer: Uint8Array): Uint8Array {
  const file = new TextEncoder().encode(start.vfsFile ?? '');
  const out = new Uint8Array(START_HEADER + file.length + answer.length);
  const v = new DataView(out.buffer);
  v.setFloat64(0, start.ms, true);
  v.setFloat64(8, start.fuel, true);
  v.setUint32(16, file.length, true);
  v.setUint32(20, start.stream === true ? 1 : 0, true);
  out.set(file, START_HEADER);
  out.set(answer, START_HEADER + file.length);
  return out;
}

export function decodeStart(payload: Uint8Array): { start: SnippetStart; answer: Uint8Array } {
  if (payload.length < START_HEADER) throw invalid('snippet start');
  const v = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const n = v.getUint32(16, true);
  if (START_HEADER + n > payload.length) throw invalid('snippet start');
  const file = new TextDecoder().decode(payload.subarray(START_HEADER, START_HEADER + n));
  const stream = (v.getUint32(20, true) & 1) === 1;
  return {
    start: { ms: v.getFloat64(0, true), fuel: v.getFloat64(8, true), ...(file ? { vfsFile: file } : {}), ...(stream ? { stream } : {}) },
    answer: payload.subarray(START_HEADER + n),
  };
}
