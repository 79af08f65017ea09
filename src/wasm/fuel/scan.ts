/**
 * One pass over a function body that finds its basic blocks, their static costs, and every edit
 * the rewrite will make, as a flat list of records sorted by offset.
 *
 * Owns: where basic blocks start and what each costs (cost.ts). A block starts at the function
 * start and after loop / if / else / try / try_table / catch / catch_all / delegate / the end of
 * a block, if or try, after br_if / br_on_null / br_on_non_null, and after br / br_table / return /
 * unreachable / throw / rethrow / throw_ref / return_call* (the last group starts dead code,
 * which is not charged: it never runs). Code after a `block` opcode and after a loop's `end` is
 * reached only by falling through, so it joins the block before it (fewer charges, same sums on
 * every path that does not trap). The instruction that ends a block counts in that block;
 * block / loop / if count in the block before them; the block after `loop` is its header,
 * charged and checked on every iteration. Records, stride 5 (`kind, offset, end, value, extra`):
 * - ENTRY / CHARGE / LOOP: insert a charge of `value` units at `offset` (entry and loop headers
 *   also check the counter); LOOP_OUT is a loop header whose refill is outlined (body.ts; the slow
 *   path writes it as LOOP);
 * - LOOP_OPEN: wrappers before the `loop` at `[offset, end)` (`extra` 1: written twice, body.ts);
 *   LOOP_CLOSE: its exit and refill path at `offset` (after the `end`); `value`: its header record;
 * - BRANCH: replace `[offset, end)` by `side[value, extra)` (labels renumbered, nesting.ts);
 * - CALL / RETURN_CALL / REF_FUNC: replace `[offset, end)` by the opcode with function index
 *   `value` (already renumbered); a CALL's `extra` is 1 when the callee is a defined function
 *   (a threaded body calls its twin instead, twins.ts);
 * - LOCAL: `local.get/set/tee` (opcode in `extra`) of a declared local whose index + 1 needs a
 *   LEB of another length (rare: 127, 16383, …, or padded): a threaded body (counter = an extra
 *   parameter) writes the opcode with index `value` (the original + 1) in place of `[offset, end)`;
 *   other bodies ignore it. Other declared-local accesses are `patches`, incremented in place;
 * - BULK: replace `[offset, end)` by `call value` (a size-charging helper);
 * - WRAP: a call that needs the counter spilled before and reloaded after (call_indirect,
 *   call_ref); SPILL: spill before `offset` (return, return_call_indirect/ref, the final end, a
 *   branch that can leave the function; `extra` says which: SPILL_*).
 * A body with its counter in the global (slow path) ignores WRAP, SPILL, LOOP_OPEN/CLOSE, BRANCH.
 *
 * Invariant: records are in non-decreasing offset order; at one offset a charge precedes the spill,
 * a spill a branch's replacement, a loop's closing code the charge of the block after it. A block's
 * charge record is reserved at its start, its cost filled in at its end. Every index is checked (indices.ts).
 *
 * Does not protect against: other invalid code. This is a decoder (code.ts), not a validator: an
 * invalid body gets meaningless records and V8 refuses the output (the input is validated first,
 * validate.ts). Heap-type indices (`ref $t`) are checked per module, after decoding (instrument.ts).
 */

import { InstructionCursor } from '../code.ts';
import type { FuncType } from '../types.ts';
import type { CostModel } from './cost.ts';
import * as indices from './indices.ts';
import type { IndexSpaces } from './indices.ts';
import { Nesting } from './nesting.ts';
import { Sink, lebSize as sizeOfLeb } from './sink.ts';

export const R_ENTRY = 0;
export const R_CHARGE = 1;
export const R_LOOP = 2;
export const R_CALL = 3;
export const R_RETURN_CALL = 4;
export const R_REF_FUNC = 5;
export const R_BULK = 6;
export const R_WRAP = 7;
export const R_SPILL = 8;
export const R_LOOP_OUT = 9;
export const R_LOOP_OPEN = 10;
export const R_LOOP_CLOSE = 11;
export const R_BRANCH = 12;
export const R_LOCAL = 13;
/** `extra` of an R_SPILL record: why the counter must be written back there. */
export const SPILL_BRANCH = 0;
export const SPILL_RETURN = 1;
export const SPILL_FINAL_END = 2;
export const SPILL_TAIL_CALL = 3;
/** Fields per record. */
export const STRIDE = 5;

