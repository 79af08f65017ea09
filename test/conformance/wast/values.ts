/**
 * Values in `.wast` scripts: constants as arguments (`i32.const`, `f32.const nan:0x200000`,
 * `v128.const f32x4 …`, `ref.null`, `ref.extern N`) and expected results, which may also be
 * patterns (`nan:canonical`, `nan:arithmetic`, per-lane in a v128, `ref.func`, `ref.extern`
 * without a number, `either`).
 *
 * Owns: exact bit patterns. Integers are read as BigInt; floats — decimal or hexadecimal — are
 * rounded to nearest-even from their exact value (BigInt arithmetic), so no double rounding.
 *
 * Does not protect against: GC reference patterns (`ref.struct`, `ref.i31`…): `parseExpected`
 * reports them unsupported and the runner counts them.
 */

import { head, isAtom } from './sexpr.ts';
import type { List, SExpr } from './sexpr.ts';

export type NumType = 'i32' | 'i64' | 'f32' | 'f64';

/** An argument or an actual result. `ref` is 'null', 'func', `extern:N` or 'other'. */
export type Value = { readonly type: NumType; readonly bits: bigint } | { readonly type: 'v128'; readonly bytes: Uint8Array } | { readonly type: 'ref'; readonly ref: string };

type Lane = { readonly kind: 'bits'; readonly bits: bigint } | { readonly kind: 'nan'; readonly arithmetic: boolean };
/** An expected result. */
export type Expected =
  | { readonly type: NumType; readonly lane: Lane }
  | { readonly type: 'v128'; readonly shape: string; readonly lanes: readonly Lane[] }
  | { readonly type: 'ref'; readonly ref: 'null' | 'func' | 'extern' | `extern:${string}` }
  | { readonly type: 'either'; readonly options: readonly Expected[] };

export class Unsupported extends Error {}

const SHAPES: Record<string, { lanes: number; bits: number; float: boolean }> = {
  i8x16: { lanes: 16, bits: 8, float: false },
  i16x8: { lanes: 8, bits: 16, float: false },
  i32x4: { lanes: 4, bits: 32, float: false },
  i64x2: { lanes: 2, bits: 64, float: false },
  f32x4: { lanes: 4, bits: 32, float: true },
  f64x2: { lanes: 2, bits: 64, float: true },
};

export function parseArg(e: SExpr): Value {
  const ex = parseExpected(e);
  if (ex.type === 'v128') {
    const bytes = new Uint8Array(16);
    const { bits } = SHAPES[ex.shape]!;
    ex.lanes.forEach((l, i) => writeLane(bytes, i, bits, l.kind === 'bits' ? l.bits : 0n));
    return { type: 'v128', bytes };
  }
  if (ex.type === 'ref') {
    if (ex.ref === 'null' || ex.ref.startsWith('extern:')) return { type: 'ref', ref: ex.ref };
    throw new Unsupported(`argument ${ex.ref}`);
  }
  if (ex.type === 'either' || ex.lane.kind !== 'bits') throw new Unsupported('pattern as an argument');
  return { type: ex.type, bits: ex.lane.bits };
}

export function parseExpected(e: SExpr): Expected {
  const op = head(e);
  const items = (e as List).items;
  const arg = (i: number): string => {
    const a = items[i];
    if (!isAtom(a)) throw new Error(`wast: ${op} needs an immediate`);
    return a.text;
  };
  switch (op) {
    case 'i32.const':
      return { type: 'i32', lane: { kind: 'bits', bits: intBits(arg(1), 32) } };
    case 'i64.const':
      return { type: 'i64', lane: { kind: 'bits', bits: intBits(arg(1), 64) } };
    case 'f32.const':
      return { type: 'f32', lane: floatLane(arg(1), 32) };
    case 'f64.const':
      return { type: 'f64', lane: floatLane(arg(1), 64) };
    case 'v128.const': {
      const shape = SHAPES[arg(1)];
      if (shape === undefined) throw new Error(`wast: v128 shape ${arg(1)}`);
      const lanes: Lane[] = [];
      for (let i = 0; i < shape.lanes; i++) {
        const t = arg(2 + i);
        lanes.push(shape.float ? floatLane(t, shape.bits as 32 | 64) : { kind: 'bits', bits: intBits(t, shape.bits) });
      }
      return { type: 'v128', shape: arg(1), lanes };
    }
    case 'ref.null':
      return { type: 'ref', ref: 'null' };
    case 'ref.func':
      return { type: 'ref', ref: 'func' };
    case 'ref.extern':
    case 'ref.host':
      return { type: 'ref', ref: items.length > 1 ? `extern:${BigInt(arg(1).replace(/_/g, ''))}` : 'extern' };
    case 'either':
      return { type: 'either', options: items.slice(1).map(parseExpected) };
    default:
      throw new Unsupported(`value ${op || '?'}`);
  }
}

