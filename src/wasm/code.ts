/**
 * Instruction-stream decoding: an allocation-free cursor over a function body or constant
 * expression, the `decodeInstructions` iterator built on it, and the code-entry reader (size,
 * local declarations, where the instruction stream starts).
 *
 * Owns: instruction boundaries. Each step consumes exactly one instruction with all of its
 * immediates and reports `[offset, end)` as absolute module offsets, so a rewriter can copy
 * unchanged spans verbatim. Block nesting is tracked (block/loop/if/try/try_table open, `end`
 * and `delegate` close), so the body's final `end` is known.
 *
 * Invariant: the spans of one body tile it exactly: the first starts at the instruction-stream
 * offset, each starts where the previous ended, and the last is the `end` that closes the
 * function, which must be the body's last byte. Anything else is INVALID_MODULE with an offset.
 *
 * Does not protect against: type errors. This is a decoder, not a validator: `i32.add` on an
 * empty stack or a branch to a missing label decodes fine; V8 validates at compile time.
 */

import { Reader } from './bytes.ts';
import { Imm, Op, PREFIXED_IMM, PREFIX_ATOMIC, PREFIX_MISC, PREFIX_SIMD, SINGLE_IMM, UNKNOWN, opName } from './opcodes.ts';
import { isSimpleValTypeByte, readHeapType, readValType } from './types.ts';
import type { ValType } from './types.ts';

// Module-local copies: the hot loop must not go through import bindings (loaders such as tsx
// turn each imported-name access into a getter call, which costs more than the decode itself).
const SINGLE: Uint8Array = SINGLE_IMM;
const MISC: Uint8Array = PREFIXED_IMM.get(PREFIX_MISC)!;
const SIMD: Uint8Array = PREFIXED_IMM.get(PREFIX_SIMD)!;
const ATOMIC: Uint8Array = PREFIXED_IMM.get(PREFIX_ATOMIC)!;
const P_MISC = PREFIX_MISC;
const P_SIMD = PREFIX_SIMD;
const P_ATOMIC = PREFIX_ATOMIC;
const NO_OP = UNKNOWN;
const OP_END = Op.END;
const OP_DELEGATE = Op.DELEGATE;
const I_NONE = Imm.NONE;
const I_BLOCK = Imm.BLOCK;
const I_BR_TABLE = Imm.BR_TABLE;
const I_INDEX = Imm.INDEX;
const I_INDEX2 = Imm.INDEX2;
const I_MEMARG = Imm.MEMARG;
const I_I32 = Imm.I32;
const I_I64 = Imm.I64;
const I_F32 = Imm.F32;
const I_F64 = Imm.F64;
const I_SELECT_T = Imm.SELECT_T;
const I_HEAP_TYPE = Imm.HEAP_TYPE;
const I_TRY_TABLE = Imm.TRY_TABLE;
const I_ZERO_BYTE = Imm.ZERO_BYTE;
const I_BYTES16 = Imm.BYTES16;
const I_LANE = Imm.LANE;
const I_MEMARG_LANE = Imm.MEMARG_LANE;

/** One-byte block types: 0x40 (empty) and every stand-alone value type byte. */
const BLOCK_TYPE_BYTE = new Uint8Array(256);
for (let b = 0; b < 256; b++) BLOCK_TYPE_BYTE[b] = b === 0x40 || isSimpleValTypeByte(b) ? 1 : 0;

/** `advance`'s `stops` tables: stop after every instruction; stop only at `stop` (or the end). */
const EVERY = new Uint8Array(256).fill(1);
const NONE = new Uint8Array(256);
/** `stop` value of `advance` that matches no opcode key. */
const NO_KEY = -1;

/**
 * Skips a LEB128 of at most 4 bytes (always a valid u32/s32/u64/s64: only a 5th byte can carry
 * unused bits); returns the position after it, or -1 to send the caller down the checked path.
 */
function shortLeb(b: Uint8Array, p: number, end: number): number {
  const limit = p + 4 < end ? p + 4 : end;
  for (; p < limit; p++) if (b[p]! < 0x80) return p + 1;
  return -1;
}

/**
 * Steps through instructions without allocating. After `next()` returns true, `op`, `offset`
 * and `end` describe the instruction just consumed; `done` turns true once the closing `end` of
 * the outermost block has been consumed.
 */
export class InstructionCursor {
  op = -1;
  offset = 0;
  end = 0;
  depth = 0;
  done = false;
  /** Instructions consumed by the last `next`, `seek` or `skipTo`. */
  steps = 0;
  private readonly r: Reader;
  /** True for a function body: the closing `end` must be the last byte of the range. */
  private exact: boolean;

