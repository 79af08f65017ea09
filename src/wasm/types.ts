/**
 * Wasm type vocabulary: value types, function types, limits, table/global/tag types, and their
 * binary readers and writers.
 *
 * Owns: the mapping between type bytes and the stable strings the rest of Membrane shows
 * (`i32 i64 f32 f64 v128 funcref externref exnref …`, `(ref null 3)`), and the limits encoding
 * (flags: bit 0 has-max, bit 1 shared, bit 2 64-bit index).
 *
 * Invariant: a decoded type re-encodes to an equivalent byte sequence; an unknown type byte is
 * `INVALID_MODULE` with its offset, never a guess.
 *
 * Does not protect against: GC-proposal type definitions (`rec`, `sub`, struct, array): they are
 * refused as INVALID_MODULE rather than modelled, which is what Node 20's V8 does by default.
 */

import type { Reader, Writer } from './bytes.ts';

export type NumType = 'i32' | 'i64' | 'f32' | 'f64';
export type AbstractRefType =
  | 'funcref'
  | 'externref'
  | 'exnref'
  | 'anyref'
  | 'eqref'
  | 'i31ref'
  | 'structref'
  | 'arrayref'
  | 'nullref'
  | 'nullexternref'
  | 'nullfuncref'
  | 'nullexnref';
export type ValType = NumType | 'v128' | AbstractRefType | `(ref ${string})` | `(ref null ${string})`;

export interface FuncType {
  readonly params: readonly ValType[];
  readonly results: readonly ValType[];
}

export interface Limits {
  /** The flags byte as read (bit 0 has-max, bit 1 shared, bit 2 64-bit index). */
  readonly flags: number;
  readonly min: number;
  readonly max: number | null;
  readonly shared: boolean;
  /** True for memory64/table64 (`i64` index type). */
  readonly index64: boolean;
}

export interface TableType {
  readonly refType: ValType;
  readonly limits: Limits;
}

export interface GlobalType {
  readonly valType: ValType;
  readonly mutable: boolean;
}

/** Value-type bytes that stand alone (numeric, vector, abbreviated reference types). */
const SIMPLE_TYPES: ReadonlyMap<number, ValType> = new Map<number, ValType>([
  [0x7f, 'i32'],
  [0x7e, 'i64'],
  [0x7d, 'f32'],
  [0x7c, 'f64'],
  [0x7b, 'v128'],
  [0x70, 'funcref'],
  [0x6f, 'externref'],
  [0x69, 'exnref'],
  [0x6e, 'anyref'],
  [0x6d, 'eqref'],
  [0x6c, 'i31ref'],
  [0x6b, 'structref'],
  [0x6a, 'arrayref'],
  [0x71, 'nullref'],
  [0x72, 'nullexternref'],
  [0x73, 'nullfuncref'],
  [0x74, 'nullexnref'],
]);

const TYPE_BYTES: ReadonlyMap<ValType, number> = new Map([...SIMPLE_TYPES].map(([b, t]) => [t, b]));

/** Abstract heap types by their one-byte code, as used after `ref` / `ref null`. */
const HEAP_TYPES: ReadonlyMap<number, string> = new Map([
  [0x70, 'func'],
  [0x6f, 'extern'],
  [0x69, 'exn'],
  [0x6e, 'any'],
  [0x6d, 'eq'],
  [0x6c, 'i31'],
  [0x6b, 'struct'],
  [0x6a, 'array'],
  [0x71, 'none'],
  [0x72, 'noextern'],
  [0x73, 'nofunc'],
  [0x74, 'noexn'],
]);

/** True for a byte that is a whole value type by itself (i32 … v128, funcref, externref, …). */
export function isSimpleValTypeByte(byte: number): boolean {
  return SIMPLE_TYPES.has(byte);
}

/**
 * The largest type index a heap type named since the last `reset()` (-1: none). Decoding is
 * synchronous, so a caller that resets, decodes a whole module and reads `max` sees exactly that
 * module's typed references (the fuel rewriter checks them against the input's types).
 */
export const heapTypeIndices = {
  max: -1,
  reset(): void {
    this.max = -1;
  },
};

