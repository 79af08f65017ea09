/**
 * WebAssembly text (`.wat`/`.wast`) to binary for the CLI, with wabt; a syntax error becomes
 * INVALID_MODULE carrying wabt's `FILE:LINE:COL: error: REASON` (up to MAX_WAT_ERRORS of them)
 * and `{ line, column }` of the first in its details.
 *
 * Invariant: the message names the file only as the caller gave it (the CLI: the user's own path
 * on the user's own terminal; nothing else calls this), and every control, C1 or bidi character
 * of the offending text is escaped, so a hostile .wat cannot drive the terminal it is run from.
 */

import { SandboxError } from '../../errors.ts';

export const MAX_WAT_ERRORS = 3;

const FEATURES = { exceptions: true, threads: true, multi_value: true, simd: true, tail_call: true, bulk_memory: true, reference_types: true };

const escape = (s: string): string =>
  s.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * The name wabt is given; errors are re-labelled with the caller's. (wabt 1.0.x garbles some
 * file names in its messages — a 12-character one gets a stray byte — so it never sees ours.)
 */
const WABT_NAME = 'x.wat';

/** wabt's exception text → INVALID_MODULE with its first errors' positions and reasons. */
export function watError(name: string, e: unknown): SandboxError {
  const text = e instanceof Error ? e.message : String(e);
  const errors = [...text.matchAll(/:(\d+):(\d+): error: ([^\n]*)/g)].map((m) => ({ line: Number(m[1]), column: Number(m[2]), reason: m[3]! }));
  const shownName = escape(name);
  if (errors.length === 0) return new SandboxError('INVALID_MODULE', `${shownName}: not valid WebAssembly text`);
  const more = errors.length > MAX_WAT_ERRORS ? ` (and ${errors.length - MAX_WAT_ERRORS} more)` : '';
  const message = errors
    .slice(0, MAX_WAT_ERRORS)
    .map((x) => `${shownName}:${x.line}:${x.column}: error: ${escape(x.reason)}`)
    .join('; ');
  return new SandboxError('INVALID_MODULE', `${message}${more}`, { line: errors[0]!.line, column: errors[0]!.column });
}

/** Compile text-format `source`; `name` is how errors refer to it. */
export async function compileWat(name: string, source: string): Promise<Uint8Array> {
  const wabt = await (await import('wabt')).default();
  let m: ReturnType<typeof wabt.parseWat> | undefined;
  try {
    m = wabt.parseWat(WABT_NAME, source, FEATURES);
    m.resolveNames();
    return new Uint8Array(m.toBinary({}).buffer);
  } catch (e) {
    throw watError(name, e);
  } finally {
    m?.destroy();
  }
}
