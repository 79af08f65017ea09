/**
 * Writes one instrumented function body from the scanner's records: unchanged instruction spans
 * copied verbatim, charge and check code inserted at block starts, calls and `ref.func`
 * re-encoded with renumbered indices, bulk instructions replaced by calls to their helpers.
 *
 * Owns: the code sequences the host contract depends on ($fuel is the exported global, $refill
 * the imported function, $refill_local the module's own function that stores its argument in
 * $fuel and returns `call $refill` of it (twins.ts), $f the appended i64 local, C the block's
 * static cost):
 * - fast path (no exception handling; the counter lives in $f):
 *   entry   `global.get $fuel; i64.const C; i64.sub; local.tee $f; i64.const 0; i64.lt_s;
 *            if; local.get $f; call $refill_local; local.set $f; end`
 *   block   `local.get $f; i64.const C; i64.sub; local.set $f`
 *   loop    the loop is wrapped and its refill moved out of its body, because a call inside a
 *           hot loop, even on a path never taken, makes V8 spill registers around it (measured:
 *           1.2–1.5× slower kernels). `loop bt … end` becomes
 *             block bt  loop bt  block                          ;; $done, $retry, $cold
 *               loop bt                                         ;; the original loop
 *                 local.get $f; i64.const C; i64.sub; local.tee $f; i64.const 0; i64.lt_s;
 *                 br_if 1                                       ;; to $cold
 *                 …                                             ;; labels leaving it: +3
 *               end
 *               br 2                                            ;; results out of $done
 *             end
 *             local.get $f; call $refill_local;
 *             i64.const C; i64.add; local.set $f; br 0          ;; re-enter: re-charges C
 *             end end
 *           which charges and refills exactly as the inline check would. An innermost loop
 *           inside another loop, in a body without calls (nesting.ts `doubles`, scan.ts
 *           `doubled`), of at most 2 KiB, in a body of at most 1 MiB, is written twice instead, so
 *           its fast writing has no way back from the refill (the `$retry` back edge cost nbody's
 *           short inner loops ~0.1×: V8 carries every live value around it):
 *             block bt  block  block  loop bt …(as above, check `br_if 1`)… end  br 2  end
 *               local.get $f; call $refill_local; i64.const C; i64.add; local.set $f
 *             end  block bt  block bt  loop bt                 ;; the second writing
 *               local.get $f; i64.const C; i64.sub; local.tee $f; i64.const 0; i64.lt_s;
 *               if; local.get $f; call $refill_local; local.set $f; end   …   end  end  end end
 *           Labels count the same in both writings (three levels above the loop), so the same
 *           records, branch replacements included, are written twice; a refill in the first
 *           moves on to the second, which re-enters the header: the same charges and checks. A loop that takes
 *           parameters keeps the inline form: `local.get $f; i64.const C; i64.sub; local.tee $f;
 *           i64.const 0; i64.lt_s; if; local.get $f; call $refill_local; local.set $f; end`.
 *   spill   `local.get $f; global.set $fuel` before every call-like instruction, `return`,
 *           the final `end` and any branch that can leave the function; $refill_local also
 *           stores the counter before it calls refill, so if refill throws the deficit is in
 *           $fuel and a guest that catches the host's exception (`catch_all`) is refused again
 *           at its next check point;
 *   reload  `global.get $fuel; local.set $f` after a call returns;
 * - threaded path (a fast-path body with no tail call, written as its function's twin F′, see
 *   twins.ts): as the fast path, but $f is the extra last parameter, so it arrives holding the
 *   counter and declared locals move up by one (every local.get/set/tee past the parameters is
 *   renumbered); the entry reads $f instead of the global
 *   (`local.get $f; i64.const C; i64.sub; local.tee $f; …`, the same check — or, when the scan
 *   found no call outside a loop (`entryCheck` false), only `local.get $f; i64.const C; i64.sub;
 *   local.set $f`, its wrapper checking instead, twins.ts); a direct call to a
 *   defined function G becomes `local.get $f; call G′; local.set $f` (no spill, no reload); the
 *   body after the entry check is wrapped in `block bt … end` (bt: [] → the results), so a branch
 *   out of the function lands there, and `local.get $f` follows that block and precedes every
 *   `return`, which returns the counter after the results. Calls to imports, helpers and
 *   indirect calls, and every refill, spill and reload as on the fast path.
 * - slow path (the body uses exception handling, or is at V8's locals limit; every charge works
 *   on $fuel, so unwinding never loses one; the code's structure is untouched): block
 *   `global.get $fuel; i64.const C; i64.sub; global.set $fuel`, entry and loop add
 *   `global.get $fuel; i64.const 0; i64.lt_s; if; global.get $fuel; call $refill;
 *   global.set $fuel; end`.
 *
 * Invariant: every inserted sequence is stack-neutral (on the threaded path, apart from the
 * counter pushed after the results where the function returns), and the only branches added are
 * the outlined loops' (whose wrappers shift the labels that cross them, nesting.ts; the threaded
 * path's outer block adds a level outside every label, so none moves), so every block
 * type, operand stack and validation result of the original is preserved. A body is written
 * straight into the output after a 5-byte gap for its size, then moved back over the unused part
 * of the gap (one native memmove instead of a copy through a scratch buffer).
 *
 * Does not protect against: a body V8 would refuse after growing (V8's per-function size limit,
 * 7 654 321 bytes, or 50 000 locals: a body at the locals limit is given the slow path instead).
 */

