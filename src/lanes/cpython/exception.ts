/**
 * A Python snippet's uncaught exception, as the lane reports it (issue #15): `GUEST_EXCEPTION`
 * with `details: { name, message, stack: [{ file: '<snippet>', line, column?, function }],
 * traceback }` — the snippet's frames only, deepest first; `traceback` is the text Python would
 * print for them (oldest first, with the chain of causes), ending with the exception's line.
 *
 * Owns: checking and bounding what the child reports (it runs guest code, so nothing it sends is
 * believed: every field is type-checked and cut again here — name ≤ MAX_NAME_CHARS, message ≤
 * MAX_EXCEPTION_MESSAGE_BYTES, ≤ MAX_FRAMES frames, traceback ≤ MAX_TRACEBACK_CHARS — and a frame
 * that does not name `<snippet>` is dropped), and the host paths removed from every string.
 * Invariant: the error a caller sees holds only the snippet's names, lines and text.
 *
 * Does not protect against: a snippet that writes a path into its own exception's message (its
 * own text, passed on; only the host paths this process knows are replaced).
 */

import type { ErrorDetails } from '../../errors.ts';

export const MAX_NAME_CHARS = 128;
export const MAX_EXCEPTION_MESSAGE_BYTES = 4096;
export const MAX_FRAMES = 32;
export const MAX_TRACEBACK_CHARS = 16 * 1024;
const MAX_FUNCTION_CHARS = 128;
const SNIPPET_FILE = '<snippet>';

export interface GuestFrame {
  readonly file: string;
  readonly line: number;
  readonly column?: number;
  readonly function: string;
}

export interface GuestException {
  readonly name: string;
  readonly message: string;
  readonly stack: readonly GuestFrame[];
  readonly traceback: string;
}

/** Cut a string to `maxBytes` of UTF-8 on a character boundary. */
export function cutUtf8(s: string, maxBytes: number): string {
  if (s.length <= maxBytes / 3 || Buffer.byteLength(s) <= maxBytes) return s;
  return Buffer.from(s).subarray(0, maxBytes).toString('utf8').replace(/\uFFFD$/, '');
}

const count = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= 2 ** 31;

function parseFrame(f: unknown): GuestFrame | null {
  if (f === null || typeof f !== 'object') return null;
  const r = f as Record<string, unknown>;
  if (r['file'] !== SNIPPET_FILE || !count(r['line']) || typeof r['function'] !== 'string') return null;
  const column = count(r['column']) && r['column'] > 0 ? r['column'] : undefined;
  return { file: SNIPPET_FILE, line: r['line'], ...(column !== undefined ? { column } : {}), function: r['function'].slice(0, MAX_FUNCTION_CHARS) };
}

/** Check the child's report; null when it is not one. */
export function parseGuestException(e: unknown): GuestException | null {
  if (e === null || typeof e !== 'object') return null;
  const r = e as Record<string, unknown>;
  if (typeof r['name'] !== 'string' || typeof r['message'] !== 'string' || typeof r['traceback'] !== 'string' || !Array.isArray(r['stack'])) return null;
  const stack: GuestFrame[] = [];
  for (const f of r['stack'].slice(0, MAX_FRAMES)) {
    const frame = parseFrame(f);
    if (frame !== null) stack.push(frame);
  }
  const traceback = r['traceback'];
  return {
    name: r['name'].slice(0, MAX_NAME_CHARS) || 'Exception',
    message: cutUtf8(r['message'], MAX_EXCEPTION_MESSAGE_BYTES),
    stack,
    traceback: traceback.length > MAX_TRACEBACK_CHARS ? traceback.slice(traceback.length - MAX_TRACEBACK_CHARS) : traceback,
  };
}

/** The call's error: `Name: message` (bounded) and the details, with `scrub` applied to every string. */
export function guestExceptionError(e: GuestException, scrub: (s: string) => string): { code: 'GUEST_EXCEPTION'; message: string; details: ErrorDetails } {
  const name = scrub(e.name);
  const message = scrub(e.message);
  const stack = e.stack.map((f) => ({ file: f.file, line: f.line, ...(f.column !== undefined ? { column: f.column } : {}), function: scrub(f.function) }));
  return {
    code: 'GUEST_EXCEPTION',
    message: cutUtf8(message === '' ? name : `${name}: ${message}`, MAX_EXCEPTION_MESSAGE_BYTES),
    details: { name, message, stack, traceback: scrub(e.traceback) },
  };
}

/** A scrubber for the given host paths (longest first), each replaced by `<host>`. */
export function pathScrubber(paths: readonly (string | null | undefined)[]): (s: string) => string {
  const known = [...new Set(paths.filter((p): p is string => typeof p === 'string' && p.length > 1))].sort((a, b) => b.length - a.length);
  return (s) => known.reduce((out, p) => (out.includes(p) ? out.split(p).join('<host>') : out), s);
}
