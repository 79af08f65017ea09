/**
 * Public surface of `src/wasm/`: the binary reader/writer, instruction decoder, limits rewriter
 * and inspection helpers. Nothing here runs guest code; everything works on bytes.
 *
 * Invariant: every function exported here either succeeds or throws a `SandboxError`
 * (INVALID_MODULE for malformed bytes, MEMORY_LIMIT for a module over its caps, POLICY_INVALID
 * for bad options); none throws a RangeError or TypeError on any input.
 *
 * Validation: decoding is not validation. `assertValidModule` (V8) is the gate; `applyLimits` and
 * `instrumentFuel` pass their input through it unless told (`validated: true`) that the caller
 * already did, so no rewriter output is ever built from a module V8 refuses.
 */

export { Reader, Writer, invalidModule, u32Size } from './bytes.ts';
export type { AbstractRefType, FuncType, GlobalType, Limits, NumType, TableType, ValType } from './types.ts';
export { InstructionCursor, decodeInstructions, readCodeBody, readConstExpr } from './code.ts';
export type { CodeBody, Instruction, LocalGroup } from './code.ts';
export { Imm, Op, allOpcodes, immediateOf, opKey, opName } from './opcodes.ts';
export type { OpcodeInfo } from './opcodes.ts';
export type {
  DataSegment,
  ElementSegment,
  ExportEntry,
  ExternKind,
  GlobalEntry,
  Import,
  ImportDesc,
  MemoryEntry,
  Range,
  SegmentMode,
  TableEntry,
} from './sections.ts';
export { SectionId, encodeModule, findSection, functionType, importsOf, parseModule, sectionName } from './module.ts';
export type { CustomSection, ParsedModule, Section } from './module.ts';
export { assertValidModule } from './validate.ts';
export { GROW_FAILED_EXPORT, MAX_MEMORY32_PAGES, applyLimits } from './limits.ts';
export type { LimitsOptions, LimitsResult, MemoryLimitInfo, TableLimitInfo } from './limits.ts';
export { describeModule, formatSignature } from './inspect.ts';
export { POOL_MEMORY_IMPORT, importMemory } from './memory-import.ts';
export type { ImportedMemory, MemoryImportResult } from './memory-import.ts';
export type {
  ExportDescription,
  GlobalDescription,
  ImportDescription,
  MemoryDescription,
  ModuleDescription,
  Signature,
  TableDescription,
} from './inspect.ts';
export {
  DEFAULT_COSTS,
  FUEL_GLOBAL_EXPORT,
  FUEL_IMPORT_MODULE,
  FUEL_IMPORT_NAME,
  FUEL_REWRITER_VERSION,
  MAX_UNIT_COST,
  instrumentFuel,
  resolveCosts,
} from './fuel/index.ts';
export type { CostModel, FuelOptions, FuelResult, FuelStats } from './fuel/index.ts';