  constructor(bytes: Uint8Array, start: number, end: number, exact = true, section = 'code') {
    this.r = new Reader(bytes, start, end, section);
    this.exact = exact;
  }

  /** Re-aims the cursor at another range (saves an allocation per body in hot loops). */
  reset(start: number, end: number, exact = true): void {
    this.r.pos = start;
    this.r.end = Math.min(end, this.r.bytes.length);
    this.exact = exact;
    this.depth = 0;
    this.done = false;
    this.op = -1;
  }

  /** Consumes one instruction; false once the closing `end` has already been consumed. */
  next(): boolean {
    return this.advance(NO_KEY, EVERY);
  }

  /**
   * Consumes instructions until one whose first byte is flagged in `stops` has been consumed
   * (true, the cursor describes it) or the closing `end` has been (false unless `end` is
   * flagged). `steps` counts the instructions consumed, the last included: a scanner can pass
   * over the instructions it has nothing to do for in one call.
   */
  skipTo(stops: Uint8Array): boolean {
    return this.advance(NO_KEY, stops);
  }

  /**
   * Consumes instructions until one with key `op` has been consumed (true, the cursor describes
   * it) or the closing `end` has been (false). One call scans a whole body for a rare opcode.
   */
  seek(op: number): boolean {
    return this.advance(op, NONE);
  }

  private advance(stop: number, stops: Uint8Array): boolean {
    if (this.done) return false;
    const r = this.r;
    const b = r.bytes;
    const end = r.end;
    let p = r.pos;
    let depth = this.depth;
    let at = p;
    let key = -1;
    let steps = 0;
    let hit = false;
    for (;;) {
      at = p;
      if (at >= end) {
        r.fail(this.exact ? 'function body ends before its final end' : 'expression is missing its end', at);
      }
      const byte = b[at]!;
      const imm = SINGLE[byte]!;
      key = byte;
      p = at + 1;
      // Fast paths for the shapes that make up most code: no immediate, or short immediates.
      if (imm === I_NONE) {
        if (byte === OP_END) {
          if (depth === 0) {
            this.done = true;
            if (this.exact && p !== end) r.fail('bytes after the final end of the function body', p);
            steps++;
            hit = stops[byte] === 1 || key === stop;
            break;
          }
          depth--;
        }
      } else if (imm === I_BLOCK && p < end && BLOCK_TYPE_BYTE[b[p]!] === 1) {
        p++;
        depth++;
      } else if ((imm === I_INDEX && byte !== OP_DELEGATE) || imm === I_I32) {
        p = shortLeb(b, p, end);
      } else if (imm === I_MEMARG && p < end && b[p]! < 0x40) {
        p = shortLeb(b, p + 1, end);
      } else {
        p = -1;
      }
      if (p < 0) {
        this.depth = depth;
        p = this.slow(byte, at);
        depth = this.depth;
        key = this.op;
      }
      steps++;
      if (stops[byte] === 1 || key === stop) {
        hit = true;
        break;
      }
    }
    this.steps = steps;
    this.depth = depth;
    r.pos = p;
    this.op = key;
    this.offset = at;
    this.end = p;
    return hit;
  }

  /** Everything the fast path does not cover: sets `op`, returns the position after the instruction. */
  private slow(byte: number, at: number): number {
    const r = this.r;
    r.pos = at + 1;
    let key = byte;
    let imm: number;
    if (byte >= P_MISC && byte <= P_ATOMIC) {
      const sub = r.u32();
      const table = byte === P_MISC ? MISC : byte === P_SIMD ? SIMD : ATOMIC;
      imm = sub < table.length ? table[sub]! : NO_OP;
      key = (byte << 16) | (sub & 0xffff);
      if (imm === NO_OP) r.fail(`unknown opcode 0x${byte.toString(16)} ${sub}`, at);
    } else {
      imm = SINGLE[byte]!;
      if (imm === NO_OP) r.fail(`unknown opcode 0x${byte.toString(16)}`, at);
    }
    switch (imm) {
      case I_NONE:
        break;
      case I_BLOCK:
        this.blockType();
        this.depth++;
        break;
      case I_INDEX:
        r.u32();
        if (byte === OP_DELEGATE) {
          if (this.depth === 0) r.fail('delegate outside a try block', at);
          this.depth--;
        }
        break;
      case I_INDEX2:
        r.u32();
        r.u32();
        break;
      case I_MEMARG:
        this.memarg();
        break;
      case I_I32:
        r.skipLeb(32, true);
        break;
      case I_I64:
        r.skipLeb(64, true);
        break;
      case I_F32:
        r.skip(4);
        break;
      case I_F64:
        r.skip(8);
        break;
      case I_BR_TABLE: {
        const count = r.vecCount();
        for (let i = 0; i <= count; i++) r.u32();
        break;
      }
      case I_SELECT_T: {
        const count = r.vecCount();
        for (let i = 0; i < count; i++) readValType(r);
        break;
      }
      case I_HEAP_TYPE:
        readHeapType(r);
        break;
      case I_TRY_TABLE:
        this.blockType();
        this.catchClauses();
        this.depth++;
        break;
      case I_ZERO_BYTE:
        if (r.u8() !== 0) r.fail('expected a zero byte', r.pos - 1);
        break;
      case I_BYTES16:
        r.skip(16);
        break;
      case I_LANE:
        r.skip(1);
        break;
      case I_MEMARG_LANE:
        this.memarg();
        r.skip(1);
        break;
      default:
        r.fail(`unknown immediate kind ${imm}`, at);
    }
    this.op = key;
    return r.pos;
  }

