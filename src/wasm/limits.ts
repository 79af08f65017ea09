/**
 * The space wall's binary half (DESIGN §3): caps every memory and table a module defines, and
 * makes a failed `memory.grow` trap instead of returning -1.
 *
 * Owns: `applyLimits`. Each defined memory's maximum becomes `min(declared, maxMemoryPages)`
 * (a memory without a maximum gets the cap); each defined table's maximum becomes
 * `min(declared, maxTableElements)`; an initial size over the cap is MEMORY_LIMIT before any
 * guest code runs. Imported memories and tables are not rewritten (the host creates them) but
 * are reported, and an import whose initial size is over the cap is refused the same way. With
 * `trapOnGrowFailure`, every `memory.grow` becomes `call $guard`; the guard grows, and on failure
 * stores the requested delta in the exported global `__membrane_grow_failed` and executes
 * `unreachable`, so the host can tell a memory-limit trap from any other trap.
 *
 * The input is validated with V8 first (validate.ts) unless the caller passes `validated: true`:
 * an out-of-range index in an invalid module would otherwise name the guard, its type or the flag
 * global appended below (this rewriter does not check indices itself; the gate is its guard).
 *
 * Invariant: no existing index moves. The guard function, its type (unless an identical one
 * exists), the global and the export are appended at the end of their index spaces, so calls,
 * `call_indirect`, element segments, the start function and the name section stay valid.
 * Bodies without `memory.grow` are copied byte for byte; with nothing to change the input is
 * returned as is. The export name `__membrane_grow_failed` is reserved: a module exporting it is
 * INVALID_MODULE, so a guest cannot forge the signal.
 *
 * The flag global is i32 (i64 for a 64-bit memory) and signed as JS sees it: read a delta above
 * 2^31 pages with `>>> 0`. A grow never fails for delta 0, so any non-zero value means a failure.
 *
 * Does not protect against: memory obtained outside `memory.grow` (a host that creates an
 * imported memory larger than reported); a failed grow inside the start function (it traps
 * instantiation, so there is no instance whose flag the host could read: the host sees a plain
 * trap); `memory.grow` on a memory other than 0 (refused as INVALID_MODULE; Node 20 has no
 * multi-memory); debug info (DWARF, source maps) whose code offsets go stale when a body is
 * rewritten. Rewriting an already rewritten module fails on the reserved export name.
 */

import { SandboxError } from '../errors.ts';
import { Reader, Writer, invalidModule } from './bytes.ts';
import { InstructionCursor } from './code.ts';
import { SectionId, encodeModule, findSection, importsOf, parseModule } from './module.ts';
import type { ParsedModule } from './module.ts';
import { Op } from './opcodes.ts';
import { sameFuncType, writeFuncType, writeLimits, writeValType } from './types.ts';
import type { FuncType, Limits, ValType } from './types.ts';
import { assertValidModule } from './validate.ts';

/** Reserved export holding the delta of the `memory.grow` that failed (0 until one does). */
export const GROW_FAILED_EXPORT = '__membrane_grow_failed';

/** A 32-bit memory cannot exceed 65536 pages (4 GiB); larger maxima are invalid in V8. */
export const MAX_MEMORY32_PAGES = 65536;
/** A 32-bit table's limits are u32. */
const MAX_TABLE32_ELEMENTS = 0xffffffff;

export interface LimitsOptions {
  /** Cap for every memory, in 64 KiB pages. */
  readonly maxMemoryPages: number;
  /** Cap for every table, in elements. */
  readonly maxTableElements: number;
  /** Replace `memory.grow` so that a failed grow traps (DESIGN §3 default: true). */
  readonly trapOnGrowFailure: boolean;
  /** True only when these exact bytes already passed `assertValidModule`; otherwise they are validated first. */
  readonly validated?: boolean;
}

export interface MemoryLimitInfo {
  readonly memoryIndex: number;
  readonly imported: boolean;
  readonly initialPages: number;
  readonly declaredMaxPages: number | null;
  /** The maximum after the rewrite (for an import: the maximum the host must create it with). */
  readonly maxPages: number;
  readonly shared: boolean;
  readonly index64: boolean;
}

