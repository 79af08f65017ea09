/**
 * The engine side of the component lane: `engine.run(component)` — the world check, the
 * transpile (cached), each core module prepared through the engine's ModuleCache (memory cap,
 * fuel) and one job on a pooled worker, under the same time wall, cancellation, output capture
 * and worker replacement as any run.
 *
 * Owns: the order — policy → world check (LINK_UNSATISFIED: nothing transpiled, nothing run) →
 * transpile → prepare → a fair turn and a worker → result; the GuestSpec of a component (its
 * `link` is the list of interfaces the check accepted).
 * Invariant: a component's core modules reach a worker only as PreparedModules of the policy's
 * walls, and the memories they define share the one memory cap (each gets an equal share when
 * there are several), so a component of many modules holds no more than one guest may; a run that passes its deadline ends TIMEOUT and its worker is terminated and replaced
 * unless the fuel refill stopped it first.
 *
 * Does not protect against: the transpile's time on the main thread (lanes/component/transpile.ts)
 * — once per component per machine; signed receipts for components (not yet). `engine.start` is
 * component-instance.ts.
 */

import { SandboxError, toSandboxError } from '../errors.ts';
import { resolvePolicy, type PolicyConfig } from '../policy/resolve.ts';
import { checkName } from '../policy/names.ts';
import { checkComponent, isComponent, transpileCached } from '../lanes/component/index.ts';
import { cancelled } from '../lanes/controls.ts';
import { PROTOCOL_VERSION, type ComponentCore } from './bridge/protocol.ts';
import { StreamSink } from './bridge/stream-sink.ts';
import type { Caller, JobHost } from './bridge/host-services.ts';
import type { WorkerHandle } from './bridge/worker-handle.ts';
import { budgetOf, graceFor } from './budget.ts';
import { CallWatch, notRun, settledRun } from './call-controls.ts';
import { checkTier } from './fanout-lane.ts';
import { admitSigned } from './signed.ts';
import { buildSpec, type RunOptions } from './guest-spec.ts';
import type { PreparedModule } from './module-cache.ts';
import type { EngineConfig } from './options.ts';
import { failure, type RunResult } from './results.ts';

export interface ComponentLaneParts {
  readonly config: EngineConfig;
  readonly pool: { acquire(waitMs?: number, signal?: AbortSignal): Promise<WorkerHandle>; release(h: WorkerHandle): void; discard(h: WorkerHandle): Promise<void> };
  readonly services: { job(caller: Caller): JobHost };
  prepare(bytes: Uint8Array, policy: PolicyConfig): Promise<PreparedModule>;
  admit(tenant: string, waitMs: number, signal?: AbortSignal): Promise<() => void>;
  /** An unknown profile that ran as the fallback: the engine's audit record. */
  fallback(policy: PolicyConfig, tenant: string, id: string): void;
  /** The engine's audit log, for an `artifact.refused` record (`requireSigned`). */
  record(tenant: string, id: string, kind: string, detail: Record<string, unknown>): void;
}

export { isComponent };

/** Bounds the preparing (and the per-module memory shares) a component can ask for. */
export const MAX_CORE_MODULES = 64;

let runs = 0;
let jobs = 2 ** 41; // far from the engine's and the lane runner's job counters

