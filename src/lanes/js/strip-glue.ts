/**
 * Our glue for the TypeScript stripper (swc's wasm-bindgen module, strip-module.ts): the
 * functions its wasm imports, written for one instance and one call, instead of the package's
 * generated JavaScript.
 *
 * Owns: the instance's value table — wasm-bindgen's "heap" of JS values the wasm names by index
 * (indices 128–131 are undefined, null, true, false, fixed by wasm-bindgen) — and what each
 * import may do with it. The table only ever holds data: the source string, the options (a
 * null-prototype object of primitives), and strings, numbers, plain objects and arrays the wasm
 * makes itself. Property reads see own data properties only and writes define own properties, so
 * no function, prototype or host object can ever enter the table. The imports that would reach
 * further — calling a value, `new Function`, the global object, promises, microtasks, iterators —
 * are linked as refusals that throw (`StripGlueRefused`): stubbing is explicit, and the stripper
 * never needs them for a synchronous strip. At most MAX_LIVE_VALUES values are live at once.
 * Invariant: no host object, function or prototype is reachable from the wasm; strings leave
 * wasm memory only as copies bounded by that memory (itself capped).
 *
 * Does not protect against: the stripper's own work (fuel and the memory cap bound it, in
 * stripper.ts); a new package version with other import names (strip-module.ts refuses it).
 */

/** The import module wasm-bindgen names. */
export const GLUE_MODULE = '__wbindgen_placeholder__';
/** Live values past this are refused: the stripper needs a few dozen. */
export const MAX_LIVE_VALUES = 65_536;
/** Longest error message kept from the stripper. */
const MAX_STRIP_MESSAGE_CHARS = 1000;
const FIRST_FREE = 132;

/** An import the glue refuses, or a value table past its bound: the strip fails INTERNAL. */
export class StripGlueRefused extends Error {}

export interface StripExports {
  readonly transformSync: (retptr: number, input: number, options: number) => void;
  readonly __wbindgen_add_to_stack_pointer: (delta: number) => number;
  /** malloc(size, align) */
  readonly __wbindgen_export_2: (size: number, align: number) => number;
}

/** What swc reports for source it refuses: InvalidSyntax or UnsupportedSyntax, 1-based line, 0-based column. */
export interface StripDiagnostic {
  readonly kind: string;
  readonly message: string;
  readonly line: number;
  readonly column: number;
}

export type StripOutput = { readonly ok: true; readonly code: string } | { readonly ok: false; readonly diagnostic: StripDiagnostic };

/** An own data property's value (no getter, prototype or key conversion ever runs). */
const own = (o: unknown, k: unknown): unknown => {
  if (typeof o !== 'object' || o === null || (typeof k !== 'string' && typeof k !== 'number')) return undefined;
  const d = Object.getOwnPropertyDescriptor(o, k);
  return d && 'value' in d ? d.value : undefined;
};
const describe = (v: unknown): string => (typeof v === 'object' && v !== null ? (v instanceof Error ? `Error: ${v.message}` : Array.isArray(v) ? 'Array' : 'Object') : String(v));

export class StripGlue {
  private readonly table: unknown[] = [...new Array<unknown>(128).fill(undefined), undefined, null, true, false];
  private free = FIRST_FREE;
  private live = 0;
  private wasm: StripExports | null = null;
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  private readonly encoder = new TextEncoder();

  constructor(private readonly memory: WebAssembly.Memory) {}

  bind(exports: WebAssembly.Exports): void {
    this.wasm = exports as unknown as StripExports;
  }

  private get(i: number): unknown {
    return this.table[i];
  }
  private add(v: unknown): number {
    if (++this.live > MAX_LIVE_VALUES) throw new StripGlueRefused('the TypeScript stripper held too many values');
    if (this.free === this.table.length) this.table.push(this.table.length + 1);
    const i = this.free;
    this.free = this.table[i] as number;
    this.table[i] = v;
    return i;
  }
  private take(i: number): unknown {
    const v = this.table[i];
    if (i >= FIRST_FREE) {
      this.table[i] = this.free;
      this.free = i;
      this.live--;
    }
    return v;
  }
  private view(): DataView {
    return new DataView(this.memory.buffer);
  }
  private text(ptr: number, len: number): string {
    return this.decoder.decode(new Uint8Array(this.memory.buffer, ptr >>> 0, len >>> 0));
  }
  /** Copy `s` into the wasm's own allocation; write (ptr, len) at `out`. */
  private passString(out: number, s: string | undefined): void {
    let ptr = 0;
    let len = 0;
    if (s !== undefined) {
      const bytes = this.encoder.encode(s);
      ptr = this.wasm!.__wbindgen_export_2(bytes.length, 1) >>> 0;
      new Uint8Array(this.memory.buffer).set(bytes, ptr);
      len = bytes.length;
    }
    const v = this.view();
    v.setInt32(out + 4, len, true);
    v.setInt32(out, ptr, true);
  }
  private setOwn(target: unknown, key: unknown, value: unknown): void {
    if (typeof target !== 'object' || target === null || (typeof key !== 'string' && typeof key !== 'number')) throw new StripGlueRefused('the TypeScript stripper wrote to something that is not its own object');
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  }