// Instruction classes (0 = plain: counts, nothing else).
const K_PLAIN = 0;
const K_BLOCK = 1; // block, if, try, try_table: ends the block before, a new one starts after
const K_LOOP = 2;
const K_NEXT = 3; // else, catch, catch_all: end this block
const K_BR_IF = 4; // also br_on_null / br_on_non_null
const K_BR = 5;
const K_BR_TABLE = 6;
const K_RETURN = 7;
const K_DEAD = 8; // unreachable, throw, rethrow, throw_ref
const K_CALL = 9;
const K_RETURN_CALL = 10;
const K_CALL_INDIRECT = 11; // call_indirect, call_ref
const K_RETURN_CALL_INDIRECT = 12; // return_call_indirect, return_call_ref
const K_REF_FUNC = 13;
const K_BULK = 14;
const K_END = 15; // end, delegate: end this block and close a construct
const K_LOCAL = 16; // local.get, local.set, local.tee: renumbered in a threaded body
const K_GLOBAL = 17; // global.get, global.set: index checked

const CLASS = new Uint8Array(256);
/** Exception-handling opcodes: a body using any of them keeps its counter in the global. */
const EH = new Uint8Array(256);
const CLASS_FC = new Uint8Array(32);
const STOP = new Uint8Array(256);
{
  const set = (cls: number, ...ops: number[]): void => ops.forEach((op) => (CLASS[op] = cls));
  set(K_BLOCK, 0x02, 0x04, 0x06, 0x1f);
  set(K_LOOP, 0x03);
  set(K_NEXT, 0x05, 0x07, 0x19);
  set(K_END, 0x0b, 0x18);
  set(K_BR_IF, 0x0d, 0xd5, 0xd6);
  set(K_BR, 0x0c);
  set(K_BR_TABLE, 0x0e);
  set(K_RETURN, 0x0f);
  set(K_DEAD, 0x00, 0x08, 0x09, 0x0a);
  set(K_CALL, 0x10);
  set(K_RETURN_CALL, 0x12);
  set(K_CALL_INDIRECT, 0x11, 0x14);
  set(K_RETURN_CALL_INDIRECT, 0x13, 0x15);
  set(K_REF_FUNC, 0xd2);
  set(K_BULK, 0x40); // memory.grow
  set(K_LOCAL, 0x20, 0x21, 0x22);
  set(K_GLOBAL, 0x23, 0x24);
  for (const op of [0x06, 0x07, 0x08, 0x09, 0x0a, 0x18, 0x19, 0x1f]) EH[op] = 1;
  // 0xFC: memory.init, memory.copy, memory.fill, table.init, table.copy, table.grow, table.fill.
  for (const sub of [8, 10, 11, 12, 14, 15, 17]) CLASS_FC[sub] = K_BULK;
  // The cursor stops at classed opcodes (EH included) and 0xFC; it only counts the others.
  for (let op = 0; op < 256; op++) STOP[op] = CLASS[op] !== 0 || EH[op] !== 0 || op === 0xfc ? 1 : 0;
}

const lebSize = sizeOfLeb; // module-local: an imported binding is a getter call under tsx
const { checkBlockType, checkTypeIndex, outOfRange } = indices;

const OP_END = 0x0b;
const OP_BLOCK = 0x02;
const OP_BR_TABLE = 0x0e;
const EMPTY_BLOCK = 0x40;
/** Depths tracked for loop-ness; deeper constructs (absurd in practice) simply keep their charges. */
const DEPTH_MASK = 0xffff;
const isLoop = new Uint8Array(DEPTH_MASK + 1);

/** `next` (twice as long) holding `a`'s contents. */
function grownInto<T extends Float64Array | Uint32Array>(a: T, next: T): T {
  next.set(a);
  return next;
}