export interface TableLimitInfo {
  readonly tableIndex: number;
  readonly imported: boolean;
  readonly refType: ValType;
  readonly initialElements: number;
  readonly declaredMaxElements: number | null;
  readonly maxElements: number;
}

/** `T` is the input's type: an unchanged module is returned as the very same array. */
export interface LimitsResult<T extends Uint8Array = Uint8Array<ArrayBuffer>> {
  readonly bytes: T | Uint8Array<ArrayBuffer>;
  readonly changed: boolean;
  /** Memory 0, or null when the module has no memory. */
  readonly memory: MemoryLimitInfo | null;
  readonly memories: readonly MemoryLimitInfo[];
  readonly tables: readonly TableLimitInfo[];
  /** Number of `memory.grow` instructions replaced by a call to the guard. */
  readonly growSites: number;
  readonly guardFunctionIndex: number | null;
  readonly growFailedExport: string | null;
}

function checkCount(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    throw new SandboxError('POLICY_INVALID', `${name} must be a non-negative integer`, { option: name });
  }
  return v;
}

const capOf = (declared: number | null, cap: number): number => (declared === null ? cap : Math.min(declared, cap));

export function applyLimits<T extends Uint8Array>(bytes: T, opts: LimitsOptions): LimitsResult<T> {
  const memCap = checkCount('maxMemoryPages', opts.maxMemoryPages);
  const tableCap = checkCount('maxTableElements', opts.maxTableElements);
  if (typeof opts.trapOnGrowFailure !== 'boolean') {
    throw new SandboxError('POLICY_INVALID', 'trapOnGrowFailure must be a boolean', { option: 'trapOnGrowFailure' });
  }
  if (opts.validated !== true) assertValidModule(bytes);
  const m = parseModule(bytes);
  const reserved = m.exports.find((e) => e.name === GROW_FAILED_EXPORT);
  if (reserved !== undefined) throw invalidModule(`export name ${GROW_FAILED_EXPORT} is reserved`, reserved.offset, 'export');

  const memories = memoryInfo(m, memCap);
  const tables = tableInfo(m, tableCap);
  const edits = new Map<number, Uint8Array>();

  const importedMemories = importsOf(m, 'memory').length;
  const memoryChanged = m.memories.map((e, i) => e.limits.max !== memories[importedMemories + i]!.maxPages);
  if (memoryChanged.some(Boolean)) {
    edits.set(SectionId.MEMORY, rewriteEntries(m, SectionId.MEMORY, memoryChanged, (w, i) => {
      const limits = m.memories[i]!.limits;
      writeLimits(w, { ...limits, max: memories[importedMemories + i]!.maxPages });
    }));
  }
  const importedTables = importsOf(m, 'table').length;
  const tableChanged = m.tables.map((e, i) => e.type.limits.max !== tables[importedTables + i]!.maxElements);
  if (tableChanged.some(Boolean)) {
    edits.set(SectionId.TABLE, rewriteEntries(m, SectionId.TABLE, tableChanged, (w, i) => {
      const entry = m.tables[i]!;
      if (entry.init !== null) w.u8(0x40).u8(0x00);
      writeValType(w, entry.type.refType);
      writeLimits(w, { ...entry.type.limits, max: tables[importedTables + i]!.maxElements });
      if (entry.init !== null) w.bytes(m.bytes.subarray(entry.init.start, entry.init.end));
    }));
  }

  let growSites = 0;
  let guardFunctionIndex: number | null = null;
  const memory = memories[0] ?? null;
  if (opts.trapOnGrowFailure && memory !== null) {
    const sites = findGrowSites(m);
    for (const list of sites.values()) growSites += list.length / 2;
    if (growSites > 0) guardFunctionIndex = addGuard(m, sites, memory.index64, edits);
  }

  const changed = edits.size > 0;
  return {
    bytes: changed ? encodeModule(m, edits) : bytes,
    changed,
    memory,
    memories,
    tables,
    growSites,
    guardFunctionIndex,
    growFailedExport: guardFunctionIndex === null ? null : GROW_FAILED_EXPORT,
  };
}

