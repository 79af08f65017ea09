/**
 * Validation of a module as given, before any rewriter touches it.
 *
 * Owns: `assertValidModule`, the gate both public transforms (`applyLimits`, `instrumentFuel`)
 * pass their input through unless the caller says it already did (`validated: true`). V8 is the
 * validator: `WebAssembly.validate` on the fast path and, only when that says no, a
 * `new WebAssembly.Module` whose CompileError carries V8's reason. An invalid module is
 * `INVALID_MODULE` with that reason (it names a function, a byte offset and what is wrong; never
 * a host path).
 *
 * Invariant: no rewriter output is built from bytes V8 refuses. The rewriters append their own
 * globals, functions, types, locals and blocks after the input's index spaces; an out-of-range
 * index in an invalid input would otherwise land on one of them (`global.set 0` with no globals
 * writes the fuel counter) and turn an invalid module into a valid one.
 *
 * Does not protect against: proposals the running V8 does not ship (memory64 or GC on Node 20):
 * such modules are INVALID_MODULE here even where another engine would accept them; a caller who
 * passes `validated: true` for bytes it has not validated (the rewriters' own index checks then
 * remain the only guard, see fuel/scan.ts).
 */

import { SandboxError } from '../errors.ts';

/** Longest V8 reason carried in the error (V8's messages are short; this bounds a surprise). */
const MAX_REASON_CHARS = 300;

/** Throws `INVALID_MODULE` with V8's reason unless V8 would compile `bytes`. */
export function assertValidModule(bytes: Uint8Array): void {
  const view = bytes as Uint8Array<ArrayBuffer>;
  if (WebAssembly.validate(view)) return;
  let reason = 'V8 refuses the module';
  try {
    new WebAssembly.Module(view);
  } catch (e) {
    if (e instanceof WebAssembly.CompileError) reason = cleanReason(e.message);
    else if (e instanceof RangeError) reason = cleanReason(e.message);
  }
  // V8 ends most reasons with the byte offset it stopped at: `… @+33`.
  const at = /@\+(\d+)$/.exec(reason);
  throw new SandboxError('INVALID_MODULE', `invalid module: ${reason}`, at === null ? { reason } : { reason, offset: Number(at[1]) });
}

/** V8's message without the API prefix (`WebAssembly.Module(): `), on one bounded line. */
function cleanReason(message: string): string {
  const line = message.replace(/^WebAssembly\.\w+\(\): /, '').replace(/\s+/g, ' ').trim();
  return line.length > MAX_REASON_CHARS ? `${line.slice(0, MAX_REASON_CHARS)}…` : line;
}
