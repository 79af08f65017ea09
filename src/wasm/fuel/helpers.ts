/**
 * Size-charging helpers: the functions that stand in for bulk memory/table instructions and
 * `memory.grow` / `table.grow`, so that their size is charged before the work is done.
 *
 * Owns: one helper per distinct instruction (opcode and immediates: memory.init per data
 * segment, table.* per table index, …), appended to the function index space in order of first
 * use, after the threaded twins and `__membrane_fuel_refill` (twins.ts). A helper takes the instruction's operands as parameters, subtracts the size charge
 * (cost.ts) from $fuel, refills if $fuel went negative, then executes the original instruction
 * on its parameters and returns its result:
 *   `global.get $fuel; <extra as i64>; i64.sub; global.set $fuel;
 *    global.get $fuel; i64.const 0; i64.lt_s; if; global.get $fuel; call $refill;
 *    global.set $fuel; end; local.get 0 … local.get n-1; <instruction>; end`
 * Helpers are not otherwise metered: the instruction's own unit is charged in the caller's block.
 *
 * Invariant: the charge is computed from the unsigned operand (a delta of 0xFFFFFFFF pages is
 * 2^32 − 1 pages, not −1), in i64, so it cannot wrap; if the host refuses to refill, the
 * instruction never runs and memory is untouched.
 *
 * Does not protect against: 64-bit memories or tables (the rewriter refuses such modules before
 * it gets here), nor the time an operation takes beyond its size (a `memory.copy` of
 * overlapping ranges costs what a disjoint one does).
 */

import { Reader } from '../bytes.ts';
import type { ParsedModule } from '../module.ts';
import type { FuncType, ValType } from '../types.ts';
import type { CostModel } from './cost.ts';
import { Sink } from './sink.ts';
import type { TypeTable } from './type-table.ts';

/** Which operand is the size, and what one unit of it costs. */
type Charge = { readonly operand: number; readonly per: 'bytes' | 'elements' | 'pages' };

interface Helper {
  readonly name: string;
  readonly typeIndex: number;
  readonly params: number;
  readonly charge: Charge;
  /** The original instruction, canonically encoded. */
  readonly instruction: Uint8Array;
}

const I32: ValType = 'i32';
const MEMORY_GROW = 0x40;
const MISC = 0xfc;

const LOCAL_GET = 0x20;
const GLOBAL_GET = 0x23;
const GLOBAL_SET = 0x24;
const I64_CONST = 0x42;
const I64_ADD = 0x7c;
const I64_SUB = 0x7d;
const I64_MUL = 0x7e;
const I64_DIV_U = 0x80;
const I64_SHR_U = 0x88;
const I64_EXTEND_I32_U = 0xad;
const END = 0x0b;
const I64_LT_S = 0x53;
const IF = 0x04;
const EMPTY = 0x40;
const CALL = 0x10;

const NAMES: Readonly<Record<number, string>> = {
  8: 'memory.init',
  10: 'memory.copy',
  11: 'memory.fill',
  12: 'table.init',
  14: 'table.copy',
  15: 'table.grow',
  17: 'table.fill',
};

export class BulkHelpers {
  private readonly byKey = new Map<string, number>();
  private readonly helpers: Helper[] = [];
  private readonly tableTypes: readonly ValType[];
  private readonly reader: Reader;

  /** `firstIndex`: the function index of the first helper (after every defined function). */
  constructor(
    m: ParsedModule,
    private readonly types: TypeTable,
    private readonly firstIndex: number,
  ) {
    this.tableTypes = [
      ...m.imports.flatMap((i) => (i.kind === 'table' ? [i.table.refType] : [])),
      ...m.tables.map((t) => t.type.refType),
    ];
    this.reader = new Reader(m.bytes, 0, m.bytes.length, 'code');
  }

  get count(): number {
    return this.helpers.length;
  }

  /** Function names of the helpers, by function index. */
  names(): [number, string][] {
    return this.helpers.map((h, i) => [this.firstIndex + i, h.name]);
  }

  /** The helper for the bulk instruction at `[offset, end)`; created on first use. */
  readonly resolve = (offset: number, end: number): number => {
    const r = this.reader;
    r.pos = offset;
    r.end = end;
    const op = r.u8();
    const sub = op === MISC ? r.u32() : -1;
    const imm: number[] = [];
    while (r.pos < end) imm.push(r.u32());
    const key = `${sub}:${imm.join(':')}`;
    const known = this.byKey.get(key);
    if (known !== undefined) return known;
    const index = this.firstIndex + this.helpers.length;
    this.byKey.set(key, index);
    this.helpers.push(this.describe(op, sub, imm, offset));
    return index;
  };

