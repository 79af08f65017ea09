/**
 * A persistent instance: one guest, one dedicated worker, calls serialized in arrival order.
 *
 * Owns: booting (instantiate + `_initialize`; a component's `lane` boots it its own way), the
 * call queue, per-call narrowing (a call may lower the timeout, never raise it), the instance's
 * counters for `info()`, and what a timeout or a cancel does to it: `retire` → INSTANCE_DEAD for every later call; `restart` → a fresh
 * worker and a fresh instance (state is lost, by design: a runaway's state is not trusted). A
 * call's signal aborted while it waits in the queue only takes it out of the queue (nothing ran);
 * a cancelled call settles as soon as the guest stopped, and the next call waits for the recovery.
 * Invariant: at most one call is in flight on the worker; after `stop()` no call runs.
 *
 * Does not protect against: a caller that queues unbounded calls; each queued call holds only
 * its arguments, and the queue drains at the guest's speed.
 */

import { SandboxError, toSandboxError } from '../errors.ts';
import { narrowPolicy, type PolicyConfig } from '../policy/resolve.ts';
import type { PreparedModule } from './module-cache.ts';
import type { EngineConfig } from './options.ts';
import { PROTOCOL_VERSION, type Budget, type ControlMessage, type GuestSpec, type WireValue } from './bridge/protocol.ts';
import { budgetOf, graceFor } from './budget.ts';
import { failure, fromAwaited, type RunResult } from './results.ts';
import { parseArgs, type ArgValue } from './values.ts';
import type { HostHandler, WorkerHandle } from './bridge/worker-handle.ts';
import type { CallControls } from '../lanes/controls.ts';
import { CallWatch, notRun, withStreamed } from './call-controls.ts';
import { StreamSink } from './bridge/stream-sink.ts';

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
  /** Also return `receipt`: a receipt of the call signed by the engine's key (engine/receipts.ts). */
  receipt?: boolean;
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
  /** A call was stopped (deadline, cancel): what it started through the host stops too. */
  readonly onCallStopped?: () => void;
  readonly onGone: () => void;
  /** Run `call` (this call without `receipt`) and add a signed receipt of it. */
  readonly receipted?: (name: string, args: readonly ArgValue[], opts: CallOptions, call: () => Promise<RunResult>) => Promise<RunResult>;
  /** A component instance (component-instance.ts): how it boots and how a call's arguments cross. */
  readonly lane?: InstanceLane;
}

export interface InstanceLane {
  load(job: number, spec: GuestSpec, budget: Budget): ControlMessage;
  /** The call's arguments on the wire, or a throw (POLICY_INVALID) for values that cannot cross. */
  args(name: string, args: readonly ArgValue[]): WireValue[];
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
  /** Retiring or restarting after a cancelled call (the call itself has settled already). */
  private recovering: Promise<void> | null = null;
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
    const job = ++this.job;
    w.post(this.d.lane ? this.d.lane.load(job, this.d.spec, budgetOf(this.d.policy)) : { v: PROTOCOL_VERSION, kind: 'load', job, module: this.d.prepared.module, spec: this.d.spec, budget: budgetOf(this.d.policy) });
    const a = await w.awaitDone(startedAt + this.d.policy.timeoutMs, this.d.hostHandler, graceFor(this.d.prepared));
    const r = fromAwaited(a, this.resultContext(this.d.policy.timeoutMs, startedAt));
    if (this.state === 'stopped') {
      await w.terminate(); // stopped while (re)starting: the fresh worker is not kept
      throw new SandboxError('INSTANCE_DEAD', `instance "${this.d.id}" was stopped`, { id: this.d.id });
    }
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

  /**
   * Call an export. Calls are serialized; each gets the instance's budget unless lowered. A call
   * whose `signal` aborts before its turn leaves the queue (CANCELLED, nothing ran).
   */
  call(name: string, args: readonly ArgValue[] = [], opts: CallOptions = {}): Promise<RunResult> {
    if (opts.receipt && this.d.receipted) return this.d.receipted(name, args, opts, () => this.call(name, args, { ...opts, receipt: false }));
    const signal = opts.signal;
    if (!signal) {
      // The hot path: calls run one at a time, in arrival order; an idle instance starts at once.
      const next = this.pending === 0 ? this.callNow(name, args, opts) : this.queue.then(() => this.callNow(name, args, opts));
      this.pending++;
      const settled = next.finally(() => this.pending--);
      this.queue = settled.catch(() => {});
      return settled;
    }
    const t0 = performance.now();
    if (signal.aborted) return Promise.resolve(notRun(this.d.policy, t0));
    let started = false;
    const settled = this.enqueue(() =>
      signal.aborted ? Promise.resolve(notRun(this.d.policy, t0)) : this.callNow(name, args, opts, () => (started = true)),
    );
    if (started) return settled;
    // Still waiting (its turn, or the instance's recovery): an abort now takes it out of the line.
    return new Promise<RunResult>((resolve) => {
      const leave = (): void => {
        if (!started) resolve(notRun(this.d.policy, t0));
      };
      signal.addEventListener('abort', leave, { once: true });
      void settled.then((r) => {
        signal.removeEventListener('abort', leave);
        resolve(r);
      });
    });
  }