function memoryInfo(m: ParsedModule, requestedCap: number): MemoryLimitInfo[] {
  const all: { limits: Limits; imported: boolean }[] = [
    ...m.imports.flatMap((i) => (i.kind === 'memory' ? [{ limits: i.memory, imported: true }] : [])),
    ...m.memories.map((e) => ({ limits: e.limits, imported: false })),
  ];
  return all.map(({ limits, imported }, memoryIndex) => {
    const cap = limits.index64 ? requestedCap : Math.min(requestedCap, MAX_MEMORY32_PAGES);
    if (limits.min > cap) {
      throw new SandboxError(
        'MEMORY_LIMIT',
        `memory ${memoryIndex} needs ${limits.min} pages initially; the limit is ${cap}`,
        { memoryIndex, imported, initialPages: limits.min, maxPages: cap },
      );
    }
    return {
      memoryIndex,
      imported,
      initialPages: limits.min,
      declaredMaxPages: limits.max,
      maxPages: capOf(limits.max, cap),
      shared: limits.shared,
      index64: limits.index64,
    };
  });
}

function tableInfo(m: ParsedModule, requestedCap: number): TableLimitInfo[] {
  const all = [
    ...m.imports.flatMap((i) => (i.kind === 'table' ? [{ type: i.table, imported: true }] : [])),
    ...m.tables.map((e) => ({ type: e.type, imported: false })),
  ];
  return all.map(({ type, imported }, tableIndex) => {
    const { limits } = type;
    const cap = limits.index64 ? requestedCap : Math.min(requestedCap, MAX_TABLE32_ELEMENTS);
    if (limits.min > cap) {
      throw new SandboxError(
        'MEMORY_LIMIT',
        `table ${tableIndex} needs ${limits.min} elements initially; the limit is ${cap}`,
        { tableIndex, imported, initialElements: limits.min, maxElements: cap },
      );
    }
    return {
      tableIndex,
      imported,
      refType: type.refType,
      initialElements: limits.min,
      declaredMaxElements: limits.max,
      maxElements: capOf(limits.max, cap),
    };
  });
}

/** A vector section's new payload: changed entries re-encoded, the rest copied verbatim. */
function rewriteEntries(
  m: ParsedModule,
  id: number,
  changed: readonly boolean[],
  write: (w: Writer, index: number) => void,
): Uint8Array {
  const entries = id === SectionId.MEMORY ? m.memories : m.tables;
  const w = new Writer(64 + entries.length * 16);
  w.u32(entries.length);
  entries.forEach((e, i) => {
    if (changed[i]) write(w, i);
    else w.bytes(m.bytes.subarray(e.offset, e.end));
  });
  return w.finish();
}

/**
 * Every `memory.grow` by body: body index → flat [offset, end, offset, end, …]. Scans with one
 * allocation-free cursor and allocates only for bodies that grow. A body with no 0x40 byte at all
 * cannot contain `memory.grow` and is skipped without decoding (found with a native byte search).
 */
function findGrowSites(m: ParsedModule): Map<number, number[]> {
  const sites = new Map<number, number[]>();
  const bytes = m.bytes;
  const c = new InstructionCursor(bytes, 0, 0);
  const grow = Op.MEMORY_GROW;
  let next = -1;
  for (let i = 0; i < m.codes.length; i++) {
    const body = m.codes[i]!;
    if (next < body.codeStart) next = bytes.indexOf(grow, body.codeStart);
    if (next < 0) break;
    if (next >= body.end) continue;
    c.reset(body.codeStart, body.end);
    while (c.seek(grow)) {
      if (bytes[c.offset + 1] !== 0) {
        const memoryIndex = new Reader(bytes, c.offset + 1, c.end, 'code').u32();
        if (memoryIndex !== 0) throw invalidModule(`memory.grow on memory ${memoryIndex} is not supported`, c.offset, 'code');
      }
      let list = sites.get(i);
      if (list === undefined) sites.set(i, (list = []));
      list.push(c.offset, c.end);
    }
  }
  return sites;
}

