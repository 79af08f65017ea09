/**
 * Module reader and writer: the header, every section in order, typed entries, and byte-exact
 * re-encoding.
 *
 * Owns: section framing and order (custom sections anywhere; known sections at most once, in
 * the order type, import, function, table, memory, tag, global, export, start, element,
 * datacount, code, data), and the cross-section counts the format fixes (function vs code,
 * datacount vs data).
 *
 * Invariant: `encodeModule(parseModule(b))` is byte-for-byte `b`: sections are kept as ranges of
 * the original bytes and only sections named in `edits` are re-encoded. Every malformed input,
 * including trailing bytes, truncated sections and a declared size that disagrees with the
 * contents, is INVALID_MODULE with an absolute `offset` (and the section's name).
 *
 * Does not protect against: semantic invalidity (type mismatches, out-of-range indices, limits
 * over V8's implementation maxima). Parsing is not validation; compile with V8 for that. Custom
 * section payloads (name, DWARF, producers) are kept raw and never interpreted.
 */

import { SandboxError } from '../errors.ts';
import { Reader, Writer, invalidModule, u32Size } from './bytes.ts';
import { readCodeBody } from './code.ts';
import type { CodeBody } from './code.ts';
import { readData, readElement, readExport, readGlobal, readImport, readMemory, readTable } from './sections.ts';
import type { DataSegment, ElementSegment, ExportEntry, ExternKind, GlobalEntry, Import, MemoryEntry, Range, TableEntry } from './sections.ts';
import { readFuncType, readTagType } from './types.ts';
import type { FuncType } from './types.ts';

export const SectionId = {
  CUSTOM: 0,
  TYPE: 1,
  IMPORT: 2,
  FUNCTION: 3,
  TABLE: 4,
  MEMORY: 5,
  GLOBAL: 6,
  EXPORT: 7,
  START: 8,
  ELEMENT: 9,
  CODE: 10,
  DATA: 11,
  DATA_COUNT: 12,
  TAG: 13,
} as const;
export type SectionId = (typeof SectionId)[keyof typeof SectionId];

const SECTION_NAMES = ['custom', 'type', 'import', 'function', 'table', 'memory', 'global', 'export', 'start', 'element', 'code', 'data', 'datacount', 'tag'];

/** Position of each known section id in the required order (tag sits between memory and global). */
const RANK = [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 11, 6];

export function sectionName(id: number): string {
  return SECTION_NAMES[id] ?? `unknown(${id})`;
}

export interface Section {
  readonly id: number;
  readonly name: string;
  /** A custom section's own name; null for known sections. */
  readonly customName: string | null;
  /** Offset of the section id byte. */
  readonly offset: number;
  readonly payloadOffset: number;
  readonly end: number;
  /** For vector-shaped sections: the offset of the first entry (just after the count) and the count. */
  readonly itemsOffset: number;
  readonly count: number;
}

export interface CustomSection {
  readonly name: string;
  /** The payload after the name. */
  readonly data: Range;
  readonly sectionIndex: number;
}

export interface ParsedModule {
  /** The input, unchanged; every range in this structure indexes it. */
  readonly bytes: Uint8Array;
  readonly sections: readonly Section[];
  readonly types: readonly FuncType[];
  readonly imports: readonly Import[];
  /** Type index of each defined function, in order. */
  readonly functions: readonly number[];
  readonly tables: readonly TableEntry[];
  readonly memories: readonly MemoryEntry[];
  /** Type index of each defined tag. */
  readonly tags: readonly number[];
  readonly globals: readonly GlobalEntry[];
  readonly exports: readonly ExportEntry[];
  readonly start: number | null;
  readonly elements: readonly ElementSegment[];
  readonly dataCount: number | null;
  readonly codes: readonly CodeBody[];
  readonly data: readonly DataSegment[];
  readonly customs: readonly CustomSection[];
}

const MAGIC = [0x00, 0x61, 0x73, 0x6d];
const HEADER_SIZE = 8;

