/**
 * Function-index renumbering outside code bodies: adding the refill import moves every defined
 * function up by one, so every place that names a function by index is re-encoded.
 *
 * Owns: the new payloads of the sections that hold function indices or constant expressions —
 * element segments (all 8 encodings: function-index vectors and expression vectors, offset
 * expressions included), global initializers, table initializers, exports (function exports move;
 * the fuel global's export is appended), the start section, and the import section (the refill
 * import appended last). `ref.func` is renumbered in every constant expression rewritten here.
 *
 * Invariant: the mapping is `i < funcImports ? i : i + 1`, defined only for the input's own
 * functions: an index past them (which would land on a twin, `$refill_local` or a helper) is
 * INVALID_MODULE, as is an exported or constant-expression global index past the input's globals
 * (which would name the fuel counter). Function indices are re-encoded as minimal LEBs,
 * everything else in these sections is copied byte for byte. The name section alone maps
 * leniently (`mapName`): V8 ignores a bad name, so a bad name must not refuse a module.
 *
 * Does not protect against: data segment offset expressions, which are kept verbatim: they are
 * i32 expressions and cannot contain `ref.func` in any module V8 accepts.
 */

import { Reader, invalidModule } from '../bytes.ts';
import { InstructionCursor } from '../code.ts';
import type { ParsedModule, Section } from '../module.ts';
import { readValType } from '../types.ts';
import { Sink } from './sink.ts';

const REF_FUNC = 0xd2;
const GLOBAL_GET = 0x23;
const FUNC_KIND = 0x00;
const GLOBAL_KIND = 0x03;
const I64 = 0x7e;
const I64_CONST = 0x42;
const END = 0x0b;

export class Renumber {
  private readonly bytes: Uint8Array;
  /** The input's function and global counts (imports included): its index spaces. */
  private readonly funcs: number;
  private readonly globalCount: number;

  constructor(
    private readonly m: ParsedModule,
    private readonly funcImports: number,
  ) {
    this.bytes = m.bytes;
    this.funcs = funcImports + m.functions.length;
    this.globalCount = m.imports.filter((i) => i.kind === 'global').length + m.globals.length;
  }

  /** The new index of the input's function `index`; one it does not have is INVALID_MODULE. */
  map(index: number, offset = 0, section?: string): number {
    if (index >= this.funcs) throw invalidModule(`function index ${index} is out of range (${this.funcs} functions)`, offset, section);
    return index < this.funcImports ? index : index + 1;
  }

  /** `map` for the name section: V8 ignores names, so an unknown index moves like the rest (no check). */
  mapName(index: number): number {
    return index < this.funcImports ? index : index + 1;
  }

  private checkGlobal(index: number, offset: number, section: string): void {
    if (index >= this.globalCount) throw invalidModule(`global index ${index} is out of range (${this.globalCount} globals)`, offset, section);
  }

  /** Copies the constant expression at `start` (up to `limit`), renumbering `ref.func`; returns its end. */
  constExpr(out: Sink, start: number, limit: number, section: string): number {
    const c = new InstructionCursor(this.bytes, start, limit, false, section);
    let from = start;
    while (c.next()) {
      if (c.op === GLOBAL_GET) this.checkGlobal(new Reader(this.bytes, c.offset + 1, c.end).u32(), c.offset, section);
      if (c.op !== REF_FUNC) continue;
      out.span(this.bytes, from, c.offset);
      out.byte(REF_FUNC);
      out.u32(this.map(new Reader(this.bytes, c.offset + 1, c.end).u32(), c.offset, section));
      from = c.end;
    }
    out.span(this.bytes, from, c.end);
    return c.end;
  }

  /** The element section with every function index renumbered. */
  elements(s: Section): Uint8Array {
    const b = this.bytes;
    const out = new Sink(s.end - s.payloadOffset + 64);
    const r = new Reader(b, s.itemsOffset, s.end, 'element');
    out.u32(s.count);
    for (let i = 0; i < s.count; i++) {
      let from = r.pos;
      const flags = r.u32();
      const exprs = (flags & 4) !== 0;
      if ((flags & 1) === 0) {
        if (flags & 2) r.u32();
        out.span(b, from, r.pos);
        r.pos = this.constExpr(out, r.pos, s.end, 'element');
        from = r.pos;
      }
      if (flags & 3) {
        if (exprs) readValType(r);
        else r.u8();
      }
      const count = r.u32();
      out.span(b, from, r.pos);
      for (let k = 0; k < count; k++) {
        if (exprs) r.pos = this.constExpr(out, r.pos, s.end, 'element');
        else {
          const at = r.pos;
          out.u32(this.map(r.u32(), at, 'element'));
        }
      }
    }
    return out.take();
  }

  /** The global section with initializers renumbered and the fuel counter appended (i64, mut, 0). */
  globals(s: Section | undefined): Uint8Array {
    const out = new Sink(s === undefined ? 16 : s.end - s.payloadOffset + 16);
    out.u32(this.m.globals.length + 1);
    for (const g of this.m.globals) {
      out.span(this.bytes, g.offset, g.init.start);
      this.constExpr(out, g.init.start, g.init.end, 'global');
    }
    out.byte(I64);
    out.byte(1);
    out.byte(I64_CONST);
    out.byte(0);
    out.byte(END);
    return out.take();
  }

  /** The table section with initializer expressions renumbered, or null when none has one. */
  tables(s: Section | undefined): Uint8Array | null {
    if (s === undefined || this.m.tables.every((t) => t.init === null)) return null;
    const out = new Sink(s.end - s.payloadOffset + 16);
    out.u32(this.m.tables.length);
    for (const t of this.m.tables) {
      if (t.init === null) out.span(this.bytes, t.offset, t.end);
      else {
        out.span(this.bytes, t.offset, t.init.start);
        this.constExpr(out, t.init.start, t.init.end, 'table');
      }
    }
    return out.take();
  }

  /** The export section with function exports renumbered and `name` → global `fuelGlobal` appended. */
  exports(s: Section | undefined, name: string, fuelGlobal: number): Uint8Array {
    const b = this.bytes;
    const out = new Sink(s === undefined ? 32 : s.end - s.payloadOffset + 32);
    out.u32(this.m.exports.length + 1);
    if (s !== undefined) {
      const r = new Reader(b, s.itemsOffset, s.end, 'export');
      for (let i = 0; i < s.count; i++) {
        const from = r.pos;
        r.skip(r.u32());
        const kindAt = r.pos;
        const kind = r.u8();
        const index = r.u32();
        if (kind === FUNC_KIND) {
          out.span(b, from, kindAt + 1);
          out.u32(this.map(index, from, 'export'));
        } else {
          if (kind === GLOBAL_KIND) this.checkGlobal(index, from, 'export');
          out.span(b, from, r.pos);
        }
      }
    }
    out.name(name);
    out.byte(GLOBAL_KIND);
    out.u32(fuelGlobal);
    return out.take();
  }

  /** The start section, renumbered. */
  start(index: number): Uint8Array {
    const out = new Sink(8);
    out.u32(this.map(index, 0, 'start'));
    return out.take();
  }

  /** The import section with `module`.`name` (a function of type `typeIndex`) appended last. */
  imports(s: Section | undefined, module: string, name: string, typeIndex: number): Uint8Array {
    const out = new Sink(s === undefined ? 32 : s.end - s.payloadOffset + 32);
    out.u32(this.m.imports.length + 1);
    if (s !== undefined) out.span(this.bytes, s.itemsOffset, s.end);
    out.name(module);
    out.name(name);
    out.byte(FUNC_KIND);
    out.u32(typeIndex);
    return out.take();
  }
}