  private describe(op: number, sub: number, imm: readonly number[], offset: number): Helper {
    const enc = new Sink(16);
    enc.byte(op);
    if (op === MISC) enc.u32(sub);
    for (const i of imm) enc.u32(i);
    const instruction = enc.take();
    const three: FuncType = { params: [I32, I32, I32], results: [] };
    let type: FuncType;
    let charge: Charge;
    if (op === MEMORY_GROW) {
      type = { params: [I32], results: [I32] };
      charge = { operand: 0, per: 'pages' };
    } else if (sub === 8 || sub === 10 || sub === 11) {
      type = three;
      charge = { operand: 2, per: 'bytes' };
    } else if (sub === 12 || sub === 14) {
      type = three;
      charge = { operand: 2, per: 'elements' };
    } else if (sub === 15) {
      type = { params: [this.tableType(imm[0]!, offset), I32], results: [I32] };
      charge = { operand: 1, per: 'elements' };
    } else {
      type = { params: [I32, this.tableType(imm[0]!, offset), I32], results: [] };
      charge = { operand: 2, per: 'elements' };
    }
    const what = op === MEMORY_GROW ? 'memory.grow' : NAMES[sub]!;
    return {
      name: `__membrane_fuel_${what}_${imm.join('_')}`,
      typeIndex: this.types.index(type),
      params: type.params.length,
      charge,
      instruction,
    };
  }

  private tableType(table: number, offset: number): ValType {
    const t = this.tableTypes[table];
    if (t === undefined) this.reader.fail(`table ${table} does not exist`, offset);
    return t;
  }

  /** Type index of each helper, in function-index order. */
  typeIndices(): number[] {
    return this.helpers.map((h) => h.typeIndex);
  }

  /** Writes each helper's code entry (size-prefixed) to `out`. */
  writeBodies(out: Sink, costs: CostModel, fuel: Uint8Array, refill: Uint8Array): void {
    const body = new Sink(128);
    for (const h of this.helpers) {
      body.len = 0;
      body.byte(0); // no locals
      const per = h.charge.per === 'bytes' ? costs.memoryBytesPerUnit : h.charge.per === 'pages' ? costs.memoryPage : costs.tableElement;
      if (per > 0) {
        body.byte(GLOBAL_GET);
        body.bytes(fuel);
        body.byte(LOCAL_GET);
        body.u32(h.charge.operand);
        body.byte(I64_EXTEND_I32_U);
        if (h.charge.per === 'bytes') divideRoundingUp(body, per);
        else if (per !== 1) {
          body.byte(I64_CONST);
          body.s64(per);
          body.byte(I64_MUL);
        }
        body.byte(I64_SUB);
        body.byte(GLOBAL_SET);
        body.bytes(fuel);
        writeGlobalCheck(body, fuel, refill);
      }
      for (let p = 0; p < h.params; p++) {
        body.byte(LOCAL_GET);
        body.u32(p);
      }
      body.bytes(h.instruction);
      body.byte(END);
      out.u32(body.len);
      out.span(body.buf, 0, body.len);
    }
  }
}

/** ceil(x / k) for the i64 on the stack: `(x + k - 1) / k`, a shift when k is a power of two. */
function divideRoundingUp(out: Sink, k: number): void {
  if (k === 1) return;
  out.byte(I64_CONST);
  out.s64(k - 1);
  out.byte(I64_ADD);
  out.byte(I64_CONST);
  if ((k & (k - 1)) === 0) {
    out.s64(Math.log2(k));
    out.byte(I64_SHR_U);
  } else {
    out.s64(k);
    out.byte(I64_DIV_U);
  }
}

/** `global.get; i64.const 0; i64.lt_s; if; global.get; call $refill; global.set; end` (LEBs given). */
export function writeGlobalCheck(out: Sink, fuel: Uint8Array, refill: Uint8Array): void {
  out.byte(GLOBAL_GET);
  out.bytes(fuel);
  out.byte(I64_CONST);
  out.byte(0);
  out.byte(I64_LT_S);
  out.byte(IF);
  out.byte(EMPTY);
  out.byte(GLOBAL_GET);
  out.bytes(fuel);
  out.byte(CALL);
  out.bytes(refill);
  out.byte(GLOBAL_SET);
  out.bytes(fuel);
  out.byte(END);
}