export function parseModule(bytes: Uint8Array): ParsedModule {
  if (!(bytes instanceof Uint8Array)) throw invalidModule('input is not a Uint8Array', 0);
  const r = new Reader(bytes);
  if (bytes.length < HEADER_SIZE) r.fail('unexpected end of header', bytes.length);
  for (let i = 0; i < 4; i++) if (bytes[i] !== MAGIC[i]) r.fail('bad magic number (not a wasm module)', i);
  if (bytes[4] !== 1 || bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) {
    const component = bytes[6] === 1 && bytes[7] === 0;
    r.fail(component ? 'this is a component, not a core module' : 'unsupported wasm version', 4);
  }
  r.pos = HEADER_SIZE;

  const m = {
    bytes,
    sections: [] as Section[],
    types: [] as FuncType[],
    imports: [] as Import[],
    functions: [] as number[],
    tables: [] as TableEntry[],
    memories: [] as MemoryEntry[],
    tags: [] as number[],
    globals: [] as GlobalEntry[],
    exports: [] as ExportEntry[],
    start: null as number | null,
    elements: [] as ElementSegment[],
    dataCount: null as number | null,
    codes: [] as CodeBody[],
    data: [] as DataSegment[],
    customs: [] as CustomSection[],
  };
  let lastRank = 0;
  let countsAt = -1;
  let dataCountAt = -1;

  while (!r.atEnd()) {
    const offset = r.pos;
    const id = r.u8();
    if (id > 13) r.fail(`unknown section id ${id}`, offset);
    const name = sectionName(id);
    r.section = name;
    const size = r.u32();
    const payloadOffset = r.pos;
    if (size > r.remaining) r.fail(`section size ${size} extends past the end of the module`, offset);
    const s = r.sub(size, name);
    r.section = undefined;
    if (id !== SectionId.CUSTOM) {
      const rank = RANK[id]!;
      if (rank === lastRank) s.fail(`duplicate ${name} section`, offset);
      if (rank < lastRank) s.fail(`${name} section out of order`, offset);
      lastRank = rank;
    }
    let customName: string | null = null;
    let count = 0;
    let itemsOffset = payloadOffset;
    const items = <T>(read: (r: Reader) => T, into: T[]): void => {
      count = s.vecCount();
      itemsOffset = s.pos;
      for (let i = 0; i < count; i++) into.push(read(s));
    };
    switch (id) {
      case SectionId.CUSTOM:
        customName = s.name();
        m.customs.push({ name: customName, data: { start: s.pos, end: s.end }, sectionIndex: m.sections.length });
        s.pos = s.end;
        break;
      case SectionId.TYPE:
        items(readFuncType, m.types);
        break;
      case SectionId.IMPORT:
        items(readImport, m.imports);
        break;
      case SectionId.FUNCTION:
        countsAt = offset;
        items((x) => x.u32(), m.functions);
        break;
      case SectionId.TABLE:
        items(readTable, m.tables);
        break;
      case SectionId.MEMORY:
        items(readMemory, m.memories);
        break;
      case SectionId.TAG:
        items(readTagType, m.tags);
        break;
      case SectionId.GLOBAL:
        items(readGlobal, m.globals);
        break;
      case SectionId.EXPORT:
        items(readExport, m.exports);
        break;
      case SectionId.START:
        m.start = s.u32();
        break;
      case SectionId.ELEMENT:
        items(readElement, m.elements);
        break;
      case SectionId.DATA_COUNT:
        dataCountAt = offset;
        m.dataCount = s.u32();
        break;
      case SectionId.CODE:
        countsAt = offset;
        items(readCodeBody, m.codes);
        break;
      case SectionId.DATA:
        items(readData, m.data);
        break;
    }
    if (!s.atEnd()) s.fail(`section size mismatch: ${s.remaining} unread bytes`, s.pos);
    m.sections.push({ id, name, customName, offset, payloadOffset, end: s.end, itemsOffset, count });
  }

  if (countsAt >= 0 && m.functions.length !== m.codes.length) {
    r.fail(`function and code sections disagree: ${m.functions.length} functions, ${m.codes.length} bodies`, countsAt);
  }
  if (m.dataCount !== null && m.dataCount !== m.data.length) {
    r.fail(`data count ${m.dataCount} does not match ${m.data.length} data segments`, dataCountAt);
  }
  return m;
}

/**
 * Re-encodes a parsed module. `edits` maps a known section id to its new payload; a section the
 * module lacks is inserted at its required position. With no edits the output equals the input.
 */
export function encodeModule(module: ParsedModule, edits: ReadonlyMap<number, Uint8Array> = new Map()): Uint8Array<ArrayBuffer> {
  const { bytes, sections } = module;
  if (edits.size === 0) return bytes.slice();
  const present = new Set(sections.map((s) => s.id));
  const inserts = new Map<number, number[]>();
  const framed = (payload: Uint8Array): number => 1 + u32Size(payload.length) + payload.length;
  let size = HEADER_SIZE;
  for (const [id, payload] of edits) {
    if (id <= 0 || id > 13) throw new SandboxError('INTERNAL', `encodeModule: cannot edit section id ${id}`);
    if (present.has(id)) continue;
    size += framed(payload);
    const at = insertionIndex(sections, id);
    inserts.set(at, [...(inserts.get(at) ?? []), id].sort((a, b) => RANK[a]! - RANK[b]!));
  }
  for (const s of sections) {
    const edited = s.id === SectionId.CUSTOM ? undefined : edits.get(s.id);
    size += edited === undefined ? s.end - s.offset : framed(edited);
  }
  const w = new Writer(size);
  w.bytes(bytes.subarray(0, HEADER_SIZE));
  const writeSection = (id: number, payload: Uint8Array): void => {
    w.u8(id).u32(payload.length).bytes(payload);
  };
  for (let i = 0; i <= sections.length; i++) {
    for (const id of inserts.get(i) ?? []) writeSection(id, edits.get(id)!);
    const s = sections[i];
    if (s === undefined) break;
    const edited = s.id === SectionId.CUSTOM ? undefined : edits.get(s.id);
    if (edited === undefined) w.bytes(bytes.subarray(s.offset, s.end));
    else writeSection(s.id, edited);
  }
  return w.take();
}

/** Where a missing section goes: after the last known section that must precede it. */
function insertionIndex(sections: readonly Section[], id: number): number {
  const rank = RANK[id]!;
  let lastLower = -1;
  let firstHigher = -1;
  sections.forEach((s, i) => {
    if (s.id === SectionId.CUSTOM) return;
    if (RANK[s.id]! < rank) lastLower = i;
    else if (firstHigher === -1) firstHigher = i;
  });
  if (lastLower >= 0) return lastLower + 1;
  return firstHigher >= 0 ? firstHigher : sections.length;
}

export function findSection(module: ParsedModule, id: number): Section | undefined {
  return id === SectionId.CUSTOM ? undefined : module.sections.find((s) => s.id === id);
}

export function importsOf(module: ParsedModule, kind: ExternKind): Import[] {
  return module.imports.filter((i) => i.kind === kind);
}

/** The type of function `index` in the function index space (imports first), or undefined. */
export function functionType(module: ParsedModule, index: number): FuncType | undefined {
  const imported = importsOf(module, 'func');
  const entry = imported[index];
  const typeIndex = entry !== undefined && entry.kind === 'func' ? entry.typeIndex : module.functions[index - imported.length];
  return typeIndex === undefined ? undefined : module.types[typeIndex];
}
