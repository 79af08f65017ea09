/**
 * A persistent instance: one guest, one dedicated worker, calls serialized in arrival order.
 *
 * Owns: booting (instantiate + `_initialize`), the call queue, per-call narrowing (a call may
 * lower the timeout, never raise it), the instance's counters for `info()`, and what a timeout
 * does to it: `retire` → INSTANCE_DEAD for every later call; `restart` → a fresh worker and a
 * fresh instance (state is lost, by design: a runaway's state is not trusted).
 * Invariant: at most one call is in flight on the worker; after `stop()` no call runs.
 *
 * Does not protect against: a caller that queues unbounded calls; each queued call holds only
 * its arguments, and the queue drains at the guest's speed.
 */

import { SandboxError, toSandboxError } from '../errors.ts';
import { narrowPolicy, type PolicyConfig } from '../policy/resolve.ts';
import type { PreparedModule } from './module-cache.ts';
import type { EngineConfig } from './options.ts';
import { PROTOCOL_VERSION, type GuestSpec } from './bridge/protocol.ts';
import { budgetOf, graceFor } from './budget.ts';
import { failure, fromAwaited, type RunResult } from './results.ts';
import { parseArgs, type ArgValue } from './values.ts';
import type { HostHandler, WorkerHandle } from './bridge/worker-handle.ts';
import type { CallControls } from '../lanes/controls.ts';

export type InstanceState = 'starting' | 'running' | 'dead' | 'stopped';

export interface InstanceInfo {
  readonly id: string;
  readonly tenant: string;
  readonly profile: string;
  readonly caps: readonly string[];
  readonly calls: number;
  readonly fuelUsed: number;
  readonly memoryBytes: number;
  readonly state: InstanceState;
}

export interface CallOptions extends CallControls {
  /** Lower this call's wall-clock budget below the instance's. */
  timeoutMs?: number;
  /** Lower this call's fuel budget below the instance's. */
  fuel?: number;
}

export interface InstanceDeps {
  readonly id: string;
  readonly tenant: string;
  readonly policy: PolicyConfig;
  readonly prepared: PreparedModule;
  readonly spec: GuestSpec;
  readonly engine: EngineConfig;
  readonly acquire: () => Promise<WorkerHandle>;
  readonly hostHandler: HostHandler;
  readonly onGone: () => void;
}

export class Instance {
  private worker: WorkerHandle | null = null;
  private state: InstanceState = 'starting';
  private calls = 0;
  private fuelUsed = 0;
  private memoryBytes = 0;
  private job = 0;
  private queue: Promise<unknown> = Promise.resolve();
  private pending = 0;
  private readonly exports: ReadonlyMap<string, { params: readonly string[]; results: readonly string[] }>;
  readonly warnings: readonly string[];

  constructor(private readonly d: InstanceDeps) {
    this.warnings = d.policy.warnings;
    this.exports = new Map(
      d.prepared.desc.exports.flatMap((e) => (e.kind === 'func' && e.signature ? [[e.name, e.signature] as const] : [])),
    );
  }

  get id(): string {
    return this.d.id;
  }

  /** Instantiate on a dedicated worker; the start function and `_initialize` run under the deadline. */
  async boot(): Promise<void> {
    const w = await this.d.acquire();
    const startedAt = performance.now();
    w.post({ v: PROTOCOL_VERSION, kind: 'load', job: ++this.job, module: this.d.prepared.module, spec: this.d.spec, budget: budgetOf(this.d.policy) });
    const a = await w.awaitDone(startedAt + this.d.policy.timeoutMs, this.d.hostHandler, graceFor(this.d.prepared));
    const r = fromAwaited(a, this.resultContext(this.d.policy.timeoutMs, startedAt));
    if (!r.ok) {
      await w.terminate();
      this.state = 'dead';
      const e = r.error!;
      throw new SandboxError(e.code, e.message, e.details);
    }
    this.worker = w;
    this.memoryBytes = r.memoryBytes;
    this.state = 'running';
  }