/** An integer literal (decimal or 0x hex, optional sign, `_` separators) as an unsigned `bits`-bit value. */
export function intBits(text: string, bits: number): bigint {
  let t = text.replace(/_/g, '');
  let neg = false;
  if (t[0] === '-' || t[0] === '+') {
    neg = t[0] === '-';
    t = t.slice(1);
  }
  const v = BigInt(t);
  return BigInt.asUintN(bits, neg ? -v : v);
}

const MANT = { 32: 23, 64: 52 } as const;
const EXP = { 32: 8, 64: 11 } as const;

function floatLane(text: string, bits: 32 | 64): Lane {
  if (text === 'nan:canonical') return { kind: 'nan', arithmetic: false };
  if (text === 'nan:arithmetic') return { kind: 'nan', arithmetic: true };
  return { kind: 'bits', bits: floatBits(text, bits) };
}

/** The IEEE bits of a float literal, rounded to nearest-even from its exact value. */
export function floatBits(text: string, bits: 32 | 64): bigint {
  let t = text.replace(/_/g, '');
  let sign = 0n;
  if (t[0] === '-' || t[0] === '+') {
    if (t[0] === '-') sign = 1n;
    t = t.slice(1);
  }
  const m = MANT[bits];
  const ebits = EXP[bits];
  const expAll = (1n << BigInt(ebits)) - 1n;
  const signBit = sign << BigInt(bits - 1);
  if (t === 'inf') return signBit | (expAll << BigInt(m));
  if (t.startsWith('nan')) {
    const payload = t.startsWith('nan:') ? BigInt(t.slice(4)) : 1n << BigInt(m - 1);
    return signBit | (expAll << BigInt(m)) | payload;
  }
  let mant: bigint;
  let exp2 = 0;
  let sticky = false;
  if (/^0x/i.test(t)) {
    const [, int = '', frac = '', e = '0'] = /^0x([0-9a-f]*)\.?([0-9a-f]*)(?:p([+-]?\d+))?$/i.exec(t) ?? [];
    mant = BigInt(`0x${int}${frac}` === '0x' ? '0' : `0x${int}${frac}`);
    exp2 = Number(e) - 4 * frac.length;
  } else {
    const [, int = '', frac = '', e = '0'] = /^(\d*)\.?(\d*)(?:e([+-]?\d+))?$/i.exec(t) ?? [];
    const d = BigInt(`${int}${frac}` || '0');
    const n = Number(e) - frac.length;
    if (n >= 0) mant = d * 10n ** BigInt(n);
    else {
      const p = 10n ** BigInt(-n);
      const k = Math.max(0, bitLength(p) - bitLength(d)) + m + 3;
      const scaled = d << BigInt(k);
      mant = scaled / p;
      sticky = scaled % p !== 0n;
      exp2 = -k;
    }
  }
  return signBit | roundToFloat(mant, exp2, sticky, m, ebits);
}

function bitLength(v: bigint): number {
  return v === 0n ? 0 : v.toString(2).length;
}