/** A heap type: a non-negative type index or an abstract heap type (a negative s33). */
export function readHeapType(r: Reader): string {
  const at = r.pos;
  const v = r.s33();
  if (v >= 0) {
    if (v > heapTypeIndices.max) heapTypeIndices.max = v;
    return String(v);
  }
  const name = v >= -64 ? HEAP_TYPES.get(v + 0x80) : undefined;
  return name ?? r.fail(`unknown heap type ${v}`, at);
}

export function readValType(r: Reader): ValType {
  const at = r.pos;
  const byte = r.u8();
  const simple = SIMPLE_TYPES.get(byte);
  if (simple !== undefined) return simple;
  if (byte === 0x63) return `(ref null ${readHeapType(r)})`;
  if (byte === 0x64) return `(ref ${readHeapType(r)})`;
  return r.fail(`malformed value type 0x${byte.toString(16)}`, at);
}

/** Writes a value type previously produced by `readValType`. */
export function writeValType(w: Writer, t: ValType): void {
  const byte = TYPE_BYTES.get(t);
  if (byte !== undefined) {
    w.u8(byte);
    return;
  }
  const m = /^\(ref (null )?(\w+)\)$/.exec(t);
  const heap = m?.[2] ?? '';
  const abstract = [...HEAP_TYPES].find(([, name]) => name === heap);
  w.u8(m?.[1] === undefined ? 0x64 : 0x63);
  if (abstract !== undefined) w.u8(abstract[0]);
  else w.s32(Number(heap));
}

export function readFuncType(r: Reader): FuncType {
  const at = r.pos;
  const form = r.u8();
  if (form !== 0x60) {
    if (form === 0x4e || form === 0x50 || form === 0x4f || form === 0x5f || form === 0x5e) {
      r.fail('GC type definitions (rec/sub/struct/array) are not supported', at);
    }
    r.fail(`malformed function type form 0x${form.toString(16)}`, at);
  }
  const params = r.vec(readValType);
  const results = r.vec(readValType);
  return { params, results };
}

export function writeFuncType(w: Writer, t: FuncType): void {
  w.u8(0x60).u32(t.params.length);
  for (const p of t.params) writeValType(w, p);
  w.u32(t.results.length);
  for (const p of t.results) writeValType(w, p);
}

export function sameFuncType(a: FuncType, b: FuncType): boolean {
  return (
    a.params.length === b.params.length &&
    a.results.length === b.results.length &&
    a.params.every((p, i) => p === b.params[i]) &&
    a.results.every((p, i) => p === b.results[i])
  );
}

export function readLimits(r: Reader): Limits {
  const at = r.pos;
  const flags = r.u8();
  if (flags > 0x07) r.fail(`malformed limits flags 0x${flags.toString(16)}`, at);
  const index64 = (flags & 0x04) !== 0;
  const min = index64 ? r.u64() : r.u32();
  const max = flags & 0x01 ? (index64 ? r.u64() : r.u32()) : null;
  return { flags, min, max, shared: (flags & 0x02) !== 0, index64 };
}

export function writeLimits(w: Writer, l: Limits): void {
  const flags = (l.flags & ~0x07) | (l.max === null ? 0 : 0x01) | (l.shared ? 0x02 : 0) | (l.index64 ? 0x04 : 0);
  w.u8(flags).u32(l.min);
  if (l.max !== null) w.u32(l.max);
}

export function readTableType(r: Reader): TableType {
  const refType = readValType(r);
  return { refType, limits: readLimits(r) };
}

export function readGlobalType(r: Reader): GlobalType {
  const valType = readValType(r);
  const at = r.pos;
  const m = r.u8();
  if (m > 1) r.fail(`malformed mutability 0x${m.toString(16)}`, at);
  return { valType, mutable: m === 1 };
}

/** A tag type: attribute byte (0 = exception) and the index of its function type. */
export function readTagType(r: Reader): number {
  const at = r.pos;
  const attribute = r.u8();
  if (attribute !== 0) r.fail(`malformed tag attribute 0x${attribute.toString(16)}`, at);
  return r.u32();
}