export async function runComponent(parts: ComponentLaneParts, bytes: Uint8Array, opts: RunOptions): Promise<RunResult> {
  const t0 = performance.now();
  const { config } = parts;
  let policy: PolicyConfig | null = null;
  const watch = new CallWatch(opts.signal);
  let admitted: (() => void) | null = null;
  try {
    policy = resolvePolicy(opts, config);
    const id = checkName('id', opts.id ?? `component-${++runs}`);
    const tenant = checkName('tenant', opts.tenant ?? 'default');
    if (opts.signal?.aborted) return notRun(policy, t0);
    checkTier(opts.tier);
    if (opts.invoke !== undefined) throw new SandboxError('POLICY_INVALID', 'a component runs its wasi:cli/run export; invoking another export needs a persistent instance (engine.start)', { export: String(opts.invoke).slice(0, 64) });
    if (opts.mounts && opts.mounts.length > 0) throw new SandboxError('POLICY_INVALID', 'mounts are not supported for components yet');
    if (opts.receipt) throw new SandboxError('POLICY_INVALID', 'signed receipts are not supported for components yet');
    parts.fallback(policy, tenant, id);
    // `requireSigned` holds for components as for modules: an unsigned one is NOT_CAPABLE, audited, before anything else.
    bytes = await admitSigned(config, bytes, opts.artifact, (d) => parts.record(tenant, id, 'artifact.refused', d));
    // Granted means linked: the world check comes first; a refused component is never transpiled.
    const linked = checkComponent(bytes, policy.caps);
    const t = await transpileCached(bytes, config);
    if (t.cores.length > MAX_CORE_MODULES) throw new SandboxError('INVALID_MODULE', `the component has ${t.cores.length} core modules; at most ${MAX_CORE_MODULES} run`, { coreModules: t.cores.length });
    const run = t.run;
    if (run === null) throw new SandboxError('POLICY_INVALID', 'the component exports no wasi:cli/run (0.2.x) to run');
    const prepared = await prepareCores(parts, t.cores, policy);
    if (opts.signal?.aborted) throw cancelled();
    const cores: ComponentCore[] = t.cores.map((c, i) => {
      const p = prepared[i]!;
      return { name: c.name, module: p.module, growFailedExport: p.limits.growFailedExport, definesMemory: p.desc.memories.some((m) => !m.imported), poolMemory: p.limits.poolMemory ?? null };
    });
    // The walls are the same for every core module (one policy): the first one's stand for all.
    const base = buildSpec(config, prepared[0]!, { link: [], importedMemory: null }, policy, { id, tenant }, opts);
    const spec = { ...base, link: linked };
    admitted = await parts.admit(tenant, policy.timeoutMs, opts.signal);
    const handle = await parts.pool.acquire(policy.timeoutMs, opts.signal);
    if (opts.signal?.aborted) {
      parts.pool.release(handle);
      throw cancelled();
    }
    const startedAt = performance.now();
    const deadline = startedAt + policy.timeoutMs;
    const job = ++jobs;
    const sink = StreamSink.for(job, opts, config.outputLimitBytes);
    handle.post({ v: PROTOCOL_VERSION, kind: 'component', job, key: t.hash, glue: t.glue, cores, run, spec, budget: budgetOf(policy), stream: sink !== null });
    const host = parts.services.job({ tenant, instance: id, policy, spec });
    let awaited;
    try {
      awaited = await handle.awaitDone(deadline, host.handle, Math.max(...prepared.map(graceFor)), watch.signal, sink);
    } catch (e) {
      void parts.pool.discard(handle);
      throw e;
    } finally {
      host.end();
    }
    if (awaited.kind === 'done') parts.pool.release(handle);
    else void parts.pool.discard(handle);
    const result = settledRun(awaited, sink, { policy, isCommand: true, startedAt, deadline, outputLimitBytes: config.outputLimitBytes, watch });
    return opts.captureBytes && awaited.kind === 'done' ? { ...result, stdoutBytes: awaited.stdout, stdoutTruncated: awaited.frame.stdoutTruncated } : result;
  } catch (e) {
    return failure(toSandboxError(e), { profile: policy?.profile ?? 'compute', warnings: policy?.warnings ?? [] }, performance.now() - t0);
  } finally {
    admitted?.();
    watch.dispose();
  }
}

/**
 * Prepare every core module under the policy; when more than one memory is defined across them
 * (a composed component), prepare those modules again, each memory capped at an equal share.
 */
export async function prepareCores(parts: Pick<ComponentLaneParts, 'prepare'>, cores: readonly { bytes: Uint8Array }[], policy: PolicyConfig): Promise<PreparedModule[]> {
  const first = await Promise.all(cores.map((c) => parts.prepare(c.bytes, policy)));
  const defined = first.map((p) => p.desc.memories.filter((m) => !m.imported).length);
  const total = defined.reduce((a, b) => a + b, 0);
  if (total <= 1) return first;
  const share = Math.floor(policy.memoryBytes / total / 65536) * 65536;
  if (share < 65536) throw new SandboxError('MEMORY_LIMIT', `the component defines ${total} memories; the ${policy.memoryBytes}-byte cap cannot give each a page`, { memories: total, limitBytes: policy.memoryBytes });
  const narrowed: PolicyConfig = { ...policy, memoryBytes: share };
  return Promise.all(cores.map((c, i) => (defined[i]! > 0 ? parts.prepare(c.bytes, narrowed) : first[i]!)));
}