  /** `call`'s queue, for a call with a signal. */
  private enqueue(run: () => Promise<RunResult>): Promise<RunResult> {
    const next = this.pending === 0 ? run() : this.queue.then(run);
    this.pending++;
    const settled = next.finally(() => this.pending--);
    this.queue = settled.catch(() => {});
    return settled;
  }

  private async callNow(name: string, args: readonly ArgValue[], opts: CallOptions, onStart?: () => void): Promise<RunResult> {
    const t0 = performance.now();
    let policy = this.d.policy;
    if (this.recovering) await this.recovering;
    onStart?.();
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
      if (!sig && !this.d.lane) {
        throw new SandboxError('POLICY_INVALID', `the module has no exported function "${String(name).slice(0, 64)}"`, { export: String(name).slice(0, 64) });
      }
      const wire = this.d.lane ? this.d.lane.args(name, args) : parseArgs(name, sig!.params, args);
      if (opts.signal?.aborted) return notRun(policy, t0);
      const w = this.worker;
      const startedAt = performance.now();
      const deadline = startedAt + policy.timeoutMs;
      const job = ++this.job;
      const sink = StreamSink.for(job, opts, this.d.engine.outputLimitBytes);
      const watch = opts.signal ? new CallWatch(opts.signal) : null;
      this.calls++;
      w.postCall({ v: PROTOCOL_VERSION, kind: 'call', job, export: name, args: wire, budget: budgetOf(policy), stream: sink !== null });
      let a;
      try {
        a = await w.awaitDone(deadline, this.d.hostHandler, graceFor(this.d.prepared), opts.signal, sink);
      } catch (e) {
        await this.afterFailure(); // a broken frame: the worker is not trusted again
        throw e;
      } finally {
        watch?.dispose();
      }
      const cancelled = watch !== null && watch.cancelledBy(deadline);
      const r = withStreamed(fromAwaited(a, this.resultContext(policy.timeoutMs, startedAt, policy.warnings, cancelled)), a, sink);
      this.fuelUsed += r.fuelUsed;
      if (a.kind === 'done') this.memoryBytes = a.frame.memoryBytes;
      // A call stopped at its deadline or cancelled leaves guest state half-updated: retire or
      // restart. A cancelled call settles now; the next call waits for the recovery.
      if (r.error?.code === 'CANCELLED') this.recover();
      else if (a.kind !== 'done' || r.error?.code === 'TIMEOUT') await this.afterFailure();
      return r;
    } catch (e) {
      return failure(toSandboxError(e), { profile: policy.profile, warnings: policy.warnings }, performance.now() - t0);
    }
  }

  /** Retire or restart in the background; later calls (and `stop`) wait for it. */
  private recover(): void {
    const done = this.afterFailure().finally(() => {
      if (this.recovering === done) this.recovering = null;
    });
    this.recovering = done;
  }

  /** The worker timed out or died: retire, or restart with fresh state. */
  private async afterFailure(): Promise<void> {
    if (this.state === 'stopped') return;
    this.d.onCallStopped?.();
    const w = this.worker;
    this.worker = null;
    const restart = this.d.engine.onTimeout === 'restart';
    this.state = restart ? 'starting' : 'dead';
    if (w) await w.terminate().catch(() => {});
    if (restart && this.state === 'starting') {
      try {
        await this.boot();
      } catch {
        if ((this.state as InstanceState) !== 'stopped') this.state = 'dead';
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
    await this.recovering?.catch(() => {});
    await this.queue.catch(() => {});
  }

  private resultContext(timeoutMs: number, startedAt: number, warnings = this.d.policy.warnings, cancelled = false) {
    return {
      profile: this.d.policy.profile,
      warnings,
      isCommand: false,
      timeoutMs,
      startedAt,
      outputLimitBytes: this.d.engine.outputLimitBytes,
      cancelled,
    };
  }
}