  private blockType(): void {
    const r = this.r;
    const at = r.pos;
    const b = r.peekU8();
    if (b >= 0x40 && b < 0x80) {
      r.pos++;
      if (b === 0x63 || b === 0x64) readHeapType(r);
      else if (BLOCK_TYPE_BYTE[b] === 0) r.fail(`malformed block type 0x${b.toString(16)}`, at);
      return;
    }
    if (r.s33() < 0) r.fail('malformed block type', at);
  }

  /** align (bit 6: a memory index follows), then the offset, read as u64: exact for memory64, a
   *  superset for 32-bit memories (V8 rejects an offset above 2^32 when it validates). */
  private memarg(): void {
    const r = this.r;
    const align = r.u32();
    if (align & 0x40) r.u32();
    r.skipLeb(64, false);
  }

  private catchClauses(): void {
    const r = this.r;
    const count = r.vecCount();
    for (let i = 0; i < count; i++) {
      const at = r.pos;
      const kind = r.u8();
      if (kind > 3) r.fail(`malformed catch clause kind ${kind}`, at);
      if (kind < 2) r.u32();
      r.u32();
    }
  }
}

export interface Instruction {
  /** Opcode key (see opcodes.ts): the byte, or `prefix << 16 | sub`. */
  readonly op: number;
  readonly name: string;
  /** Absolute offset of the opcode byte. */
  readonly offset: number;
  /** Absolute offset just past the last immediate. */
  readonly end: number;
}

/**
 * Yields every instruction of the stream `[start, end)` of `bytes` (pass the whole module and a
 * body's `codeStart`/`end` to get absolute offsets). The last one yielded is the closing `end`.
 */
export function* decodeInstructions(bytes: Uint8Array, start: number, end: number = bytes.length): Generator<Instruction> {
  const c = new InstructionCursor(bytes, start, end, true);
  while (c.next()) yield { op: c.op, name: opName(c.op) ?? '?', offset: c.offset, end: c.end };
}

/** Reads a constant expression at `r.pos` up to and including its `end`; returns its range. */
export function readConstExpr(r: Reader): { readonly start: number; readonly end: number } {
  const start = r.pos;
  const c = new InstructionCursor(r.bytes, start, r.end, false, r.section);
  while (c.next());
  r.pos = c.end;
  return { start, end: c.end };
}

export interface LocalGroup {
  readonly count: number;
  readonly type: ValType;
}

/** One entry of the code section. All offsets are absolute. */
export interface CodeBody {
  /** Offset of the entry's size prefix. */
  readonly offset: number;
  /** Offset of the first byte after the size prefix (the local declarations). */
  readonly bodyStart: number;
  /** Offset of the first instruction. */
  readonly codeStart: number;
  /** Offset just past the body (its final `end`). */
  readonly end: number;
  readonly locals: readonly LocalGroup[];
}

/** Spec limit on the number of locals of one function (2^32 - 1). */
const MAX_LOCALS = 0xffffffff;

export function readCodeBody(r: Reader): CodeBody {
  const offset = r.pos;
  const size = r.u32();
  const bodyStart = r.pos;
  const body = r.sub(size);
  const count = body.vecCount();
  const locals: LocalGroup[] = [];
  let total = 0;
  for (let i = 0; i < count; i++) {
    const at = body.pos;
    const n = body.u32();
    total += n;
    if (total > MAX_LOCALS) body.fail('too many locals', at);
    locals.push({ count: n, type: readValType(body) });
  }
  return { offset, bodyStart, codeStart: body.pos, end: body.end, locals };
}
