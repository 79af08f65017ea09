/**
 * Inspection: a plain, JSON-safe description of what a module imports, exports and declares,
 * for `membrane inspect`, the linker's import check and error messages.
 *
 * Owns: `describeModule` and `formatSignature` (`(i32, i32) -> i64`).
 *
 * Invariant: the description is derived only from the module's bytes; every index it resolves
 * (a function's type, an export's function) is checked, and a dangling one is INVALID_MODULE
 * with the offset of the entry that names it.
 *
 * Does not protect against: lying custom sections. Names come from imports and exports only; the
 * `name` section is listed but never trusted or interpreted.
 */

import { invalidModule } from './bytes.ts';
import { functionType, importsOf, parseModule } from './module.ts';
import type { ExternKind } from './sections.ts';
import type { FuncType, GlobalType, Limits, TableType, ValType } from './types.ts';

export interface Signature {
  readonly params: readonly ValType[];
  readonly results: readonly ValType[];
}

export interface MemoryDescription {
  readonly index: number;
  readonly imported: boolean;
  readonly initialPages: number;
  readonly maxPages: number | null;
  readonly shared: boolean;
  readonly index64: boolean;
}

export interface TableDescription {
  readonly index: number;
  readonly imported: boolean;
  readonly refType: ValType;
  readonly initialElements: number;
  readonly maxElements: number | null;
}

export interface GlobalDescription {
  readonly type: ValType;
  readonly mutable: boolean;
}

export interface ImportDescription {
  readonly module: string;
  readonly name: string;
  readonly kind: ExternKind;
  /** For functions and tags. */
  readonly signature?: Signature;
  readonly memory?: MemoryDescription;
  readonly table?: TableDescription;
  readonly global?: GlobalDescription;
}

export interface ExportDescription {
  readonly name: string;
  readonly kind: ExternKind;
  readonly index: number;
  readonly signature?: Signature;
  readonly global?: GlobalDescription;
}

export interface ModuleDescription {
  readonly imports: readonly ImportDescription[];
  readonly exports: readonly ExportDescription[];
  readonly memories: readonly MemoryDescription[];
  readonly tables: readonly TableDescription[];
  readonly start: number | null;
  readonly hasStart: boolean;
  /** Custom section names in order (duplicates kept). */
  readonly customSections: readonly string[];
  /** Size of the function index space (imported + defined). */
  readonly functionCount: number;
  readonly importedFunctionCount: number;
  /** Module size in bytes. */
  readonly size: number;
}

const signatureOf = (t: FuncType): Signature => ({ params: [...t.params], results: [...t.results] });

const memoryOf = (index: number, imported: boolean, l: Limits): MemoryDescription => ({
  index,
  imported,
  initialPages: l.min,
  maxPages: l.max,
  shared: l.shared,
  index64: l.index64,
});

const tableOf = (index: number, imported: boolean, t: TableType): TableDescription => ({
  index,
  imported,
  refType: t.refType,
  initialElements: t.limits.min,
  maxElements: t.limits.max,
});

const globalOf = (g: GlobalType): GlobalDescription => ({ type: g.valType, mutable: g.mutable });

export function describeModule(bytes: Uint8Array): ModuleDescription {
  const m = parseModule(bytes);
  const typeAt = (index: number, offset: number, section: string): Signature => {
    const t = m.types[index];
    if (t === undefined) throw invalidModule(`type index ${index} out of range`, offset, section);
    return signatureOf(t);
  };

  let memoryIndex = 0;
  let tableIndex = 0;
  const imports = m.imports.map((i): ImportDescription => {
    const base = { module: i.module, name: i.name, kind: i.kind };
    switch (i.kind) {
      case 'func':
      case 'tag':
        return { ...base, signature: typeAt(i.typeIndex, i.offset, 'import') };
      case 'memory':
        return { ...base, memory: memoryOf(memoryIndex++, true, i.memory) };
      case 'table':
        return { ...base, table: tableOf(tableIndex++, true, i.table) };
      case 'global':
        return { ...base, global: globalOf(i.global) };
    }
  });
  const memories = [
    ...imports.flatMap((i) => (i.memory === undefined ? [] : [i.memory])),
    ...m.memories.map((e) => memoryOf(memoryIndex++, false, e.limits)),
  ];
  const tables = [
    ...imports.flatMap((i) => (i.table === undefined ? [] : [i.table])),
    ...m.tables.map((e) => tableOf(tableIndex++, false, e.type)),
  ];

  const importedFunctionCount = importsOf(m, 'func').length;
  const functionCount = importedFunctionCount + m.functions.length;
  const importedGlobals = importsOf(m, 'global').flatMap((i) => (i.kind === 'global' ? [i.global] : []));
  const importedTags = importsOf(m, 'tag').flatMap((i) => (i.kind === 'tag' ? [i.typeIndex] : []));
  const exports = m.exports.map((e): ExportDescription => {
    const base = { name: e.name, kind: e.kind, index: e.index };
    if (e.kind === 'func') {
      const t = functionType(m, e.index);
      if (t === undefined) throw invalidModule(`export ${JSON.stringify(e.name)}: function ${e.index} or its type does not exist`, e.offset, 'export');
      return { ...base, signature: signatureOf(t) };
    }
    if (e.kind === 'tag') {
      const typeIndex = importedTags[e.index] ?? m.tags[e.index - importedTags.length];
      if (typeIndex === undefined) throw invalidModule(`export ${JSON.stringify(e.name)}: tag ${e.index} does not exist`, e.offset, 'export');
      return { ...base, signature: typeAt(typeIndex, e.offset, 'export') };
    }
    if (e.kind === 'global') {
      const g = importedGlobals[e.index] ?? m.globals[e.index - importedGlobals.length]?.type;
      if (g === undefined) throw invalidModule(`export ${JSON.stringify(e.name)}: global ${e.index} does not exist`, e.offset, 'export');
      return { ...base, global: globalOf(g) };
    }
    return base;
  });

  return {
    imports,
    exports,
    memories,
    tables,
    start: m.start,
    hasStart: m.start !== null,
    customSections: m.customs.map((c) => c.name),
    functionCount,
    importedFunctionCount,
    size: bytes.length,
  };
}

/** `(i32, i32) -> i64`; no results is `()`, several are parenthesized: `(i32) -> (i32, i64)`. */
export function formatSignature(sig: Signature): string {
  const results = sig.results.length === 1 ? sig.results[0]! : `(${sig.results.join(', ')})`;
  return `(${sig.params.join(', ')}) -> ${results}`;
}
