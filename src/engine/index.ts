export { Engine, createEngine, type RunOptions, type StartOptions, type GuestOptions, type EngineStats } from './engine.ts';
export { Instance, type InstanceInfo, type InstanceState, type CallOptions } from './instance.ts';
export { resolveEngine, MAX_TABLE_ELEMENTS, DEFAULT_OUTPUT_LIMIT_BYTES, type EngineOptions, type EngineConfig, type LogEntry } from './options.ts';
export type { RunResult } from './results.ts';
export { checkImport, planLinks, signatureText, type MissingImport } from './linker.ts';
export { CommandRegistry } from './registry.ts';
export type { ExecOptions, ExecOutcome } from '../lanes/index.ts';
export { replayReceipt, runInputOf, type ReplayReport } from './receipts.ts';