/** Resolves the helper function index for a bulk instruction at `[offset, end)`. */
export type BulkResolver = (offset: number, end: number) => number;

/** Reads an already-validated u32 LEB at `p`; `lebEnd` receives the position after it. */
let lebEnd = 0;
function u32At(b: Uint8Array, p: number): number {
  let result = 0;
  let shift = 0;
  for (;;) {
    const byte = b[p++]!;
    result += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) break;
    shift += 7;
  }
  lebEnd = p;
  return result;
}

export class BodyScanner {
  /** Records, STRIDE fields each: kind, offset, end, value, extra. */
  recs = new Float64Array(1024);
  /** Number of records. */
  count = 0;
  /**
   * Offsets (ascending) of the index LEBs of `local.get/set/tee` of declared locals whose index
   * + 1 encodes minimally in the same number of bytes: a threaded body increments them in place
   * (body.ts). The other declared-local accesses are LOCAL records.
   */
  patches = new Uint32Array(1024);
  patchCount = 0;
  /** Replacement bytes of BRANCH records. */
  readonly side = new Sink(256);
  /** The body uses exception handling. */
  eh = false;
  /** The body makes a tail call (return_call, return_call_indirect, return_call_ref). */
  tail = false;
  doubled = 0; // 1 when a LOOP_OPEN has `extra` 1: its loop is written twice (body.ts)
  entryCheck = true; // whether a threaded twin checks its entry (nesting.ts), else its wrapper
  loops = 0;
  chargePoints = 0;
  bulkSites = 0;
  private readonly cursor: InstructionCursor;
  private readonly nesting = new Nesting();
  private readonly bytes: Uint8Array;
  private readonly instructionCost: number;
  private readonly callCost: number;
  private readonly bulk: BulkResolver;
  private readonly types: readonly FuncType[];

  /** `spaces`: the input's index spaces (indices.ts); every index a body names must be below them. */
  constructor(bytes: Uint8Array, costs: CostModel, private readonly spaces: IndexSpaces, types: readonly FuncType[], bulk: BulkResolver) {
    this.bytes = bytes;
    this.cursor = new InstructionCursor(bytes, 0, 0);
    this.instructionCost = costs.instruction;
    this.callCost = costs.call;
    this.types = types;
    this.bulk = bulk;
  }

  private push(kind: number, offset: number, end: number, value: number, extra = 0): number {
    const n = this.count;
    if ((n + 1) * STRIDE > this.recs.length) this.recs = grownInto(this.recs, new Float64Array(this.recs.length * 2));
    const r = this.recs;
    const i = n * STRIDE;
    r[i] = kind;
    r[i + 1] = offset;
    r[i + 2] = end;
    r[i + 3] = value;
    r[i + 4] = extra;
    this.count = n + 1;
    return i;
  }

  private patch(n: number, at: number): number {
    if (n >= this.patches.length) this.patches = grownInto(this.patches, new Uint32Array(this.patches.length * 2));
    this.patches[n] = at;
    return n + 1;
  }

