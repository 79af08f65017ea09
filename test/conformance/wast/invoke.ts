/**
 * Calling a spec module's export and reading a global, with exact bits.
 *
 * Owns: the call path. A function whose parameters and results are all numbers or v128 is called
 * through a small wasm *caller* module (built here, one per export and side) that loads the
 * arguments from its memory, calls the export, and stores the results back — so v128 (which JS
 * cannot pass) and NaN payloads (which a JS number may not keep) cross exactly. A function with
 * reference parameters or results is called from JS.
 *
 * Does not protect against: reading a v128 global (JS cannot; the outcome is the TypeError both
 * sides raise).
 */

import type { FuncType, ValType } from '../../../src/wasm/index.ts';
import type { Value } from './values.ts';
import { leb } from '../../helpers/wasm-bytes.ts';

const NUM = new Set(['i32', 'i64', 'f32', 'f64', 'v128']);
const SLOT = 16;

/** JS stand-ins for `ref.extern N`, shared by both sides so results compare by number. */
const externs = new Map<string, object>();
const externIds = new WeakMap<object, string>();
export function externObject(id: string): object {
  let o = externs.get(id);
  if (o === undefined) {
    o = { extern: id };
    externs.set(id, o);
    externIds.set(o, id);
  }
  return o;
}

export function refValue(v: unknown): Value {
  if (v === null) return { type: 'ref', ref: 'null' };
  if (typeof v === 'function') return { type: 'ref', ref: 'func' };
  const id = typeof v === 'object' ? externIds.get(v) : undefined;
  return { type: 'ref', ref: id === undefined ? 'other' : `extern:${id}` };
}

const CODE: Record<string, number> = { i32: 0x7f, i64: 0x7e, f32: 0x7d, f64: 0x7c, v128: 0x7b };
const LOAD: Record<string, number[]> = { i32: [0x28, 2], i64: [0x29, 3], f32: [0x2a, 2], f64: [0x2b, 3], v128: [0xfd, 0x00, 4] };
const STORE: Record<string, number[]> = { i32: [0x36, 2], i64: [0x37, 3], f32: [0x38, 2], f64: [0x39, 3], v128: [0xfd, 0x0b, 4] };

const section = (id: number, body: number[]): number[] => [id, ...leb(body.length), ...body];
const vec = (items: number[][]): number[] => [...leb(items.length), ...items.flat()];
const name = (s: string): number[] => [...leb(s.length), ...Buffer.from(s)];

/** The caller module for a function of type `t`: `run()` loads args from slots, calls, stores results. */
function callerBytes(t: FuncType): Uint8Array<ArrayBuffer> {
  const types = vec([
    [0x60, ...vec(t.params.map((p) => [CODE[p]!])), ...vec(t.results.map((r) => [CODE[r]!]))],
    [0x60, 0, 0],
  ]);
  const body: number[] = [];
  const locals = t.results.length === 0 ? [0] : vec(t.results.map((r) => [1, CODE[r]!]));
  t.params.forEach((p, i) => body.push(0x41, 0, ...LOAD[p]!.slice(0, -1), LOAD[p]!.at(-1)!, ...leb(i * SLOT)));
  body.push(0x10, 0);
  for (let i = t.results.length - 1; i >= 0; i--) body.push(0x21, ...leb(i));
  const base = t.params.length * SLOT;
  t.results.forEach((r, i) => body.push(0x41, 0, 0x20, ...leb(i), ...STORE[r]!.slice(0, -1), STORE[r]!.at(-1)!, ...leb(base + i * SLOT)));
  body.push(0x0b);
  const code = [...locals, ...body];
  const pages = Math.ceil(((t.params.length + t.results.length) * SLOT + 1) / 65536);
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, types),
    ...section(2, vec([[...name('t'), ...name('f'), 0x00, 0]])),
    ...section(3, vec([[1]])),
    ...section(5, vec([[0x00, ...leb(pages)]])),
    ...section(7, vec([[...name('run'), 0x00, 1], [...name('m'), 0x02, 0]])),
    ...section(10, vec([[...leb(code.length), ...code]])),
  ]);
}