import { SandboxError } from '../../errors.ts';
import type { CodeBody } from '../code.ts';
import * as scan from './scan.ts';
import type { BodyScanner } from './scan.ts';
import * as sink from './sink.ts';
import type { Sink } from './sink.ts';
import { TemplateSet, leb } from './templates.ts';
import type { ThreadedBody } from './twins.ts';

// Module-local copies: under loaders such as tsx every access to an imported binding is a getter
// call, which would dominate the per-record loops below.
const R_ENTRY = scan.R_ENTRY;
const R_CHARGE = scan.R_CHARGE;
const R_LOOP = scan.R_LOOP;
const R_CALL = scan.R_CALL;
const R_RETURN_CALL = scan.R_RETURN_CALL;
const R_REF_FUNC = scan.R_REF_FUNC;
const R_BULK = scan.R_BULK;
const R_WRAP = scan.R_WRAP;
const R_SPILL = scan.R_SPILL;
const R_LOOP_OUT = scan.R_LOOP_OUT;
const R_LOOP_OPEN = scan.R_LOOP_OPEN;
const R_LOOP_CLOSE = scan.R_LOOP_CLOSE;
const R_BRANCH = scan.R_BRANCH;
const R_LOCAL = scan.R_LOCAL;
const patch = sink.patchLocals;
const putBytes = sink.putBytes;
const put = sink.put;
const copy = sink.copy;
const putLeb = sink.putLeb;
const putSleb = sink.putSleb;
const SPILL_RETURN = scan.SPILL_RETURN;
const SPILL_FINAL_END = scan.SPILL_FINAL_END;
const STRIDE = scan.STRIDE;

const LOCAL_GET = 0x20;
const LOCAL_SET = 0x21;
const BLOCK = 0x02;
const LOOP = 0x03;
const EMPTY = 0x40;
const END = 0x0b;
const CALL = 0x10;
const RETURN_CALL = 0x12;
const REF_FUNC = 0xd2;
const I64 = 0x7e;

/** Bodies larger than this (bytes) write no loop twice, so none nears V8's body size limit. */
const MAX_DOUBLING_BODY = 1 << 20;

/** V8's limit on the locals (params included) of one function. */
export const MAX_FUNCTION_LOCALS = 50000;

/** An upper bound on the bytes one record inserts (BRANCH replacements are bounded by the side
 *  buffer's length): the largest, a check with 5-byte indices and a 7-byte cost (costs stay below
 *  2^48, see cost.ts), is 58. */
const MAX_INSERT = 64;

export class BodyEmitter {
  private readonly templates: TemplateSet;

  /** See TemplateSet (templates.ts) for the indices. */
  constructor(fuelGlobal: number, refillFunction: number, localRefill: number) {
    this.templates = new TemplateSet(fuelGlobal, refillFunction, localRefill);
  }