  /** The wasm's imports, by their exact names (the package version's). */
  readonly imports: WebAssembly.Imports = {
    [GLUE_MODULE]: this.functions(),
  };

  private functions(): Record<string, (...a: never[]) => unknown> {
    const refuse = (name: string) => (): never => {
      throw new StripGlueRefused(`the TypeScript stripper asked for ${name}, which is not linked`);
    };
    const num = (r: number, v: unknown): void => {
      const ok = typeof v === 'number';
      this.view().setFloat64(r + 8, ok ? v : 0, true);
      this.view().setInt32(r, ok ? 1 : 0, true);
    };
    return {
      __wbindgen_error_new: (p: number, l: number) => this.add(new Error(this.text(p, l))),
      __wbindgen_throw: (p: number, l: number): never => {
        throw new StripGlueRefused(`the TypeScript stripper failed: ${this.text(p, Math.min(l, MAX_STRIP_MESSAGE_CHARS))}`);
      },
      __wbindgen_is_bigint: (i: number) => typeof this.get(i) === 'bigint',
      __wbindgen_is_string: (i: number) => typeof this.get(i) === 'string',
      __wbindgen_is_object: (i: number) => typeof this.get(i) === 'object' && this.get(i) !== null,
      __wbindgen_is_undefined: (i: number) => this.get(i) === undefined,
      __wbindgen_is_function: (i: number) => typeof this.get(i) === 'function',
      __wbindgen_is_falsy: (i: number) => !this.get(i),
      __wbindgen_jsval_eq: (a: number, b: number) => this.get(a) === this.get(b),
      // Loose equality only between primitives (no valueOf/toString of an object ever runs).
      __wbindgen_jsval_loose_eq: (a: number, b: number) => {
        const x = this.get(a);
        const y = this.get(b);
        const obj = (v: unknown): boolean => typeof v === 'object' && v !== null;
        return obj(x) || obj(y) ? x === y : x == y;
      },
      __wbindgen_in: (k: number, o: number) => {
        const obj = this.get(o);
        const key = this.get(k);
        return typeof obj === 'object' && obj !== null && (typeof key === 'string' || typeof key === 'number') && Object.hasOwn(obj, key);
      },
      __wbindgen_number_get: (r: number, i: number) => num(r, this.get(i)),
      __wbindgen_number_new: (v: number) => this.add(v),
      __wbindgen_bigint_from_i64: (v: bigint) => this.add(v),
      __wbindgen_bigint_from_u64: (v: bigint) => this.add(BigInt.asUintN(64, v)),
      __wbindgen_bigint_get_as_i64: (r: number, i: number) => {
        const v = this.get(i);
        this.view().setBigInt64(r + 8, typeof v === 'bigint' ? v : 0n, true);
        this.view().setInt32(r, typeof v === 'bigint' ? 1 : 0, true);
      },
      __wbindgen_boolean_get: (i: number) => {
        const v = this.get(i);
        return typeof v === 'boolean' ? (v ? 1 : 0) : 2;
      },
      __wbindgen_string_new: (p: number, l: number) => this.add(this.text(p, l)),
      __wbindgen_string_get: (r: number, i: number) => {
        const v = this.get(i);
        this.passString(r, typeof v === 'string' ? v : undefined);
      },
      __wbindgen_debug_string: (r: number, i: number) => this.passString(r, describe(this.get(i))),
      __wbindgen_object_clone_ref: (i: number) => this.add(this.get(i)),
      __wbindgen_object_drop_ref: (i: number) => {
        this.take(i);
      },
      __wbg_isSafeInteger_343e2beeeece1bb0: (i: number) => Number.isSafeInteger(this.get(i)),
      __wbg_isArray_a1eab7e0d067391b: (i: number) => Array.isArray(this.get(i)),
      __wbg_length_e2d2a49132c1b256: (i: number) => lengthOf(this.get(i)),
      __wbg_length_a446193dc22c12f8: (i: number) => lengthOf(this.get(i)),
      __wbg_instanceof_Map_f3469ce2244d2430: () => false,
      __wbg_instanceof_Uint8Array_17156bcf118086a9: () => false,
      __wbg_instanceof_ArrayBuffer_e14585432e3737fc: () => false,
      __wbg_iterator_9a24c88df860dc65: () => this.add(Symbol.iterator),
      __wbg_toString_5285597960676b7b: (i: number) => this.add(describe(this.get(i))),
      __wbg_new_405e22f390576ce2: () => this.add(Object.create(null)),
      __wbg_new_78feb108b6472713: () => this.add([]),
      __wbg_get_b9b93047fe3cf45b: (o: number, i: number) => this.add(Array.isArray(this.get(o)) ? own(this.get(o), i >>> 0) : undefined),
      __wbg_get_67b2ba62fc30de12: (o: number, k: number) => this.add(own(this.get(o), this.get(k))),
      __wbg_getwithrefkey_1dc361bd10053bfe: (o: number, k: number) => this.add(own(this.get(o), this.get(k))),
      __wbg_entries_3265d4158b33e5dc: (i: number) => {
        const o = this.get(i);
        return this.add(typeof o === 'object' && o !== null ? Object.keys(o).map((k) => [k, own(o, k)]) : []);
      },
      __wbg_set_3f1d0b984ed272ed: (o: number, k: number, v: number) => this.setOwn(this.get(o), this.take(k), this.take(v)),
      __wbg_set_37837023f3d740e8: (o: number, i: number, v: number) => {
        const target = this.get(o);
        if (!Array.isArray(target)) throw new StripGlueRefused('the TypeScript stripper indexed something that is not its own array');
        this.setOwn(target, i >>> 0, this.take(v));
      },
      __wbg_call_672a4d21634d4a24: refuse('Function.prototype.call'),
      __wbg_call_7cccdd69e0791ae2: refuse('Function.prototype.call'),
      __wbg_newnoargs_105ed471475aaf50: refuse('new Function'),
      __wbg_static_accessor_GLOBAL_88a902d13a557d07: refuse('the global object'),
      __wbg_static_accessor_GLOBAL_THIS_56578be7e9f832b0: refuse('the global object'),
      __wbg_static_accessor_WINDOW_5de37043a91a9c40: refuse('the global object'),
      __wbg_static_accessor_SELF_37c5d418e4bf5819: refuse('the global object'),
      __wbg_next_25feadfc0913fea9: refuse('an iterator'),
      __wbg_next_6574e1a8a62d1055: refuse('an iterator'),
      __wbg_done_769e5ede4b31c67b: refuse('an iterator'),
      __wbg_value_cd1ffa7b1ab794f1: refuse('an iterator'),
      __wbindgen_memory: refuse('its memory object'),
      __wbg_buffer_609cc3eee51ed158: refuse('a buffer'),
      __wbg_new_a12002a7f91c75be: refuse('a byte array'),
      __wbg_set_65595bdd868b3009: refuse('a byte array'),
      __wbg_new_23a2665fac83c611: refuse('a promise'),
      __wbg_resolve_4851785c9c5f573d: refuse('a promise'),
      __wbg_then_44b73946d2fb3e7d: refuse('a promise'),
      __wbg_queueMicrotask_97d92b4fcc8a61c5: refuse('a microtask'),
      __wbg_queueMicrotask_d3219def82552485: refuse('a microtask'),
      __wbindgen_closure_wrapper5432: refuse('a closure'),
      __wbindgen_cb_drop: refuse('a closure'),
    };
  }

