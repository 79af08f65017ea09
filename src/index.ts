/**
 * Membrane's library surface: `createEngine(options)` → `engine.run(bytes, opts)`,
 * `engine.start(id, bytes, opts)` → `Instance { call, info, stop }`; the policy literal; the
 * error table; the agent loop (`engine.agent`); the audit log (verify, checkpoints) and the store
 * quotas an operator may set; provenance (identities, signed artifacts, receipts, signed
 * checkpoints, bundles).
 */
export * from './engine/index.ts';
// Loading the agent module plugs `engine.agent` into every engine (src/engine/agent-slot.ts).
export { TOOL_NAMES, STEPS_FILE, type AgentEvent, type AgentOutcome, type AgentResult, type AgentRunOptions, type AgentStatus, type StepRecord, type ToolName } from './agent/index.ts';
export * from './errors.ts';
export * from './policy/index.ts';
export * from './provenance/index.ts';
export { AuditLog, engineDatabaseFile, type AuditCheckpoint, type AuditRecord, type AuditVerification, type AuditProblem } from './storage/audit.ts';
export { MAX_TENANT_KV_BYTES, MAX_TENANT_KV_KEYS, MAX_TENANT_QUEUES, MAX_TENANT_QUEUE_BYTES, type StoreQuotaOptions } from './storage/store-quotas.ts';
export {
  HostFunctionError,
  type HostCapDefinition,
  type HostCapSettings,
  type HostFailure,
  type HostFunction,
  type HostFunctionContext,
  type HostFunctionsOptions,
  type JsonValue,
} from './brokers/index.ts';
export { CANCELLED_MESSAGE, type CallControls } from './lanes/controls.ts';