const callerModules = new Map<string, WebAssembly.Module>();

interface Caller {
  readonly run: () => void;
  readonly mem: WebAssembly.Memory;
}
/** One caller instance per export, per side. */
export type CallerCache = Map<Function, Caller>;

function callerFor(f: Function, t: FuncType): Caller {
  const key = `${t.params.join(',')}>${t.results.join(',')}`;
  let mod = callerModules.get(key);
  if (mod === undefined) callerModules.set(key, (mod = new WebAssembly.Module(callerBytes(t))));
  const e = new WebAssembly.Instance(mod, { t: { f } }).exports;
  return { run: e['run'] as () => void, mem: e['m'] as WebAssembly.Memory };
}

const numBits = (t: string): number => (t === 'i32' || t === 'f32' ? 32 : 64);

/** Calls export `f` of type `t` with `args`; returns its results or throws what the call threw. */
export function callExport(f: Function, t: FuncType, args: readonly Value[], cache: CallerCache): Value[] {
  if (args.length !== t.params.length) throw new TypeError(`wast: ${args.length} arguments for ${t.params.length} parameters`);
  if ([...t.params, ...t.results].every((v) => NUM.has(v))) {
    let c = cache.get(f);
    if (c === undefined) cache.set(f, (c = callerFor(f, t)));
    const bytes = new Uint8Array(c.mem.buffer);
    args.forEach((a, i) => {
      if (a.type === 'v128') bytes.set(a.bytes, i * SLOT);
      else if (a.type !== 'ref') writeAt(bytes, i * SLOT, numBits(a.type), a.bits);
      else throw new TypeError('wast: a reference argument to a numeric parameter');
    });
    c.run();
    const base = t.params.length * SLOT;
    return t.results.map((r, i) => readValue(bytes, base + i * SLOT, r));
  }
  const js = args.map(toJs);
  const out: unknown = f(...js);
  const list = t.results.length === 1 ? [out] : t.results.length === 0 ? [] : [...(out as Iterable<unknown>)];
  return list.map((v, i) => fromJs(v, t.results[i]!));
}

function writeAt(bytes: Uint8Array, at: number, bits: number, v: bigint): void {
  for (let i = 0; i < bits / 8; i++) bytes[at + i] = Number((v >> BigInt(8 * i)) & 0xffn);
}

function readValue(bytes: Uint8Array, at: number, t: ValType): Value {
  if (t === 'v128') return { type: 'v128', bytes: bytes.slice(at, at + 16) };
  let v = 0n;
  for (let i = numBits(t) / 8 - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[at + i]!);
  return { type: t as 'i32', bits: v };
}

function toJs(a: Value): unknown {
  if (a.type === 'ref') return a.ref === 'null' ? null : externObject(a.ref.slice('extern:'.length));
  if (a.type === 'v128') throw new TypeError('wast: v128 argument on the JS path');
  if (a.type === 'i32') return Number(BigInt.asIntN(32, a.bits));
  if (a.type === 'i64') return BigInt.asIntN(64, a.bits);
  const buf = new DataView(new ArrayBuffer(8));
  if (a.type === 'f32') {
    buf.setUint32(0, Number(a.bits));
    return buf.getFloat32(0);
  }
  buf.setBigUint64(0, a.bits);
  return buf.getFloat64(0);
}

/** A JS value read back as `t` (numbers on the JS path: i32/i64/f32/f64 beside references). */
export function fromJs(v: unknown, t: ValType): Value {
  const buf = new DataView(new ArrayBuffer(8));
  switch (t) {
    case 'i32':
      return { type: 'i32', bits: BigInt((v as number) >>> 0) };
    case 'i64':
      return { type: 'i64', bits: BigInt.asUintN(64, v as bigint) };
    case 'f32':
      buf.setFloat32(0, v as number);
      return { type: 'f32', bits: BigInt(buf.getUint32(0)) };
    case 'f64':
      buf.setFloat64(0, v as number);
      return { type: 'f64', bits: buf.getBigUint64(0) };
    default:
      return refValue(v);
  }
}
