/**
 * Decoders for the entries of each known section: imports, tables, memories, globals, exports,
 * element and data segments.
 *
 * Owns: the typed shapes of section entries and where each one sits in the module (`offset`/`end`
 * are absolute, so an entry can be copied verbatim when it is not changed).
 *
 * Invariant: each reader consumes exactly one well-formed entry or throws INVALID_MODULE with the
 * offset of the first byte it could not accept. Index values are decoded, not range-checked
 * (that is validation, left to V8 or to callers who need it).
 *
 * Does not protect against: segment payloads that are well-formed but semantically wrong (data
 * past the memory's end, element indices past the table): those trap at instantiation in V8.
 */

import type { Reader } from './bytes.ts';
import { readConstExpr } from './code.ts';
import { readGlobalType, readLimits, readTableType, readTagType, readValType } from './types.ts';
import type { GlobalType, Limits, TableType, ValType } from './types.ts';

/** An absolute byte range `[start, end)` in the module. */
export interface Range {
  readonly start: number;
  readonly end: number;
}

export type ExternKind = 'func' | 'table' | 'memory' | 'global' | 'tag';
export const EXTERN_KINDS: readonly ExternKind[] = ['func', 'table', 'memory', 'global', 'tag'];

export type ImportDesc =
  | { readonly kind: 'func'; readonly typeIndex: number }
  | { readonly kind: 'table'; readonly table: TableType }
  | { readonly kind: 'memory'; readonly memory: Limits }
  | { readonly kind: 'global'; readonly global: GlobalType }
  | { readonly kind: 'tag'; readonly typeIndex: number };

export type Import = { readonly module: string; readonly name: string; readonly offset: number } & ImportDesc;

export interface TableEntry {
  readonly type: TableType;
  /** Initializer expression (function-references form `0x40 0x00 …`), else null. */
  readonly init: Range | null;
  readonly offset: number;
  readonly end: number;
}

export interface MemoryEntry {
  readonly limits: Limits;
  readonly offset: number;
  readonly end: number;
}

export interface GlobalEntry {
  readonly type: GlobalType;
  /** The init expression including its final `end`, kept raw. */
  readonly init: Range;
  readonly offset: number;
  readonly end: number;
}

export interface ExportEntry {
  readonly name: string;
  readonly kind: ExternKind;
  readonly index: number;
  readonly offset: number;
}

export type SegmentMode = 'active' | 'passive' | 'declarative';

export interface ElementSegment {
  readonly flags: number;
  readonly mode: SegmentMode;
  readonly tableIndex: number;
  readonly offsetExpr: Range | null;
  readonly elemType: ValType;
  /** Number of elements (function indices or expressions). */
  readonly count: number;
  readonly offset: number;
  readonly end: number;
}

export interface DataSegment {
  readonly mode: 'active' | 'passive';
  readonly memoryIndex: number;
  readonly offsetExpr: Range | null;
  /** The initialization bytes, in place. */
  readonly data: Range;
  readonly offset: number;
  readonly end: number;
}

function externKind(r: Reader): ExternKind {
  const at = r.pos;
  const b = r.u8();
  return EXTERN_KINDS[b] ?? r.fail(`malformed external kind 0x${b.toString(16)}`, at);
}

export function readImport(r: Reader): Import {
  const offset = r.pos;
  const module = r.name();
  const name = r.name();
  const kind = externKind(r);
  switch (kind) {
    case 'func':
      return { module, name, offset, kind, typeIndex: r.u32() };
    case 'table':
      return { module, name, offset, kind, table: readTableType(r) };
    case 'memory':
      return { module, name, offset, kind, memory: readLimits(r) };
    case 'global':
      return { module, name, offset, kind, global: readGlobalType(r) };
    case 'tag':
      return { module, name, offset, kind, typeIndex: readTagType(r) };
  }
}

export function readTable(r: Reader): TableEntry {
  const offset = r.pos;
  if (r.peekU8() === 0x40) {
    r.pos++;
    if (r.u8() !== 0x00) r.fail('malformed table entry: expected 0x00 after 0x40', r.pos - 1);
    const type = readTableType(r);
    const init = readConstExpr(r);
    return { type, init, offset, end: r.pos };
  }
  const type = readTableType(r);
  return { type, init: null, offset, end: r.pos };
}

export function readMemory(r: Reader): MemoryEntry {
  const offset = r.pos;
  const limits = readLimits(r);
  return { limits, offset, end: r.pos };
}

export function readGlobal(r: Reader): GlobalEntry {
  const offset = r.pos;
  const type = readGlobalType(r);
  const init = readConstExpr(r);
  return { type, init, offset, end: r.pos };
}

export function readExport(r: Reader): ExportEntry {
  const offset = r.pos;
  const name = r.name();
  const kind = externKind(r);
  return { name, kind, index: r.u32(), offset };
}

export function readElement(r: Reader): ElementSegment {
  const offset = r.pos;
  const flags = r.u32();
  if (flags > 7) r.fail(`malformed element segment flags ${flags}`, offset);
  const mode: SegmentMode = flags & 1 ? (flags & 2 ? 'declarative' : 'passive') : 'active';
  const usesExprs = (flags & 4) !== 0;
  const tableIndex = mode === 'active' && flags & 2 ? r.u32() : 0;
  const offsetExpr = mode === 'active' ? readConstExpr(r) : null;
  let elemType: ValType = 'funcref';
  if (flags & 3) {
    if (usesExprs) elemType = readValType(r);
    else {
      const at = r.pos;
      if (r.u8() !== 0x00) r.fail('malformed element kind', at);
    }
  }
  const count = r.vecCount();
  for (let i = 0; i < count; i++) {
    if (usesExprs) readConstExpr(r);
    else r.u32();
  }
  return { flags, mode, tableIndex, offsetExpr, elemType, count, offset, end: r.pos };
}

export function readData(r: Reader): DataSegment {
  const offset = r.pos;
  const flags = r.u32();
  if (flags > 2) r.fail(`malformed data segment flags ${flags}`, offset);
  const memoryIndex = flags === 2 ? r.u32() : 0;
  const offsetExpr = flags === 1 ? null : readConstExpr(r);
  const len = r.u32();
  const start = r.pos;
  r.skip(len);
  return { mode: flags === 1 ? 'passive' : 'active', memoryIndex, offsetExpr, data: { start, end: r.pos }, offset, end: r.pos };
}
