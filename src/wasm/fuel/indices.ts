/**
 * The fuel rewriter's index checks: every index an input names must be one of the input's own.
 *
 * Owns: the refusal of out-of-range indices. The rewriter appends its own functions (threaded
 * twins, `$refill_local`, the bulk helpers, after the refill import), the fuel counter global,
 * its types (the refill's, the twins', the helpers'), the counter local of every metered body,
 * and blocks (a threaded body's wrapper, an outlined loop's three). In an invalid input an index
 * just past the input's space would name one of those — `global.set 0` with no globals writes the
 * counter, `br 1` at the top of a body becomes a branch to the wrapper — and the output would
 * validate. So the scanner (scan.ts) checks function (call, return_call, ref.func), global
 * (global.get/set), type (call_indirect, return_call_indirect, call_ref, block types), local and
 * label indices as it meets them; Renumber (renumber.ts) checks element, export and start
 * function indices and exported and constant-expression global indices; instrument.ts checks
 * import and tag type indices and, once every body is decoded, typed references' heap types.
 *
 * Invariant: an index past the input's space is INVALID_MODULE naming it, its space's size and
 * its offset; never mapped, never wrapped.
 *
 * Does not protect against: indices into spaces the rewriter does not extend (tables, memories,
 * data and element segments, tags): V8 refuses those in the output as in the input — and the
 * input is validated before the rewrite anyway (validate.ts); these checks stand when a caller
 * skips that with `validated: true`.
 */

import { invalidModule } from '../bytes.ts';

/** The input's function count (imports included) and imported functions, and its global count. */
export interface IndexSpaces {
  readonly funcImports: number;
  readonly funcs: number;
  readonly globals: number;
}

export function outOfRange(what: string, index: number, count: number, offset: number): never {
  throw invalidModule(`${what} index ${index} is out of range (${count} ${what}s)`, offset, 'code');
}

/** The u32 LEB at `p` (already decoded once by the cursor, so well-formed). */
function u32At(b: Uint8Array, p: number): number {
  let result = 0;
  let shift = 0;
  for (;;) {
    const byte = b[p++]!;
    result += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) return result;
    shift += 7;
  }
}

/** The type index at `p` (call_indirect, return_call_indirect, call_ref) must be below `types`. */
export function checkTypeIndex(b: Uint8Array, p: number, types: number, offset: number): void {
  const t = u32At(b, p);
  if (t >= types) outOfRange('type', t, types, offset);
}

/** A block type at `p` that is a type index (not 0x40, a value type or a reference type) must be below `types`. */
export function checkBlockType(b: Uint8Array, p: number, types: number, offset: number): void {
  const first = b[p]!;
  if (first >= 0x40 && first < 0x80) return;
  checkTypeIndex(b, p, types, offset);
}