  /** Call an export. Calls are serialized; each gets the instance's budget unless lowered. */
  call(name: string, args: readonly ArgValue[] = [], opts: CallOptions = {}): Promise<RunResult> {
    // Calls run one at a time, in arrival order; an idle instance starts the call at once.
    const next = this.pending === 0 ? this.callNow(name, args, opts) : this.queue.then(() => this.callNow(name, args, opts));
    this.pending++;
    const settled = next.finally(() => this.pending--);
    this.queue = settled.catch(() => {});
    return settled;
  }

  private async callNow(name: string, args: readonly ArgValue[], opts: CallOptions): Promise<RunResult> {
    const t0 = performance.now();
    let policy = this.d.policy;
    try {
      if (opts.timeoutMs !== undefined || opts.fuel !== undefined) {
        policy = narrowPolicy(this.d.policy, {
          ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
          ...(opts.fuel !== undefined ? { fuel: opts.fuel } : {}),
        });
      }
      if (this.state !== 'running' || !this.worker) {
        throw new SandboxError('INSTANCE_DEAD', `instance "${this.d.id}" is ${this.state}`, { id: this.d.id, state: this.state });
      }
      const sig = this.exports.get(name);
      if (!sig) {
        throw new SandboxError('POLICY_INVALID', `the module has no exported function "${String(name).slice(0, 64)}"`, { export: String(name).slice(0, 64) });
      }
      const wire = parseArgs(name, sig.params, args);
      const w = this.worker;
      const startedAt = performance.now();
      this.calls++;
      w.postCall({ v: PROTOCOL_VERSION, kind: 'call', job: ++this.job, export: name, args: wire, budget: budgetOf(policy) });
      let a;
      try {
        a = await w.awaitDone(startedAt + policy.timeoutMs, this.d.hostHandler, graceFor(this.d.prepared));
      } catch (e) {
        await this.afterFailure(); // a broken frame: the worker is not trusted again
        throw e;
      }
      const r = fromAwaited(a, this.resultContext(policy.timeoutMs, startedAt, policy.warnings));
      this.fuelUsed += r.fuelUsed;
      if (a.kind === 'done') this.memoryBytes = a.frame.memoryBytes;
      // A call stopped at its deadline leaves guest state half-updated: retire or restart.
      if (a.kind !== 'done' || r.error?.code === 'TIMEOUT') await this.afterFailure();
      return r;
    } catch (e) {
      return failure(toSandboxError(e), { profile: policy.profile, warnings: policy.warnings }, performance.now() - t0);
    }
  }

  /** The worker timed out or died: retire, or restart with fresh state. */
  private async afterFailure(): Promise<void> {
    if (this.state === 'stopped') return;
    const w = this.worker;
    this.worker = null;
    this.state = 'dead';
    if (w) await w.terminate().catch(() => {});
    if (this.d.engine.onTimeout === 'restart') {
      try {
        await this.boot();
      } catch {
        this.state = 'dead';
      }
    }
  }

  info(): InstanceInfo {
    return {
      id: this.d.id,
      tenant: this.d.tenant,
      profile: this.d.policy.profile,
      caps: [...this.d.policy.caps],
      calls: this.calls,
      fuelUsed: this.fuelUsed,
      memoryBytes: this.memoryBytes,
      state: this.state,
    };
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    const w = this.worker;
    this.worker = null;
    this.state = 'stopped';
    this.d.onGone();
    // Terminate first: an in-flight call ends now with INSTANCE_DEAD instead of running on.
    if (w) await w.terminate().catch(() => {});
    await this.queue.catch(() => {});
  }

  private resultContext(timeoutMs: number, startedAt: number, warnings = this.d.policy.warnings) {
    return {
      profile: this.d.policy.profile,
      warnings,
      isCommand: false,
      timeoutMs,
      startedAt,
      outputLimitBytes: this.d.engine.outputLimitBytes,
    };
  }
}
