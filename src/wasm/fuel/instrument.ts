/**
 * The work wall's binary half (DESIGN §3): `instrumentFuel` rewrites a module so that it charges
 * deterministic fuel as it runs and asks the host for more when its chunk runs out.
 *
 * Owns: the host contract.
 * - A function import `membrane:fuel`.`refill` of type (i64) -> (i64) is appended as the last
 *   import, so every defined function index moves up by one (renumber.ts, names.ts).
 * - A mutable i64 global, initially 0, is appended to the global index space and exported as
 *   `__membrane_fuel`: the fuel left in the current chunk. The host sets it before a call and
 *   reads it after: fuelUsed = granted − final value.
 * - The guest calls `refill(current)` when the counter is negative at a check point (function
 *   entry, loop header, after a size charge; a threaded twin that calls nothing outside a loop
 *   leaves its entry's check to its wrapper, scan.ts `entryCheck`) with the current counter; the
 *   host either throws
 *   (the call ends: FUEL_EXHAUSTED or TIMEOUT) or returns the new counter (≥ 0), which the guest
 *   stores. Every refill site writes the counter to the global first, so when refill throws the
 *   global holds the deficit and fuelUsed = granted − global still holds. The host must keep
 *   throwing at every later refill of that call: a guest's `catch_all` can catch the host's
 *   exception, but the counter stays negative, so its next check point asks again.
 * - Every defined function F gets a threaded twin F′ = F + N (N defined functions) of type
 *   (params, i64) → (results, i64) that takes and returns the counter, so direct calls between
 *   instrumented functions pass it in registers (twins.ts); bulk helpers follow the twins. The
 *   host only ever sees original indices (exports, tables, start); the counter is in the global
 *   whenever control is outside threaded code.
 * - The fast paths refill through the module's own `__membrane_fuel_refill`, which writes the
 *   counter to the global and calls the import (twins.ts).
 * - Costs and charge points: cost.ts, scan.ts; the inserted code: body.ts, helpers.ts, twins.ts.
 *
 * Invariant: for a run that returns, fuelUsed is exactly the sum of the static costs of the basic
 * blocks it entered plus its size charges — the same on every machine, for every chunk size.
 * Apart from charging (and trapping only by the host's refusal), the instrumented module behaves
 * like the original: same results, traps, memory and host calls.
 *
 * Does not protect against: time spent in host calls or in `memory.atomic.wait` (the time wall's
 * job); the exact count after a trap (charges since the counter was last written to the global —
 * at a host, helper or indirect call, a refill or a return to the host — are in locals and
 * parameters that a trap discards, so the global can be behind; the host bills every unit it
 * granted instead); custom sections that
 * hold code offsets or function indices other than `name` (DWARF, source maps, branch hints) —
 * they are kept verbatim and go stale; 64-bit memories and tables (refused: INVALID_MODULE).
 * The names `membrane:fuel` (import module) and `__membrane_fuel` (export) are reserved: a module
 * that uses them is INVALID_MODULE, so a guest cannot supply its own counter or refill, and an
 * instrumented module cannot be instrumented twice.
 */

import { SandboxError } from '../../errors.ts';
import { Writer, invalidModule } from '../bytes.ts';
import { SectionId, findSection, parseModule } from '../module.ts';
import type { ParsedModule } from '../module.ts';
import { heapTypeIndices, writeFuncType } from '../types.ts';
import { BodyEmitter, MAX_FUNCTION_LOCALS, localCount } from './body.ts';
import { resolveCosts } from './cost.ts';
import type { CostModel } from './cost.ts';
import { BulkHelpers } from './helpers.ts';
import { rewriteNames } from './names.ts';
import { FUEL_GLOBAL_EXPORT, FUEL_REFILL_IMPORT } from '../../policy/catalog.ts';
import { Renumber } from './renumber.ts';
import { BodyScanner } from './scan.ts';
import { Sink, lebSize } from './sink.ts';
import { LOCAL_REFILL_NAME, TwinTypes, canTwin, twinsFit, writeAdapter, writeLocalRefill, writePlaceholder, writeWrapper } from './twins.ts';
import { TypeTable } from './type-table.ts';
import { assertValidModule } from '../validate.ts';

/** V8's limit on one function body (kV8MaxWasmFunctionSize), size prefix included. */
export const MAX_FUNCTION_BODY_BYTES = 7_654_321;

/** Bump whenever the output bytes for the same input and options could change. */
export const FUEL_REWRITER_VERSION = 6; // 6: inner leaf loops written twice (body.ts); same charges and checks as 5
/** The names live with the import catalog (policy), the one place engine-internal names are kept. */
export const FUEL_IMPORT_MODULE = FUEL_REFILL_IMPORT.module;
/** Type (i64) -> (i64): takes the current counter, returns the new one. */
export const FUEL_IMPORT_NAME = FUEL_REFILL_IMPORT.name;
/** Mutable i64 global: the fuel left in the current chunk. */
export { FUEL_GLOBAL_EXPORT };