  /**
   * Scans the instruction stream `[codeStart, end)` of one body, replacing earlier results.
   * `params`: locals from there on are patches or LOCAL records; `locals`: params + declared locals.
   */
  scan(codeStart: number, end: number, params: number, locals: number): void {
    const c = this.cursor;
    const b = this.bytes;
    const cls = CLASS;
    const clsFc = CLASS_FC;
    const eh = EH;
    const unit = this.instructionCost;
    const callUnit = this.callCost;
    const { funcImports: imports, funcs, globals } = this.spaces;
    const nesting = this.nesting;
    c.reset(codeStart, end);
    nesting.reset();
    this.count = 0;
    this.side.len = 0;
    let doubled = 0;
    let tail = false;
    let usesEh = 0;
    let loops = 0;
    let charges = 0;
    let bulkSites = 0;
    let patches = 0;
    // The open block: its reserved charge record (-1: dead code) and what it has cost so far.
    let charge = this.push(R_ENTRY, codeStart, codeStart, 0);
    let cost = 0;
    let next = R_CHARGE; // kind of the block that starts after the current instruction
    const stops = STOP;
    while (c.skipTo(stops)) {
      const op = c.op;
      cost += unit * c.steps;
      let k: number;
      if (op < 256) {
        k = cls[op]!;
        usesEh |= eh[op]!;
      } else {
        k = op >>> 16 === 0xfc && (op & 0xffff) < 32 ? clsFc[op & 0xffff]! : K_PLAIN;
      }
      if (k === K_PLAIN) continue;
      if (k === K_LOCAL) {
        // An index whose LEB keeps its length when incremented is patched in place (`patches`).
        const x = u32At(b, c.offset + 1);
        if (x < params) continue;
        if (x >= locals) outOfRange('local', x, locals, c.offset);
        if (lebSize(x + 1) === lebEnd - c.offset - 1) patches = this.patch(patches, c.offset + 1);
        else this.push(R_LOCAL, c.offset, c.end, x + 1, op);
        continue;
      }
      if (k === K_GLOBAL) {
        const g = u32At(b, c.offset + 1);
        if (g >= globals) outOfRange('global', g, globals, c.offset);
        continue;
      }
      if (k >= K_CALL && k <= K_RETURN_CALL_INDIRECT) nesting.call(c.depth);
      switch (k) {
        case K_BLOCK:
          checkBlockType(b, c.offset + 1, this.types.length, c.offset);
          nesting.open(c.depth, -1);
          isLoop[c.depth & DEPTH_MASK] = 0;
          // A `block` body is entered only by falling through: it continues the current block.
          if (op === OP_BLOCK) continue;
          next = R_CHARGE;
          break;
        case K_LOOP:
          checkBlockType(b, c.offset + 1, this.types.length, c.offset);
          if (this.outlinable(c.offset + 1)) {
            this.push(R_LOOP_OPEN, c.offset, c.end, 0);
            nesting.open(c.depth, this.count * STRIDE, true); // the header record, pushed below
            next = R_LOOP_OUT;
          } else {
            nesting.open(c.depth, -1, true);
            next = R_LOOP;
          }
          isLoop[c.depth & DEPTH_MASK] = 1;
          loops++;
          break;
        case K_NEXT:
          next = R_CHARGE;
          break;
        case K_END:
          if (c.done) {
            this.push(R_SPILL, c.offset, c.offset, 0, SPILL_FINAL_END);
            next = -1;
            break;
          }
          if (op === OP_END) {
            const header = nesting.close(c.depth + 1);
            if (header >= 0) {
              const open = header - STRIDE; // its LOOP_OPEN record, `extra` 1 when written twice
              if (nesting.doubles(c.depth + 1, c.end - this.recs[open + 1]!)) doubled = this.recs[open + 4] = 1;
              this.push(R_LOOP_CLOSE, c.end, c.end, header);
            }
            // Nothing branches to the end of a loop: the code after it is reached only by
            // falling out of the loop's last block, which it joins (charged once, on exit).
            if (isLoop[(c.depth + 1) & DEPTH_MASK] === 1 && c.depth + 1 < DEPTH_MASK) continue;
          }
          next = R_CHARGE;
          break;
        case K_BR_IF:
          this.branch(op, c.offset, c.end, c.depth);
          next = R_CHARGE;
          break;
        case K_BR:
          this.branch(op, c.offset, c.end, c.depth);
          next = -1;
          break;
        case K_BR_TABLE:
          this.branchTable(c.offset, c.end, c.depth);
          next = -1;
          break;
        case K_RETURN:
          this.push(R_SPILL, c.offset, c.offset, 0, SPILL_RETURN);
          next = -1;
          break;
        case K_DEAD:
          next = -1;
          break;
        case K_CALL: {
          cost += callUnit;
          const f = u32At(b, c.offset + 1);
          if (f >= funcs) outOfRange('function', f, funcs, c.offset);
          this.push(R_CALL, c.offset, c.end, f < imports ? f : f + 1, f < imports ? 0 : 1);
          continue;
        }
        case K_RETURN_CALL: {
          cost += callUnit;
          const f = u32At(b, c.offset + 1);
          if (f >= funcs) outOfRange('function', f, funcs, c.offset);
          this.push(R_RETURN_CALL, c.offset, c.end, f < imports ? f : f + 1);
          tail = true;
          next = -1;
          break;
        }
        case K_CALL_INDIRECT:
          cost += callUnit;
          checkTypeIndex(b, c.offset + 1, this.types.length, c.offset);
          this.push(R_WRAP, c.offset, c.end, 0);
          continue;
        case K_RETURN_CALL_INDIRECT:
          cost += callUnit;
          checkTypeIndex(b, c.offset + 1, this.types.length, c.offset);
          this.push(R_SPILL, c.offset, c.offset, 0, SPILL_TAIL_CALL);
          tail = true;
          next = -1;
          break;
        case K_REF_FUNC: {
          const f = u32At(b, c.offset + 1);
          if (f >= funcs) outOfRange('function', f, funcs, c.offset);
          this.push(R_REF_FUNC, c.offset, c.end, f < imports ? f : f + 1);
          continue;
        }
        case K_BULK:
          bulkSites++;
          this.push(R_BULK, c.offset, c.end, this.bulk(c.offset, c.end));
          continue;
      }
      // The current block ends with this instruction.
      if (charge >= 0) {
        this.recs[charge + 3] = cost;
        if (cost > 0 || this.recs[charge] !== R_CHARGE) charges++;
      }
      cost = 0;
      charge = next < 0 ? -1 : this.push(next, c.end, c.end, 0);
    }
    this.eh = usesEh !== 0;
    this.doubled = nesting.hasCalls ? 0 : doubled; // with calls, body.ts writes no loop twice
    this.tail = tail;
    this.entryCheck = this.eh || nesting.entryCheck(loops > 0);
    this.loops = loops;
    this.chargePoints = charges;
    this.bulkSites = bulkSites;
    this.patchCount = patches;
  }