/** Rounds mant · 2^exp2 (plus a sticky bit below it) to the float format; returns the unsigned bits. */
function roundToFloat(mant: bigint, exp2: number, sticky: boolean, m: number, ebits: number): bigint {
  if (mant === 0n) return 0n;
  const bias = (1 << (ebits - 1)) - 1;
  const len = bitLength(mant);
  const minLsb = 1 - bias - m;
  const shift = Math.max(len - (m + 1), minLsb - exp2);
  let q: bigint;
  if (shift > 0) {
    const s = BigInt(shift);
    q = mant >> s;
    const rem = mant & ((1n << s) - 1n);
    const half = 1n << (s - 1n);
    if (rem > half || (rem === half && (sticky || (q & 1n) === 1n))) q++;
  } else q = mant << BigInt(-shift);
  let lsb = exp2 + shift;
  if (bitLength(q) > m + 1) {
    q >>= 1n;
    lsb++;
  }
  const hidden = 1n << BigInt(m);
  if (q < hidden) return q;
  const biased = lsb + m + bias;
  if (biased >= (1 << ebits) - 1) return BigInt((1 << ebits) - 1) << BigInt(m);
  return (BigInt(biased) << BigInt(m)) | (q - hidden);
}

export function writeLane(bytes: Uint8Array, lane: number, bits: number, v: bigint): void {
  const n = bits / 8;
  for (let i = 0; i < n; i++) bytes[lane * n + i] = Number((v >> BigInt(8 * i)) & 0xffn);
}

function readLane(bytes: Uint8Array, lane: number, bits: number): bigint {
  const n = bits / 8;
  let v = 0n;
  for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[lane * n + i]!);
  return v;
}

function laneMatches(l: Lane, v: bigint, bits: number): boolean {
  if (l.kind === 'bits') return l.bits === v;
  const m = bits === 32 ? 23 : 52;
  const expAll = (1n << BigInt(bits - 1 - m)) - 1n;
  if (((v >> BigInt(m)) & expAll) !== expAll) return false;
  const payload = v & ((1n << BigInt(m)) - 1n);
  const quiet = 1n << BigInt(m - 1);
  return l.arithmetic ? (payload & quiet) !== 0n : payload === quiet;
}

/** Whether an actual result meets the expectation. */
export function matches(ex: Expected, v: Value): boolean {
  if (ex.type === 'either') return ex.options.some((o) => matches(o, v));
  if (ex.type === 'ref') {
    if (v.type !== 'ref') return false;
    if (ex.ref === 'extern') return v.ref.startsWith('extern:') || v.ref === 'other';
    if (ex.ref === 'func') return v.ref === 'func';
    return v.ref === ex.ref;
  }
  if (ex.type === 'v128') {
    if (v.type !== 'v128') return false;
    const { bits } = SHAPES[ex.shape]!;
    return ex.lanes.every((l, i) => laneMatches(l, readLane(v.bytes, i, bits), bits));
  }
  if (v.type !== ex.type) return false;
  return laneMatches(ex.lane, v.bits, ex.type === 'f32' || ex.type === 'i32' ? 32 : 64);
}

/** A stable key for comparing two actual results. */
export function valueKey(v: Value): string {
  if (v.type === 'v128') return `v128:${Buffer.from(v.bytes).toString('hex')}`;
  if (v.type === 'ref') return `ref:${v.ref}`;
  return `${v.type}:${v.bits.toString(16)}`;
}

/**
 * Whether two results differ only in NaN payloads where the expectation is a NaN pattern (the
 * spec leaves those bits open, and V8 may pick them differently in two compilations).
 */
export function sameUpToNanPayload(ex: Expected | undefined, a: Value, b: Value): boolean {
  if (ex === undefined) return false;
  if (ex.type === 'either') return ex.options.some((o) => sameUpToNanPayload(o, a, b));
  if (ex.type === 'v128' && a.type === 'v128' && b.type === 'v128') {
    const { bits } = SHAPES[ex.shape]!;
    return ex.lanes.every((l, i) => {
      const x = readLane(a.bytes, i, bits);
      const y = readLane(b.bytes, i, bits);
      return x === y || (l.kind === 'nan' && laneMatches(l, x, bits) && laneMatches(l, y, bits));
    });
  }
  if ((ex.type === 'f32' || ex.type === 'f64') && ex.lane.kind === 'nan' && a.type === ex.type && b.type === ex.type) {
    const bits = ex.type === 'f32' ? 32 : 64;
    return laneMatches(ex.lane, a.bits, bits) && laneMatches(ex.lane, b.bits, bits);
  }
  return false;
}