export interface FuelStats {
  /** Defined functions instrumented (helpers not included). */
  readonly functions: number;
  /** Loop headers (each charged and checked on every iteration). */
  readonly loops: number;
  /** Function entries + block charges + loop checks inserted. */
  readonly chargePoints: number;
  /** Bulk memory/table instructions and grows replaced by size-charging helper calls. */
  readonly bulkSites: number;
  readonly inputBytes: number;
  readonly outputBytes: number;
}

export interface FuelResult<T> {
  readonly bytes: T;
  readonly stats: FuelStats;
}

export interface FuelOptions {
  readonly costs?: Partial<CostModel>;
  /**
   * True only when these exact bytes already passed `assertValidModule` (validate.ts), or are
   * `applyLimits`' output for such bytes. Otherwise the input is validated first.
   */
  readonly validated?: boolean;
}

export function instrumentFuel(bytes: Uint8Array, opts: FuelOptions = {}): FuelResult<Uint8Array<ArrayBuffer>> {
  const costs = resolveCosts(opts?.costs);
  if (opts?.validated !== true) assertValidModule(bytes);
  heapTypeIndices.reset();
  const m = parseModule(bytes);
  refuseUnsupported(m);
  let funcImports = 0;
  let globalImports = 0;
  for (const i of m.imports) {
    if (i.kind === 'func') funcImports++;
    else if (i.kind === 'global') globalImports++;
  }
  const types = new TypeTable(m.types);
  const refillType = types.index({ params: ['i64'], results: ['i64'] });
  const refill = funcImports;
  const fuelGlobal = globalImports + m.globals.length;
  // Threaded twins (twins.ts): F' = F + N, helpers after them.
  const defined = m.codes.length;
  const twins = twinsFit(funcImports, defined) ? new TwinTypes(m.types, types) : null;
  const twinOffset = twins === null ? 0 : defined;
  const localRefill = funcImports + 1 + m.functions.length + twinOffset;
  const helpers = new BulkHelpers(m, types, localRefill + 1);
  const renumber = new Renumber(m, funcImports);

  // Code first: it discovers the helpers, whose types and functions the other sections list.
  const spaces = { funcImports, funcs: funcImports + m.functions.length, globals: fuelGlobal };
  const scanner = new BodyScanner(bytes, costs, spaces, m.types, helpers.resolve);
  const emitter = new BodyEmitter(fuelGlobal, refill, localRefill);
  const codeSection = findSection(m, SectionId.CODE);
  // Instrumented code is typically 1.5–1.7× the original, and with twins nearly all of it is in
  // the twins' entries (the original indices then mostly hold small wrappers). The buffers grow
  // by doubling when a guess is short.
  const codeBytes = codeSection === undefined ? 0 : codeSection.end - codeSection.offset;
  const bodies = new Sink(twins === null ? codeBytes * 2 + 1024 : Math.ceil(codeBytes / 4) + 1024);
  // The twins' entries (threaded bodies and adapters), then the helpers'.
  const twinBodies = new Sink(twins === null ? 64 : Math.ceil(codeBytes * 1.75) + 1024);
  const twinTypes: number[] = [];
  const fuelLeb = leb(fuelGlobal);
  const refillLeb = leb(refill);
  // By renumbered function index: the defined functions that have a twin to call.
  const twinned = new Uint8Array(twins === null ? 0 : funcImports + 1 + defined);
  if (twins !== null) m.functions.forEach((t, i) => (twinned[funcImports + 1 + i] = m.types[t] !== undefined && canTwin(m.types[t]) ? 1 : 0));
  let loops = 0;
  let chargePoints = 0;
  let bulkSites = 0;
  for (let i = 0; i < m.codes.length; i++) {
    const code = m.codes[i]!;
    const typeIndex = m.functions[i]!;
    const type = m.types[typeIndex];
    if (type === undefined) throw invalidModule(`function ${funcImports + i} has an unknown type index`, code.offset, 'code');
    const params = type.params.length;
    const locals = localCount(params, code);
    scanner.scan(code.codeStart, code.end, params, locals);
    const fast = !scanner.eh && locals < MAX_FUNCTION_LOCALS;
    const self = funcImports + 1 + i;
    const threaded = twins !== null && fast && !scanner.tail && twinned[self] === 1;
    const into = threaded ? twinBodies : bodies;
    const before = into.len;
    if (threaded) {
      const entryCheck = scanner.entryCheck;
      emitter.write(into, bytes, code, scanner, -1, { param: params, twinOffset, blockType: twins.blockType(typeIndex), twinned, entryCheck });
      writeWrapper(bodies, params, self + twinOffset, fuelLeb, entryCheck ? null : refillLeb);
    } else {
      emitter.write(into, bytes, code, scanner, fast ? locals : -1);
      if (twins !== null && twinned[self] === 1) writeAdapter(twinBodies, params, self, fuelLeb);
      else if (twins !== null) writePlaceholder(twinBodies);
    }
    if (twins !== null) twinTypes.push(twins.twinType(typeIndex));
    // V8 refuses a function body over its size limit; say so here, naming the function.
    if (into.len - before > MAX_FUNCTION_BODY_BYTES) {
      throw invalidModule(
        `function ${funcImports + i} would exceed ${MAX_FUNCTION_BODY_BYTES} bytes once metered (${into.len - before})`,
        code.offset,
        'code',
      );
    }
    loops += scanner.loops;
    chargePoints += scanner.chargePoints;
    bulkSites += scanner.bulkSites;
  }
  // Every typed reference the input names (type section, imports, globals, tables, elements,
  // locals, block types, select, ref.null — all decoded by now) must be one of its own types.
  if (heapTypeIndices.max >= m.types.length) {
    throw invalidModule(`heap type index ${heapTypeIndices.max} is out of range (${m.types.length} types)`, 0);
  }
  writeLocalRefill(twinBodies, fuelLeb, refill);
  helpers.writeBodies(twinBodies, costs, fuelLeb, refillLeb);

  const edits = new Map<number, readonly Uint8Array[]>();
  edits.set(SectionId.IMPORT, [renumber.imports(findSection(m, SectionId.IMPORT), FUEL_IMPORT_MODULE, FUEL_IMPORT_NAME, refillType)]);
  edits.set(SectionId.GLOBAL, [renumber.globals(findSection(m, SectionId.GLOBAL))]);
  edits.set(SectionId.EXPORT, [renumber.exports(findSection(m, SectionId.EXPORT), FUEL_GLOBAL_EXPORT, fuelGlobal)]);
  if (types.added.length > 0) edits.set(SectionId.TYPE, [typeSection(m, types)]);
  if (m.start !== null) edits.set(SectionId.START, [renumber.start(m.start)]);
  const elements = findSection(m, SectionId.ELEMENT);
  if (elements !== undefined) edits.set(SectionId.ELEMENT, [renumber.elements(elements)]);
  const tables = renumber.tables(findSection(m, SectionId.TABLE));
  if (tables !== null) edits.set(SectionId.TABLE, [tables]);
  const added = [...twinTypes, refillType, ...helpers.typeIndices()];
  const functionCount = m.codes.length + added.length;
  if (added.length > 0) edits.set(SectionId.FUNCTION, [functionSection(m, added)]);
  if (functionCount > 0) edits.set(SectionId.CODE, [leb(functionCount), bodies.view(), twinBodies.view()]);

  const extraNames: [number, string][] = [[refill, `${FUEL_IMPORT_MODULE}.${FUEL_IMPORT_NAME}`], [localRefill, LOCAL_REFILL_NAME], ...helpers.names()];
  const out = assemble(m, edits, (start, end) => rewriteNames(bytes, start, end, (i) => renumber.mapName(i), extraNames));
  return {
    bytes: out,
    stats: { functions: m.codes.length, loops, chargePoints, bulkSites, inputBytes: bytes.length, outputBytes: out.length },
  };
}