  /** br / br_if / br_on_null / br_on_non_null: spill if it can leave the function; renumber. */
  private branch(op: number, offset: number, end: number, depth: number): void {
    const label = u32At(this.bytes, offset + 1);
    if (label > depth) outOfRange('label', label, depth + 1, offset);
    if (label === depth) this.push(R_SPILL, offset, offset, 0, SPILL_BRANCH);
    const shift = this.nesting.shift(depth, label);
    if (shift === 0) return;
    const side = this.side;
    const from = side.len;
    side.byte(op);
    side.u32(label + shift);
    this.push(R_BRANCH, offset, end, from, side.len);
  }

  private branchTable(offset: number, end: number, depth: number): void {
    const b = this.bytes;
    const n = u32At(b, offset + 1);
    let p = lebEnd;
    let leaves = false;
    let shifted = false;
    for (let i = 0; i <= n; i++) {
      const label = u32At(b, p);
      p = lebEnd;
      if (label > depth) outOfRange('label', label, depth + 1, offset);
      if (label === depth) leaves = true;
      if (this.nesting.shift(depth, label) !== 0) shifted = true;
    }
    if (leaves) this.push(R_SPILL, offset, offset, 0, SPILL_BRANCH);
    if (!shifted) return;
    const side = this.side;
    const from = side.len;
    side.byte(OP_BR_TABLE);
    side.u32(n);
    p = offset + 1;
    u32At(b, p);
    p = lebEnd;
    for (let i = 0; i <= n; i++) {
      const label = u32At(b, p);
      p = lebEnd;
      side.u32(label + this.nesting.shift(depth, label));
    }
    this.push(R_BRANCH, offset, end, from, side.len);
  }

  /**
   * Whether the loop whose block type starts at `p` can be outlined: it takes no parameters (its
   * wrappers reuse its block type, which must then be valid for a block entered with an empty stack).
   */
  private outlinable(p: number): boolean {
    const first = this.bytes[p]!;
    if (first === EMPTY_BLOCK || (first >= 0x40 && first < 0x80)) return true;
    const type = this.types[u32At(this.bytes, p)];
    return type !== undefined && type.params.length === 0;
  }
}
