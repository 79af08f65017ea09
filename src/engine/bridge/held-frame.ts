/**
 * A held run (held-modules.ts) sent on the channel instead of by `postMessage`, to a pool worker
 * that is listening for it (channel.ts `listenForRun`): the message's fields as one binary frame.
 *
 * Owns: the layout below and the main side's send (write the frame, claim the listener, JOB).
 * Invariant: the frame is written only while main owns the data region (state IDLE, after the
 * last result was taken) and the job is posted only after the claim succeeded; a worker that is
 * not listening gets nothing here (the caller posts the message as before). Decoding checks
 * every length against the frame; what it yields is validated again by worker/held-run.ts, so a
 * garbled frame is no run at all (INTERNAL), never a run of another module.
 *
 *   held: u8 kind=5 · u8 flags (1 stream, 2 stdin) · f64 moduleId · f64 job · f64 budget ms ·
 *         f64 budget fuel · u32 len · spec JSON · u32 len · entry JSON · u32 len · stdin
 *
 * Does not protect against: nothing beyond framing; the spec's contents are main's choice.
 */

import { SandboxError } from '../../errors.ts';
import { State, type Channel } from './channel.ts';
import { PROTOCOL_VERSION } from './protocol.ts';
import type { HeldRunMessage } from './held-modules.ts';

export const FRAME_HELD = 5;
/**
 * How long (times the engine's spin) a pool worker spins for its next fresh run before it sleeps
 * on the listening word (AdaptiveSpin: halved after each window that found nothing). 0: measured
 * on a 2-vCPU VM shared with other work, a worker spinning after its result keeps the core the
 * main thread needs for that result — main's own work between two runs went from ~120 to ~340 µs
 * with a 500 µs spin, and the run was missed anyway; the futex sleep costs no CPU and its wake-up
 * is cheaper than a message's (~25 against ~45 µs, scratch/pm4.mjs). On a host with idle cores a
 * spin of a few times spinMicros catches back-to-back runs in ~5 µs.
 */
export const LISTEN_SPINS = 0;
const F_STREAM = 1;
const F_STDIN = 2;
const FIXED = 2 + 8 * 4;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });
const START_ENTRY = encoder.encode('{"kind":"start"}');

/**
 * Main side: post `msg` on the channel if the worker is listening; true when posted (the worker
 * runs it), false when the caller must post it by message.
 */
export function sendHeld(ch: Channel, msg: HeldRunMessage): boolean {
  ch.clearInterrupt();
  writeHeld(ch, msg);
  if (!ch.claimListener()) return false;
  ch.set(State.JOB);
  return true;
}

export function writeHeld(ch: Channel, msg: HeldRunMessage): void {
  const entry = msg.entry.kind === 'start' ? START_ENTRY : encoder.encode(JSON.stringify(msg.entry));
  const stdin = msg.stdin;
  // UTF-8 takes at most 3 bytes per UTF-16 unit.
  const room = FIXED + 12 + msg.spec.length * 3 + entry.length + (stdin?.length ?? 0);
  ch.ensure(room);
  const { data, view } = ch;
  data[0] = FRAME_HELD;
  data[1] = (msg.stream ? F_STREAM : 0) | (stdin ? F_STDIN : 0);
  view.setFloat64(2, msg.moduleId, true);
  view.setFloat64(10, msg.job, true);
  view.setFloat64(18, msg.budget.ms, true);
  view.setFloat64(26, msg.budget.fuel, true);
  let at = FIXED;
  const { written } = encoder.encodeInto(msg.spec, data.subarray(at + 4));
  view.setUint32(at, written, true);
  at += 4 + written;
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
  if (size < FIXED + 12 || data[0] !== FRAME_HELD) throw bad('not a held-run frame');
  const flags = data[1]!;
  let at = FIXED;
  const part = (): Uint8Array => {
    if (at + 4 > size) throw bad('length out of range');
    const len = view.getUint32(at, true);
    if (at + 4 + len > size) throw bad('part out of range');
    const bytes = data.subarray(at + 4, at + 4 + len);
    at += 4 + len;
    return bytes;
  };
  let spec: string;
  let entry: unknown;
  try {
    // Copied out first: not every Node decodes a view of shared memory.
    spec = decoder.decode(part().slice());
    entry = JSON.parse(decoder.decode(part().slice()));
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
    spec,
    entry,
    stdin: flags & F_STDIN ? stdinBytes.slice() : null,
    stream: (flags & F_STREAM) !== 0,
  };
}

function bad(why: string): SandboxError {
  return new SandboxError('INTERNAL', `malformed channel frame: ${why}`);
}
