/**
 * Binary encodings of the two hot frames: a call into a persistent instance (main → worker)
 * and a job's result (worker → main). JSON costs ~5 µs a frame on a SharedArrayBuffer; these
 * cost well under 1 µs, which is most of the budget of a ≤ 15 µs call (DESIGN §11).
 *
 * Owns: the byte layouts below; a failed result travels as a JSON frame (rare, and its error
 * details are free-form). Invariant: every decode checks lengths against the frame and the
 * frame against the buffer; a malformed frame is INTERNAL, never an out-of-bounds read.
 *
 *   call:  u8 kind=1 (3: stream its output) · u32 job · f64 budget ms · f64 budget fuel · u16 nameLen · name (UTF-8) ·
 *          u16 argc · argc × value
 *   done:  u8 kind=2 · u8 flags · u32 job · f64 memoryBytes · f64 durationMs · i32 exitCode ·
 *          f64 fuelUsed · u16 n · n × value · u32 len · stdout · u32 len · stderr
 *   value: u8 type (0 i32, 1 i64, 2 f32, 3 f64) · 8 bytes (i32 / i64 / f64, little-endian)
 *   kernel: u8 kind=4 · u32 job · f64 budget ms · f64 budget fuel · u32 inOff · u32 inCap · u32 outOff ·
 *          u32 maxOut · u16 nameLen · name · u32 len · input   (the kernel lane, src/fabric)
 *   a kernel's done frame carries flag 16 and one more blob after stderr: the output.
 *
 * Does not protect against: nothing beyond framing; contents are the protocol's business.
 */

import { SandboxError } from '../../errors.ts';
import { FRAME_JSON, type Channel } from './channel.ts';
import { PROTOCOL_VERSION, parseDoneFrame, type CallFrame, type DoneFrame, type WireValue } from './protocol.ts';

export const FRAME_CALL = 1;
export const FRAME_DONE = 2;
/** A call frame (same layout) whose output is streamed while it runs. */
export const FRAME_CALL_STREAM = 3;

const F_OK = 1;
const F_EXIT = 2;
const F_OUT_TRUNC = 4;
const F_ERR_TRUNC = 8;
const F_KERNEL = 16;
/** A kernel-lane call (worker/kernel-call.ts): input bytes for the arena, the entry and the arena. */
export const FRAME_KERNEL = 4;
const TYPES = ['i32', 'i64', 'f32', 'f64'] as const;
const MAX_NAME_BYTES = 4096;
const MAX_VALUES = 1000;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });
const nameCache = new Map<string, Uint8Array>();

function nameBytes(name: string): Uint8Array {
  let b = nameCache.get(name);
  if (!b) {
    b = encoder.encode(name);
    if (nameCache.size > 1024) nameCache.clear();
    nameCache.set(name, b);
  }
  return b;
}

export function bad(why: string): SandboxError {
  return new SandboxError('INTERNAL', `malformed channel frame: ${why}`);
}

function writeValue(view: DataView, at: number, w: WireValue): number {
  switch (w.t) {
    case 'i32':
      view.setUint8(at, 0);
      view.setInt32(at + 1, w.v, true);
      break;
    case 'i64':
      view.setUint8(at, 1);
      view.setBigInt64(at + 1, BigInt(w.v), true);
      break;
    default:
      view.setUint8(at, w.t === 'f32' ? 2 : 3);
      view.setFloat64(at + 1, typeof w.v === 'number' ? w.v : Number(w.v), true);
  }
  return at + 9;
}

function readValue(view: DataView, at: number): WireValue {
  const t = TYPES[view.getUint8(at)];
  switch (t) {
    case 'i32':
      return { t, v: view.getInt32(at + 1, true) };
    case 'i64':
      return { t, v: view.getBigInt64(at + 1, true).toString() };
    case 'f32':
    case 'f64': {
      const n = view.getFloat64(at + 1, true);
      return { t, v: Number.isFinite(n) ? n : (String(n) as 'NaN' | 'Infinity' | '-Infinity') };
    }
    default:
      throw bad('unknown value type');
  }
}

function readValues(view: DataView, at: number, size: number): [WireValue[], number] {
  if (at + 2 > size) throw bad('value count out of range');
  const n = view.getUint16(at, true);
  at += 2;
  if (n > MAX_VALUES || at + n * 9 > size) throw bad('values out of range');
  const out: WireValue[] = new Array(n);
  for (let i = 0; i < n; i++, at += 9) out[i] = readValue(view, at);
  return [out, at];
}