/** Appends `payload` entries to a vector section (creating it if absent). */
function appendEntries(m: ParsedModule, id: number, added: readonly Uint8Array[]): Uint8Array {
  const s = findSection(m, id);
  const old = s === undefined ? new Uint8Array(0) : m.bytes.subarray(s.itemsOffset, s.end);
  const w = new Writer(old.length + 16 + added.reduce((n, a) => n + a.length, 0));
  w.u32((s?.count ?? 0) + added.length).bytes(old);
  for (const a of added) w.bytes(a);
  return w.finish();
}

const bytesOf = (fill: (w: Writer) => void): Uint8Array => {
  const w = new Writer(32);
  fill(w);
  return w.finish();
};

/** Adds the guard function, its type, the flag global and its export; returns the guard's index. */
function addGuard(m: ParsedModule, sites: ReadonlyMap<number, number[]>, index64: boolean, edits: Map<number, Uint8Array>): number {
  const t: ValType = index64 ? 'i64' : 'i32';
  const vt = index64 ? 0x7e : 0x7f;
  const guardType: FuncType = { params: [t], results: [t] };
  let typeIndex = m.types.findIndex((x) => sameFuncType(x, guardType));
  if (typeIndex < 0) {
    typeIndex = m.types.length;
    edits.set(SectionId.TYPE, appendEntries(m, SectionId.TYPE, [bytesOf((w) => writeFuncType(w, guardType))]));
  }
  const guardIndex = importsOf(m, 'func').length + m.functions.length;
  const globalIndex = importsOf(m, 'global').length + m.globals.length;
  edits.set(SectionId.FUNCTION, appendEntries(m, SectionId.FUNCTION, [bytesOf((w) => w.u32(typeIndex))]));
  const constOp = index64 ? Op.I64_CONST : Op.I32_CONST;
  edits.set(SectionId.GLOBAL, appendEntries(m, SectionId.GLOBAL, [Uint8Array.of(vt, 0x01, constOp, 0x00, Op.END)]));
  edits.set(SectionId.EXPORT, appendEntries(m, SectionId.EXPORT, [bytesOf((w) => w.name(GROW_FAILED_EXPORT).u8(0x03).u32(globalIndex))]));

  // (local.get 0) (memory.grow 0) (local.tee 1) (const -1) (eq)
  // (if (then (local.get 0) (global.set $g) (unreachable))) (local.get 1)
  const guard = bytesOf((w) => {
    w.u8(0x01).u8(0x01).u8(vt);
    w.u8(Op.LOCAL_GET).u8(0).u8(Op.MEMORY_GROW).u8(0).u8(Op.LOCAL_TEE).u8(1);
    w.u8(constOp).u8(0x7f).u8(index64 ? Op.I64_EQ : Op.I32_EQ);
    w.u8(Op.IF).u8(0x40).u8(Op.LOCAL_GET).u8(0).u8(Op.GLOBAL_SET).u32(globalIndex).u8(Op.UNREACHABLE).u8(Op.END);
    w.u8(Op.LOCAL_GET).u8(1).u8(Op.END);
  });
  edits.set(SectionId.CODE, rewriteCode(m, sites, guardIndex, guard));
  return guardIndex;
}

/** The code section with grow sites replaced by `call guard` and the guard body appended. */
function rewriteCode(m: ParsedModule, sites: ReadonlyMap<number, number[]>, guardIndex: number, guard: Uint8Array): Uint8Array {
  const s = findSection(m, SectionId.CODE)!;
  const bytes = m.bytes;
  const call = bytesOf((w) => w.u8(Op.CALL).u32(guardIndex));
  const out = new Writer(s.end - s.payloadOffset + 16 + guard.length + (call.length + 1) * 8);
  out.u32(m.codes.length + 1);
  const body = new Writer(256);
  m.codes.forEach((code, i) => {
    const list = sites.get(i);
    if (list === undefined) {
      out.bytes(bytes.subarray(code.offset, code.end));
      return;
    }
    body.reset();
    let from = code.bodyStart;
    for (let k = 0; k < list.length; k += 2) {
      body.bytes(bytes.subarray(from, list[k]!)).bytes(call);
      from = list[k + 1]!;
    }
    body.bytes(bytes.subarray(from, code.end));
    out.u32(body.length).bytes(body.view());
  });
  out.u32(guard.length).bytes(guard);
  return out.view(); // `out` is dropped here, so the view cannot change under the caller
}