  /** Strip `source` (strip-only: types become spaces, so every line and column stays where it was). */
  strip(source: string): StripOutput {
    const wasm = this.wasm;
    if (!wasm) throw new Error('StripGlue.bind was not called');
    const options = Object.assign(Object.create(null) as object, { mode: 'strip-only', filename: 'snippet.ts' });
    const retptr = wasm.__wbindgen_add_to_stack_pointer(-16);
    try {
      wasm.transformSync(retptr, this.add(source), this.add(options));
      const v = this.view();
      const ok = v.getInt32(retptr, true);
      const err = v.getInt32(retptr + 4, true);
      if (v.getInt32(retptr + 8, true) !== 0) return { ok: false, diagnostic: diagnosticOf(this.take(err)) };
      const code = own(this.take(ok), 'code');
      if (typeof code !== 'string') throw new StripGlueRefused('the TypeScript stripper returned no code');
      return { ok: true, code };
    } finally {
      wasm.__wbindgen_add_to_stack_pointer(16);
    }
  }
}

function lengthOf(v: unknown): number {
  return Array.isArray(v) || typeof v === 'string' ? v.length : 0;
}

function diagnosticOf(e: unknown): StripDiagnostic {
  const str = (k: string): string => {
    const v = own(e, k);
    return typeof v === 'string' ? v.slice(0, MAX_STRIP_MESSAGE_CHARS) : '';
  };
  const int = (k: string): number => {
    const v = own(e, k);
    return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0;
  };
  const message = str('message') || (e instanceof Error ? e.message.slice(0, MAX_STRIP_MESSAGE_CHARS) : 'the source could not be parsed');
  return { kind: str('code') || 'InvalidSyntax', message, line: int('startLine'), column: int('startColumn') };
}

/** Every import name the glue links (for strip-module.ts's check). */
export const GLUE_NAMES: readonly string[] = Object.keys(new StripGlue(new WebAssembly.Memory({ initial: 0 })).imports[GLUE_MODULE]!);