export function writeCall(ch: Channel, f: CallFrame): void {
  const name = nameBytes(f.export);
  if (name.length > MAX_NAME_BYTES || f.args.length > MAX_VALUES) throw bad('call too large');
  const size = 23 + name.length + 2 + f.args.length * 9;
  ch.ensure(size);
  const { data, view } = ch;
  data[0] = f.stream === true ? FRAME_CALL_STREAM : FRAME_CALL;
  view.setUint32(1, f.job, true);
  view.setFloat64(5, f.budget.ms, true);
  view.setFloat64(13, f.budget.fuel, true);
  view.setUint16(21, name.length, true);
  data.set(name, 23);
  let at = 23 + name.length;
  view.setUint16(at, f.args.length, true);
  at += 2;
  for (const a of f.args) at = writeValue(view, at, a);
  ch.setFrameLength(size);
}

export function readCall(ch: Channel): CallFrame {
  const size = ch.frameLength();
  const { data, view } = ch;
  const kind = data[0];
  if (size < 25 || (kind !== FRAME_CALL && kind !== FRAME_CALL_STREAM)) throw bad('not a call frame');
  const job = view.getUint32(1, true);
  const ms = view.getFloat64(5, true);
  const fuel = view.getFloat64(13, true);
  const nameLen = view.getUint16(21, true);
  if (23 + nameLen + 2 > size || !(ms >= 0) || !(fuel >= 0)) throw bad('call header out of range');
  const name = decodeName(data, 23, nameLen);
  const [args] = readValues(view, 23 + nameLen, size);
  return { v: PROTOCOL_VERSION, kind: 'call', job, export: name, args, budget: { ms, fuel }, stream: kind === FRAME_CALL_STREAM };
}

/** The last name decoded, and its bytes: a persistent instance is called by the same name again and again. */
let lastName = '';
let lastNameBytes = new Uint8Array(0);

function decodeName(data: Uint8Array, at: number, len: number): string {
  const last = lastNameBytes;
  if (len === last.length) {
    let same = true;
    for (let i = 0; i < len; i++) if (data[at + i] !== last[i]) same = false;
    if (same) return lastName;
  }
  let ascii = true;
  for (let i = 0; i < len; i++) if (data[at + i]! >= 0x80) ascii = false;
  const name = ascii ? String.fromCharCode(...data.subarray(at, at + len)) : decoder.decode(data.slice(at, at + len));
  lastName = name;
  lastNameBytes = data.slice(at, at + len);
  return name;
}

export function writeDone(ch: Channel, f: DoneFrame, stdout: Uint8Array, stderr: Uint8Array, output?: Uint8Array): void {
  const o = f.outcome;
  if (!o.ok) {
    ch.write(f, [stdout, stderr]);
    return;
  }
  const size = 39 + o.values.length * 9 + 8 + stdout.length + stderr.length + (output ? 4 + output.length : 0);
  ch.ensure(size);
  const { data, view } = ch;
  data[0] = FRAME_DONE;
  data[1] = F_OK | (o.exitCode !== null ? F_EXIT : 0) | (f.stdoutTruncated ? F_OUT_TRUNC : 0) | (f.stderrTruncated ? F_ERR_TRUNC : 0) | (output ? F_KERNEL : 0);
  view.setUint32(2, f.job, true);
  view.setFloat64(6, f.memoryBytes, true);
  view.setFloat64(14, f.durationMs, true);
  view.setInt32(22, o.exitCode ?? 0, true);
  view.setFloat64(26, f.fuelUsed, true);
  view.setUint16(34, o.values.length, true);
  let at = 36;
  for (const v of o.values) at = writeValue(view, at, v);
  view.setUint32(at, stdout.length, true);
  data.set(stdout, at + 4);
  at += 4 + stdout.length;
  view.setUint32(at, stderr.length, true);
  data.set(stderr, at + 4);
  if (output) {
    at += 4 + stderr.length;
    view.setUint32(at, output.length, true);
    data.set(output, at + 4);
  }
  ch.setFrameLength(size);
}

export interface DoneRead {
  readonly frame: DoneFrame;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  /** A kernel call's output (FRAME_KERNEL jobs only). */
  readonly output?: Uint8Array;
}

const EMPTY = new Uint8Array(0);

