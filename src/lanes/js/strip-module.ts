/**
 * The TypeScript stripper's wasm (worker side): swc's type stripper from `@swc/wasm-typescript`
 * (the engine of `amaro`, Node's own type stripping), prepared to run like any guest.
 *
 * Owns: turning the package into a module we can wall in. The package is a wasm-bindgen glue
 * file with the wasm inlined as base64; only the wasm is taken from it (the glue's JavaScript is
 * never evaluated — strip-glue.ts is ours). Its own memory becomes an import
 * (`membrane:strip`.`memory`), so each instance runs in a memory the lane creates with the call's
 * maximum; then our fuel rewriter (src/wasm/fuel) and the limits rewriter (a failed
 * `memory.grow` traps and says so in `__membrane_grow_failed`) rewrite it. The result is cached
 * on disk like QuickJS's (`<cacheDir>/rewritten/ts-stripper-<sha256 of the wasm + rewriter
 * versions>.wasm`, written atomically, mode 0600); an entry that fails to compile is rebuilt.
 * Invariant: the module compiled here has no memory of its own, is fuel-instrumented, and
 * imports exactly the glue's functions plus `membrane:fuel`.`refill` and the memory — anything
 * else is refused before an instance exists (`assertStripperImports`).
 *
 * Does not protect against: a local user who can write the cache directory (it must be private
 * to the engine's user, like `$MEMBRANE_HOME`); bugs in swc itself — they stay inside the walls.
 */

import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { readCachedWasm, writeCacheFile } from '../../storage/cache-file.ts';
import { FUEL_REWRITER_VERSION, FUEL_IMPORT_MODULE, FUEL_IMPORT_NAME, instrumentFuel } from '../../wasm/fuel/index.ts';
import { Reader, Writer } from '../../wasm/bytes.ts';
import { SectionId, encodeModule, findSection, parseModule } from '../../wasm/module.ts';
import { applyLimits, MAX_MEMORY32_PAGES } from '../../wasm/limits.ts';
import { writeLimits } from '../../wasm/types.ts';
import { GLUE_MODULE, GLUE_NAMES } from './strip-glue.ts';

/** Where the stripper's memory is imported from (created per instance with the call's maximum). */
export const STRIP_MEMORY_IMPORT = { module: 'membrane:strip', name: 'memory' } as const;
/** The compiled stripper and the memory (pages) it starts with. */
export interface StripperModule {
  readonly module: WebAssembly.Module;
  readonly initialPages: number;
}

/** Bump when the rewriting below changes its output for the same input. */
const STRIP_MODULE_VERSION = 1;
/** The stripper's only table has 1 582 entries; nothing grows it. */
const MAX_STRIP_TABLE_ELEMENTS = 4096;

/** The wasm inlined in the package's glue file, never evaluating the file. */
export function extractStripperWasm(glueSource: string): Uint8Array<ArrayBuffer> {
  const found = [...glueSource.matchAll(/Buffer\.from\('([A-Za-z0-9+/=]+)', 'base64'\)/g)];
  if (found.length !== 1) throw new Error(`expected one inlined wasm in the TypeScript stripper package, found ${found.length}`);
  return new Uint8Array(Buffer.from(found[0]![1]!, 'base64'));
}

/**
 * Move the module's one defined memory into the import section (same limits, no maximum: the
 * host's memory sets it). No index moves: it stays memory 0, so exports and data segments agree.
 */
export function importMemory(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const m = parseModule(bytes);
  if (m.memories.length !== 1 || m.imports.some((i) => i.kind === 'memory')) throw new Error('the TypeScript stripper must define exactly one memory');
  const importSection = findSection(m, SectionId.IMPORT);
  const w = new Writer(importSection ? importSection.end - importSection.itemsOffset + 64 : 64);
  w.u32(m.imports.length + 1);
  if (importSection) w.bytes(m.bytes.subarray(importSection.itemsOffset, importSection.end));
  w.name(STRIP_MEMORY_IMPORT.module).name(STRIP_MEMORY_IMPORT.name).u8(0x02);
  writeLimits(w, { ...m.memories[0]!.limits, max: null });
  return encodeModule(m, new Map([
    [SectionId.IMPORT, w.finish()],
    [SectionId.MEMORY, new Writer(8).u32(0).finish()],
  ]));
}

/** Refuse a stripper whose imports are not exactly what we link (a new package version, say). */
export function assertStripperImports(module: WebAssembly.Module): void {
  const known = new Set(GLUE_NAMES);
  for (const i of WebAssembly.Module.imports(module)) {
    const ok =
      (i.module === GLUE_MODULE && i.kind === 'function' && known.has(i.name)) ||
      (i.module === FUEL_IMPORT_MODULE && i.name === FUEL_IMPORT_NAME) ||
      (i.module === STRIP_MEMORY_IMPORT.module && i.name === STRIP_MEMORY_IMPORT.name && i.kind === 'memory');
    if (!ok) throw new Error(`the TypeScript stripper imports ${i.module}.${i.name}, which the lane does not link`);
  }
}

/** Rewrite (or read from the cache) and compile the stripper in `packageFile` (the package's main file). */
export async function loadStripper(packageFile: string, cacheDir: string | null): Promise<StripperModule> {
  const stock = extractStripperWasm(readFileSync(packageFile, 'utf8'));
  return { module: await compileStripper(stock, cacheDir), initialPages: definedMemoryPages(stock) };
}

/** The initial pages of the module's one defined memory, read from its memory section alone. */
export function definedMemoryPages(bytes: Uint8Array): number {
  const r = new Reader(bytes, 8);
  while (!r.atEnd()) {
    const id = r.u8();
    const size = r.u32();
    if (id === SectionId.MEMORY) {
      const s = r.sub(size, 'memory');
      if (s.u32() !== 1) break;
      const flags = s.u8();
      if ((flags & ~0x01) !== 0) break;
      return s.u32();
    }
    r.skip(size);
  }
  throw new Error('the TypeScript stripper must define exactly one plain 32-bit memory');
}

async function compileStripper(stock: Uint8Array, cacheDir: string | null): Promise<WebAssembly.Module> {
  const key = createHash('sha256').update(stock).update(`fuel:${FUEL_REWRITER_VERSION}:strip:${STRIP_MODULE_VERSION}`).digest('hex');
  const file = cacheDir ? join(cacheDir, 'rewritten', `ts-stripper-${key}.wasm`) : null;
  const cached = file ? readCachedWasm(file) : null;
  if (file && cached) {
    try {
      const module = await WebAssembly.compile(cached as Uint8Array<ArrayBuffer>);
      assertStripperImports(module);
      return module;
    } catch {
      rmSync(file, { force: true });
    }
  }
  const fueled = instrumentFuel(importMemory(stock)).bytes;
  const bytes = applyLimits(fueled, { maxMemoryPages: MAX_MEMORY32_PAGES, maxTableElements: MAX_STRIP_TABLE_ELEMENTS, trapOnGrowFailure: true }).bytes as Uint8Array<ArrayBuffer>;
  const module = await WebAssembly.compile(bytes);
  assertStripperImports(module);
  if (file) writeCacheFile(file, bytes);
  return module;
}
