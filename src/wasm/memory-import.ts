/**
 * A defined memory made an import, so the host can hand an instance a memory it already has
 * (engine/worker/memory-pool.ts): creating a wasm memory costs a reservation of address space
 * and its guard region — tens of µs, most of a small module's fresh-sandbox time — while a
 * recycled, zeroed memory costs a fill of its few pages.
 *
 * Owns: `importMemory` — when a module has exactly one memory, defined (not imported), 32-bit
 * and not shared, the memory section's entry is removed and an import `membrane:pool`.`memory`
 * with the same limits (the capped maximum, applied before this step) is appended to the import
 * section. Nothing else changes: the memory index space still holds one memory, index 0, so
 * loads, stores, `memory.*` instructions, data segments and the memory export keep their
 * meaning; imports of memories do not enter the function, table or global index spaces.
 * Invariant: the host that instantiates the result passes a memory of exactly these limits whose
 * bytes are all zero (what a defined memory starts as), so the guest cannot tell the difference.
 * A module that imports `membrane:pool` itself is INVALID_MODULE (it could otherwise ask for the
 * host's memory by name).
 *
 * Does not protect against: a host that passes a memory with old bytes in it — zeroing is the
 * pool's duty, and it only recycles a memory that never grew.
 */

import { Writer, invalidModule } from './bytes.ts';
import { SectionId, encodeModule, findSection, importsOf, parseModule } from './module.ts';
import { writeLimits } from './types.ts';
import { POOL_MEMORY_IMPORT } from '../policy/catalog.ts';

/** The import the host satisfies with a (recycled) memory. */
export { POOL_MEMORY_IMPORT };

export interface ImportedMemory {
  readonly initialPages: number;
  readonly maxPages: number;
}

export interface MemoryImportResult {
  readonly bytes: Uint8Array<ArrayBuffer> | Uint8Array;
  /** The memory the host must pass, or null when the module was left as it was. */
  readonly memory: ImportedMemory | null;
}

/** `bytes` must be valid and already capped (limits.ts): every memory has a maximum. */
export function importMemory(bytes: Uint8Array): MemoryImportResult {
  const m = parseModule(bytes);
  const own = m.imports.find((i) => i.module === POOL_MEMORY_IMPORT.module);
  if (own !== undefined) throw invalidModule(`import module name ${POOL_MEMORY_IMPORT.module} is reserved`, own.offset, 'import');
  if (importsOf(m, 'memory').length > 0 || m.memories.length !== 1) return { bytes, memory: null };
  const limits = m.memories[0]!.limits;
  if (limits.shared || limits.index64 || limits.max === null) return { bytes, memory: null };

  const importSection = findSection(m, SectionId.IMPORT);
  const w = new Writer(64 + (importSection ? importSection.end - importSection.itemsOffset : 0));
  w.u32(m.imports.length + 1);
  if (importSection) w.bytes(m.bytes.subarray(importSection.itemsOffset, importSection.end));
  w.name(POOL_MEMORY_IMPORT.module).name(POOL_MEMORY_IMPORT.name).u8(0x02);
  writeLimits(w, limits);
  const emptyMemories = new Writer(1).u32(0).finish();
  const edits = new Map<number, Uint8Array>([
    [SectionId.IMPORT, w.finish()],
    [SectionId.MEMORY, emptyMemories],
  ]);
  return { bytes: encodeModule(m, edits), memory: { initialPages: limits.min, maxPages: limits.max } };
}