export function readDone(ch: Channel): DoneRead {
  if (ch.frameKind === FRAME_JSON) {
    const { header, blobs } = ch.read();
    return { frame: parseDoneFrame(header), stdout: blobs[0] ?? EMPTY, stderr: blobs[1] ?? EMPTY };
  }
  const size = ch.frameLength();
  const { data, view } = ch;
  if (size < 39 || data[0] !== FRAME_DONE) throw bad('not a result frame');
  const flags = data[1]!;
  const [values, after] = readValues(view, 34, size);
  let at = after;
  const blob = (): Uint8Array => {
    if (at + 4 > size) throw bad('output length out of range');
    const len = view.getUint32(at, true);
    if (at + 4 + len > size) throw bad('output out of range');
    const b = len === 0 ? EMPTY : data.slice(at + 4, at + 4 + len);
    at += 4 + len;
    return b;
  };
  const stdout = blob();
  const stderr = blob();
  const output = flags & F_KERNEL ? blob() : undefined;
  const frame: DoneFrame = {
    v: PROTOCOL_VERSION,
    kind: 'done',
    job: view.getUint32(2, true),
    outcome: { ok: true, values, exitCode: flags & F_EXIT ? view.getInt32(22, true) : null },
    memoryBytes: view.getFloat64(6, true),
    durationMs: view.getFloat64(14, true),
    fuelUsed: view.getFloat64(26, true),
    stdoutTruncated: (flags & F_OUT_TRUNC) !== 0,
    stderrTruncated: (flags & F_ERR_TRUNC) !== 0,
  };
  return output ? { frame, stdout, stderr, output } : { frame, stdout, stderr };
}

/**
 * Main side, the kernel lane's hot path: the output of a kernel call's result frame when it is a
 * plain success (binary, no values), copied out, with every length checked like readDone's; null
 * for any other frame, which is then left for readDone. `doneFuel` is the same frame's fuel.
 */
export function kernelOutput(ch: Channel): Uint8Array | null {
  if (ch.frameKind !== FRAME_DONE) return null;
  const size = ch.frameLength();
  const { data, view } = ch;
  if (size < 39 || (data[1]! & (F_OK | F_KERNEL)) !== (F_OK | F_KERNEL) || view.getUint16(34, true) !== 0) return null;
  let at = 36;
  for (let i = 0; i < 2; i++) {
    if (at + 4 > size) throw bad('output length out of range');
    const len = view.getUint32(at, true);
    if (at + 4 + len > size) throw bad('output out of range');
    at += 4 + len;
  }
  if (at + 4 > size) throw bad('output length out of range');
  const len = view.getUint32(at, true);
  if (at + 4 + len > size) throw bad('output out of range');
  return data.slice(at + 4, at + 4 + len);
}

export function doneFuel(ch: Channel): number {
  return ch.view.getFloat64(26, true);
}

export interface KernelFrame {
  readonly job: number;
  readonly budget: { readonly ms: number; readonly fuel: number };
  readonly arena: { readonly inOff: number; readonly inCap: number; readonly outOff: number; readonly maxOutputBytes: number };
  readonly entry: string;
  readonly input: Uint8Array;
}

export function writeKernel(ch: Channel, f: KernelFrame): void {
  const name = nameBytes(f.entry);
  if (name.length > MAX_NAME_BYTES) throw bad('kernel entry name too long');
  const size = 39 + name.length + 4 + f.input.length;
  ch.ensure(size);
  const { data, view } = ch;
  data[0] = FRAME_KERNEL;
  view.setUint32(1, f.job, true);
  view.setFloat64(5, f.budget.ms, true);
  view.setFloat64(13, f.budget.fuel, true);
  view.setUint32(21, f.arena.inOff, true);
  view.setUint32(25, f.arena.inCap, true);
  view.setUint32(29, f.arena.outOff, true);
  view.setUint32(33, f.arena.maxOutputBytes, true);
  view.setUint16(37, name.length, true);
  data.set(name, 39);
  const at = 39 + name.length;
  view.setUint32(at, f.input.length, true);
  data.set(f.input, at + 4);
  ch.setFrameLength(size);
}

/** The worker's read of a kernel frame; `input` is a view into the channel, valid until the result is written. */
export function readKernel(ch: Channel): KernelFrame {
  const size = ch.frameLength();
  const { data, view } = ch;
  if (size < 43 || data[0] !== FRAME_KERNEL) throw bad('not a kernel frame');
  const ms = view.getFloat64(5, true);
  const fuel = view.getFloat64(13, true);
  const nameLen = view.getUint16(37, true);
  if (39 + nameLen + 4 > size || !(ms >= 0) || !(fuel >= 0)) throw bad('kernel header out of range');
  const entry = decodeName(data, 39, nameLen);
  const at = 39 + nameLen;
  const len = view.getUint32(at, true);
  if (at + 4 + len > size) throw bad('kernel input out of range');
  return {
    job: view.getUint32(1, true),
    budget: { ms, fuel },
    arena: { inOff: view.getUint32(21, true), inCap: view.getUint32(25, true), outOff: view.getUint32(29, true), maxOutputBytes: view.getUint32(33, true) },
    entry,
    input: data.subarray(at + 4, at + 4 + len),
  };
}
