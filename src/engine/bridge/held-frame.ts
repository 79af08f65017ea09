/**
 * The held-run frame: a fresh run of a module a pool worker holds (held-modules.ts), written on
 * the channel to a worker listening for it (channel.ts `listenForRun`) instead of a `postMessage`,
 * whose wake-up of an idle thread costs ~80 µs on a VM. Split out of frames.ts for size.
 *
 * Owns: the byte layout below and the listening window (LISTEN_SPINS).
 *   u8 kind=5 · u8 flags (1 stream, 2 stdin, 4 fixed part, 8 forget) · f64 moduleId ·
 *   f64 job · f64 budget ms · f64 budget fuel · f64 specId · f64 forgetSpec ·
 *   u32 len · fixed-part JSON · u32 len · own-part JSON · u32 len · entry JSON · u32 len · stdin
 *   (written by main only while it owns the data region, read by the worker only after main
 *   claimed it as a listener; the fixed part is there only the first time this worker gets its
 *   spec id, held-specs.ts)
 *
 * Invariant: every decode checks lengths against the frame and the frame against the buffer; a
 * malformed frame is INTERNAL, never an out-of-bounds read, and what it decodes is validated again
 * by worker/held-run.ts, so a garbled frame is no run at all, never a run of another module.
 *
 * Does not protect against: nothing beyond framing; contents are the protocol's business.
 */

import { SandboxError } from '../../errors.ts';
import { State, type Channel } from './channel.ts';
import { bad } from './frames.ts';
import { PROTOCOL_VERSION } from './protocol.ts';
import type { HeldRunMessage } from './held-modules.ts';

const encoder = new TextEncoder();

export const FRAME_HELD = 5;
/**
 * How long (times the engine's spin) a pool worker spins for its next fresh run before it sleeps
 * on the listening word (AdaptiveSpin: halved after each window that found nothing, down to a
 * fifth). Measured on a 2-vCPU VM (docs/architecture.md): back-to-back runs p50 ~220 µs with no
 * spin, ~92 µs with 3 (1: ~200, 5 and 10: ~110); a long spin (500 µs) under heavy load did worse
 * than none, since the spinning worker keeps the core main needs for the result.
 */
export const LISTEN_SPINS = 3;
const F_STREAM = 1;
const F_STDIN = 2;
const F_FIXED = 4;
const F_FORGET = 8;
const HEAD = 2 + 8 * 6;

const strictDecoder = new TextDecoder('utf-8', { fatal: true });
const START_ENTRY = encoder.encode('{"kind":"start"}');
const START = Object.freeze({ kind: 'start' as const });

/**
 * Main side: post `msg` on the channel if the worker is listening; true when posted (the worker
 * runs it), false when the caller must post it by message.
 */
export function sendHeld(ch: Channel, msg: HeldRunMessage): boolean {
  ch.clearInterrupt();
  writeHeld(ch, msg);
  // JOB before the claim: the worker reads the frame as soon as it sees the claim (no second
  // wake-up for the state). A worker not listening never reads the state: post() sets RUNNING.
  ch.mark(State.JOB);
  return ch.claimListener();
}

export function writeHeld(ch: Channel, msg: HeldRunMessage): void {
  const entry = msg.entry.kind === 'start' ? START_ENTRY : encoder.encode(JSON.stringify(msg.entry));
  const stdin = msg.stdin;
  const fixed = msg.fixed;
  // UTF-8 takes at most 3 bytes per UTF-16 unit.
  const room = HEAD + 16 + (fixed?.length ?? 0) * 3 + msg.own.length * 3 + entry.length + (stdin?.length ?? 0);
  ch.ensure(room);
  const { data, view } = ch;
  data[0] = FRAME_HELD;
  data[1] = (msg.stream ? F_STREAM : 0) | (stdin ? F_STDIN : 0) | (fixed !== null ? F_FIXED : 0) | (msg.forgetSpec !== null ? F_FORGET : 0);
  view.setFloat64(2, msg.moduleId, true);
  view.setFloat64(10, msg.job, true);
  view.setFloat64(18, msg.budget.ms, true);
  view.setFloat64(26, msg.budget.fuel, true);
  view.setFloat64(34, msg.specId, true);
  view.setFloat64(42, msg.forgetSpec ?? 0, true);
  let at = HEAD;
  for (const text of [fixed ?? '', msg.own]) {
    const { written } = encoder.encodeInto(text, data.subarray(at + 4));
    view.setUint32(at, written, true);
    at += 4 + written;
  }
  view.setUint32(at, entry.length, true);
  data.set(entry, at + 4);
  at += 4 + entry.length;
  view.setUint32(at, stdin?.length ?? 0, true);
  if (stdin) data.set(stdin, at + 4);
  at += 4 + (stdin?.length ?? 0);
  ch.setFrameLength(at);
}

/**
 * Worker side: the held-run message in the frame (for worker/held-run.ts to validate); a frame
 * that is not a well-formed held run is INTERNAL.
 */
export function readHeld(ch: Channel): Omit<HeldRunMessage, 'entry'> & { readonly entry: unknown } {
  const size = ch.frameLength();
  const { data, view } = ch;
  if (size < HEAD + 16 || data[0] !== FRAME_HELD) throw bad('not a held-run frame');
  const flags = data[1]!;
  let at = HEAD;
  const part = (): Uint8Array => {
    if (at + 4 > size) throw bad('length out of range');
    const len = view.getUint32(at, true);
    if (at + 4 + len > size) throw bad('part out of range');
    const bytes = data.subarray(at + 4, at + 4 + len);
    at += 4 + len;
    return bytes;
  };
  let fixed: string;
  let own: string;
  let entry: unknown;
  try {
    fixed = text(part());
    own = text(part());
    const e = part();
    entry = sameBytes(e, START_ENTRY) ? START : JSON.parse(text(e));
  } catch (e) {
    throw e instanceof SandboxError ? e : bad('text is not UTF-8 JSON');
  }
  const stdinBytes = part();
  return {
    v: PROTOCOL_VERSION,
    kind: 'run-held',
    moduleId: view.getFloat64(2, true),
    job: view.getFloat64(10, true),
    budget: { ms: view.getFloat64(18, true), fuel: view.getFloat64(26, true) },
    specId: view.getFloat64(34, true),
    fixed: flags & F_FIXED ? fixed : null,
    forgetSpec: flags & F_FORGET ? view.getFloat64(42, true) : null,
    own,
    entry,
    stdin: flags & F_STDIN ? stdinBytes.slice() : null,
    stream: (flags & F_STREAM) !== 0,
  };
}

/** UTF-8 text of `bytes` (strict); short ASCII, the common case, without a copy or a decoder. */
function text(bytes: Uint8Array): string {
  const n = bytes.length;
  if (n <= 1024) {
    let ascii = true;
    for (let i = 0; i < n; i++) if (bytes[i]! >= 0x80) ascii = false;
    if (ascii) return String.fromCharCode.apply(null, bytes as unknown as number[]);
  }
  // Copied out first: not every Node decodes a view of shared memory.
  return strictDecoder.decode(bytes.slice());
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