  /**
   * Writes the code entry (size prefix, locals, code) described by `scan` to `out`.
   * `counterLocal` is the index of the appended i64 local, or -1 for the slow path.
   * With `thread`, the body is written as its threaded twin (see the module doc): the counter is
   * parameter `thread.param` (so locals from there on move up by one), direct calls to defined
   * functions go to their twins `thread.twinOffset` further on, and the body is wrapped in a
   * block of type `thread.blockType` so that every exit can push the counter after the results.
   */
  write(out: Sink, src: Uint8Array, code: CodeBody, scan: BodyScanner, counterLocal: number, thread?: ThreadedBody): void {
    const threaded = thread !== undefined;
    const fast = threaded || counterLocal >= 0;
    const tm = this.templates;
    const t = threaded ? tm.threaded(thread.param) : fast ? tm.fast(counterLocal) : tm.slow;
    const f = threaded ? leb(thread.param) : [];
    const twinOffset = threaded ? thread.twinOffset : 0;
    const recs = scan.recs;
    const side = scan.side.buf;
    const n = scan.count * STRIDE;
    const groupsStart = afterLeb(src, code.bodyStart);

    // Room for the largest possible body: the original plus every insertion at its largest.
    // The size prefix gets 5 bytes; once the size is known the body moves back over the spare.
    // A doubled loop's records and side bytes are written twice: at most everything, twice.
    const mayDouble = fast && scan.doubled > 0 && code.end - code.bodyStart <= MAX_DOUBLING_BODY;
    const twice = mayDouble ? 2 : 1;
    out.room(5 + twice * ((code.end - code.bodyStart) + (scan.count + 2) * MAX_INSERT + scan.side.len));
    const buf = out.buf;
    const start = out.len + 5;
    let p = start;

    if (threaded) p = copy(buf, p, src, code.bodyStart, code.codeStart);
    else if (fast) {
      p = putLeb(buf, p, code.locals.length + 1);
      p = copy(buf, p, src, groupsStart, code.codeStart);
      buf[p++] = 1;
      buf[p++] = I64;
    } else p = copy(buf, p, src, code.bodyStart, code.codeStart);

    // Declared-local indices of a threaded body move up by one: most in place, as each span is
    // copied (scan.ts `patches`), the rest through LOCAL records.
    const patches = scan.patches;
    const pn = threaded ? scan.patchCount : 0;
    let pi = 0;
    let from = code.codeStart;
    // A doubled loop (scan.ts): its LOOP_OPEN record, and where the first writing started.
    let doubling = -1;
    let second = false;
    let doubleFrom = 0;
    let doublePi = 0;
    for (let i = 0; i < n; i += STRIDE) {
      let kind = recs[i]!;
      const offset = recs[i + 1]!;
      const value = recs[i + 3]!;
      if (!fast) {
        // The slow path keeps the original structure: no outlined loops, no renumbered labels.
        if (kind === R_LOOP_OUT) kind = R_LOOP;
        else if (kind === R_LOOP_OPEN || kind === R_LOOP_CLOSE || kind === R_BRANCH || kind === R_WRAP || kind === R_SPILL) continue;
      }
      // Every record inserts or replaces at `offset`: the unchanged code before it goes first.
      if (offset > from) {
        const q = p;
        p = copy(buf, p, src, from, offset);
        if (pi < pn && patches[pi]! < offset) pi = patch(buf, q - from, patches, pi, pn, offset);
        from = offset;
      }
      if (kind === R_CALL && threaded && recs[i + 4] === 1 && thread.twinned[value] === 1) {
        // A direct call to a defined function goes to its twin: `local.get $f; call F'; local.set $f`.
        buf[p++] = LOCAL_GET;
        p = putBytes(buf, p, f);
        buf[p++] = CALL;
        p = putLeb(buf, p, value + twinOffset);
        buf[p++] = LOCAL_SET;
        p = putBytes(buf, p, f);
        from = recs[i + 2]!;
        continue;
      }
      switch (kind) {
        case R_ENTRY:
        case R_LOOP:
          if (kind === R_ENTRY && threaded && !thread.entryCheck) {
            // Every call this body makes follows a loop header's check (scan.ts `entryCheck`):
            // charge the entry, check at that header (or, without loops, in the caller).
            p = put(buf, p, t.chargePre);
            p = putSleb(buf, p, value);
            p = put(buf, p, t.chargePost);
          } else {
            p = put(buf, p, kind === R_ENTRY ? t.entryPre : t.loopPre);
            p = putSleb(buf, p, value);
            p = put(buf, p, t.checkPost);
          }
          if (kind === R_ENTRY && threaded) {
            buf[p++] = BLOCK;
            p = put(buf, p, thread.blockType);
          }
          break;
        case R_LOOP_OUT:
          if (second) {
            // The second writing of a doubled loop checks inline (it runs only after a refill).
            p = put(buf, p, t.loopPre);
            p = putSleb(buf, p, value);
            p = put(buf, p, t.checkPost);
            break;
          }
          p = put(buf, p, t.loopPre);
          p = putSleb(buf, p, value);
          p = put(buf, p, t.outPost);
          break;
        case R_CHARGE:
          if (value === 0) break;
          p = put(buf, p, t.chargePre);
          p = putSleb(buf, p, value);
          p = put(buf, p, t.chargePost);
          break;
        case R_LOOP_OPEN: {
          // block bt; loop bt; block — then the original `loop bt` follows. A doubled loop's
          // first writing has `block` in place of `loop bt` (no way back), its second `loop bt; block`.
          const typeEnd = recs[i + 2]!;
          if (second) {
            // `block bt; block bt`: the loop's labels count as in the first writing.
            buf[p++] = BLOCK;
            p = copy(buf, p, src, offset + 1, typeEnd);
            buf[p++] = BLOCK;
            p = copy(buf, p, src, offset + 1, typeEnd);
            break;
          }
          buf[p++] = BLOCK;
          p = copy(buf, p, src, offset + 1, typeEnd);
          if (mayDouble && recs[i + 4] === 1) {
            doubling = i;
            doubleFrom = from;
            doublePi = pi;
            buf[p++] = BLOCK;
            buf[p++] = EMPTY;
          } else {
            buf[p++] = LOOP;
            p = copy(buf, p, src, offset + 1, typeEnd);
          }
          buf[p++] = BLOCK;
          buf[p++] = EMPTY;
          break;
        }
        case R_LOOP_CLOSE:
          if (doubling >= 0 && !second) {
            // The first writing's exit and refill, which falls into the second writing.
            p = put(buf, p, t.closePre);
            p = putSleb(buf, p, recs[value + 3]!);
            p = put(buf, p, t.firstPost);
            second = true;
            i = doubling - STRIDE;
            from = doubleFrom;
            pi = doublePi;
            continue;
          }
          if (second) {
            buf[p++] = END;
            buf[p++] = END;
            buf[p++] = END;
            doubling = -1;
            second = false;
            break;
          }
          p = put(buf, p, t.closePre);
          p = putSleb(buf, p, recs[value + 3]!);
          p = put(buf, p, t.closePost);
          break;
        case R_BRANCH:
          p = copy(buf, p, side, value, recs[i + 4]!);
          from = recs[i + 2]!;
          break;
        case R_CALL:
        case R_RETURN_CALL:
        case R_BULK:
          p = put(buf, p, t.spill);
          buf[p++] = kind === R_RETURN_CALL ? RETURN_CALL : CALL;
          p = putLeb(buf, p, value);
          if (kind !== R_RETURN_CALL) p = put(buf, p, t.reload);
          from = recs[i + 2]!;
          break;
        case R_REF_FUNC:
          buf[p++] = REF_FUNC;
          p = putLeb(buf, p, value);
          from = recs[i + 2]!;
          break;
        case R_WRAP:
          p = put(buf, p, t.spill);
          from = recs[i + 2]!;
          p = copy(buf, p, src, offset, from);
          p = put(buf, p, t.reload);
          break;
        case R_SPILL:
          if (!threaded) p = put(buf, p, t.spill);
          else {
            // A branch out of the function now leaves the wrapping block; `return` and the end of
            // that block push the counter after the results.
            const why = recs[i + 4]!;
            if (why === SPILL_FINAL_END) buf[p++] = END;
            if (why === SPILL_RETURN || why === SPILL_FINAL_END) {
              buf[p++] = LOCAL_GET;
              p = putBytes(buf, p, f);
            }
          }
          break;
        case R_LOCAL:
          if (!threaded) break;
          buf[p++] = recs[i + 4]!;
          p = putLeb(buf, p, value);
          from = recs[i + 2]!;
          break;
      }
    }
    const q = p;
    p = copy(buf, p, src, from, code.end);
    if (pi < pn) pi = patch(buf, q - from, patches, pi, pn, code.end);
    // Stores past the end of a typed array are dropped silently: refuse rather than emit garbage.
    if (p > buf.length) throw new SandboxError('INTERNAL', `fuel rewriter: body at offset ${code.offset} overran its reservation`);
    const size = p - start;
    const prefix = putLeb(buf, out.len, size);
    if (prefix < start) buf.copyWithin(prefix, start, p);
    out.len = p - (start - prefix);
  }
}

/** The position after the u32 LEB at `p` (already validated by the parser). */
function afterLeb(b: Uint8Array, p: number): number {
  while (b[p]! >= 0x80) p++;
  return p + 1;
}

/** The number of locals a body declares plus its parameters (for the V8 locals limit). */
export function localCount(params: number, code: CodeBody): number {
  let n = params;
  for (const g of code.locals) n += g.count;
  return n;
}
