/**
 * The versioned messages between the Python lane and its interpreter child (child.mjs), and the
 * validation of every message the child sends.
 *
 * Invariant: the child is untrusted — it runs guest code — so nothing it sends is believed
 * until `parseChildMessage` has checked its shape and bounded its sizes; anything else is
 * treated as a dead child (INTERNAL), never thrown into the host.
 *
 * Between `exec` and `result` the child may send `output` messages (only for the streams the
 * exec asked for; relay.ts bounds them); an uncaught exception's outcome carries its report
 * (exception.ts checks and cuts it).
 *
 * Powers travel on a separate pipe (the child's fd 4), not this IPC channel: frames of a 4-byte
 * big-endian length and JSON (a `PowerRequest` up, a `PowerAnswer` down), one request at a time,
 * each at most `maxFrameBytes` (child-process.ts kills a child that sends a bigger one). A request
 * frame has an 8-byte big-endian float after its length: the raw fuel the snippet has used so far,
 * written by child.mjs from its meter, outside the JSON the guest wrote; an answer to a command
 * run starts `{"fuel":N,` — the command's charge, which child.mjs adds to its meter.
 *
 * Does not protect against: a child that lies within the shape (e.g. reports less fuel than it
 * used): fuel and output are the child's own accounting; the deadline is the parent's. (Its
 * commands' fuel is the parent's count too: a command is never granted more than the budget
 * minus what they spent, whatever the child reports.)
 */

import type { HostPower } from '../powers.ts';
import { parseGuestException, type GuestException } from './exception.ts';

export interface ExecMessage {
  readonly v: 1;
  readonly kind: 'exec';
  readonly id: number;
  readonly code: string;
  readonly contextJson: string;
  /** Granted caps whose powers the `membrane` module gets (src/lanes/powers.ts), then granted host caps (globals). */
  readonly powers: readonly (string | HostPower)[];
  /** The power bridge's frame cap (MAX_POWER_FRAME_BYTES). */
  readonly maxFrameBytes: number;
  /** JSON of POWER_ERROR_MESSAGES: the only text a MembraneError carries. */
  readonly powerMessages: string;
  readonly timeoutMs: number;
  /**
   * The call's deadline as a `Date.now()` time, set by the host side when it sends the message: the
   * child's deadline and the power server's are this one instant, so a power answered TIMEOUT at
   * the deadline is never seen by the child as early (the message's transit ate into the budget).
   */
  readonly deadlineAt?: number;
  readonly fuel: number;
  readonly memoryBytes: number;
  readonly outputLimitBytes: number;
  /** Send stdout / stderr as `output` messages while the snippet runs (only when the caller listens). */
  readonly streamStdout: boolean;
  readonly streamStderr: boolean;
}

/** How the snippet ended, as the child saw it. */
export type ChildOutcome =
  | { readonly ok: true; readonly result?: unknown; readonly warning?: string }
  | { readonly ok: false; readonly kind: 'exception'; readonly exception: GuestException }
  | { readonly ok: false; readonly kind: PlainFailure; readonly message?: string };
type PlainFailure = 'MemoryError' | 'MEMORY_LIMIT' | 'SystemExit' | 'TIMEOUT' | 'FUEL_EXHAUSTED' | 'host';

export type ChildMessage =
  | { readonly v: 1; readonly kind: 'ready'; readonly metered: boolean }
  | {
      readonly v: 1;
      readonly kind: 'result';
      readonly id: number;
      readonly outcome: ChildOutcome;
      readonly stdout: string;
      readonly stderr: string;
      readonly stdoutDropped: number;
      readonly stderrDropped: number;
      readonly fuelUsed: number;
      readonly metered: boolean;
    }
  /** Output written while the snippet runs (only the streams the exec asked for). */
  | { readonly v: 1; readonly kind: 'output'; readonly id: number; readonly stdout?: string; readonly stderr?: string };

const KINDS: ReadonlySet<string> = new Set(['MemoryError', 'MEMORY_LIMIT', 'SystemExit', 'TIMEOUT', 'FUEL_EXHAUSTED', 'host']);
/** Longest message (MemoryError, SystemExit, a warning) passed on. */
export const MAX_MESSAGE_CHARS = 2000;

function nonNegative(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x) && x >= 0;
}

function parseOutcome(o: unknown): ChildOutcome | null {
  if (o === null || typeof o !== 'object') return null;
  const r = o as Record<string, unknown>;
  if (r['ok'] === true) {
    const warning = typeof r['warning'] === 'string' ? r['warning'].slice(0, MAX_MESSAGE_CHARS) : undefined;
    return { ok: true, ...('result' in r ? { result: r['result'] } : {}), ...(warning ? { warning } : {}) };
  }
  if (r['ok'] === false && r['kind'] === 'exception') {
    const exception = parseGuestException(r['exception']);
    return exception === null ? null : { ok: false, kind: 'exception', exception };
  }
  if (r['ok'] !== false || typeof r['kind'] !== 'string' || !KINDS.has(r['kind'])) return null;
  const message = typeof r['message'] === 'string' ? r['message'].slice(0, MAX_MESSAGE_CHARS) : undefined;
  return { ok: false, kind: r['kind'] as PlainFailure, ...(message !== undefined ? { message } : {}) };
}

/** Check one IPC message from a child; null for anything malformed or oversized. */
export function parseChildMessage(m: unknown, maxOutputChars: number): ChildMessage | null {
  if (m === null || typeof m !== 'object') return null;
  const r = m as Record<string, unknown>;
  if (r['v'] !== 1) return null;
  if (r['kind'] === 'ready') return { v: 1, kind: 'ready', metered: r['metered'] === true };
  if (r['kind'] === 'output' && typeof r['id'] === 'number') {
    const { stdout, stderr } = r;
    if (stdout !== undefined && (typeof stdout !== 'string' || stdout.length > maxOutputChars)) return null;
    if (stderr !== undefined && (typeof stderr !== 'string' || stderr.length > maxOutputChars)) return null;
    return { v: 1, kind: 'output', id: r['id'], ...(stdout !== undefined ? { stdout } : {}), ...(stderr !== undefined ? { stderr } : {}) };
  }
  if (r['kind'] !== 'result' || typeof r['id'] !== 'number') return null;
  const outcome = parseOutcome(r['outcome']);
  const { stdout, stderr } = r;
  if (outcome === null || typeof stdout !== 'string' || typeof stderr !== 'string') return null;
  if (stdout.length > maxOutputChars || stderr.length > maxOutputChars) return null;
  if (!nonNegative(r['stdoutDropped']) || !nonNegative(r['stderrDropped']) || !nonNegative(r['fuelUsed'])) return null;
  return {
    v: 1,
    kind: 'result',
    id: r['id'],
    outcome,
    stdout,
    stderr,
    stdoutDropped: r['stdoutDropped'],
    stderrDropped: r['stderrDropped'],
    fuelUsed: r['fuelUsed'],
    metered: r['metered'] === true,
  };
}
