/**
 * The fabric (DESIGN §7, lanes and tiers; docs/fabric.md): how work is spread. The in-process
 * kernel placement (in-process.ts; the worker placement and `engine.kernel` are
 * engine/kernel-lane.ts), the fan-out every wide call rides (fanout.ts: `engine.fanout` and the
 * `parallel` cap's `run_command_many`), the isolation tiers and the reason one is unavailable
 * (tiers.ts), and tenant-fair admission of the engine's top-level calls (tenant-scheduler.ts).
 * Not here yet: the `os_process` runner and the `remote` tier's job queue (BullMQ on Redis).
 * Layer: beside the lanes — the engine calls down into it, it never calls the engine.
 */
export { InProcessKernel, type InProcessSpec, type KernelBudget } from './in-process.ts';
export { fanMap, resolveWidth, DEFAULT_FANOUT_WIDTH, MAX_FANOUT_WIDTH, type FanOptions, type FanOutcome } from './fanout.ts';
export { checkTier, findBwrap, tierFor, TIERS, type Tier, type TierContext, type Trust, type WorkloadShape } from './tiers.ts';
export { TenantScheduler, defaultPerTenant, type SchedulerLimits } from './tenant-scheduler.ts';