function refuseUnsupported(m: ParsedModule): void {
  // Types are appended after the input's (the refill's, the twins', the helpers'): a type index
  // past them is the input's fault and must not come to name one of ours.
  const types = m.types.length;
  for (const i of m.imports) {
    if (i.module === FUEL_IMPORT_MODULE) throw invalidModule(`import module ${FUEL_IMPORT_MODULE} is reserved`, i.offset, 'import');
    if ((i.kind === 'func' || i.kind === 'tag') && i.typeIndex >= types) throw invalidModule(`type index ${i.typeIndex} is out of range (${types} types)`, i.offset, 'import');
    const limits = i.kind === 'memory' ? i.memory : i.kind === 'table' ? i.table.limits : null;
    if (limits?.index64) throw invalidModule(`${i.kind}64 is not supported by the fuel rewriter`, i.offset, 'import');
  }
  for (const t of m.tags) if (t >= types) throw invalidModule(`tag type index ${t} is out of range (${types} types)`, 0, 'tag');
  for (const e of m.memories) if (e.limits.index64) throw invalidModule('memory64 is not supported by the fuel rewriter', e.offset, 'memory');
  for (const t of m.tables) if (t.type.limits.index64) throw invalidModule('table64 is not supported by the fuel rewriter', t.offset, 'table');
  const reserved = m.exports.find((e) => e.name === FUEL_GLOBAL_EXPORT);
  if (reserved !== undefined) throw invalidModule(`export name ${FUEL_GLOBAL_EXPORT} is reserved`, reserved.offset, 'export');
}

function leb(n: number): Uint8Array {
  const s = new Sink(16);
  s.u32(n);
  return s.take();
}

function typeSection(m: ParsedModule, types: TypeTable): Uint8Array {
  const s = findSection(m, SectionId.TYPE);
  const w = new Writer(s === undefined ? 64 : s.end - s.payloadOffset + 64);
  w.u32(m.types.length + types.added.length);
  if (s !== undefined) w.bytes(m.bytes.subarray(s.itemsOffset, s.end));
  for (const t of types.added) writeFuncType(w, t);
  return w.finish();
}

function functionSection(m: ParsedModule, added: readonly number[]): Uint8Array {
  const s = findSection(m, SectionId.FUNCTION);
  const out = new Sink(s === undefined ? 64 : s.end - s.payloadOffset + 16 + added.length * 5);
  out.u32(m.functions.length + added.length);
  if (s !== undefined) out.span(m.bytes, s.itemsOffset, s.end);
  for (const t of added) out.u32(t);
  return out.take();
}

/** Position of each known section id in the required order (tag sits between memory and global). */
const RANK = [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 12, 13, 11, 6];

/**
 * The output module: sections in their original order, `edits` (payload chunks) replacing or
 * inserted at their required position, `name` sections rewritten by `names` (null: dropped),
 * every other custom section verbatim.
 */
function assemble(
  m: ParsedModule,
  edits: ReadonlyMap<number, readonly Uint8Array[]>,
  names: (start: number, end: number) => Uint8Array | null,
): Uint8Array<ArrayBuffer> {
  const { bytes, sections } = m;
  const sizeOf = (chunks: readonly Uint8Array[]): number => chunks.reduce((n, c) => n + c.length, 0);
  const framed = (chunks: readonly Uint8Array[]): number => 1 + lebSize(sizeOf(chunks)) + sizeOf(chunks);
  const customs = new Map(m.customs.map((c) => [c.sectionIndex, c]));
  const renamed = new Map<number, Uint8Array | null>();
  let total = 8;
  sections.forEach((s, i) => {
    const chunks = s.id === SectionId.CUSTOM ? undefined : edits.get(s.id);
    const custom = customs.get(i);
    if (chunks !== undefined) return;
    if (custom?.name === 'name') {
      const rewritten = names(custom.data.start, custom.data.end);
      renamed.set(i, rewritten);
      if (rewritten !== null) total += framed([bytes.subarray(s.payloadOffset, custom.data.start), rewritten]);
    } else total += s.end - s.offset;
  });
  for (const chunks of edits.values()) total += framed(chunks);
  const out = new Sink(total);
  out.span(bytes, 0, 8);
  const write = (id: number, chunks: readonly Uint8Array[]): void => {
    out.byte(id);
    out.u32(sizeOf(chunks));
    for (const c of chunks) out.bytes(c);
  };
  // A section the module lacks goes right after the last known section that must precede it.
  const present = new Set(sections.map((s) => s.id));
  const insertAt = new Map<number, number[]>();
  for (const id of [...edits.keys()].filter((x) => !present.has(x)).sort((a, b) => RANK[a]! - RANK[b]!)) {
    let at = 0;
    sections.forEach((s, i) => {
      if (s.id !== SectionId.CUSTOM && RANK[s.id]! < RANK[id]!) at = i + 1;
    });
    insertAt.set(at, [...(insertAt.get(at) ?? []), id]);
  }
  for (let i = 0; i <= sections.length; i++) {
    for (const id of insertAt.get(i) ?? []) write(id, edits.get(id)!);
    const s = sections[i];
    if (s === undefined) break;
    const chunks = s.id === SectionId.CUSTOM ? undefined : edits.get(s.id);
    const custom = customs.get(i);
    if (chunks !== undefined) write(s.id, chunks);
    else if (renamed.has(i)) {
      const rewritten = renamed.get(i);
      if (rewritten) write(SectionId.CUSTOM, [bytes.subarray(s.payloadOffset, custom!.data.start), rewritten]);
    } else out.span(bytes, s.offset, s.end);
  }
  if (out.len !== total) throw new SandboxError('INTERNAL', `fuel rewriter: module is ${out.len} bytes, expected ${total}`);
  return out.take();
}
